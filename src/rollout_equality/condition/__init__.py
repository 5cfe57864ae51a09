"""The condition and its records: the mathematics of the paper and what one measurement writes.

* :mod:`.dobrushin` — κ, the equality condition, restriction to content tokens, rollout (the public API);
* :mod:`.kernels` — the compiled (numba) kernels behind it: the sweep, the float32 screen, the batch, restriction;
* :mod:`.naive` — a direct numpy transcription of the definitions, the oracle of tests and benchmarks;
* :mod:`.baseline` — uniformly random stochastic matrices;
* :mod:`.records` — the records' schema: one row per (input, layer, token set), and the rollout rows;
* :mod:`.heads` — the condition per attention head and under head fusions.

May import :mod:`rollout_equality.config` and :mod:`rollout_equality.runtime`.
"""
