"""Tabular benchmarks: tables fetched and prepared as in Gorishniy et al. (2021), and FT-Transformer trained on them.

* :mod:`.prepare` — the tables' sources and their preparation (split, quantile normalisation, categories);
* :mod:`.ftt` — FT-Transformer: reproducible training and square attention in every block;
* :mod:`.adamw` — the compatible code path's AdamW, whose update gives the same bits on every processor.

May import every stage below :mod:`rollout_equality.measure` and that module.
"""
