"""``python -m tools.documents``: write the generated documents (see :mod:`tools.documents`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tools import documents
from tools.documents.kept import COPIED, REPO, copy_kept


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=f"python -m {documents.__name__}", description=documents.__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--copy",
        nargs="*",
        choices=list(COPIED),
        metavar="TARGET",
        help=f"copy the kept outputs of these targets (all: {', '.join(COPIED)}) into docs/offline/ first",
    )
    parser.add_argument("--source", type=Path, default=REPO, help="the checkout whose run --copy reads (this one)")
    parser.add_argument(
        "--shared",
        action="store_true",
        help="--copy a run whose steps waited for cores (a shared machine): its times are kept marked as such",
    )
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when a generated document is stale")
    args = parser.parse_args(argv)
    if args.copy is not None:
        for target in args.copy or COPIED:
            copy_kept(target, args.source.resolve(), shared=args.shared)
    if args.check:
        stale = documents.stale()
        if stale:
            print(f"stale: {', '.join(stale)} (edit the templates, then run {documents.COMMAND})", file=sys.stderr)
            return 1
        return 0
    for name in documents.write():
        print(f"wrote docs/{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
