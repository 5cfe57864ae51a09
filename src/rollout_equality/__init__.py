"""When does the Dobrushin bound on attention rollout hold with equality?

The library behind the pipeline: :mod:`rollout_equality.condition.dobrushin` (κ, the
equality condition, restriction to content tokens, rollout) and
:mod:`rollout_equality.condition.baseline` (uniformly random stochastic matrices).
"""

__version__ = "0.1.0"
