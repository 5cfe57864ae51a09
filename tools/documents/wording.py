"""How a number, a list or a table cell reads in a generated document."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence


def cell(text) -> str:
    """``text`` on one line, fit for a Markdown table cell (``|`` escaped)."""
    return " ".join(str(text).split()).replace("|", "\\|")


def markdown_table(header: Sequence[str], rows: Iterable[Sequence]) -> list[str]:
    """A Markdown table: the ``header`` line, its rule, and a line per row, each cell through :func:`cell`."""
    return [
        f"| {' | '.join(header)} |",
        f"| {' | '.join('---' for _ in header)} |",
        *(f"| {' | '.join(cell(c) for c in row)} |" for row in rows),
    ]


def pct(rate: float, digits: int = 1) -> str:
    """``rate`` in percent, without the sign: ``0.245`` -> ``24.5``."""
    return f"{100 * rate:.{digits}f}"


def span(values, digits: int = 0) -> str:
    """``low–high`` of ``values`` in percent (one number when they are all equal at ``digits``)."""
    low, high = pct(min(values), digits), pct(max(values), digits)
    return low if low == high else f"{low}–{high}"


def and_(items: list[str]) -> str:
    """``a, b and c``."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def against(low: float, high: float, claimed: list[float]) -> str:
    """Where the interval [low, high] lies against the claimed range, in a sentence's words
    (:func:`rollout_equality.reporting.claims.placement` judges it)."""
    from rollout_equality.reporting.claims import placement

    where = placement(claimed[0], claimed[1], low, high)
    return where if where == "overlaps" else f"lies {where}"


def sig(x: float, digits: int = 2) -> str:
    """``x`` to ``digits`` significant digits (``3e-4`` style below 1e-3)."""
    if x != 0 and abs(x) < 1e-3:
        return f"{x:.{digits - 1}e}".replace("e-0", "e-")
    return f"{x:.{digits}g}"


def sig_span(values, digits: int = 2) -> str:
    """``low–high`` of ``values`` to ``digits`` significant digits."""
    low, high = sig(min(values), digits), sig(max(values), digits)
    return low if low == high else f"{low}–{high}"


def at_most(x: float) -> str:
    """``x`` rounded up to one significant digit (a bound that holds: 0.0026 -> 0.003)."""
    if x <= 0:
        return "0"
    exponent = math.floor(math.log10(x))
    digit = math.ceil(round(x / 10**exponent, 9))
    if exponent < -3:
        return f"{digit}e{exponent}"
    return f"{digit * 10**exponent:.{max(0, -exponent)}f}"


def minutes(seconds: float) -> str:
    """A duration as read in a sentence: ``45 s``, ``3 min``."""
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


def split(split: dict) -> str:
    """A ``split`` entry as train/validation/test percentages (test: of all rows; val: of the rest), ``64/16/20``."""
    test, val = split["test"], split["val"]
    return "/".join(f"{100 * x:.0f}" for x in ((1 - test) * (1 - val), (1 - test) * val, test))


def seeds(seeds: list[int]) -> str:
    """``seed 0`` or ``seeds 0, 1 and 2``."""
    return f"seed {seeds[0]}" if len(seeds) == 1 else f"seeds {and_([str(s) for s in seeds])}"
