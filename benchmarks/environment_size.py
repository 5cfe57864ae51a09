"""The disk the prepared environment takes: README's install (the lock and the data wheels), measured.

    .venv/bin/python benchmarks/environment_size.py [--venv .venv] [--out benchmarks/environment_size.json]

Run it with the environment's own Python. It sums the disk blocks of every file under the venv (as ``du`` does,
hard links once), and those of three parts: the CUDA libraries (the ``nvidia`` packages and triton, which Linux
x86-64 and aarch64 install and macOS does not), torch, and the data wheels of requirements/offline-data.txt. It
prints them and, with ``--out``, writes them with the interpreter, the platform, the lock's digest and the day.
docs/targets.md reads the kept file (tools/documents/targets.py).
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import json
import os
import platform
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from rollout_equality.runtime.lock import lock_digest  # noqa: E402
from rollout_equality.runtime.provenance import cpu_model  # noqa: E402

DATA_WHEELS = REPO / "requirements/offline-data.txt"


def disk_bytes(paths, seen: set) -> int:
    """The disk blocks of every file under ``paths`` (a file's hard links counted once, symbolic links not followed)."""
    total = 0
    for top in paths:
        for root, dirs, files in os.walk(top):
            for name in dirs + files:
                st = os.lstat(os.path.join(root, name))
                if (st.st_dev, st.st_ino) not in seen:
                    seen.add((st.st_dev, st.st_ino))
                    total += st.st_blocks * 512
    return total


def data_wheel_files() -> list[Path]:
    """The installed files of every distribution requirements/offline-data.txt pins."""
    names = re.findall(r"^([A-Za-z0-9][\w.-]*)==", DATA_WHEELS.read_text(), flags=re.M)
    files = []
    for name in names:
        dist = importlib.metadata.distribution(name)
        files += [Path(dist.locate_file(f)) for f in dist.files or []]
    return files


def measure(venv: Path) -> dict:
    site = next((venv / "lib").glob("python3*/site-packages"))
    parts = {
        "cuda_libraries": [p for p in [site / "nvidia", site / "triton"] if p.exists()],
        "torch": [site / "torch"],
    }
    sizes = {key: disk_bytes(paths, set()) for key, paths in parts.items()}
    seen: set = set()
    sizes["data_wheels"] = 0
    for f in data_wheel_files():
        if f.exists():
            st = f.lstat()
            if (st.st_dev, st.st_ino) not in seen:
                seen.add((st.st_dev, st.st_ino))
                sizes["data_wheels"] += st.st_blocks * 512
    sizes["total"] = disk_bytes([venv], set())
    return sizes


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--venv", type=Path, default=REPO / ".venv")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    venv = args.venv.resolve()
    if Path(sys.prefix).resolve() != venv:
        parser.error(f"run it with the environment's own Python ({venv}/bin/python), not {sys.executable}")
    sizes = measure(venv)
    for key, size in sizes.items():
        print(f"{key}: {size / 2**30:.2f} GiB")
    if args.out:
        report = {
            "bytes": sizes,
            "python": platform.python_version(),
            "platform": f"{sys.platform} {platform.machine()}",
            "cpu": cpu_model(),
            "lock": lock_digest(REPO / "requirements/lock.txt"),
            "date": datetime.date.today().isoformat(),
        }
        args.out.write_text(json.dumps(report, indent=1) + "\n")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
