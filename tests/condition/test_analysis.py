"""One analysis for every record (rollout_equality.condition.analysis): the head-averaged, per-head and fused
records of an input come from one call, over a stack of matrices per layer with a label."""

import numpy as np
import pytest

from rollout_equality.condition.analysis import PER_HEAD, Records, analyse, labels
from rollout_equality.condition.attention import Attention
from rollout_equality.config.settings import OFF, HeadSettings

ALL = HeadSettings(per_head=True, fusions=("mean", "max", "min"))


def attention(L=2, H=3, n=7, seed=0) -> Attention:
    heads = np.random.default_rng(seed).dirichlet(np.full(n, 0.5), size=(L, H, n)).astype(np.float32)
    special = np.zeros(n, bool)
    special[0] = True
    return Attention(heads.mean(axis=1), special, heads)


def test_labels_give_the_files_rows_in_order():
    assert labels(OFF) == ("mean",)
    assert labels(ALL) == ("mean", PER_HEAD, "max", "min")
    assert labels(HeadSettings(fusions=("min", "mean"))) == ("mean", "min")


def test_every_label_of_an_input_comes_from_one_call_and_the_head_average_is_the_same_either_way():
    batch = [attention(seed=s) for s in range(3)]
    ids = ["a", "b", "c"]
    on, off = analyse(batch, ids, model="m", dataset="d", settings=ALL), analyse(batch, ids, model="m", dataset="d")
    for with_heads, alone in zip(on, off):
        assert (with_heads.layer, with_heads.rollout) == (alone.layer, alone.rollout)
        assert alone.heads == alone.heads_rollout == []
    L, H = batch[0].heads.shape[:2]
    heads = on[0].heads
    # per token set: every (layer, head), then each fusion's layers
    per_token_set = L * H + 2 * L
    assert len(heads) == 2 * per_token_set
    first = heads[:per_token_set]
    assert [(r["layer"], r["head"], r["fusion"]) for r in first[: L * H]] == [
        (layer, head, None) for layer in range(L) for head in range(H)
    ]
    assert [(r["layer"], r["head"], r["fusion"]) for r in first[L * H :]] == [
        (layer, None, fusion) for fusion in ("max", "min") for layer in range(L)
    ]
    assert {r["n_heads"] for r in heads} == {H} and {r["fusion"] for r in on[0].heads_rollout} == {"max", "min"}
    joined = Records.joined(on)
    assert joined.layer == [row for records in on for row in records.layer]
    assert [r["input_id"] for r in joined.heads_rollout][:: 2 * 2 * L] == ids


def test_an_input_is_named_as_its_fields_and_bad_ones_are_refused():
    one = attention()
    assert analyse([tuple(one)], ["x"], model="m", dataset="d", settings=ALL) == analyse(
        [one], ["x"], model="m", dataset="d", settings=ALL
    )
    assert analyse([(one.layers, one.special)], ["x"], model="m", dataset="d") == analyse(
        [one], ["x"], model="m", dataset="d"
    )
    with pytest.raises(ValueError, match="m/x: the heads analysis is on .* holds no heads"):
        analyse([one._replace(heads=None)], ["x"], model="m", dataset="d", settings=ALL)
    with pytest.raises(ValueError, match=r"m/x: per-head attention must have shape \(layers, heads, n, n\)"):
        analyse([one._replace(heads=one.heads[:1])], ["x"], model="m", dataset="d", settings=ALL)
    with pytest.raises(ValueError, match="2 ids for 1 inputs"):
        analyse([one], ["x", "y"], model="m", dataset="d")
