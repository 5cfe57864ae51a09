"""The condition and its records: the mathematics of the paper and what one measurement writes.

* :mod:`.dobrushin` — κ, the equality condition, restriction to content tokens, rollout (the public API);
* :mod:`.kernels` — the compiled (numba) kernels behind it: the sweep, the float32 screen, the batch, restriction;
* :mod:`.naive` — a direct numpy transcription of the definitions, the oracle of tests and benchmarks;
* :mod:`.baseline` — uniformly random stochastic matrices;
* :mod:`.heads` — head fusions: the max and min (and mean) over a layer's heads, each row renormalised;
* :mod:`.attention` — one input's attention as an extractor gives it (the layers, the special tokens, every head);
* :mod:`.analysis` — one input's attention to its records: the head average, every head and each fusion, one call;
* :mod:`.from_model` — the attention a model returned (transformers' ``output_attentions``, timm's) to the records,
  through that one analysis: the library's call for your own code (``rollout_equality.attention_records``);
* :mod:`.records` — the records' files: their schema (one row per input, layer and token set; the rollout rows; the
  heads files), writing and reading them, and the attention dump.

May import :mod:`rollout_equality.config` and :mod:`rollout_equality.runtime`.
"""
