"""Time per matrix of the condition test against the naive numpy broadcast version.

    python benchmarks/condition_speed.py [--sizes 16 197 257 1370] [--repeats 5]

Prints one row per size: the fast test (rollout_equality.dobrushin.equality_condition,
CPU kernel; and on CUDA when a GPU is present), the naive one
(rollout_equality.reference.naive_condition, skipped where its (n, n, n)
temporaries would not fit in --naive-max-gb), and their ratio. Targets: ≥200×
the naive version at n = 257, at most 0.1 s per matrix at n = 1370, on 2 cores.
A measurement script, not a test: timings on a shared machine are noisy, so each
figure is the median of --repeats runs after one warm-up.
"""

from __future__ import annotations

import argparse
import os

import numpy as np
from _timing import median_time

from rollout_equality.dobrushin import DEFAULT_ATOL, equality_condition
from rollout_equality.reference import naive_condition


def cuda_device():
    try:
        import torch
    except ImportError:
        return None
    return torch.device("cuda") if torch.cuda.is_available() else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[16, 197, 257, 1370])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--naive-max-gb", type=float, default=3.0, help="skip the naive version above this much memory")
    args = parser.parse_args()

    import numba

    device = cuda_device()
    print(f"CPU threads (numba): {numba.get_num_threads()}   cores: {os.cpu_count()}   CUDA: {device or 'none'}")
    header = f"{'n':>6} {'fast CPU':>12} {'naive':>12} {'naive/fast':>11}"
    if device is not None:
        header += f" {'CUDA 1 matrix':>14} {'CUDA per matrix (batch 64)':>27}"
    print(header)
    rng = np.random.default_rng(0)
    results = {}
    for n in args.sizes:
        A = rng.dirichlet(np.ones(n), size=n)
        fast = median_time(lambda: equality_condition(A), args.repeats)
        naive_gb = 3 * 8 * n**3 / 1e9  # difference, |difference| and B's difference arrays
        if naive_gb <= args.naive_max_gb:
            naive = median_time(lambda: naive_condition(A, DEFAULT_ATOL), max(1, args.repeats // 2))
            naive_s, ratio_s = f"{1e3 * naive:10.2f}ms", f"{naive / fast:10.0f}×"
        else:
            naive = None
            naive_s, ratio_s = f"{'(needs %.0f GB)' % naive_gb:>12}", f"{'n/a':>11}"
        row = f"{n:>6} {1e3 * fast:10.3f}ms {naive_s} {ratio_s}"
        if device is not None:
            import torch

            T = torch.as_tensor(A, device=device)
            Tb = torch.as_tensor(rng.dirichlet(np.ones(n), size=(64, n)), device=device)
            one = median_time(lambda: (equality_condition(T), torch.cuda.synchronize()), args.repeats)
            batch = (
                median_time(lambda: (equality_condition(Tb), torch.cuda.synchronize()), max(1, args.repeats // 2)) / 64
            )
            row += f" {1e3 * one:12.3f}ms {1e3 * batch:25.3f}ms"
        print(row, flush=True)
        results[n] = (fast, naive)

    print()
    if 257 in results and results[257][1] is not None:
        ratio = results[257][1] / results[257][0]
        print(f"target ≥200× naive at n=257: {ratio:.0f}× -> {'met' if ratio >= 200 else 'NOT met'}")
    if 1370 in results:
        t = results[1370][0]
        print(f"target ≤0.1 s per matrix at n=1370: {t:.3f} s -> {'met' if t <= 0.1 else 'NOT met'}")


if __name__ == "__main__":
    main()
