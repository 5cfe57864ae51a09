"""Random-matrix baseline: how often the equality condition holds by chance.

Each trial draws an n × n matrix whose rows are independent and uniform on the
probability simplex (Dirichlet(1, …, 1)) and runs :func:`equality_condition` on
it. Trial t of size n draws from its own generator, seeded by
``SeedSequence(seed, spawn_key=(n, t))``, so the table depends only on
(ns, trials, seed, atol), never on how the trials are split into chunks.
"""

from __future__ import annotations

import logging
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from typing import Iterable

import numpy as np
import pandas as pd
from scipy.stats import binomtest

from rollout_equality.condition.dobrushin import DEFAULT_ENGINE, Engine, equality_condition
from rollout_equality.runtime.files import progress

log = logging.getLogger(__name__)

COLUMNS = ["n", "trials", "holds", "rate", "ci_low", "ci_high"]


def wilson_interval(successes: int, trials: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (scipy.stats.binomtest); (nan, nan) for no trials (there is
    no proportion to bound)."""
    if trials < 0:
        raise ValueError(f"trials must be at least 0; got {trials}")
    if trials == 0:
        return float("nan"), float("nan")
    ci = binomtest(int(successes), int(trials)).proportion_ci(confidence_level=confidence, method="wilson")
    return float(ci.low), float(ci.high)


def interval_row(successes: int, trials: int, count: str = "holds", share: str = "rate") -> dict[str, float]:
    """The columns every table gives a proportion, in this order: ``count`` (the successes), ``share`` (successes /
    trials) and its Wilson 95% interval ``ci_low``, ``ci_high``; the share and the interval are nan for no
    trials."""
    low, high = wilson_interval(successes, trials)
    return {count: successes, share: successes / trials if trials else float("nan"), "ci_low": low, "ci_high": high}


def random_stochastic(n: int, trial: int, seed: int) -> np.ndarray:
    """Trial ``trial``'s matrix of size n: n rows drawn uniformly from the simplex."""
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(n, trial)))
    return rng.dirichlet(np.ones(n), size=n)


def count_holds(
    n: int, start: int, stop: int, seed: int, atol: float, engine: Engine = DEFAULT_ENGINE
) -> tuple[int, int]:
    """Run trials start..stop-1 of size n (analysed with ``engine``).

    Returns (trials where the condition holds, trials where the characterisation
    and the direct computation disagree).
    """
    batch = np.stack([random_stochastic(n, t, seed) for t in range(start, stop)])
    result = equality_condition(batch, atol=atol, engine=engine)
    return int(result.holds.sum()), int((result.holds != result.holds_direct).sum())


def _collect(counts: dict[int, list[int]], n: int, future: Future, bar) -> None:
    holds, disagree = future.result()
    counts[n][0] += holds
    counts[n][1] += disagree
    bar.update()


def _validate(ns: Iterable[int], trials: int, chunk_size: int) -> list[int]:
    ns = [int(n) for n in ns]
    if not ns:
        raise ValueError("ns is empty; give at least one matrix size")
    bad = [n for n in ns if n < 2]
    if bad:
        raise ValueError(f"matrix sizes in ns must be at least 2 (n = 1 has no pair of rows); got {bad}")
    if len(set(ns)) != len(ns):
        raise ValueError(f"ns lists a size twice: {sorted(n for n in set(ns) if ns.count(n) > 1)}")
    if trials < 1:
        raise ValueError(f"trials must be at least 1; got {trials}")
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be at least 1; got {chunk_size}")
    return ns


def random_baseline(
    ns: Iterable[int],
    trials: int,
    seed: int,
    *,
    atol: float,
    chunk_size: int,
    show_progress: bool = True,
    workers: int = 1,
) -> pd.DataFrame:
    """Rate of the equality condition on uniformly random stochastic matrices.

    Returns a DataFrame with one row per n, sorted by n, and columns
    ``n, trials, holds, rate, ci_low, ci_high`` (Wilson 95% interval).
    ``chunk_size`` bounds memory (chunk_size · n² floats at a time) and does
    not change the result, nor does ``workers``: with more than one, chunks run side by side on that many
    threads, each drawing its matrices (numpy's generators release the GIL) and testing them on its own
    thread (a serial :class:`rollout_equality.condition.dobrushin.Engine`). Raises ValueError if the characterisation and
    the direct computation disagree on any trial: that is a bug or a tolerance too
    tight for float64 rounding, not a result.
    """
    ns = _validate(ns, trials, chunk_size)
    rows = []
    chunks = [(n, start, min(start + chunk_size, trials)) for n in sorted(ns) for start in range(0, trials, chunk_size)]
    counts: dict[int, list[int]] = {n: [0, 0] for n in ns}
    if workers < 1:
        raise ValueError(f"workers must be at least 1; got {workers}")
    bar = progress(None, total=len(chunks), desc="random baseline", unit="chunk", disable=not show_progress)
    with bar, ThreadPoolExecutor(max_workers=workers, thread_name_prefix="baseline") as pool:
        # one worker: the kernels' own threads; several: each chunk on its worker's thread alone
        run = partial(count_holds, engine=Engine(serial=workers > 1))
        # at most a few chunks in flight per worker: memory stays bounded by chunk_size
        pending: deque = deque()
        for n, start, stop in chunks:
            pending.append((n, pool.submit(run, n, start, stop, seed, atol)))
            while len(pending) > 2 * workers or (pending and pending[0][1].done()):
                _collect(counts, *pending.popleft(), bar)
        while pending:
            _collect(counts, *pending.popleft(), bar)
    for n in sorted(ns):
        holds, disagree = counts[n]
        if disagree:
            raise ValueError(
                f"n = {n}: the characterisation and the direct computation disagree on {disagree} of "
                f"{trials} trials (atol = {atol:g}); check condition.atol against float64 rounding"
            )
        row = {"n": n, "trials": trials, **interval_row(holds, trials)}
        rows.append(row)
        log.info(
            "n=%d: %d/%d hold (%.2f%%, 95%% CI %.2f-%.2f%%)",
            n,
            holds,
            trials,
            100 * row["rate"],
            100 * row["ci_low"],
            100 * row["ci_high"],
        )
    return pd.DataFrame(rows, columns=COLUMNS)
