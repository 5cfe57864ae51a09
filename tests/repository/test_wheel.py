"""The library and its command line from a built wheel, installed (not editable) in a fresh environment and run from
an empty folder outside the checkout: no config file, a prepared model and data set copied elsewhere."""

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import REPO


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The ``bin/`` folder of a fresh virtual environment holding the wheel built from this checkout (``pip wheel``,
    setuptools), not editable; the test environment's packages are importable through a .pth line (a path only: the
    editable install there is not run), so nothing is downloaded."""
    root = tmp_path_factory.mktemp("wheel")
    source = root / "source"  # what the wheel is built from, copied: setuptools writes build/ beside it
    shutil.copytree(REPO / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(REPO / name, source / name)
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            str(source),
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(root / "dist"),
        ],
        capture_output=True,
        text=True,
        env=_clean(os.environ),
    )
    assert build.returncode == 0, build.stdout[-2000:] + build.stderr[-2000:]
    (wheel,) = (root / "dist").glob("rollout_equality-*.whl")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / "venv")], check=True)
    venv_python = root / "venv" / "bin" / "python"
    purelib = subprocess.run(
        [venv_python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (Path(purelib) / "test_environment.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    install = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(venv_python), "install", "--no-deps", "--no-index", str(wheel)],
        capture_output=True,
        text=True,
        env=_clean(os.environ),
    )
    assert install.returncode == 0, install.stdout[-2000:] + install.stderr[-2000:]
    return root / "venv" / "bin"


def _clean(env) -> dict:
    """The environment without PYTHONPATH (a test run puts the checkout's src/ there)."""
    return {k: v for k, v in env.items() if k != "PYTHONPATH"}


def run(bin_dir: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**_clean(os.environ), "HF_HUB_OFFLINE": "1", "ROLLOUT_EQUALITY_CACHE": str(cwd / ".cache")}
    return subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_the_installed_wheel_measures_a_copied_model_and_data_set_as_the_workflow_does(installed, tmp_path):
    from models_tiny import build

    from rollout_equality.acquire.data import prepare_data
    from rollout_equality.acquire.models import read_model_info
    from rollout_equality.config.load import partial_config, with_defaults
    from rollout_equality.config.settings import Condition, Extraction, from_section
    from rollout_equality.measure import Outputs, measure

    empty = tmp_path / "empty"
    empty.mkdir()
    where = run(
        installed, empty, installed / "python", "-c", "import rollout_equality; print(rollout_equality.__file__)"
    )
    assert where.stdout.startswith(str(installed.parent)), where.stdout + where.stderr  # the wheel's, not src/

    # a tiny model and a text data set prepared as rules prepare_model and prepare_data prepare them, and the
    # records rule measure writes of them, with the schema's defaults (no config file) on the CPU
    build("distilbert", tmp_path / "run")
    spec = {"modality": "text", "source": {"pydoc_topics": True}, "n": 3, "seed": 0, "min_words": 10, "max_words": 30}
    prepare_data("pydoc", with_defaults("datasets", "pydoc", spec), tmp_path / "run/data/pydoc")
    config = partial_config({"extraction": {"device": "cpu"}})
    measure(
        read_model_info(tmp_path / "run/distilbert/model.json"), tmp_path / "run/data/pydoc",
        Outputs(tmp_path / "rule.parquet", tmp_path / "rule.rollout.parquet"), model="distilbert", dataset="pydoc",
        extraction=from_section(Extraction, config["extraction"]), condition=from_section(Condition, config["condition"]),
    )  # fmt: skip
    shutil.copytree(tmp_path / "run/distilbert", tmp_path / "elsewhere/distilbert")
    shutil.copytree(tmp_path / "run/data/pydoc", tmp_path / "elsewhere/pydoc")
    shutil.rmtree(tmp_path / "run")  # a read of the original would fail

    res = run(installed, empty, installed / "rollout-equality", "measure", "--model", tmp_path / "elsewhere/distilbert",
              "--data", tmp_path / "elsewhere/pydoc", "--out", "x.parquet", "--device", "cpu")  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    assert "config: schema defaults" in res.stderr and "distilbert: the condition holds in" in res.stdout
    for name, rule in (("x.parquet", "rule.parquet"), ("x.rollout.parquet", "rule.rollout.parquet")):
        pd.testing.assert_frame_equal(pd.read_parquet(empty / name), pd.read_parquet(tmp_path / rule))
    assert sorted(p.name for p in empty.iterdir()) == [  # nothing else written: the heads files hold no rows
        "x.heads.parquet", "x.heads.rollout.parquet", "x.parquet", "x.rollout.parquet"
    ]  # fmt: skip
    assert all(pd.read_parquet(empty / name).empty for name in ("x.heads.parquet", "x.heads.rollout.parquet"))


@pytest.mark.slow
def test_the_installed_wheel_tests_a_matrix_and_says_how_to_use_it_outside_a_checkout(installed, tmp_path):
    from rollout_equality.condition.dobrushin import equality_condition

    A = np.array([[0.6, 0.4, 0.0], [0.2, 0.5, 0.3], [0.0, 0.3, 0.7]])
    np.save(tmp_path / "a.npy", A)
    res = run(installed, tmp_path, installed / "rollout-equality", "condition", "a.npy")
    assert res.returncode == 0 and "config: schema defaults" in res.stderr, res.stderr[-3000:]
    expected = equality_condition(A, atol=1e-9, row_sum_atol=1e-5)
    out = json.loads(res.stdout)
    assert out["holds"] == expected.holds and out["kappa"] == pytest.approx(float(expected.kappa), abs=0)
    helped = run(installed, tmp_path, installed / "rollout-equality", "--help")
    assert "Outside a checkout" in helped.stdout and "schema's defaults" in helped.stdout
    version = run(installed, tmp_path, installed / "rollout-equality", "--version")
    assert version.returncode == 0 and version.stdout.startswith("rollout-equality 0.")
    assert "lock: none beside this installation" in version.stdout  # a wheel carries no lock
