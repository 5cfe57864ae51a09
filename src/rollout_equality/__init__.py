"""When does the Dobrushin bound on attention rollout hold with equality?

The library behind the pipeline. Its entry points, importable from here::

    from rollout_equality import Engine, attention_records, equality_condition, kappa, restrict, rollout

(:func:`rollout_equality.condition.from_model.attention_records`: the workflow's records of the attention a model
returned; :mod:`rollout_equality.condition.dobrushin`: κ, the equality condition, restriction to content tokens,
rollout, and how the compiled kernel computes them). docs/library.md is the guide. The rest is grouped by stage,
lowest first; a stage imports only the stages below it (tests/repository/test_layers.py checks it):

1. :mod:`~rollout_equality.config` — the schema, its one loader, the config's checks, the output paths;
2. :mod:`~rollout_equality.runtime` — files, threads, code paths, the device, provenance, digests, the lock;
3. :mod:`~rollout_equality.condition` — the mathematics, its kernels, the baseline, the records;
4. :mod:`~rollout_equality.acquire` — the hub, models, data, table sources, attention extraction;
5. :mod:`~rollout_equality.measure` — one model on one data set, attention to records (the hot path);
6. :mod:`~rollout_equality.tabular` — tables prepared and FT-Transformer trained and measured;
7. :mod:`~rollout_equality.reporting` — rates, claims, tables, figures, comparisons, the paper;
8. :mod:`~rollout_equality.studies` — studies beyond the paper: the dynamics of self-attention, and one small ViT
   trained supervised and by DINO (supervision);
9. :mod:`~rollout_equality.cli` and :mod:`~rollout_equality.fingerprint` — the command line, and the fingerprint of a
   machine's bits.

docs/architecture.md walks through it.
"""

__version__ = "0.1.0"

ENTRY_POINTS = {
    "Engine": "rollout_equality.condition.dobrushin",
    "attention_records": "rollout_equality.condition.from_model",
    "equality_condition": "rollout_equality.condition.dobrushin",
    "kappa": "rollout_equality.condition.dobrushin",
    "restrict": "rollout_equality.condition.dobrushin",
    "rollout": "rollout_equality.condition.dobrushin",
}
"""Each entry point and the module that defines it."""

__all__ = list(ENTRY_POINTS)


def __getattr__(name: str):
    """The entry points, imported when first asked for (the condition's kernels start numba: a second that a
    Snakemake start-up or a config check need not pay)."""
    if name in ENTRY_POINTS:
        import importlib

        return getattr(importlib.import_module(ENTRY_POINTS[name]), name)
    raise AttributeError(f"module 'rollout_equality' has no attribute {name!r}")
