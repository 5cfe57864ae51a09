"""The condition per attention head and under head fusions (rollout_equality.condition.heads)."""

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from conftest import REPO

from rollout_equality.condition.analysis import analyse
from rollout_equality.condition.attention import Attention
from rollout_equality.condition.dobrushin import equality_condition, restrict, rollout
from rollout_equality.condition.heads import fuse
from rollout_equality.condition.records import (
    FUSION_ROLLOUT_SCHEMA,
    HEAD_SCHEMA,
    read_metadata,
    read_records,
    write_head_records,
)
from rollout_equality.config.settings import HeadSettings

FIELDS = ("holds", "holds_direct", "kappa", "kappa_half", "bound", "slack", "n_max_pairs", "witness_i", "witness_j")
ALL = HeadSettings(per_head=True, fusions=("mean", "max", "min"))

# Two heads of three tokens (rows in tenths): the mean holds while head 1 fails ...
MEAN_RESCUES = np.array([[[0, 4, 6], [1, 7, 2], [3, 2, 5]], [[3, 2, 5], [0, 7, 3], [9, 1, 0]]]) / 10
# ... and every head holds while the mean fails
MEAN_BREAKS = np.array([[[7, 3, 0], [7, 2, 1], [0, 9, 1]], [[1, 9, 0], [4, 5, 1], [0, 1, 9]]]) / 10


def heads_attention(L=3, H=4, n=7, seed=0):
    return np.random.default_rng(seed).dirichlet(np.full(n, 0.5), size=(L, H, n)).astype(np.float32)


def special_mask(n):
    special = np.zeros(n, bool)
    special[[0, -1]] = True
    return special


def with_heads(heads, special):
    """An input's attention as an extractor keeps it: the heads' float32 average beside every head."""
    return Attention(heads.mean(axis=1), special, heads)


def heads_rows(batch, ids, settings=None, **kwargs):
    """(heads file rows, their rollout rows) of each input of ``batch`` ((heads, special) each)."""
    records = analyse(
        [with_heads(h, s) for h, s in batch], ids, model="m", dataset="d", settings=settings or ALL, **kwargs
    )
    return [(r.heads, r.heads_rollout) for r in records]


def test_a_head_constant_attention_gives_the_averaged_records():
    """Every head equal: each head's records are the head-averaged records of that layer, field for field."""
    layer = heads_attention(H=1, n=9)[:, 0]
    heads = np.repeat(layer[:, None], 5, axis=1)
    special = special_mask(9)
    ((averaged, _, _, _),) = analyse([(layer, special)], ["x"], model="m", dataset="d")
    ((per_head, _),) = heads_rows([(heads, special)], ["x"])
    by_key = {(r["token_set"], r["layer"]): r for r in averaged}
    head_rows = [r for r in per_head if r["fusion"] is None]
    assert len(head_rows) == 2 * 3 * 5 and {r["n_heads"] for r in per_head} == {5}
    for row in head_rows:
        expected = by_key[(row["token_set"], row["layer"])]
        assert {k: row[k] for k in FIELDS} == {k: expected[k] for k in FIELDS}
        assert row["n_tokens"] == expected["n_tokens"]
    # every fusion of equal heads is that head again, its float32 rows renormalised (which moves κ by ~1e-8)
    for row in (r for r in per_head if r["fusion"] is not None):
        expected = by_key[(row["token_set"], row["layer"])]
        assert row["holds"] == expected["holds"] and row["kappa"] == pytest.approx(expected["kappa"], abs=1e-6)


def test_the_mean_holds_while_a_head_fails():
    per_head = equality_condition(MEAN_RESCUES)
    assert list(per_head.holds) == [True, False] and per_head.slack[1] > 1e-3
    assert equality_condition(fuse(MEAN_RESCUES, "mean")).holds
    rows = _rows(MEAN_RESCUES)
    assert [r["holds"] for r in rows if r["fusion"] is None] == [True, False]


def test_every_head_holds_while_the_mean_fails():
    assert list(equality_condition(MEAN_BREAKS).holds) == [True, True]
    mean = equality_condition(fuse(MEAN_BREAKS, "mean"))
    assert not mean.holds and mean.slack > 1e-3
    assert [r["holds"] for r in _rows(MEAN_BREAKS) if r["fusion"] is None] == [True, True]


def _rows(heads):
    """The all-token rows of one layer of ``heads`` (H, n, n), no special token."""
    ((rows, _),) = heads_rows([(heads[None], np.zeros(heads.shape[-1], bool))], ["x"], HeadSettings(per_head=True))
    return [r for r in rows if r["token_set"] == "all"]


@pytest.mark.parametrize("fusion", ["mean", "max", "min"])
def test_each_fusion_is_row_stochastic_and_formed_as_named(fusion):
    heads = heads_attention(L=2, H=3, n=6).astype(np.float64)
    fused = fuse(heads, fusion)
    assert fused.shape == (2, 6, 6)
    np.testing.assert_allclose(fused.sum(axis=-1), 1.0, rtol=0, atol=1e-12)
    raw = {"mean": heads.mean(axis=1), "max": heads.max(axis=1), "min": heads.min(axis=1)}[fusion]
    np.testing.assert_allclose(fused, raw / raw.sum(axis=-1, keepdims=True), rtol=1e-15, atol=0)


def test_fuse_errors_name_the_problem():
    with pytest.raises(KeyError, match="median"):  # HeadSettings names the allowed fusions
        fuse(heads_attention(), "median")
    with pytest.raises(ValueError, match="H, n, n"):
        fuse(np.eye(3), "max")
    disjoint = np.array([[[1.0, 0.0], [0.5, 0.5]], [[0.0, 1.0], [0.5, 0.5]]])
    with pytest.raises(ValueError, match="min fusion of the heads has an all-zero row 0"):
        fuse(disjoint, "min")


def test_settings_validate_and_say_what_they_measure():
    assert not HeadSettings().on and HeadSettings().extra_fusions == ()
    assert HeadSettings(per_head=True).on
    assert HeadSettings(fusions=("min", "mean")).extra_fusions == ("min",)
    for bad in (("max",), ("mean", "median"), ("mean", "mean")):
        with pytest.raises(ValueError, match="give distinct fusions among mean, max, min, mean among them"):
            HeadSettings(fusions=bad)
    assert HeadSettings.from_config({"per_head": True, "fusions": ["mean", "max"]}) == HeadSettings(
        per_head=True, fusions=("mean", "max")
    )


def test_fused_rows_and_rollout_match_the_library():
    heads = heads_attention(L=3, H=4, n=7, seed=3)
    special = special_mask(7)
    ((rows, ro),) = heads_rows([(heads, special)], ["x"])
    for fusion in ("max", "min"):
        F = fuse(heads.astype(np.float64), fusion)
        content = restrict(F, ~special)
        got = [r for r in rows if r["fusion"] == fusion and r["token_set"] == "content"]
        expected = equality_condition(content)
        assert [r["holds"] for r in got] == list(expected.holds)
        assert [r["kappa"] for r in got] == list(expected.kappa)
        got_ro = [r for r in ro if r["fusion"] == fusion and r["token_set"] == "content"]
        reference = rollout(content)
        assert [r["kappa_rollout"] for r in got_ro] == pytest.approx(reference.kappa_rollout.tolist(), abs=1e-12)
        assert [r["product_bound"] for r in got_ro] == pytest.approx(reference.product_bound.tolist(), abs=1e-12)
    assert {r["fusion"] for r in ro} == {"max", "min"} and len(ro) == 2 * 2 * 3
    # per head: each head's content matrix restricted and renormalised on its own
    content = restrict(heads.astype(np.float64), ~special)
    got = [r for r in rows if r["fusion"] is None and r["token_set"] == "content"]
    assert [r["kappa"] for r in got] == list(equality_condition(content).kappa.ravel())
    assert [(r["layer"], r["head"]) for r in got] == [(l, h) for l in range(3) for h in range(4)]


def test_analysis_on_a_pool_gives_the_same_rows_and_settings_choose_the_parts():
    batch = [(heads_attention(L=2, H=3, n=n, seed=n), special_mask(n)) for n in (5, 70, 9)]
    ids = ["a", "b", "c"]
    here = heads_rows(batch, ids)
    with ThreadPoolExecutor(max_workers=3) as pool:
        assert heads_rows(batch, ids, pool=pool) == here
    only_heads = heads_rows(batch, ids, HeadSettings(per_head=True))
    assert all(r["fusion"] is None for rows, ro in only_heads for r in rows) and all(not ro for _, ro in only_heads)
    only_max = heads_rows(batch, ids, HeadSettings(fusions=("mean", "max")))
    assert {r["fusion"] for rows, _ in only_max for r in rows} == {"max"}


def test_head_records_round_trip(tmp_path):
    ((rows, ro),) = heads_rows([(heads_attention(), special_mask(7))], ["x"])
    path, rollout_path = tmp_path / "d.heads.parquet", tmp_path / "d.heads.rollout.parquet"
    write_head_records(path, rollout_path, rows, ro, {"condition": {"atol": 1e-9}})
    df = read_records(path)
    assert list(df.columns) == HEAD_SCHEMA.names and len(df) == len(rows)
    assert df["head"].isna().sum() == 2 * 2 * 3 and df["fusion"].isna().sum() == 2 * 3 * 4
    assert list(read_records(rollout_path).columns) == FUSION_ROLLOUT_SCHEMA.names
    assert read_metadata(path) == read_metadata(rollout_path) == {"condition": {"atol": 1e-9}}
    write_head_records(path, rollout_path, [], [], {})  # the feature off: schema, no rows
    assert len(read_records(path)) == 0 and list(read_records(path).columns) == HEAD_SCHEMA.names


def test_config_resolves_the_analysis_per_experiment_suite_and_default():
    import copy

    import yaml

    from rollout_equality.config.checks import check_analysis, run_analysis, suite_analyses

    config = yaml.safe_load((REPO / "config.yaml").read_text())
    check_analysis(config)
    on = {"per_head": True, "fusions": ["mean", "max", "min"]}
    assert run_analysis(config, "minilm", "pydoc_topics") == on  # the offline suite's
    assert run_analysis(config, "dinov2_large", "imagenet_val") == {"per_head": False, "fusions": ["mean"]}
    assert run_analysis(config, "adult_uci") == on  # an FT-Transformer table of the offline suite
    assert run_analysis(config, "adult_uci@whatever") == {"per_head": False, "fusions": ["mean"]}  # in no suite
    assert suite_analyses(config, "offline") and not suite_analyses(config, "paper")
    mixed = copy.deepcopy(config)
    mixed["suites"]["offline"][0]["per_head"] = False  # one experiment's own setting wins
    assert run_analysis(mixed, mixed["suites"]["offline"][0]["model"], "pydoc_topics")["per_head"] is False
    mixed["suites"]["paper"].append({"model": "minilm", "dataset": "pydoc_topics", "heatmap": False})
    mixed["suites"]["offline"][0]["per_head"] = True
    with pytest.raises(ValueError, match="experiment minilm on pydoc_topics is measured once but its suites ask"):
        check_analysis(mixed)
    mixed = copy.deepcopy(config)
    mixed["analysis"]["suites"]["nosuch"] = {"per_head": True}
    with pytest.raises(ValueError, match="analysis.suites: 'nosuch' is not a suite"):
        check_analysis(mixed)
