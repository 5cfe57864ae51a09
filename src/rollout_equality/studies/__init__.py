"""Studies beyond the paper's measurement, each a package of its own that reuses the stages below it.

* :mod:`.dynamics` — the companion study: self-attention dynamics in discrete time, and ALBERT's shared layer
  applied beyond its trained depth;
* :mod:`.supervision` — one small vision transformer trained supervised and self-supervised (DINO) with one budget,
  measured beside its untrained initialisation: does supervision make the condition fail late?

No module of the attention-rollout study imports this package.
"""
