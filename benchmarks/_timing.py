"""Timing helpers shared by the benchmark scripts, and the machine they ran on."""

import os
import statistics
import time

from rollout_equality.runtime.provenance import cpu_model


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


def _cpuinfo(key: str) -> str:
    try:
        return next(line for line in open("/proc/cpuinfo") if line.startswith(key)).split(":", 1)[1].strip()
    except (OSError, StopIteration):
        return ""


def machine() -> str:
    """The CPU model, the cores this process may use, and the 1-minute load average (a shared machine's timings
    scatter with it)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{cpu_model() or 'unknown CPU'}, {cores} cores, load {os.getloadavg()[0]:.1f}"


def simd() -> str:
    """The widest vector extension the kernels are compiled for: numba's target CPU (``NUMBA_CPU_NAME``, e.g.
    ``haswell`` for AVX2 on an AVX-512 machine) on this CPU's flags."""
    import numba

    flags = _cpuinfo("flags").split()
    target = os.environ.get("NUMBA_CPU_NAME") or numba.config.CPU_NAME or "host"
    if target == "host":
        width = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "SSE"
    else:
        width = {"haswell": "AVX2", "skylake-avx512": "AVX-512", "generic": "SSE"}.get(target, "?")
    return f"{width} (numba target {target})"


def table_row(script: str, size: str, measured: str, time_s: float, ratio: str) -> str:
    """One row of benchmarks/README.md's table: | script | machine | SIMD | size | measured | time | ratio |."""
    t = f"{1e3 * time_s:.3f} ms" if time_s < 1 else f"{time_s:.2f} s"
    return f"| {script} | {machine()} | {simd()} | {size} | {measured} | {t} | {ratio} |"
