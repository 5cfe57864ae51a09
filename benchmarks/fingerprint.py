"""Where do this machine's bits part from the kept ones? The fingerprint (rollout_equality.fingerprint) computed
here, for each CPU code path, compared with benchmarks/fingerprint.json (written on the machine named in it).

    python benchmarks/fingerprint.py            # prints, per code path, "same as kept" or the first op that differs
                                                # (rows matched by part and name; another order is said apart)
    python benchmarks/fingerprint.py --write    # keeps this machine's fingerprint instead

Exit status: 0 when every code path is the same as kept, 1 when one differs, 2 on bad input. Minutes: each code path
prepares UCI Adult, trains FT-Transformer for a few steps and runs MiniLM and DINOv2-S in a fresh process.
"""

import argparse
import json
import sys
from pathlib import Path

from rollout_equality.fingerprint import STEPS, compare, fingerprint, order_differences
from rollout_equality.runtime.code_paths import CODE_PATHS

REPO = Path(__file__).resolve().parents[1]
KEPT = REPO / "benchmarks/fingerprint.json"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kept", type=Path, default=KEPT, help="the kept fingerprint (default: %(default)s)")
    parser.add_argument("--write", action="store_true", help="write this machine's fingerprint to --kept instead")
    parser.add_argument("--paths", nargs="+", default=["native", "compatible"], choices=sorted(CODE_PATHS))
    parser.add_argument("--steps", type=int, default=STEPS, help="training steps whose weights are digested")
    parser.add_argument("--configfile", type=Path, default=REPO / "config.yaml")
    args = parser.parse_args(argv)
    if not args.write and not args.kept.is_file():
        print(f"{args.kept}: no kept fingerprint; write one with --write", file=sys.stderr)
        return 2
    mine = fingerprint(args.paths, steps=args.steps, configfile=args.configfile)
    here = mine["machine"]
    print(f"here: {here['cpu']} (torch {here['native_capability']}), lock {here.get('lock', 'none')}")
    if args.write:
        args.kept.write_text(json.dumps(mine, indent=1) + "\n")
        print(f"wrote {args.kept}")
        return 0
    kept = json.loads(args.kept.read_text())
    print(
        f"kept: {kept['machine']['cpu']} (torch {kept['machine']['native_capability']}), lock {kept['machine'].get('lock', 'none')}"
    )
    if kept["steps"] != args.steps:
        print(
            f"the kept fingerprint digests {kept['steps']} steps: compare with --steps {kept['steps']}", file=sys.stderr
        )
        return 2
    verdicts, orders = compare(kept, mine), order_differences(kept, mine)
    for path, verdict in verdicts.items():
        reported = ", ".join(f"{k} {v}" for k, v in mine["paths"][path]["reported"].items())
        print(f"{path} ({reported}): {verdict}")
        if path in orders:
            print(f"  {orders[path]}: rows are matched by name, so the order does not count as a difference")
    return 0 if all(v == "same as kept" for v in verdicts.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
