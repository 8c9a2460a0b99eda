"""Type-checked by `cargo xtask py`, never run: `mypy --strict` must report exactly the errors marked
`# E:` (on their lines) and no other: a `Balancer[str]`'s lease has a `str` node, and so has its due check."""

from __future__ import annotations

import weir

b: weir.Balancer[str] = weir.Balancer(["http://a", "http://b"])
with b.acquire() as lease:
    x: int = lease.node  # E: Incompatible types in assignment (expression has type "str", variable has type "int")  [assignment]
    print(x)
due: str = b.due_check(5.0)  # E: Incompatible types in assignment (expression has type "str | None", variable has type "str")  [assignment]
b.report_check(7, True)  # E: Argument 1 to "report_check" of "Balancer" has incompatible type "int"; expected "str"  [arg-type]
