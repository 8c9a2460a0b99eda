"""Type-checked by `cargo xtask py`, never run: `mypy --strict` must report exactly the errors marked
`# E:` (on their lines) and no other: a balancer takes its configuration as one `weir.Config`, and the
weighted family's draws are named."""

from __future__ import annotations

import weir

weir.Balancer(["http://a"], seed=1)  # E: Unexpected keyword argument "seed" for "Balancer"  [call-arg]
weir.Balancer(["http://a"], weir.LowestScore())  # E: Argument 2 to "Balancer" has incompatible type "LowestScore"; expected "Config | None"  [arg-type]
weir.Weighted(draw="lowest_score")  # E: Argument "draw" to "Weighted" has incompatible type "Literal['lowest_score']"; expected "Literal['cascade', 'cascade_approx', 'weighted_pick'] | Draw | None"  [arg-type]
weir.Config(algorithm=weir.Buckets())  # E: Argument "algorithm" to "Config" has incompatible type "Buckets"; expected "LowestScore | Weighted | None"  [arg-type]
