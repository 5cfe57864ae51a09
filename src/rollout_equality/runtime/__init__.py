"""The runtime: how a step runs on its machine, and what it writes down about that.

* :mod:`.files` — atomic file output, logging to a rule's log, progress bars;
* :mod:`.prelude` — the prelude of every compute job (offline hub, threads, CPU code path);
* :mod:`.device` — the device, exact float32 and deterministic CUDA, and the provenance of a result's bits;
* :mod:`.lock` — the locked environment and how an installed one departs from it.

May import :mod:`rollout_equality.config` only.
"""
