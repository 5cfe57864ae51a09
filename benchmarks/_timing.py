"""Timing helper shared by the benchmark scripts."""

import statistics
import time


def median_time(fn, repeats: int) -> float:
    """Median wall time of ``fn()`` over ``repeats`` runs, after one warm-up (compilation, caches, allocator)."""
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def interleaved_medians(fns, repeats: int) -> list[float]:
    """Median wall time of each of ``fns``, timed in rounds (one run of each per round, after one warm-up
    round), so that a slow spell of a shared machine falls on all of them alike rather than on one."""
    for fn in fns:
        fn()
    times = [[] for _ in fns]
    for _ in range(repeats):
        for fn, t in zip(fns, times):
            start = time.perf_counter()
            fn()
            t.append(time.perf_counter() - start)
    return [statistics.median(t) for t in times]
