"""The ablation's paper section, without TeX: it inputs the ablation's table and figure and records their
SHA-256, so that a changed ablation rebuilds the PDF (CI's TeX tests build it; this runs everywhere)."""

import hashlib

from conftest import REPO

from rollout_equality.reporting import ftt_ablation as ablation


def test_the_section_records_each_input_digest_and_inputs_the_table(tmp_path):
    table, figure = tmp_path / "ftt_ablation.tex", tmp_path / "ftt_ablation.pdf"
    table.write_text("\\begin{tabular}{l}x\\end{tabular}\n")
    figure.write_bytes(b"%PDF-1.4 not a real figure\n")
    summary = REPO / "docs" / "ftt_ablation" / "summary.csv"
    out = tmp_path / "section.tex"
    ablation.ablation_section(out, {"tex": table, "pdf": figure, "summary": summary}, "adult_uci")
    text = out.read_text()
    for key, path in (("tex", table), ("pdf", figure), ("summary", summary)):
        assert f"% {key}: sha256 {hashlib.sha256(path.read_bytes()).hexdigest()}\n" in text
    assert "adult\\_uci" in text and "\\input{" in text


def test_without_the_ablation_the_section_says_how_to_run_it(tmp_path):
    out = tmp_path / "section.tex"
    ablation.ablation_section(out, None, None)
    assert "tabular.ablation.suites" in out.read_text() and "sha256" not in out.read_text()
