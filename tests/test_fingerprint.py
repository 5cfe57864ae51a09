"""The fingerprint (rollout_equality.fingerprint, benchmarks/fingerprint.py): what each CPU code path pins, as the
libraries report it, and where two fingerprints part."""

import json

import pytest
from conftest import REPO

from rollout_equality.fingerprint import compare, digest


def run(digests, reported=None):
    return {"reported": reported or {}, "digests": [list(row) for row in digests]}


def test_compare_names_the_first_op_that_differs_per_code_path():
    rows = [("inputs", "x_cont_train", "a"), ("step 1 forward", "blocks.0", "b"), ("weights", "after step 1", "c")]
    kept = {"paths": {"native": run(rows), "compatible": run(rows)}}
    moved = [rows[0], ("step 1 forward", "blocks.0", "B"), ("weights", "after step 1", "C")]
    mine = {"paths": {"native": run(rows), "compatible": run(moved), "avx2": run(rows)}}
    assert compare(kept, mine) == {
        "native": "same as kept",
        "compatible": "first divergence: step 1 forward, blocks.0 (kept b, here B)",
        "avx2": "not in the kept fingerprint",
    }
    other_model = {"paths": {"native": run([rows[0], ("step 1 forward", "head", "b")])}}
    assert compare(kept, other_model)["native"].startswith("the ops differ from row 1")


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
