"""Stress check of the float32 screen: the screened kernels against the float64-only kernels, bit for bit.

    python benchmarks/screen_stress.py [--seconds 60] [--seed 0] [--nmax 400] [--rounding up] [--flush-denormals]

Four checks, each for about ``--seconds`` seconds, on the adversarial matrix families of
tests/condition/test_screening.py (near-ties, peaked rows, rows differing in one entry, near-uniform, one-hot, duplicate
rows, float32 softmax), the screen forced on for every n and band (test_screening.ALWAYS_SCREEN: screen_min_n = 2,
screen_max_work = inf):

- records: stacks of 1-4 matrices of mixed families, n = 2 … nmax in random order (so each thread's work
  arrays are reused across sizes and batches), atol 0 … 1e-3; κ, κ(½(I+A)), count, witness, holds, slack and the
  rollout κ from the screened and the float64-only kernels, in random order, on the serial twins or on numba's
  threads with numba.set_num_threads changed before each call;
- workspace: the screened kernels with their work arrays filled beforehand with NaN, ±inf, -1, 0, 2, ±1e300 or
  noise: every output the same (no stale entry is read);
- recheck: every unit of pairs re-checked (a band wider than any TV): the screened kernel's float64 TVs
  are the float64 sweep's, bit for bit, for every n, on the serial twins and the parallel kernels;
- band: every pair that the count, the witness or κ(½(I+A)) need (gap ≤ 2·atol, a pair attaining κ(½(I+A))),
  found by brute force from the float64 sweep, was re-checked; prints the largest |tv32 − tv64| over the bound.

``--rounding`` (libm fesetround on the calling thread: the serial twins run on it) and ``--flush-denormals``
(torch.set_flush_denormal) run the checks under another floating-point environment. Prints each check's
counts; the exit status is 1 when any output differed. A diagnostic script, not a test.
"""

from __future__ import annotations

import argparse
import ctypes
import dataclasses
import sys
import time
from pathlib import Path

import numba
import numpy as np

import rollout_equality.condition.kernels as K
from rollout_equality.condition.dobrushin import equality_condition, kappa

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from test_screening import ALWAYS_SCREEN, FIELDS, FLOAT64, KINDS, SCALES, adversarial, rollout_products  # noqa: E402

ROUNDING = {"nearest": 0x000, "down": 0x400, "up": 0x800, "zero": 0xC00}
ATOLS = (0.0, 1e-12, 1e-9, 1e-6, 1e-3)
FILLS = (np.nan, np.inf, -np.inf, -1.0, 0.0, 2.0, 1e300, -1e300, "noise")


def random_stack(rng, nmax: int, batch: int = 4) -> np.ndarray:
    n = int(rng.integers(2, nmax + 1)) if rng.random() < 0.7 else int(rng.integers(2, 41))
    mats = []
    for _ in range(int(rng.integers(1, batch + 1))):
        kind = str(rng.choice(KINDS))
        mats.append(adversarial(kind, n, int(rng.integers(0, 2**32)), float(rng.choice(SCALES[kind]))))
    return np.stack(mats)


def records(stack: np.ndarray, atol: float, engine):
    R = rollout_products(stack)
    return (
        equality_condition(stack, atol=atol, engine=engine),
        kappa(stack, engine=engine),
        kappa(R, 1e-5 * len(stack), engine=engine),
    )


def differing(ref, got) -> list[str]:
    out = [f for f in FIELDS if not np.array_equal(getattr(ref[0], f), getattr(got[0], f))]
    return out + [
        name
        for name, a, b in (("kappa", ref[1], got[1]), ("rollout kappa", ref[2], got[2]))
        if not np.array_equal(a, b)
    ]


def check_records(rng, seconds: float, nmax: int) -> tuple[int, int]:
    its = bad = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        its += 1
        stack, atol = random_stack(rng, nmax), float(rng.choice(ATOLS))
        serial = bool(rng.random() < 0.5)
        res = {}
        for screened in rng.permutation(2):
            if not serial:
                numba.set_num_threads(int(rng.integers(1, numba.config.NUMBA_NUM_THREADS + 1)))
            engine = dataclasses.replace(ALWAYS_SCREEN if screened else FLOAT64, serial=serial)
            res[screened] = records(stack, atol, engine)
        diff = differing(res[0], res[1])
        if diff:
            bad += 1
            print(f"  records differ: shape {stack.shape}, atol {atol}, serial {serial}: {diff}", flush=True)
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    return its, bad


def kernel_outputs(M: np.ndarray, atol: float, fill, serial: bool, rng, screen=True, condition=True):
    """Every output of the kernel (the screen forced on, or the float64 sweep alone), with its work arrays filled
    first, and the TVs it left in its work array."""
    n = M.shape[1]

    def work_array(dtype):
        a = np.empty((n, n), dtype)
        with np.errstate(over="ignore"):
            a[:] = 3 * rng.standard_normal((n, n)) if fill == "noise" else fill
        return a

    ws = K.Workspace(work_array(np.float64), work_array(np.float64), work_array(np.float32), work_array(np.float32))
    out = K.Outputs.empty(len(M))
    settings = K.Settings(condition, atol, 1e-5, screen, 2, np.inf)
    assert (K.analyse_batch_serial if serial else K.analyse_batch)(M, settings, *out, *ws)
    return out, ws.tv


def screened_outputs(M: np.ndarray, atol: float, fill, serial: bool, rng):
    """Every output of the screened condition test and of κ alone, with their work arrays filled first, and the
    condition test's tv (the last matrix's re-checked TVs, -1: not re-checked)."""
    out, tv_condition = kernel_outputs(M, atol, fill, serial, rng)
    k, _ = kernel_outputs(M, atol, fill, serial, rng, condition=False)
    return (*out, k.kappa, k.work), tv_condition


def check_workspace(rng, seconds: float, nmax: int) -> tuple[int, int]:
    its = bad = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        its += 1
        M, atol, serial = random_stack(rng, nmax, 3), float(rng.choice(ATOLS)), bool(rng.random() < 0.7)
        ref = None
        for fill in FILLS:
            out, _ = screened_outputs(M, atol, fill, serial, rng)
            if ref is None:
                ref = out
            elif not all(np.array_equal(a, b) for a, b in zip(ref, out)):
                bad += 1
                print(f"  work arrays filled with {fill} change the outputs: shape {M.shape}, atol {atol}", flush=True)
    return its, bad


def check_recheck(rng, nmax: int) -> tuple[int, int]:
    its = bad = 0
    for serial in (True, False):
        for n in [*range(2, 80), *range(80, nmax + 1, 7)]:
            kind = KINDS[n % len(KINDS)]
            M = adversarial(kind, n, n, SCALES[kind][1])[None]
            f64_out, tv64 = kernel_outputs(M, 10.0, np.nan, serial, rng, screen=False)
            out, tv = kernel_outputs(M, 10.0, np.nan, serial, rng)
            iu = np.triu_indices(n, 1)
            its += 1
            if not np.array_equal(tv64[iu], tv[iu]) or not all(np.array_equal(a, b) for a, b in zip(f64_out[:4], out)):
                bad += 1
                print(f"  re-checked TVs differ from the sweep's: n {n}, serial {serial}", flush=True)
    return its, bad


def check_band(rng, seconds: float, nmax: int) -> tuple[int, int, float]:
    its = bad = 0
    worst = 0.0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        n, kind = int(rng.integers(4, nmax + 1)), str(rng.choice(KINDS))
        A = adversarial(kind, n, int(rng.integers(0, 2**32)), float(rng.choice(SCALES[kind])))
        atol = float(rng.choice(ATOLS))
        (_, _, _, _, work, _, _), tv = screened_outputs(A[None], atol, np.nan, True, rng)
        if work[0] < 0:
            continue
        its += 1
        iu = np.triu_indices(n, 1)
        i, j = iu
        rechecked = tv[iu] != -1.0
        tv64 = K.upper_tv(A)[iu]
        a32 = A.astype(np.float32)
        tv32 = np.zeros((n, n), np.float32)
        for b in range((n + 3) // 4):
            K._block_tv32(a32, tv32, 4 * b, np.float32(1.0))
        t32 = tv32[iu].astype(np.float64)
        c1, c2 = K.screen_bound(n, A.sum(axis=1).max())
        worst = max(worst, float((np.abs(t32 - tv64) / (c1 * t32 + c2)).max()))
        B = 0.5 * (np.eye(n) + A)  # TV^B of each pair as the float64 kernel computes it (_tv_half)
        off = 2.0 * tv64 - np.abs(A[i, i] - A[j, i]) - np.abs(A[i, j] - A[j, j])
        tvb = 0.5 * (0.5 * off + np.abs(B[i, i] - B[j, i]) + np.abs(B[i, j] - B[j, j]))
        need = tv64.max() - tv64 <= 2.0 * atol
        if (need & ~rechecked).any() or not (rechecked & (tvb == tvb.max())).any():
            bad += 1
            print(f"  a needed pair was not re-checked: n {n}, {kind}, atol {atol}", flush=True)
    return its, bad, worst


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=float, default=60.0, help="seconds per randomised check")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--nmax", type=int, default=400)
    p.add_argument("--rounding", choices=sorted(ROUNDING), default="nearest")
    p.add_argument("--flush-denormals", action="store_true")
    a = p.parse_args()
    if a.rounding != "nearest":
        ctypes.CDLL("libm.so.6").fesetround(ROUNDING[a.rounding])
    if a.flush_denormals:
        import torch

        torch.set_flush_denormal(True)
    rng = np.random.default_rng(a.seed)
    print(
        f"numba {numba.__version__}, {numba.config.NUMBA_NUM_THREADS} threads, rounding {a.rounding}, "
        f"flush denormals {a.flush_denormals}, seed {a.seed}"
    )
    failed = 0
    its, bad = check_records(rng, a.seconds, a.nmax)
    print(f"records:   {its} stacks, {bad} differing (threading layer {numba.threading_layer()})")
    failed += bad
    its, bad = check_workspace(rng, a.seconds, a.nmax)
    print(f"workspace: {its} stacks x {len(FILLS)} fills, {bad} differing")
    failed += bad
    its, bad = check_recheck(rng, a.nmax)
    print(f"recheck:   {its} sizes, {bad} differing")
    failed += bad
    its, bad, worst = check_band(rng, a.seconds, a.nmax)
    print(f"band:      {its} matrices, {bad} with a needed pair missed; largest |tv32 - tv64| / bound {worst:.3f}")
    failed += bad
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
