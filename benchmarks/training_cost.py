"""What the compatible code path costs FT-Transformer's training: the offline suite's trainings on the native and
the compatible path, side by side on this machine.

    python benchmarks/training_cost.py [--configfile config.yaml] [--suite offline] [--tables ...] [--seeds 0 1 2]

Each table of the suite is prepared once as the workflow prepares it; then each (table, seed) is trained on the
native path and on the compatible path, one after the other, each in a fresh process as rule train_ftt runs it (the
job prelude, the config's threads; the compatible path's PortableAdamW). Prints each training's wall time, CPU time,
epochs and test score per path, then the compatible path's time over the native path's: per training, per epoch
(early stopping may end the two after other numbers of epochs) and summed. A measurement, not a test: run it while
nothing else runs (the 1-minute load average is printed at the start and the end).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from _timing import machine
from _training import prepare, train

from rollout_equality.config.load import load_config

REPO = Path(__file__).resolve().parents[1]
PATHS = ("native", "compatible")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--configfile", type=Path, default=REPO / "config.yaml")
    parser.add_argument("--suite", default="offline", help="whose tables (tabular.suites)")
    parser.add_argument("--tables", nargs="*", help="these tables of the suite only")
    parser.add_argument("--seeds", nargs="*", type=int, help="these seeds only (default: each table's)")
    args = parser.parse_args(argv)
    config = load_config([str(args.configfile)])
    tables = config["tabular"]["suites"].get(args.suite, [])
    unknown = sorted(set(args.tables or []) - set(tables))
    if not tables or unknown:
        print(f"suite {args.suite!r} has the tables {tables}; not {unknown}", file=sys.stderr)
        return 2
    print(f"{machine()}; the {args.suite} suite's trainings of {args.configfile}", flush=True)
    totals = {p: {"wall": 0.0, "cpu": 0.0, "epochs": 0} for p in PATHS}
    with tempfile.TemporaryDirectory() as tmp:
        for table in args.tables or tables:
            spec = prepare(config, table, Path(tmp) / table)
            for seed in args.seeds if args.seeds is not None else spec["seeds"]:
                runs = {p: train(Path(tmp) / table, spec, seed, p)[0] for p in PATHS}
                for p, run in runs.items():
                    m = run["metrics"]
                    totals[p]["wall"] += run["wall"]
                    totals[p]["cpu"] += run["cpu"]
                    totals[p]["epochs"] += m["epochs"]
                    print(
                        f"{table} seed {seed} {p}: {run['wall']:.1f} s, {run['cpu']:.1f} CPU-s, {m['epochs']} epochs "
                        f"({m['seconds_per_epoch']:.2f} s each), test {m['metric']} {m['test']:.6g}",
                        flush=True,
                    )
                native, compatible = (runs[p] for p in PATHS)
                per_epoch = (compatible["wall"] / compatible["metrics"]["epochs"]) / (
                    native["wall"] / native["metrics"]["epochs"]
                )
                print(f"  compatible/native: {compatible['wall'] / native['wall']:.2f}x, {per_epoch:.2f}x per epoch")
    n, c = (totals[p] for p in PATHS)
    print(
        f"all: native {n['wall']:.0f} s ({n['cpu']:.0f} CPU-s, {n['epochs']} epochs), compatible {c['wall']:.0f} s "
        f"({c['cpu']:.0f} CPU-s, {c['epochs']} epochs): {c['wall'] / n['wall']:.2f}x the wall time, "
        f"{c['cpu'] / n['cpu']:.2f}x the CPU time, {(c['wall'] / c['epochs']) / (n['wall'] / n['epochs']):.2f}x per "
        f"epoch; load at the end {os.getloadavg()[0]:.1f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
