"""Type-checked by `cargo xtask py`, never run: `mypy --strict` must report exactly the errors marked
`# E:` (on their lines) and no other: a `Balancer[str]`'s lease has a `str` node."""

from __future__ import annotations

import weir

b: weir.Balancer[str] = weir.Balancer(["http://a", "http://b"])
with b.acquire() as lease:
    x: int = lease.node  # E: Incompatible types in assignment (expression has type "str", variable has type "int")  [assignment]
    print(x)
