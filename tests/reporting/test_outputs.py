"""Tables, figures, the CLI and atomic output."""

import json
import re
import shutil
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from rollout_equality.cli import main
from rollout_equality.reporting.figures import write_baseline_figure
from rollout_equality.reporting.suite_tables import baseline_latex, read_baseline, write_baseline_latex
from rollout_equality.reporting.writers import write_csv
from rollout_equality.runtime.files import atomic_path

TABLE = pd.DataFrame(
    {
        "n": [4, 16],
        "trials": [1000, 1000],
        "holds": [305, 250],
        "rate": [0.305, 0.25],
        "ci_low": [0.27733, 0.22416],
        "ci_high": [0.33415, 0.27772],
    }
)


def test_baseline_latex_is_a_booktabs_tabular():
    tex = baseline_latex(TABLE)
    assert tex.startswith("\\begin{tabular}{rrrrc}") and tex.rstrip().endswith("\\end{tabular}")
    lines = tex.splitlines()
    assert lines[1] == "\\toprule" and "\\midrule" in lines and lines[-2] == "\\bottomrule"
    assert "4 & 1000 & 305 & 30.5 & [27.7, 33.4] \\\\" in lines
    assert "16 & 1000 & 250 & 25.0 & [22.4, 27.8] \\\\" in lines
    header = lines[2]
    assert re.search(r"Rate \(\\%\)", header) and "95\\% CI" in header


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="pdflatex not installed")
def test_baseline_latex_compiles(tmp_path):
    write_baseline_latex(TABLE, tmp_path / "baseline.tex")
    (tmp_path / "doc.tex").write_text(
        "\\documentclass{article}\\usepackage{booktabs}\\begin{document}\\input{baseline}\\end{document}\n"
    )
    res = subprocess.run(["pdflatex", "-interaction=nonstopmode", "doc.tex"], cwd=tmp_path, capture_output=True)
    assert res.returncode == 0, res.stdout[-2000:]


def test_csv_round_trip_and_bad_table(tmp_path):
    write_csv(TABLE, tmp_path / "t.csv")
    pd.testing.assert_frame_equal(read_baseline(tmp_path / "t.csv"), TABLE, atol=1e-6)
    TABLE.drop(columns="ci_high").to_csv(tmp_path / "bad.csv", index=False)
    with pytest.raises(ValueError, match=r"\['ci_high'\] are missing"):
        read_baseline(tmp_path / "bad.csv")


def test_figure_files_are_written(tmp_path):
    claim = {"kind": "baseline", "text": "t", "range": [0.24, 0.30], "min_n": 5}
    write_baseline_figure(TABLE, claim, tmp_path / "f.pdf", tmp_path / "f.png")
    assert (tmp_path / "f.pdf").read_bytes()[:5] == b"%PDF-"
    assert (tmp_path / "f.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "f.png").stat().st_size > 5000


def test_atomic_path_leaves_nothing_on_failure(tmp_path):
    target = tmp_path / "out" / "table.csv"
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            tmp.write_text("half")
            raise RuntimeError("step failed")
    assert not target.exists() and list(target.parent.iterdir()) == []
    with atomic_path(target) as tmp:
        assert tmp.suffix == ".csv" and tmp.parent == target.parent
        tmp.write_text("whole")
    assert target.read_text() == "whole" and len(list(target.parent.iterdir())) == 1


def test_atomic_path_gives_files_the_usual_permissions(tmp_path):
    """mkstemp's 0600 would hide results from the other users of a cluster's shared file system."""
    import os
    import stat

    old = os.umask(0o022)
    try:
        with atomic_path(tmp_path / "t.csv") as tmp:
            tmp.write_text("x\n")
        plain = tmp_path / "plain.csv"
        plain.write_text("x\n")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "t.csv").stat().st_mode) == stat.S_IMODE(plain.stat().st_mode) == 0o644


def test_atomic_path_refuses_to_replace_a_non_file(tmp_path):
    with pytest.raises(ValueError, match="not a regular file"):
        with atomic_path(tmp_path):
            pass
    with pytest.raises(ValueError, match="not a regular file"):
        with atomic_path("/dev/null"):
            pass
    import os
    import stat

    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_cli_condition(tmp_path, capsys):
    np.save(tmp_path / "A.npy", np.eye(3)[[1, 2, 0]])
    assert main(["condition", str(tmp_path / "A.npy")]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["holds"] is False and out["kappa"] == 1.0 and out["slack"] == pytest.approx(0.5)
    np.savetxt(tmp_path / "B.csv", np.array([[0.5, 0.6], [0.5, 0.5]]), delimiter=",")
    assert main(["condition", str(tmp_path / "B.csv")]) == 2
    assert "row 0 of A sums to 1.1" in capsys.readouterr().err


def test_cli_baseline_as_a_module(tmp_path):
    out = tmp_path / "b.csv"
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "rollout_equality",
            "baseline",
            "--n",
            "3",
            "5",
            "--trials",
            "40",
            "--seed",
            "1",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stderr
    assert read_baseline(out)["n"].tolist() == [3, 5]
    assert "n=5: " in res.stderr
