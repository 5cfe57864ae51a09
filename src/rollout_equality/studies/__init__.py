"""Studies beyond the paper's measurement, each a package of its own that reuses the stages below it.

* :mod:`.dynamics` — the companion study: self-attention dynamics in discrete time, and ALBERT's shared layer
  applied beyond its trained depth.

No module of the attention-rollout study imports this package.
"""
