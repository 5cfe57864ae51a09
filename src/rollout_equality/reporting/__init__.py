"""Reporting: records turned into rates, tables, claims, figures and the paper.

* :mod:`.stats` — condition rates with Wilson intervals;
* :mod:`.claims` — the abstract's claims beside a run's numbers;
* :mod:`.suite_tables` — a suite's result tables (one entry point per rule);
* :mod:`.head_tables` — the per-head and fusion tables and the heads figure;
* :mod:`.ftt_ablation` — the FT-Transformer recipe ablation's tables and figure;
* :mod:`.writers` — the writers every table goes through (CSV, HTML, LaTeX);
* :mod:`.figures` — the paper's figures;
* :mod:`.compare` — two runs' tables compared within each number's uncertainty;
* :mod:`.paper` — what ``paper/main.tex`` reads, and its PDF.

Reads records, never models: may import :mod:`rollout_equality.config`, :mod:`rollout_equality.runtime` and
:mod:`rollout_equality.condition`.
"""
