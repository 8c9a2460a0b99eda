"""The HTTP clients the integrations' tests drive alike: an ``httpx.Client`` or an ``httpx.AsyncClient``
given a weir transport, or a ``requests.Session`` with a weir adapter mounted, each sending to
``http://users/``."""

from __future__ import annotations

import asyncio
from typing import Any, List, Optional

import httpx
import requests

import weir
import weir.httpx
import weir.requests

# The client's timeout, for each attempt.
TIMEOUT = 0.2
KINDS = ["httpx", "httpx-async", "requests"]


class Client:
    """One kind of client over ``urls`` (``kind``, one of :data:`KINDS`; ``options`` go to the
    transport or adapter): ``send`` returns the status or raises the library's error, ``open`` sends a
    request whose response is streamed (its lease held until ``close_response``)."""

    def __init__(self, kind: str, urls: List[str], **options: Any) -> None:
        self.kind = kind
        self.loop: Optional[asyncio.AbstractEventLoop] = None
        if kind == "httpx":
            self.transport: Any = weir.httpx.Transport(urls, **options)
            self.client: Any = httpx.Client(
                transport=self.transport, base_url="http://users", timeout=TIMEOUT
            )
        elif kind == "httpx-async":
            self.transport = weir.httpx.AsyncTransport(urls, **options)
            self.loop = asyncio.new_event_loop()
            self.client = httpx.AsyncClient(
                transport=self.transport, base_url="http://users", timeout=TIMEOUT
            )
        else:
            self.transport = weir.requests.Adapter(urls, **options)
            self.client = requests.Session()
            self.client.mount("http://users/", self.transport)

    @property
    def balancer(self) -> weir.Balancer:
        balancer: weir.Balancer = self.transport.balancer
        return balancer

    @property
    def budget(self) -> weir.RetryBudget:
        budget: weir.RetryBudget = self.transport.retry_budget
        return budget

    def send(self, method: str = "GET", body: Optional[bytes] = None, streamed: bool = False) -> int:
        if self.kind == "requests":
            data: Any = iter([body or b""]) if streamed else body
            r = self.client.request(method, "http://users/", data=data, timeout=TIMEOUT)
            return int(r.status_code)
        if self.loop is None:
            content: Any = iter([body or b""]) if streamed else body
            return int(self.client.request(method, "/", content=content).status_code)

        async def chunks() -> Any:
            yield body or b""

        async def go() -> int:
            content: Any = chunks() if streamed else body
            r = await self.client.request(method, "/", content=content)
            return int(r.status_code)

        return self.loop.run_until_complete(asyncio.wait_for(go(), 30))

    def open(self) -> Any:
        """A GET whose response body is left unread, so that its lease stays in flight; ``status`` and
        ``close_response`` take it."""
        if self.kind == "requests":
            return self.client.get("http://users/", stream=True, timeout=TIMEOUT)
        request = self.client.build_request("GET", "/")
        if self.loop is None:
            return self.client.send(request, stream=True)
        return self.loop.run_until_complete(asyncio.wait_for(self.client.send(request, stream=True), 30))

    @staticmethod
    def status(response: Any) -> int:
        return int(response.status_code)

    def close_response(self, response: Any) -> None:
        """Closes a response from :meth:`open` without reading its body (which releases its lease)."""
        if self.loop is not None:
            self.loop.run_until_complete(response.aclose())
        else:
            response.close()

    def close(self) -> None:
        if self.loop is not None:
            self.loop.run_until_complete(self.client.aclose())
            self.loop.close()
        else:
            self.client.close()
