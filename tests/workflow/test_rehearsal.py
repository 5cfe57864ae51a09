"""The paper target rehearsed against replicas of its sources (tests/hub_rehearsal), with the real clients.

The replicas are served by olah, a real Hugging Face mirror; huggingface_hub, transformers and
datasets reach it through HF_ENDPOINT, in subprocesses (the clients read their environment at
import). openml-python and scikit-learn read caches in their own layouts. The rehearsal proves
loading, layout and plumbing, never the paper's numbers: the weights are random.
"""

import copy
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pyarrow.parquet as pq
import pytest
import yaml
from conftest import REPO
from hub_rehearsal import mirror, rehearse
from hub_rehearsal.rehearse import python

PAPER_MODELS = [
    "dinov2_small",
    "dinov2_base",
    "dinov2_large",
    "dinov2_small_reg",
    "dinov2_base_reg",
    "dinov2_large_reg",
    "deit_base",
    "vit_base_16",
    "roberta_base",
    "distilbert_base",
]


@pytest.fixture(scope="module")
def rehearsal(tmp_path_factory):
    """Replicas built and served by olah; the rehearsal config written (module scope: built once)."""
    workdir = tmp_path_factory.mktemp("rehearsal")
    commits = rehearse.prepare(workdir)
    with mirror.serve(workdir / "mirror", workdir / "olah") as endpoint:
        yield SimpleNamespace(
            workdir=workdir,
            commits=commits,
            endpoint=endpoint,
            config=yaml.safe_load((workdir / "config.yaml").read_text()),
        )


def test_the_replica_reproduces_the_script_data_set_break_and_the_message_names_it(rehearsal, tmp_path):
    """The first break a user met: frgfm/imagenette's `main` held a loading script, which datasets >= 4 refuses,
    and the message blamed the network. Today `main` holds committed parquet files: the shipped source (a commit
    of main, `data_files` of the full-size validation split) loads, and so does a configuration of the card."""
    env = rehearse.environment(tmp_path, rehearsal.endpoint)
    shipped = rehearsal.config["datasets"]["imagenet_val"]
    script = rehearsal.commits["datasets/frgfm/imagenette@script"]
    old_style = {"path": "frgfm/imagenette", "revision": script, "name": "320px", "split": "validation"}
    by_card = {
        "path": "frgfm/imagenette",
        "revision": "main",
        "name": "160px",
        "split": "validation",
        "image_field": "image",
    }
    out = python(
        f"""
        import json, datasets
        from rollout_equality.acquire.data import DataUnavailableError, prepare_data
        found = {{}}
        try:
            datasets.load_dataset("frgfm/imagenette", "320px", split="validation", revision={script!r})
        except Exception as err:
            found["datasets"] = str(err)
        try:
            prepare_data("imagenet_val", {{"modality": "image", "n": 3, "seed": 0,
                                      "source": {{"hf_dataset": {old_style!r}}}}}, "old")
        except DataUnavailableError as err:
            found["old"] = str(err)
        manifest = prepare_data("imagenet_val", {{**{shipped!r}, "n": 10}}, "new")
        found["labels"] = sorted({{it["label"] for it in manifest["items"]}})
        found["origin"] = manifest["origin"]
        card = prepare_data("imagenet_val", {{"modality": "image", "n": 10, "seed": 0,
                                         "source": {{"hf_dataset": {by_card!r}}}}}, "card")
        found["card"] = card["origin"]
        print(json.dumps(found))
    """,
        env,
        tmp_path,
    )
    assert "Dataset scripts are no longer supported, but found imagenette.py" in out["datasets"]
    assert "loading script (imagenette.py)" in out["old"] and "data_files" in out["old"]
    assert "unreachable" not in out["old"]
    assert len(out["labels"]) == 10 and "tench" in out["labels"]  # the ClassLabel names, one image per class
    assert out["origin"]["commit"] == rehearsal.commits["datasets/frgfm/imagenette"]
    assert list(out["origin"]["files"]) == ["full_size/validation-00000-of-00001.parquet"]  # only the split asked for
    assert list(out["card"]["files"]) == ["160px/validation-00000-of-00001.parquet"]

    # Other files asked for at the same revision: fetched, and the old ones removed (offline: refused).
    smaller = {**shipped, "n": 10}
    smaller["source"] = {
        "hf_dataset": {**shipped["source"]["hf_dataset"], "data_files": {"validation": "320px/validation-*.parquet"}}
    }
    code = f"""
        import json, os
        from rollout_equality.acquire.data import DataUnavailableError, prepare_data
        try:
            origin = prepare_data("imagenet_val", {smaller!r}, "new")["origin"]
            print(json.dumps({{"files": sorted(origin["files"]), "on_disk": sorted(os.listdir("new/hub"))}}))
        except DataUnavailableError as err:
            print(json.dumps({{"error": str(err)}}))
    """
    refused = python(code, rehearse.environment(tmp_path, None), tmp_path)
    assert "HF_HUB_OFFLINE=1 forbids downloading it" in refused["error"]
    moved = python(code, env, tmp_path)
    assert moved["files"] == ["320px/validation-00000-of-00001.parquet"] and moved["on_disk"] == [".cache", "320px"]


def check_sources(workdir: Path, config: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "rollout_equality", "check-sources", "--configfile", str(config)]
    cmd += ["--cache", str(workdir / "resources" / "cache")]
    return subprocess.run(cmd, env=env, cwd=workdir, capture_output=True, text=True, timeout=300)


def test_check_sources_names_exactly_the_sources_that_drifted(rehearsal, tmp_path):
    """Against the replicas of every source of the paper suite (and the dynamics study): a pinned commit that the
    repository does not hold and a pattern of the old bot-branch layout are the two problems, and nothing else."""
    config = copy.deepcopy(rehearsal.config)
    config["models"]["dinov2_base"]["hub"]["revision"] = "f9e44c814b77203eaa57a6bdbbd535f21ede1415"  # not there
    hf = config["datasets"]["imagenet_val"]["source"]["hf_dataset"]
    hf["data_files"] = {"validation": "full_size/validation/*.parquet"}  # refs/convert/parquet's layout
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    env = rehearse.environment(tmp_path, rehearsal.endpoint)
    res = check_sources(rehearsal.workdir, path, env)
    assert res.returncode == 1, res.stdout[-3000:] + res.stderr[-3000:]
    problems = [line for line in res.stdout.splitlines() if line.startswith("- ")]
    assert len(problems) == 2, res.stdout
    assert problems[0].startswith("- model 'dinov2_base'") and "f9e44c814b77203eaa57a6bdbbd535f21ede1415" in problems[0]
    assert "does not resolve revision" in problems[0]
    assert problems[1].startswith("- dataset 'imagenet_val'") and "full_size/validation/*.parquet" in problems[1]
    assert "match no file" in problems[1] and "full_size/validation-00000-of-00001.parquet" in problems[1]
    lines = res.stdout.splitlines()
    rows = lines[2 : lines.index("")]  # the table: header, rule, one line per source
    assert len(rows) == 16  # 12 models (the paper's, dinov2-giant, ALBERT), 2 data sets, 2 tables
    assert f"{len(rows)} sources" in res.stdout and "2 problem(s)" in res.stdout
    for line in rows:
        assert ("PROBLEM" in line) == any(f" {n} " in line for n in ("dinov2_base", "imagenet_val")), line
    assert "config.json, model.safetensors, preprocessor_config.json" in next(r for r in rows if " dinov2_small " in r)
    assert "not pinned" in next(r for r in rows if " dinov2_giant " in r)
    assert "cached" in next(r for r in rows if " california " in r)
    seconds = float(re.search(r"checked in ([0-9.]+) s", res.stdout).group(1))
    print(f"check_sources against the mirror: {len(rows)} sources in {seconds:.1f} s")  # a time, not a verdict


def test_the_documented_check_sources_commands_run_as_written(rehearsal, tmp_path):
    """Every ``snakemake --cores 1 check_sources`` the documents show, run as written (a real run, not ``-n``: a
    dry run sets the cores itself) in a project folder holding the workflow and the rehearsal's config, against the
    replicas of every source: it checks them all and exits 0 (the one unpinned model is a note, not a problem)."""
    from documented import snakemake_commands

    commands = snakemake_commands("check_sources")
    assert commands, commands  # docs/reproducing-the-paper.md's, in the .venv/bin/ form the documents write
    project = tmp_path / "project"
    project.mkdir()
    for name in ("Snakefile", "workflow"):
        (project / name).symlink_to(REPO / name)
    shutil.copy(rehearsal.workdir / "config.yaml", project / "config.yaml")
    (project / "resources").symlink_to(rehearsal.workdir / "resources")  # the tables' caches
    env = rehearse.environment(project, rehearsal.endpoint)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"  # the reader's .venv/bin first
    (project / ".venv").symlink_to(Path(sys.executable).parent.parent)
    for command in commands:
        res = subprocess.run(command, shell=True, cwd=project, env=env, capture_output=True, text=True, timeout=600)
        out = res.stdout + res.stderr
        assert res.returncode == 0, f"{command}:\n{out[-4000:]}"
        assert "cores have to be specified" not in out and "16 sources" in out, out[-3000:]


MODEL_CODE = """
    import json, os, sys
    from rollout_equality.acquire.models import ModelUnavailableError, prepare_model
    spec = {"backend": "transformers", "modality": "text", "hub": {"id": "FacebookAI/roberta-base", "revision": sys.argv[1]}}
    try:
        info = prepare_model("roberta_base", spec, "models/roberta_base", "models/roberta_base/model.json")
        print(json.dumps({"info": info, "listed": sorted(os.listdir("models/roberta_base/snapshot"))}))
    except ModelUnavailableError as err:
        print(json.dumps({"error": str(err)}))
"""


def test_a_hub_model_downloads_only_its_loader_files_and_a_second_run_offline_checks_them(rehearsal, tmp_path):
    def prepare(revision: str, env: dict) -> dict:
        return python(MODEL_CODE, env, tmp_path, revision)

    online_env = rehearse.environment(tmp_path, rehearsal.endpoint)
    online = prepare("main", online_env)
    info = online["info"]
    commit = rehearsal.commits["models/FacebookAI/roberta-base"]
    assert info["commit"] == commit and info["revision"] == "main"
    assert sorted(info["files"]) == [
        "config.json",
        "dict.txt",
        "merges.txt",
        "model.safetensors",
        "tokenizer.json",
        "tokenizer_config.json",
        "vocab.json",
    ]
    assert not {"pytorch_model.bin", "tf_model.h5", "flax_model.msgpack", "rust_model.ot"} & set(online["listed"])
    assert prepare("main", rehearse.environment(tmp_path, None))["info"] == info  # HF_HUB_OFFLINE=1: from disk

    # Pinned to the commit, a re-run needs no network even without HF_HUB_OFFLINE (a compute node).
    no_hub = {**online_env, "HF_ENDPOINT": "http://127.0.0.1:9"}
    assert prepare("main", rehearse.environment(tmp_path, None))["info"]["files"] == info["files"]
    python(MODEL_CODE, online_env, tmp_path, commit)  # record the request for the commit itself
    assert prepare(commit, no_hub)["info"]["commit"] == commit

    vocab = tmp_path / "models/roberta_base/snapshot/vocab.json"
    original = vocab.read_bytes()
    vocab.unlink()
    broken = prepare("main", rehearse.environment(tmp_path, None))
    assert "vocab.json" in broken["error"] and "HF_HUB_OFFLINE=1" in broken["error"]
    # Online, a damaged file (same size, other bytes) is fetched again or refused, never recorded as the commit's.
    vocab.write_bytes(original[:-2] + b"!}")
    (tmp_path / "models/roberta_base/snapshot/stale.bin").write_bytes(b"left over from another revision")
    repaired = prepare("main", online_env)
    if "error" in repaired:
        assert "vocab.json" in repaired["error"] and "is not the file of commit" in repaired["error"]
    else:
        assert vocab.read_bytes() == original and "stale.bin" not in repaired["listed"]


def _manifests(workdir: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(workdir)): p.read_bytes()
        for pattern in (
            "resources/models/*/model.json",
            "resources/data/*/manifest.json",
            "resources/tabular/*/raw.parquet",
        )
        for p in sorted(workdir.glob(pattern))
    }


@pytest.mark.slow
def test_the_paper_target_runs_against_the_mirror_and_downloads_again_offline(rehearsal):
    """`snakemake check_sources`, `download` (which checks the sources first), then `all dynamics` (and `paper`
    with TeX), through the mirror; then `download` again with HF_HUB_OFFLINE=1 and no hub at all, from disk."""
    workdir = rehearsal.workdir
    env = rehearse.environment(workdir, rehearsal.endpoint)
    res = rehearse.snakemake(workdir, env, "check_sources")  # what a cluster user runs first on the login node
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-5000:]
    assert "16 sources, " in res.stderr and "0 problem(s)" in res.stderr
    (table,) = workdir.glob("results/sources/check-*.tsv")  # this run's table
    assert len(table.read_text().splitlines()) == 1 + 16
    res = rehearse.snakemake(workdir, env, "download")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-5000:]
    assert "rule check_network_sources" in res.stdout + res.stderr  # download checks the sources first
    assert not (workdir / "results/sources/check.tsv").exists()  # temporary: the next download checks again
    downloaded = _manifests(workdir)
    for name in PAPER_MODELS + ["albert_base", "dinov2_giant"]:
        info = json.loads((workdir / f"resources/models/{name}/model.json").read_text())
        assert info["commit"] == rehearsal.commits[f"models/{info['hub_id']}"], name
        assert "pytorch_model.bin" not in info["files"] and "model.safetensors" in info["files"], name
    assert json.loads((workdir / "resources/models/dinov2_giant/model.json").read_text())["revision"] == "main"

    targets = ["all", "dynamics"] + (["paper"] if shutil.which("latexmk") else [])
    res = rehearse.snakemake(workdir, env, *targets)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-5000:]

    rates = pd.read_csv(workdir / "results/tables/paper/model_rates.csv")
    for name in PAPER_MODELS + ["dinov2_giant", "ftt_seed0"]:
        assert set(rates.loc[rates["model"] == name, "token_set"]) == {"content", "all"}, name
    assert set(rates.loc[rates["model"] == "ftt_seed0", "dataset"]) == {"california", "adult"}
    claims = pd.read_csv(workdir / "results/tables/paper/claims.csv")
    assert "not run" not in set(claims["status"]), claims[claims["status"] == "not run"]
    # the paper suite shows the recipe ablation (on the offline UCI Adult): one claims row of its range
    assert claims.loc[claims["status"] == "recipe-dependent", "subject"].tolist() == [
        "recipe ablation (2 settings × 1 seed)"
    ]
    scores = pd.read_csv(workdir / "results/tables/paper/ftt_scores.csv")
    assert scores[["dataset", "metric"]].values.tolist() == [["adult", "accuracy"], ["california", "rmse"]]
    assert (workdir / "results/tables/dynamics/paper/albert_steps.csv").exists()
    if "paper" in targets:
        assert (workdir / "paper/suite-paper.pdf").read_bytes()[:5] == b"%PDF-"

    # The token structure of each family, as the model declares it.
    expected = {
        "dinov2_small": (257, 256),
        "dinov2_large": (257, 256),
        "dinov2_giant": (257, 256),
        "dinov2_small_reg": (261, 256),
        "dinov2_large_reg": (261, 256),
        "deit_base": (197, 196),
        "vit_base_16": (197, 196),
    }
    for name, (n_all, n_content) in expected.items():
        path = workdir / f"results/records/{name}/imagenet_val.parquet"
        records = pd.read_parquet(path)
        assert set(records.loc[records.token_set == "all", "n_tokens"]) == {n_all}, name
        assert set(records.loc[records.token_set == "content", "n_tokens"]) == {n_content}, name
        provenance = json.loads(pq.read_schema(path).metadata[b"rollout_equality"])
        preprocessing = provenance["extraction"]["preprocessing"]
        if name.startswith("dinov2"):
            assert preprocessing["image_processor"] == "BitImageProcessorPil" and preprocessing["backend"] == "pil"
        else:
            assert preprocessing["transform"] == "timm.data.create_transform"
    vit = json.loads(
        pq.read_schema(workdir / "results/records/vit_base_16/imagenet_val.parquet").metadata[b"rollout_equality"]
    )
    assert vit["extraction"]["preprocessing"]["mean"] == [0.5, 0.5, 0.5]  # the original ViT's normalisation
    text = pd.read_parquet(workdir / "results/records/roberta_base/wikitext.parquet")
    assert (
        (
            text.loc[text.token_set == "all", "n_tokens"].to_numpy()
            - text.loc[text.token_set == "content", "n_tokens"].to_numpy()
        )
        == 2
    ).all()  # <s> and </s>

    # A second download, on a machine without the hub: every step re-run from disk, same results.
    res = rehearse.snakemake(
        workdir,
        rehearse.environment(workdir, None),
        "download",
        "--forcerun",
        "prepare_model",
        "prepare_data",
        "fetch_table",
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-5000:]
    assert _manifests(workdir) == downloaded
    assert (workdir / "REHEARSAL.md").read_text().startswith("# A rehearsal, not a result")
