"""The fingerprint (rollout_equality.fingerprint, benchmarks/fingerprint.py): what each CPU code path pins, as the
libraries report it, and where two fingerprints part."""

import json

import pytest
from conftest import REPO

from rollout_equality.fingerprint import compare, digest, order_differences


def run(digests, reported=None):
    return {"reported": reported or {}, "digests": [list(row) for row in digests]}


def test_compare_names_the_first_op_that_differs_per_code_path():
    rows = [("inputs", "x_cont_train", "a"), ("step 1 forward", "blocks.0", "b"), ("weights", "after step 1", "c")]
    kept = {"paths": {"native": run(rows), "compatible": run(rows)}}
    moved = [rows[0], ("step 1 forward", "blocks.0", "B"), ("weights", "after step 1", "C")]
    mine = {"paths": {"native": run(rows), "compatible": run(moved), "avx2": run(rows)}}
    assert compare(kept, mine) == {
        "native": "same as kept",
        "compatible": "first divergence: step 1 forward, blocks.0 (kept b, here B); 2 of 3 digests differ",
        "avx2": "not in the kept fingerprint",
    }
    other_model = {"paths": {"native": run([rows[0], ("step 1 forward", "head", "b")])}}
    assert compare(kept, other_model)["native"] == (
        "other ops (2 kept rows not here (first: step 1 forward, blocks.0); "
        "1 rows here not kept (first: step 1 forward, head); another model?)"
    )


def test_compare_matches_rows_by_name_and_reports_another_order_apart():
    """The same digests in another order are the same bits (rtdl's no-decay group once came in an order that
    followed addresses); the order is said apart, and a digest that differs is still found in the new order."""
    rows = [("inputs", "x", "a"), ("step 1 update", "w1 weights", "b"), ("step 1 update", "w2 weights", "c")]
    swapped = [rows[0], rows[2], rows[1]]
    kept = {"paths": {"compatible": run(rows)}}
    assert compare(kept, {"paths": {"compatible": run(swapped)}}) == {"compatible": "same as kept"}
    assert order_differences(kept, {"paths": {"compatible": run(swapped)}}) == {
        "compatible": "the rows come in another order from common row 1 (kept step 1 update, w1 weights, here "
        "step 1 update, w2 weights)"
    }
    assert order_differences(kept, kept) == {}
    moved = [rows[0], rows[2], ("step 1 update", "w1 weights", "B")]
    assert compare(kept, {"paths": {"compatible": run(moved)}}) == {
        "compatible": "first divergence: step 1 update, w1 weights (kept b, here B); 1 of 3 digests differ"
    }
    twice = [("step 1 forward", "relu", "a"), ("step 1 forward", "relu", "b")]  # a module that runs twice
    other = [("step 1 forward", "relu", "a"), ("step 1 forward", "relu", "c")]
    assert compare({"paths": {"native": run(twice)}}, {"paths": {"native": run(other)}}) == {
        "native": "first divergence: step 1 forward, relu (occurrence 2) (kept b, here c); 1 of 2 digests differ"
    }


ORDER_WORKER = """
import json, sys
import torch
from rtdl_revisiting_models import FTTransformer
from rollout_equality.fingerprint import update_digests
from rollout_equality.tabular.ftt import make_optimizer

path, clutter = sys.argv[1], int(sys.argv[2])
kept_alive = [torch.empty(17 * i + 1) for i in range(clutter)]  # another allocation pattern: other addresses
torch.manual_seed(0)
model = FTTransformer(n_cont_features=3, cat_cardinalities=[4, 5], d_out=1, **FTTransformer.get_default_kwargs())
names = {p: n for n, p in model.named_parameters()}
optimizer = make_optimizer(model, path, "cpu")
model.train()
loss = model(torch.randn(8, 3), torch.randint(0, 4, (8, 2))).square().mean()
loss.backward()
before = {p: (p.detach().clone(), p.grad.clone()) for p in model.parameters()}
optimizer.step()
print(json.dumps({
    "groups": [[names[p] for p in g["params"]] for g in optimizer.param_groups],
    "rows": update_digests(optimizer, before, names),
}))
"""


@pytest.mark.parametrize("path", ["native", "compatible"])
def test_the_optimisers_groups_and_the_fingerprints_rows_are_in_the_models_order_in_every_process(path):
    """rtdl builds its no-decay group from a set (an order that follows addresses): two processes with another
    hash seed and another allocation pattern still give the groups in named_parameters() order, and the same
    fingerprint rows of the first update, name by name and digest by digest."""
    import os
    import subprocess
    import sys

    def child(hash_seed: str, clutter: int) -> dict:
        env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": str(REPO / "src")}
        args = [sys.executable, "-c", ORDER_WORKER, path, str(clutter)]
        return json.loads(subprocess.run(args, env=env, capture_output=True, text=True, check=True).stdout)

    one, other = child("0", 0), child("1", 4000)
    assert one == other
    from rtdl_revisiting_models import FTTransformer

    model = FTTransformer(n_cont_features=3, cat_cardinalities=[4, 5], d_out=1, **FTTransformer.get_default_kwargs())
    order = [n for n, _ in model.named_parameters()]
    assert sorted(sum(one["groups"], [])) == sorted(order)
    for group in one["groups"]:
        assert group == [n for n in order if n in group]  # each group in the model's order
    assert len(one["groups"][1]) > 1  # the no-decay group, the one rtdl builds from a set, holds several


def test_a_digest_depends_on_the_values_the_dtype_and_the_shape():
    import numpy as np

    a = np.arange(6, dtype=np.float32)
    assert digest(a) == digest(a.copy()) != digest(a.reshape(2, 3)) != digest(a.astype(np.float64))
    b = a.copy()
    b[3] = np.nextafter(b[3], np.float32(10))  # one bit
    assert digest(b) != digest(a)


@pytest.mark.slow
def test_each_code_path_pins_what_the_libraries_report_and_changes_the_bits():
    """Through the fingerprint's own runs (a fresh process each, the job prelude as FT-Transformer's jobs call it):
    the `compatible` path makes torch report its default kernels, MKL its COMPATIBLE branch and numba a generic
    target, and trains FT-Transformer to other weights than the native path, from the same prepared table; the
    native path forces nothing. A code path that forced nothing would fail here."""
    import torch

    from rollout_equality.fingerprint import run_path

    native, compatible = (
        run_path(p, steps=2, parts=("ftt",), configfile=REPO / "config.yaml") for p in ("native", "compatible")
    )
    assert compatible["reported"] == {
        "cpu_capability": "DEFAULT",
        "numba_target": "generic",
        "mkl_branch": "COMPATIBLE",
    }
    assert native["reported"]["cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    assert native["reported"]["numba_target"] == "host" and native["reported"]["mkl_branch"] != "COMPATIBLE"
    part = {r[0] for r in native["digests"]}
    assert {"inputs", "step 1 forward", "step 1 gradient", "step 1 parameter gradient", "step 1 update"} <= part
    for run, optimizer in ((native, "AdamW"), (compatible, "PortableAdamW")):  # each update's stages are the run's
        assert [optimizer + " replayed", "same bits"] in [r[1:] for r in run["digests"] if r[0] == "step 1 update"]
    inputs = [r for r in native["digests"] if r[0] == "inputs"]
    assert inputs == [r for r in compatible["digests"] if r[0] == "inputs"]  # numpy's preparation: no torch kernel
    weights = [r for r in native["digests"] if r[0] == "weights"]
    assert len(weights) == 2 and weights != [r for r in compatible["digests"] if r[0] == "weights"]


def test_the_kept_fingerprint_names_its_machine_and_the_current_lock_and_covers_every_part():
    from rollout_equality.runtime.lock import lock_digest

    kept = json.loads((REPO / "benchmarks/fingerprint.json").read_text())
    assert kept["machine"]["cpu"] and kept["machine"]["lock"] == lock_digest(REPO / "requirements/lock.txt")
    assert set(kept["paths"]) >= {"native", "compatible"}
    for path in kept["paths"].values():
        parts = {r[0] for r in path["digests"]}
        assert {"inputs", "step 1 update", "weights", "minilm attention", "dinov2_small_imgfocus attention"} <= parts
        assert sum(r[0] == "weights" for r in path["digests"]) == kept["steps"]


def test_a_runs_trainings_are_read_and_compared_epoch_by_epoch(tmp_path):
    """benchmarks/trainings.py's two steps: a run's checkpoints and each epoch's weights digest read by table and
    seed (the tiny config's one table), then compared with kept ones: the same, or the first epoch that differs."""
    from rollout_equality.config.load import load_config
    from rollout_equality.fingerprint import compare_trainings, trainings

    config = load_config([str(REPO / ".test/config.yaml")])
    with pytest.raises(FileNotFoundError, match="no trained cancer seed 0"):
        trainings(tmp_path, config, "offline", REPO / "requirements/lock.txt")
    folder = tmp_path / "results/ftt/cancer/seed0"
    folder.mkdir(parents=True)
    (folder / "model.pt").write_bytes(b"weights")
    history = [{"epoch": i, "weights": f"{i}" * 64} for i in range(3)]
    metrics = {"metric": "accuracy", "test": 0.95, "history": history, "compute": {"code_path": {"MKL_CBWR": "X"}}}
    (folder / "metrics.json").write_text(json.dumps(metrics))
    mine = trainings(tmp_path, config, "offline", REPO / "requirements/lock.txt")
    (row,) = mine["trainings"]
    assert row["table"] == "cancer" and row["seed"] == 0 and row["epochs"] == [e["weights"] for e in history]
    import hashlib

    assert row["model_sha256"] == hashlib.sha256(b"weights").hexdigest()
    assert mine["machine"]["cpu"] and mine["machine"]["lock"].startswith("sha256:")
    assert compare_trainings(mine, mine) == {"cancer seed 0": "same as kept"}
    moved = json.loads(json.dumps(mine))
    moved["trainings"][0].update(model_sha256="0" * 64, test=0.94, epochs=[row["epochs"][0], "x" * 64, "y" * 64])
    assert compare_trainings(mine, moved) == {
        "cancer seed 0": "first differs after epoch 1 (test accuracy kept 0.95, here 0.94)"
    }
    moved["trainings"][0]["code_path"] = {}
    assert compare_trainings(mine, moved) == {
        "cancer seed 0": "another code path (kept {'MKL_CBWR': 'X'}, here native)"
    }
    assert compare_trainings({"trainings": []}, mine) == {"cancer seed 0": "not in the kept trainings"}
