"""The abstract's claims beside this run's numbers, and the macros the paper's prose quotes.

The claims are data: the ``claims:`` section of config.yaml (validated by the schema; every subject
checked by :func:`rollout_equality.config.checks.check_references`). Each entry has a ``kind``:

* ``baseline``: the condition's rate on uniformly random stochastic matrices lies in ``range`` for every
  size n ≥ ``min_n`` (smaller sizes are shown in the note, outside the claim);
* ``rate``: the rate over all input-layer pairs of each subject on ``token_set`` lies in ``range``;
* ``late_failures``: every layer of a subject at normalised depth below ``early_depth`` holds for at least
  ``min_rate`` of the inputs (the failures are late in depth);
* ``special_tokens``: of the input-layer pairs failing on all tokens, the share that holds once the special
  tokens are removed lies in ``range`` (the special tokens account for the failures).

Subjects are model names (``models:``) or ``ftt:<table>`` (every FT-Transformer seed of that table pooled).
``out_of_sample`` models are measured the same way and set beside the claim, labelled so (status
``agrees`` / ``disagrees``: they are not the paper's models). A verdict is ``reproduced`` when our Wilson 95%
interval meets the claimed range, ``not reproduced`` otherwise, ``not run`` (with the reason) without records. A
result outside the range says on which side it lies ("above the range" / "below the range", after our number).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from rollout_equality.condition.baseline import interval_row
from rollout_equality.condition.records import seeded
from rollout_equality.config.checks import FTT_PREFIX, baseline_claim

COLUMNS = ["claim", "subject", "paper", "ours", "status", "note"]
SENSITIVITY = "recipe-dependent"
"""Status of the claims row that reports the recipe ablation's range (not a reproduction verdict)."""
OUT_OF_SAMPLE_STATUS = {"reproduced": "agrees", "not reproduced": "disagrees"}
"""An out-of-sample model does not reproduce or fail to reproduce the paper: it agrees with a claim or not."""


def compared_range(
    spec: Mapping[str, Mapping[str, Any]], kind: str, subject: str, token_set: str
) -> tuple[float, float, str] | None:
    """The claimed range a run's rate on ``token_set`` is read against, as (low, high, the claim's name): for ``kind``
    ``trained`` the first claim of kind rate on ``token_set`` that names ``subject`` (a model) among its subjects or
    out of sample; for ``ftt`` (``subject`` = ``ftt:<table>``) the claim naming that table, else the first rate claim
    on ``token_set`` about FT-Transformer runs; for ``untrained control`` the random-matrix claim (kind
    ``baseline``: an untrained network's attention set beside uniformly random rows). None when no claim applies."""
    if kind == "untrained control":
        found = [(name, c) for name, c in spec.items() if c["kind"] == "baseline"]
    else:
        rates = [(name, c) for name, c in spec.items() if c["kind"] == "rate" and c["token_set"] == token_set]
        if kind == "ftt":
            found = [(name, c) for name, c in rates if subject in c["subjects"]]
            found = found or [(n, c) for n, c in rates if any(s.startswith(FTT_PREFIX) for s in c["subjects"])]
        else:
            found = [(n, c) for n, c in rates if subject in c["subjects"] or subject in c.get("out_of_sample", {})]
    if not found:
        return None
    name, claim = found[0]
    return claim["range"][0], claim["range"][1], name


def paper_range(claim: Mapping[str, Any]) -> str:
    """How the claims table states a claimed range (``82%–97%``; a narrow one as its midpoint, ``91%``)."""
    if claim["kind"] == "late_failures":
        return "late only"
    low, high = claim["range"]
    return f"{low:.0%}–{high:.0%}" if high - low > 0.03 else f"{(low + high) / 2:.0%}"


def placement(low: float, high: float, ci_low: float, ci_high: float) -> str:
    """Where the interval [ci_low, ci_high] lies against the claimed range [low, high]: ``above`` or ``below`` it
    (it misses the range), ``within`` it or ``overlaps`` it (it meets the range), ``unknown`` for an interval that
    is not a number. The one judgement of an interval against a range: the claims' status and side, the depth
    figure and the generated documents read it."""
    if ci_low > high:
        return "above"
    if ci_high < low:
        return "below"
    if low <= ci_low and ci_high <= high:
        return "within"
    if ci_high >= low and ci_low <= high:
        return "overlaps"
    return "unknown"


def _status(low: float, high: float, ci_low: float, ci_high: float) -> str:
    return "reproduced" if placement(low, high, ci_low, ci_high) in ("within", "overlaps") else "not reproduced"


def side(low: float, high: float, ci_low: float, ci_high: float) -> str:
    """Where the interval [ci_low, ci_high] lies against the claimed range [low, high] when it misses it:
    ``above the range`` or ``below the range``; ``""`` when it meets it (:func:`placement`)."""
    where = placement(low, high, ci_low, ci_high)
    return f"{where} the range" if where in ("above", "below") else ""


def _beside(ours: str, where: str) -> str:
    """Our number, followed by the side of the range it lies on when it misses the range."""
    return f"{ours}, {where}" if where else ours


def _small_n_note(small: pd.DataFrame) -> str:
    """What the baseline claim leaves out: the sizes below its cut and their rates ("n = 3: 33.2%, ..., left out")."""
    if small.empty:
        return ""
    return ", ".join(f"n = {int(r.n)}: {r.rate:.1%}" for r in small.itertuples()) + ", left out"


def _row(claim: Mapping[str, Any], subject: str, ours: str, status: str, note: str) -> dict[str, str]:
    return {
        "claim": claim["text"],
        "subject": subject,
        "paper": paper_range(claim),
        "ours": ours,
        "status": status,
        "note": note,
    }


def _interval(rate: float, low: float, high: float) -> str:
    return f"{rate:.1%} [{low:.1%}, {high:.1%}]"


def _baseline_rows(claim, baseline: pd.DataFrame | None) -> list[dict]:
    if baseline is None or baseline.empty:
        return [_row(claim, "random matrices", "", "not run", "no random-baseline table")]
    low, high = claim["range"]
    large = baseline[baseline["n"] >= claim["min_n"]]
    if large.empty:
        return [_row(claim, "random matrices", "", "not run", f"no size n ≥ {claim['min_n']} in baseline.ns")]
    sides: dict[str, list[str]] = {}
    for r in large.itertuples():
        where = side(low, high, r.ci_low, r.ci_high)
        if where:
            sides.setdefault(where, []).append(str(r.n))
    ours = f"{large['rate'].min():.1%}–{large['rate'].max():.1%}"
    return [
        _row(
            claim,
            f"n = {large['n'].min()}–{large['n'].max()}",
            "; ".join([ours] + [f"{where} at n = {', '.join(ns)}" for where, ns in sides.items()]),
            "not reproduced" if sides else "reproduced",
            _small_n_note(baseline[baseline["n"] < claim["min_n"]]),
        )
    ]


def _pooled_ftt_row(claim, subject: str, sel: pd.DataFrame) -> dict:
    """One row for the FT-Transformer runs of a table: every seed's input-layer pairs pooled (Wilson
    interval), the per-seed rates' range in the note."""
    low, high = claim["range"]
    n = int(sel["pairs"].sum())
    pooled = interval_row(int(sel["holds"].sum()), n)
    ci_low, ci_high = pooled["ci_low"], pooled["ci_high"]
    seeds = sel.sort_values("seed")
    spread = ", ".join(f"seed{s}: {r:.1%}" for s, r in zip(seeds["seed"], seeds["rate"]))
    return _row(
        claim,
        f"{subject} on {sel['dataset'].iloc[0]} ({len(sel)} seed{'' if len(sel) == 1 else 's'} pooled)",
        _beside(_interval(pooled["rate"], ci_low, ci_high), side(low, high, ci_low, ci_high)),
        _status(low, high, ci_low, ci_high),
        f"seeds {seeds['rate'].min():.1%}–{seeds['rate'].max():.1%} ({spread}); {n} input-layer pairs",
    )


def _ablation_row(claim, ablation: pd.DataFrame) -> dict:
    """The row that shows how much the FT-Transformer rate depends on the recipe (the ablation's summary)."""
    low, high = claim["range"]
    inside = ablation[(ablation["content_ci_high"] >= low) & (ablation["content_ci_low"] <= high)]
    ref = ablation[ablation["changes"] == "reference recipe"]
    ref_text = f"; reference recipe {ref['content_rate'].iloc[0]:.1%}" if len(ref) else ""
    seeds = int(ablation["seeds"].max())
    return _row(
        claim,
        f"recipe ablation ({len(ablation)} settings × {seeds} seed{'' if seeds == 1 else 's'})",
        f"{ablation['content_rate'].min():.1%}–{ablation['content_rate'].max():.1%} across settings{ref_text}",
        SENSITIVITY,
        "settings within the paper's range: " + (", ".join(inside["setting"]) or "none"),
    )


def _rate_rows(claim, subject: str, rates: pd.DataFrame, label: str | None) -> list[dict]:
    low, high = claim["range"]
    token_set = claim["token_set"]
    if subject.startswith(FTT_PREFIX):
        sel = rates[
            (rates["dataset"] == subject.removeprefix(FTT_PREFIX)) & seeded(rates) & (rates["token_set"] == token_set)
        ]
        return [_pooled_ftt_row(claim, subject, sel)] if len(sel) else []
    rows = []
    for r in rates[(rates["model"] == subject) & (rates["token_set"] == token_set)].itertuples():
        status = _status(low, high, r.ci_low, r.ci_high)
        note = f"{r.pairs} input-layer pairs"
        rows.append(
            _row(
                claim,
                f"{subject} on {r.dataset}" + (" (out of sample)" if label else ""),
                _beside(_interval(r.rate, r.ci_low, r.ci_high), side(low, high, r.ci_low, r.ci_high)),
                OUT_OF_SAMPLE_STATUS[status] if label else status,
                f"not a paper model ({label}); {note}" if label else note,
            )
        )
    return rows


def _late_rows(claim, subject: str, depth: pd.DataFrame | None, label: str | None) -> list[dict]:
    if depth is None:
        return []
    sel = depth[(depth["model"] == subject) & (depth["token_set"] == claim["token_set"])]
    rows = []
    for dataset, g in sel.groupby("dataset", sort=True):
        early = g[g["depth"] < claim["early_depth"]]
        failing = g[g["rate"] < claim["min_rate"]]
        first = failing["depth"].min() if len(failing) else None
        status = "reproduced" if (early["rate"] >= claim["min_rate"]).all() else "not reproduced"
        rows.append(
            _row(
                claim,
                f"{subject} on {dataset}" + (" (out of sample)" if label else ""),
                "no failures" if first is None else f"first layer below {claim['min_rate']:.0%} at depth {first:.2f}",
                OUT_OF_SAMPLE_STATUS[status] if label else status,
                (f"not a paper model ({label}); " if label else "") + f"{len(g)} layers",
            )
        )
    return rows


def _special_rows(claim, subject: str, special: pd.DataFrame | None, label: str | None) -> list[dict]:
    if special is None:
        return []
    low, high = claim["range"]
    rows = []
    for r in special[special["model"] == subject].itertuples():
        # no pair failing on all tokens: nothing for the special tokens to account for (the claim holds vacuously)
        status = _status(low, high, r.ci_low, r.ci_high) if r.failing_all else "reproduced"
        rows.append(
            _row(
                claim,
                f"{subject} on {r.dataset}" + (" (out of sample)" if label else ""),
                _beside(_interval(r.share, r.ci_low, r.ci_high), side(low, high, r.ci_low, r.ci_high))
                if r.failing_all
                else "no pair fails on all tokens",
                OUT_OF_SAMPLE_STATUS[status] if label else status,
                (f"not a paper model ({label}); " if label else "")
                + f"{r.content_holds} of the {r.failing_all} pairs failing on all tokens hold on content tokens",
            )
        )
    return rows


def claims(
    spec: Mapping[str, Mapping[str, Any]],
    rates: pd.DataFrame,
    baseline: pd.DataFrame | None,
    depth: pd.DataFrame | None = None,
    ablation: pd.DataFrame | None = None,
    special: pd.DataFrame | None = None,
    not_run: Mapping[str, str] | None = None,
    ablation_claim: str | None = None,
) -> pd.DataFrame:
    """The claims table: every claim of ``spec`` (config ``claims:``, in order) beside this run's numbers.

    rates: :func:`rollout_equality.reporting.stats.model_rates` of the run's records; depth:
    :func:`~rollout_equality.reporting.stats.depth_rates`; special: :func:`~rollout_equality.reporting.stats.special_token_shares`;
    baseline: the random-baseline table. ``not_run`` maps a subject to why this run has no records of it (e.g.
    "measured by suite 'paper', not this one"); a subject without records and without a reason is said to
    have no records among this run's inputs. ``ablation`` (the recipe ablation's summary,
    :func:`rollout_equality.reporting.ftt_ablation.ablation_tables`) adds one row after the claim named ``ablation_claim``
    whose status is ``recipe-dependent``: the rate's range across the recipe's settings.
    """
    not_run = not_run or {}
    rows: list[dict] = []
    for name, claim in spec.items():
        if claim["kind"] == "baseline":
            rows += _baseline_rows(claim, baseline)
            continue
        subjects = [(s, None) for s in claim["subjects"]] + list(claim.get("out_of_sample", {}).items())
        for subject, label in subjects:
            if claim["kind"] == "rate":
                found = _rate_rows(claim, subject, rates, label)
            elif claim["kind"] == "late_failures":
                found = _late_rows(claim, subject, depth, label)
            else:
                found = _special_rows(claim, subject, special, label)
            if not found and label is None:  # out-of-sample models appear only where they were run
                reason = not_run.get(subject, "no records of it among this run's inputs")
                found = [_row(claim, subject, "", "not run", reason)]
            rows += found
        if name == ablation_claim and ablation is not None and not ablation.empty:
            rows.append(_ablation_row(claim, ablation))
    return pd.DataFrame(rows, columns=COLUMNS)


def macros(claim_table: pd.DataFrame, baseline: pd.DataFrame | None, spec: Mapping[str, Mapping[str, Any]]) -> str:
    """LaTeX macros holding the numbers the paper's prose quotes, so no result is typed by hand."""
    status = claim_table["status"]
    # the abstract's numbers: not the extra models, not the recipe ablation's range
    paper_rows = ~status.isin([*OUT_OF_SAMPLE_STATUS.values(), SENSITIVITY])
    lines = [
        "% Generated by rollout_equality.reporting.claims.macros; do not edit.",
        f"\\newcommand{{\\NClaims}}{{{int(paper_rows.sum())}}}",
        f"\\newcommand{{\\NClaimsReproduced}}{{{int((status == 'reproduced').sum())}}}",
        f"\\newcommand{{\\NClaimsNotReproduced}}{{{int((status == 'not reproduced').sum())}}}",
        f"\\newcommand{{\\NClaimsNotRun}}{{{int((status == 'not run').sum())}}}",
    ]
    claim = baseline_claim(spec)
    if claim is not None:
        low, high = claim["range"]
        lines += [
            f"\\newcommand{{\\BaselineClaimLow}}{{{100 * low:.0f}}}",
            f"\\newcommand{{\\BaselineClaimHigh}}{{{100 * high:.0f}}}",
        ]
    if claim is not None and baseline is not None and not baseline.empty:
        large = baseline[baseline["n"] >= claim["min_n"]]
        if len(large):
            lines += [
                f"\\newcommand{{\\BaselineLow}}{{{100 * large['rate'].min():.1f}}}",
                f"\\newcommand{{\\BaselineHigh}}{{{100 * large['rate'].max():.1f}}}",
                f"\\newcommand{{\\BaselineTrials}}{{{int(baseline['trials'].iloc[0])}}}",
                f"\\newcommand{{\\BaselineNmin}}{{{int(large['n'].min())}}}",
                f"\\newcommand{{\\BaselineNmax}}{{{int(large['n'].max())}}}",
            ]
    return "\n".join(lines) + "\n"
