"""Every generated LaTeX table fits the paper's page: paper/main.tex is built, with each of its tables written by
the pipeline's own writers from real tables (the offline suite's, docs/offline, and the recipe ablation's,
docs/ftt_ablation), and the build fails on any overfull box LaTeX reports."""

import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import REPO

from rollout_equality.config.checks import claim_reasons
from rollout_equality.config.load import validated
from rollout_equality.reporting import ftt_ablation as ablation
from rollout_equality.reporting import paper
from rollout_equality.reporting.claims import claims, macros
from rollout_equality.reporting.figures import plt, save
from rollout_equality.reporting.stats import special_token_shares  # noqa: F401  (the claims table's special-tokens rows)
from rollout_equality.reporting.suite_tables import baseline_latex, ftt_table, suite_latex

OFFLINE, ABLATION = REPO / "docs" / "offline", REPO / "docs" / "ftt_ablation"

pytestmark = pytest.mark.skipif(shutil.which("latexmk") is None, reason="TeX is not installed (CI installs it)")


def shipped_config() -> dict:
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    config = validated(config)
    return config


def rollout_rows(rates: pd.DataFrame) -> pd.DataFrame:
    """A rollout summary with every model of ``rates`` (the offline docs keep no rollout table)."""
    keys = rates[["model", "dataset", "token_set"]].drop_duplicates()
    return keys.assign(
        inputs=200,
        n_layers=24,
        kappa_rollout=0.123456,
        product_kappa_half=0.234567,
        product_bound=0.345678,
        tight_half=0.125,
        tight_bound=0.0,
    )


def overfull(log: str) -> list[str]:
    """LaTeX's reports of content wider than its line or taller than its page (underfull boxes are only loose)."""
    return [line for line in log.splitlines() if re.match(r"Overfull \\[hv]box", line)]


def test_every_generated_table_fits_the_page(tmp_path):
    config = shipped_config()
    rates = pd.read_csv(OFFLINE / "model_rates.csv")
    depth = pd.read_csv(OFFLINE / "depth_rates.csv")
    baseline = pd.read_csv(OFFLINE / "random_baseline.csv")
    summary = pd.read_csv(ABLATION / "summary.csv")
    layers = pd.read_csv(ABLATION / "layers.csv")
    scores = pd.read_csv(OFFLINE / "ftt_scores.csv")
    claim_table = claims(
        config["claims"],
        rates,
        baseline,
        depth,
        summary,
        not_run=claim_reasons(config, "offline"),
        ablation_claim=config["tabular"]["ablation"]["claim"],
    )
    assert {"not run", "agrees", "disagrees", "reproduced", "recipe-dependent"} <= set(claim_table["status"])
    frames = {
        "rates": rates,
        "depth": depth,
        "rollout": rollout_rows(rates),
        "claims": claim_table,
        "ftt": ftt_table(scores, rates),
    }
    root = tmp_path / "paper"
    (root / "tables" / "offline").mkdir(parents=True)
    (root / "figures" / "offline").mkdir(parents=True)
    shutil.copy(REPO / "paper" / "main.tex", root / "main.tex")
    names = {"rates": "model_rates", "depth": "depth_rates", "rollout": "rollout_summary", "claims": "claims"}
    for key, tex in suite_latex(frames).items():
        (root / "tables" / "offline" / f"{names.get(key, key)}.tex").write_text(tex)
    (root / "tables" / "offline" / "macros.tex").write_text(macros(claim_table, baseline, config["claims"]))
    (root / "tables" / "baseline.tex").write_text(baseline_latex(baseline))
    (root / "tables" / "ftt_ablation.tex").write_text(ablation.ablation_latex(summary))
    save(ablation.ablation_figure(layers, summary, config["claims"]["ftt"]), root / "figures" / "ftt_ablation.pdf")
    for path in paper.inputs(root / "main.tex", "offline"):  # the other figures: blank pages of a figure's shape
        if path.endswith(".pdf") and not Path(path).exists():
            fig = plt.figure(figsize=(6, 3))
            save(fig, path)
            plt.close(fig)
    ablation.ablation_section(
        root / "tables" / "offline" / "ftt_ablation_section.tex",
        {
            "tex": root / "tables" / "ftt_ablation.tex",
            "pdf": root / "figures" / "ftt_ablation.pdf",
            "summary": ABLATION / "summary.csv",
        },
        "adult_uci",
    )
    pdf = paper.build_paper(root / "main.tex", root / "suite-offline.pdf", "offline")
    log = (root / "suite-offline.log").read_text(errors="replace")
    assert pdf.is_file() and not overfull(log), "\n".join(overfull(log))
