"""Does this machine train the kept FT-Transformers? The offline suite's trainings on the compatible code path
(overlays/compatible.yaml), checked against docs/offline/compatible/ftt_trainings.json, written on the machine it names.

    python benchmarks/trainings.py [--cores 2] [--work DIR]   # trains them here in a fresh folder, then checks
    python benchmarks/trainings.py --run DIR                   # checks a run that trained them with the overlay
    python benchmarks/trainings.py --run DIR --write           # keeps DIR's trainings (and this machine's
                                                               # fingerprint of the compatible path) instead

Per training (table and seed): "same as kept", or the first epoch whose weights differ (every training records the
SHA-256 of its weights after each epoch) and both test scores. When one differs, the fingerprint of the compatible
path (rollout_equality.fingerprint: every op of FT-Transformer's first training step on UCI Adult) is computed here
and compared with the one kept beside the trainings, made on the same machine as they were: it names the first op
where this machine's bits part. Exit status: 0 when every training is the same as kept, 1 when one differs, 2 on bad
input. Training takes about twice the native trainings' time (docs/outputs.md#reproducibility).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from rollout_equality.config.checks import resolved_tables
from rollout_equality.config.load import load_config
from rollout_equality.config.paths import FTT_MODEL
from rollout_equality.fingerprint import (
    compare,
    compare_trainings,
    fingerprint,
    order_differences,
    trainings,
)

REPO = Path(__file__).resolve().parents[1]
CONFIGS = [REPO / "config.yaml", REPO / "overlays/compatible.yaml"]
KEPT = REPO / "docs/offline/compatible"
TRAININGS, FINGERPRINT = "ftt_trainings.json", "fingerprint.json"
SUITE = "offline"


def targets(config: dict) -> list[str]:
    """The checkpoints of the suite's trainings, as the workflow names them."""
    tables = resolved_tables(config)
    return [FTT_MODEL.format(tabular=t, seed=s) for t in config["tabular"]["suites"][SUITE] for s in tables[t]["seeds"]]


def train(work: Path, cores: int, config: dict) -> None:
    """The suite's trainings in ``work`` (Snakemake, this checkout's workflow and the overlay)."""
    args = [sys.executable, "-m", "snakemake", "--cores", str(cores), "--directory", str(work)]
    args += [*targets(config), "--configfile", *map(str, CONFIGS)]
    print(f"training in {work}: {' '.join(args[3:])}", flush=True)
    done = subprocess.run(args, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    if done.returncode != 0:
        raise SystemExit(f"the trainings failed (Snakemake's log is under {work}/.snakemake/log)")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", type=Path, help="a folder whose run trained them (default: train them here first)")
    parser.add_argument("--work", type=Path, help="where to train them (default: a temporary folder, removed)")
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--kept", type=Path, default=KEPT, help="the kept trainings' folder (default: %(default)s)")
    parser.add_argument("--write", action="store_true", help="keep --run's trainings in --kept instead")
    args = parser.parse_args(argv)
    config = load_config([str(c) for c in CONFIGS])
    if args.write and args.run is None:
        print("--write keeps a finished run's trainings: give it with --run", file=sys.stderr)
        return 2
    if not args.write and not (args.kept / TRAININGS).is_file():
        print(f"{args.kept / TRAININGS}: no kept trainings; write them with --run DIR --write", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        run = args.run
        if run is None:
            run = args.work or Path(tmp)
            train(run, args.cores, config)
        try:
            mine = trainings(run, config, SUITE, REPO / "requirements/lock.txt")
        except FileNotFoundError as err:
            print(err, file=sys.stderr)
            return 2
    wrong = [t for t in mine["trainings"] if t["code_path"] != mine["trainings"][0]["code_path"]]
    if args.write:
        if wrong or not mine["trainings"][0]["code_path"]:
            print(f"{run} did not train every table on the compatible path: run it with {CONFIGS[1]}", file=sys.stderr)
            return 2
        args.kept.mkdir(parents=True, exist_ok=True)
        (args.kept / TRAININGS).write_text(json.dumps(mine, indent=1) + "\n")
        print(f"wrote {args.kept / TRAININGS}; the compatible path's fingerprint of this machine next", flush=True)
        found = fingerprint(("compatible",), configfile=REPO / "config.yaml")
        (args.kept / FINGERPRINT).write_text(json.dumps(found, indent=1) + "\n")
        print(f"wrote {args.kept / FINGERPRINT}")
        return 0
    kept = json.loads((args.kept / TRAININGS).read_text())
    print(f"here: {mine['machine']['cpu']}, lock {mine['machine'].get('lock', 'none')}")
    print(f"kept: {kept['machine']['cpu']}, lock {kept['machine'].get('lock', 'none')}")
    verdicts = compare_trainings(kept, mine)
    for label, verdict in verdicts.items():
        print(f"{label}: {verdict}")
    if all(v == "same as kept" for v in verdicts.values()):
        return 0
    kept_fingerprint = json.loads((args.kept / FINGERPRINT).read_text())
    print("a training differs: the compatible path's fingerprint here, against the kept machine's", flush=True)
    found = fingerprint(("compatible",), steps=kept_fingerprint["steps"], configfile=REPO / "config.yaml")
    print(f"fingerprint: {compare(kept_fingerprint, found)['compatible']}")
    for order in order_differences(kept_fingerprint, found).values():
        print(f"  {order}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
