"""Time per matrix of the condition test against the naive numpy broadcast version.

    python benchmarks/condition_speed.py [--sizes 16 197 257 1370] [--repeats 5]

Prints one row per size: the CPU kernel with its float32-screened sweep (the default of
rollout_equality.dobrushin.equality_condition) and with the float64 sweep alone
(inside rollout_equality.dobrushin.float64_sweep; the same results bit for bit), each on
numba's threads and on one thread (the serial twins the records' workers use), the naive
version (rollout_equality.reference.naive_condition, skipped where its (n, n, n)
temporaries would not fit in --naive-max-gb), and the ratios; on CUDA when a GPU is present.
Targets: ≥200× the naive version at n = 257, at most 0.1 s per matrix at n = 1370, on 2 cores.
A measurement script, not a test: timings on a shared machine are noisy, so each figure is
the median of --repeats rounds, the kernels timed one after the other in each round
(after a warm-up round), so that a slow spell falls on all of them alike. The CPU's SIMD
flags are printed; ``NUMBA_CPU_NAME=haswell`` compiles the kernels for AVX2 on an AVX-512 machine.
"""

from __future__ import annotations

import argparse
import os

import numpy as np
from _timing import interleaved_medians, median_time

from rollout_equality.dobrushin import DEFAULT_ATOL, equality_condition, float64_sweep, screened_sweep, serial_kernels
from rollout_equality.reference import naive_condition


def simd_flags() -> str:
    """The CPU's vector extensions (from /proc/cpuinfo) and what numba compiles for."""
    import numba

    try:
        flags = next(line for line in open("/proc/cpuinfo") if line.startswith("flags")).split()
    except (OSError, StopIteration):
        flags = []
    wanted = [f for f in ("avx2", "fma", "avx512f", "avx512vl") if f in flags]
    target = os.environ.get("NUMBA_CPU_NAME") or numba.config.CPU_NAME or "host"
    return f"SIMD: {' '.join(wanted) or 'unknown'}   numba target CPU: {target}"


def timed(A, screened: bool, threads: bool):
    def run():
        with screened_sweep() if screened else float64_sweep():
            equality_condition(A)

    if threads:
        return run

    def one_thread():
        with serial_kernels():
            run()

    return one_thread


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
    print(simd_flags())
    header = (
        f"{'n':>6} {'f64 thr':>10} {'scr thr':>10} {'f64 1thr':>10} {'scr 1thr':>10} {'naive':>11}"
        f" {'naive/f64':>10} {'naive/scr':>10} {'f64/scr thr':>12} {'f64/scr 1thr':>13}"
    )
    if device is not None:
        header += f" {'CUDA 1 matrix':>14} {'CUDA per matrix (batch 64)':>27}"
    print(header)
    rng = np.random.default_rng(0)
    results = {}
    for n in args.sizes:
        A = rng.dirichlet(np.ones(n), size=n)
        f64, scr, f64_1, scr_1 = interleaved_medians(
            [timed(A, False, True), timed(A, True, True), timed(A, False, False), timed(A, True, False)], args.repeats
        )
        naive_gb = 3 * 8 * n**3 / 1e9  # difference, |difference| and B's difference arrays
        if naive_gb <= args.naive_max_gb:
            naive = median_time(lambda: naive_condition(A, DEFAULT_ATOL), max(1, args.repeats // 2))
            naive_s = f"{1e3 * naive:9.2f}ms"
            ratios = f"{naive / f64:9.0f}× {naive / scr:9.0f}×"
        else:
            naive = None
            naive_s = f"{'(%.0f GB)' % naive_gb:>11}"
            ratios = f"{'n/a':>10} {'n/a':>10}"
        row = (
            f"{n:>6} {1e3 * f64:8.3f}ms {1e3 * scr:8.3f}ms {1e3 * f64_1:8.3f}ms {1e3 * scr_1:8.3f}ms {naive_s} {ratios}"
            f" {f64 / scr:11.2f}× {f64_1 / scr_1:12.2f}×"
        )
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
        results[n] = (f64, scr, naive)

    print()
    if 257 in results and results[257][2] is not None:
        for label, t in (("float64 sweep", results[257][0]), ("screened", results[257][1])):
            ratio = results[257][2] / t
            print(f"target ≥200× naive at n=257, {label}: {ratio:.0f}× -> {'met' if ratio >= 200 else 'NOT met'}")
    if 1370 in results:
        for label, t in (("float64 sweep", results[1370][0]), ("screened", results[1370][1])):
            print(f"target ≤0.1 s per matrix at n=1370, {label}: {t:.3f} s -> {'met' if t <= 0.1 else 'NOT met'}")


if __name__ == "__main__":
    main()
