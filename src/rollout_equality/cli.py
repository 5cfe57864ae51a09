"""Command line: ``rollout-equality <command>`` (also ``python -m rollout_equality``).

Commands run single pipeline steps outside Snakemake, e.g. to test one matrix
or to regenerate the baseline with other settings.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from rollout_equality.dobrushin import DEFAULT_ATOL, DEFAULT_ROW_SUM_ATOL


def _cmd_condition(args: argparse.Namespace) -> int:
    from rollout_equality.dobrushin import equality_condition

    path = Path(args.matrix)
    if path.suffix == ".npy":
        A = np.load(path)
    elif path.suffix in {".csv", ".txt"}:
        A = np.loadtxt(path, delimiter="," if path.suffix == ".csv" else None, ndmin=2)
    else:
        raise SystemExit(f"error: {path}: give a .npy, .csv or whitespace-separated .txt matrix")
    result = equality_condition(A, atol=args.atol, row_sum_atol=args.row_sum_atol)
    out = {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in result.as_dict().items()}
    json.dump(out, sys.stdout, indent=2)
    print()
    return 0


def _cmd_baseline(args: argparse.Namespace) -> int:
    from rollout_equality.baseline import random_baseline
    from rollout_equality.io import logging_to
    from rollout_equality.tables import write_csv

    with logging_to(args.log):
        df = random_baseline(args.n, args.trials, args.seed, atol=args.atol, chunk_size=args.chunk_size)
        write_csv(df, args.out)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rollout-equality", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("condition", help="test the equality condition on one matrix (or a stack) and print JSON")
    p.add_argument("matrix", help="a .npy array (..., n, n), or a .csv / .txt matrix")
    p.add_argument("--atol", type=float, default=DEFAULT_ATOL, help="condition tolerance (default %(default)g)")
    p.add_argument("--row-sum-atol", type=float, default=DEFAULT_ROW_SUM_ATOL, help="row-sum tolerance (default %(default)g)")
    p.set_defaults(func=_cmd_condition)

    p = sub.add_parser("baseline", help="random-matrix baseline table (CSV)")
    p.add_argument("--n", type=int, nargs="+", required=True, help="matrix sizes")
    p.add_argument("--trials", type=int, required=True, help="matrices per size")
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--atol", type=float, default=DEFAULT_ATOL)
    p.add_argument("--chunk-size", type=int, default=256, help="matrices tested at once (memory only)")
    p.add_argument("--out", required=True, help="CSV to write")
    p.add_argument("--log", default=None, help="log file (default: stderr)")
    p.set_defaults(func=_cmd_baseline)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
