"""The runtime: how a step runs on its machine, and what it writes down about that.

* :mod:`.files` — atomic file output, logging to a rule's log, progress bars;
* :mod:`.digests` — every SHA-256 the library computes, in one format;
* :mod:`.threads` — how many threads each pool gets, and why a config fixes some counts (stated there once);
* :mod:`.code_paths` — which CPU kernels the libraries run, and how a config fixes them (stated there once);
* :mod:`.prelude` — the prelude of every compute job: offline hub, threads, code path;
* :mod:`.device` — the device, exact float32 and deterministic CUDA;
* :mod:`.provenance` — what decides a result's bits, as recorded with it;
* :mod:`.lock` — the locked environment and how an installed one departs from it.

May import :mod:`rollout_equality.config` only.
"""
