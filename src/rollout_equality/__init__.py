"""When does the Dobrushin bound on attention rollout hold with equality?

The library behind the pipeline. Its entry points, importable from here::

    from rollout_equality import Engine, equality_condition, kappa, restrict, rollout

(:mod:`rollout_equality.condition.dobrushin`: κ, the equality condition, restriction to content tokens, rollout, and
how the compiled kernel computes them). The rest is grouped by stage, lowest first; a stage imports only the stages
below it (tests/repository/test_layers.py checks it):

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

__all__ = ["Engine", "equality_condition", "kappa", "restrict", "rollout"]


def __getattr__(name: str):
    """The entry points, imported when first asked for (the condition's kernels start numba: a second that a
    Snakemake start-up or a config check need not pay)."""
    if name in __all__:
        from rollout_equality.condition import dobrushin

        return getattr(dobrushin, name)
    raise AttributeError(f"module 'rollout_equality' has no attribute {name!r}")
