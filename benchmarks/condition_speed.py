"""Time per matrix of the condition test against the naive numpy broadcast version.

    python benchmarks/condition_speed.py [--sizes 16 197 257 1370] [--repeats 5]

Prints one row per size: the CPU kernel with the float32 screen (the default engine of
rollout_equality.condition.dobrushin.equality_condition) and with the float64 sweep alone
(``Engine(screen=False)``; the same results bit for bit), each on numba's threads and on one
thread (the serial engine the records' workers use), the naive version
(rollout_equality.condition.naive.naive_condition, skipped where its (n, n, n) temporaries would not fit
in --naive-max-gb), and the ratios; then the targets, and the rows of benchmarks/README.md's table.
Targets: ≥200× the naive version at n = 257, at most 0.1 s per matrix at n = 1370, on 2 cores.
A measurement script, not a test: timings on a shared machine are noisy, so each figure is
the median of --repeats rounds, the kernels timed one after the other in each round
(after a warm-up round), so that a slow spell falls on all of them alike. ``NUMBA_CPU_NAME=haswell``
compiles the kernels for AVX2 on an AVX-512 machine.
"""

from __future__ import annotations

import argparse

import numpy as np
from _timing import interleaved_medians, machine, median_time, simd, table_row

from rollout_equality.condition.dobrushin import DEFAULT_ATOL, Engine, equality_condition
from rollout_equality.condition.naive import naive_condition

ENGINES = {
    "f64 thr": Engine(screen=False),
    "scr thr": Engine(),
    "f64 1thr": Engine(screen=False, serial=True),
    "scr 1thr": Engine(serial=True),
}
"""The engines timed, by column: the float64 sweep alone and the screen, on numba's threads and on one thread."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[16, 197, 257, 1370])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--naive-max-gb", type=float, default=3.0, help="skip the naive version above this much memory")
    args = parser.parse_args()

    import numba

    print(f"{machine()}   numba threads: {numba.get_num_threads()}   SIMD: {simd()}")
    print(
        f"{'n':>6} " + " ".join(f"{name:>10}" for name in ENGINES) + f" {'naive':>11}"
        f" {'naive/f64':>10} {'naive/scr':>10} {'f64/scr thr':>12} {'f64/scr 1thr':>13}"
    )
    rng = np.random.default_rng(0)
    rows = []
    results = {}
    for n in args.sizes:
        A = rng.dirichlet(np.ones(n), size=n)
        times = dict(
            zip(
                ENGINES,
                interleaved_medians(
                    [lambda e=e: equality_condition(A, engine=e) for e in ENGINES.values()], args.repeats
                ),
            )
        )
        f64, scr = times["f64 thr"], times["scr thr"]
        naive_gb = 3 * 8 * n**3 / 1e9  # difference, |difference| and B's difference arrays
        if naive_gb <= args.naive_max_gb:
            naive = median_time(lambda: naive_condition(A, DEFAULT_ATOL), max(1, args.repeats // 2))
            naive_s = f"{1e3 * naive:9.2f}ms"
            ratios = f"{naive / f64:9.0f}× {naive / scr:9.0f}×"
        else:
            naive = None
            naive_s = f"{'(%.0f GB)' % naive_gb:>11}"
            ratios = f"{'n/a':>10} {'n/a':>10}"
        print(
            f"{n:>6} " + " ".join(f"{1e3 * t:8.3f}ms" for t in times.values()) + f" {naive_s} {ratios}"
            f" {f64 / scr:11.2f}× {times['f64 1thr'] / times['scr 1thr']:12.2f}×",
            flush=True,
        )
        results[n] = (f64, scr, naive)
        threads = f"{numba.get_num_threads()} threads"
        for label, t, over in (
            (f"screen, {threads}", scr, None),
            (f"float64 sweep, {threads}", f64, scr),
            ("screen, 1 thread", times["scr 1thr"], None),
            ("float64 sweep, 1 thread", times["f64 1thr"], times["scr 1thr"]),
        ):
            ratio = [f"{naive / t:.0f}× naive"] if naive is not None else []
            if over is not None:
                ratio.append(f"{t / over:.2f}× the screen's time")
            rows.append(table_row("condition_speed", f"n = {n}", label, t, ", ".join(ratio) or "–"))

    print()
    if 257 in results and results[257][2] is not None:
        for label, t in (("float64 sweep", results[257][0]), ("screened", results[257][1])):
            ratio = results[257][2] / t
            print(f"target ≥200× naive at n=257, {label}: {ratio:.0f}× -> {'met' if ratio >= 200 else 'NOT met'}")
    if 1370 in results:
        for label, t in (("float64 sweep", results[1370][0]), ("screened", results[1370][1])):
            print(f"target ≤0.1 s per matrix at n=1370, {label}: {t:.3f} s -> {'met' if t <= 0.1 else 'NOT met'}")
    print("\nrows of benchmarks/README.md's table:")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
