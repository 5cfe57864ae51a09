"""The offline suite's time from a fresh clone, split into Snakemake's start and each kind of step, and the ratio
of two commits run one after the other on this machine.

    python benchmarks/suite_time.py --base d9e615e [--head HEAD] [--target offline] [--cores 2] [--work DIR]
    python benchmarks/suite_time.py --repeats 3 [--head HEAD] [--tiny]      # the median of 3 runs of one commit
    python benchmarks/suite_time.py --repeats 3 --out docs/offline/times/offline.txt   # a time README states

For each commit (the base first, then the head): a fresh clone of this repository at that commit, then
`snakemake --cores N TARGET` in it with this environment's Python (the environment is installed once, before:
what the clones share), timed end to end; `--tiny` runs README's tiny run instead (the tiny configuration in a
folder of its own, its targets). Snakemake's log gives each job's start and end (to the second): the
time before the first job (Snakemake's start: parsing, the DAG), each rule's summed job time (measure's split into
its fixed cost before the first batch and after the last, and the batches: :func:`measure_split`), and the time in
which no job ran; the CPU time of Snakemake and every job (divided by the cores: the least wall time the work allows).
Prints both runs side by side and head/base. Absolute times move from machine to machine; the ratio,
measured on one machine, holds. Run it while nothing else runs (the 1-minute load average is printed before and
after each run). A measurement script, not a test.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from datetime import date, datetime
from pathlib import Path
from typing import NamedTuple

from _timing import machine

REPO = Path(__file__).resolve().parents[1]
STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]$")
START = re.compile(r"^(?:local)?rule (\w+):$")
JOBID = re.compile(r"^\s+jobid: (\d+)$")
FINISHED = re.compile(r"^Finished jobid: (\d+) \(Rule: (\w+)\)$")
JOB_LOG = re.compile(r"^\s+log: (\S+?),?$")


class Job(NamedTuple):
    """One finished job of a Snakemake log: its start and end (to the second) and its log file (None: no log)."""

    start: datetime
    end: datetime
    log: str | None


def job_times(log: str) -> tuple[datetime | None, dict[str, list[Job]]]:
    """From a Snakemake log: the first job's start, and each rule's finished jobs."""
    now, rule, started = None, None, {}
    jobs: dict[str, list[Job]] = defaultdict(list)
    first, job_log = None, None
    for line in log.splitlines():
        if m := STAMP.match(line):
            now = datetime.strptime(m.group(1), "%a %b %d %H:%M:%S %Y")
        elif m := START.match(line):
            rule, job_log = m.group(1), None
        elif (m := JOB_LOG.match(line)) and rule is not None:
            job_log = m.group(1)
        elif (m := JOBID.match(line)) and rule is not None:
            started[m.group(1)] = (rule, now, job_log)
            first = first or now
            rule = None
        elif m := FINISHED.match(line):
            name, start, job_log = started.pop(m.group(1), (m.group(2), None, None))
            if start is not None:
                jobs[name].append(Job(start, now, job_log))
    return first, jobs


LOGGED = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),\d{3} ")


def measure_split(jobs: list[Job], folder: Path) -> dict[str, float]:
    """Rule measure's summed job time (its ``jobs`` from :func:`job_times`, their logs relative to ``folder``) split at
    each job's log lines: before the first batch (the job's start to its ``measuring …`` line: the Python start, the
    imports, loading or drawing the weights, reading the inputs), the batches (to its last line: forward passes and
    analysis, the records written) and after the last line (the summaries, the process's exit, Snakemake noticing).
    Snakemake stamps a job's start and end to the second."""
    split = {"before the first batch": 0.0, "the batches": 0.0, "after the last": 0.0}
    for job in jobs:
        if job.log is None:
            continue
        text = (folder / job.log).read_text(errors="replace").replace("\r", "\n")
        stamped = [
            (datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S"), line)
            for line in text.splitlines()
            if (m := LOGGED.match(line))
        ]
        first = next((t for t, line in stamped if " measuring " in line), None)
        if first is None:
            continue
        split["before the first batch"] += (first - job.start).total_seconds()
        last = stamped[-1][0]
        split["the batches"] += (last - first).total_seconds()
        split["after the last"] += (job.end - last).total_seconds()
    return split


TINY = ["--configfile", ".test/config.yaml", "--directory", "tiny"]
"""README's tiny run (tools/documents/tiny.py states it), less its cores and targets."""
TINY_TARGETS = ["offline", "dynamics_offline"]


def run(commit: str, target: list[str], cores: int, work: Path, extra: list[str] = ()) -> dict:
    """Clone at ``commit`` into ``work``, run the target, and time it (see the module)."""
    sha = subprocess.run(["git", "-C", str(REPO), "rev-parse", commit], capture_output=True, text=True, check=True)
    commit = sha.stdout.strip()
    clone = work / f"{commit}-{len(list(work.iterdir()))}"
    subprocess.run(["git", "clone", "--quiet", "--no-checkout", str(REPO), str(clone)], check=True)
    subprocess.run(["git", "-C", str(clone), "checkout", "--quiet", commit], check=True)
    load = os.getloadavg()[0]
    began = datetime.now().replace(microsecond=0)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "snakemake", *extra, "--cores", str(cores), *target],
        cwd=clone,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(clone / "src")},  # the clone's library, not the environment's install
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)  # Snakemake and every job: it waits for each of them
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    if done.returncode != 0:
        raise SystemExit(f"{commit}: snakemake failed in {clone}:\n{done.stderr[-3000:]}")
    (log,) = sorted(clone.glob("**/.snakemake/log/*.snakemake.log"))[-1:]
    first, jobs = job_times(log.read_text())
    intervals = sorted((job.start, job.end) for spans in jobs.values() for job in spans)
    busy, end = 0.0, None
    for a, b in intervals:  # the union of the jobs' intervals
        if end is None or a > end:
            busy += (b - a).total_seconds()
            end = b
        elif b > end:
            busy += (b - end).total_seconds()
            end = b
    startup = (first - began).total_seconds() if first else wall
    return {
        "commit": subprocess.run(
            ["git", "-C", str(clone), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        ).stdout.strip(),
        "wall": wall,
        "cpu": cpu,
        "startup": startup,
        "idle": max(0.0, wall - startup - busy),
        "rules": {r: sum((job.end - job.start).total_seconds() for job in spans) for r, spans in jobs.items()},
        "measure": measure_split(jobs["measure"], log.parents[2]),  # job logs are relative to the run's folder
        "load": (load, os.getloadavg()[0]),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", help="the commit to compare with (e.g. d9e615e)")
    parser.add_argument("--head", default="HEAD", help="the commit measured (default: %(default)s)")
    parser.add_argument("--target", nargs="+", default=["offline"])
    parser.add_argument("--tiny", action="store_true", help="README's tiny run (its config, folder and targets)")
    parser.add_argument("--repeats", type=int, default=1, help="without --base: runs of --head, and their median")
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--work", type=Path, help="where the clones go (default: a temporary folder, removed)")
    parser.add_argument("--keep", action="store_true", help="keep the clones (e.g. for tools.documents --copy)")
    parser.add_argument(
        "--out", type=Path, help="also write the report to this file (docs/offline/times/ keeps those README states)"
    )
    args = parser.parse_args(argv)
    if args.out is not None:
        report = _Tee(args.out)
        try:
            with contextlib.redirect_stdout(report):
                return _main(args)
        finally:
            report.close()
    return _main(args)


class _Tee:
    """Standard output, and the report's lines (those printed after the runs) into a file too."""

    def __init__(self, path: Path):
        self.stdout, self.path, self.lines = sys.stdout, path, []

    def write(self, text: str) -> int:
        self.lines.append(text)
        return self.stdout.write(text)

    def flush(self) -> None:
        self.stdout.flush()

    def close(self) -> None:
        text = "".join(self.lines)
        if "end to end" in text:  # a finished measurement, not a failure's message
            self.path.write_text("".join(line for line in text.splitlines(True) if not line.startswith("the clones:")))


def _main(args) -> int:
    extra, target = (TINY, TINY_TARGETS) if args.tiny else ([], args.target)
    what = f"snakemake {' '.join(extra)} --cores {args.cores} {' '.join(target)}"
    if args.work is not None:
        args.work.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=args.work, prefix="suite_time-"))
    if args.keep:
        print(f"the clones: {tmp}", flush=True)
    try:
        if args.base is None:
            runs = [run(args.head, target, args.cores, tmp, extra) for _ in range(args.repeats)]
            print(f"{machine()}; {what} from a fresh clone of {runs[0]['commit']}, {args.repeats} runs, {date.today()}")
            for r in runs:
                print(
                    f"end to end {r['wall']:.0f} s (Snakemake's start {r['startup']:.0f} s), "
                    f"CPU time {r['cpu']:.0f} s, "
                    f"load {r['load'][0]:.1f}/{r['load'][1]:.1f}"
                )
            print(f"median: {statistics.median(r['wall'] for r in runs):.0f} s")
            return 0
        base = run(args.base, target, args.cores, tmp, extra)
        head = run(args.head, target, args.cores, tmp, extra)
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"{machine()}; {what} from a fresh clone of each commit, {date.today()}")
    print(f"{'':32} {base['commit']:>10} {head['commit']:>10}  ratio")
    rows = [("Snakemake's start", "startup"), ("no job running", "idle")]
    for label, key in rows:
        print(f"{label:32} {base[key]:10.0f} {head[key]:10.0f}")
    for rule in sorted(set(base["rules"]) | set(head["rules"]), key=lambda r: -base["rules"].get(r, 0)):
        a, b = base["rules"].get(rule, 0.0), head["rules"].get(rule, 0.0)
        rows = [("  " + rule, a, b)]
        if rule == "measure":  # its fixed cost apart from its work
            rows += [("    " + part, base["measure"][part], head["measure"][part]) for part in base["measure"]]
        for label, a, b in rows:
            ratio = f"{b / a:6.2f}" if a else "     –"
            print(f"{label:32} {a:10.0f} {b:10.0f} {ratio}")
    print(f"{'end to end (s)':32} {base['wall']:10.0f} {head['wall']:10.0f} {head['wall'] / base['wall']:6.2f}")
    print(
        f"{'CPU time, every process (s)':32} {base['cpu']:10.0f} {head['cpu']:10.0f} {head['cpu'] / base['cpu']:6.2f}"
    )
    print(f"{'CPU time / cores (s)':32} {base['cpu'] / args.cores:10.0f} {head['cpu'] / args.cores:10.0f}")
    print(
        f"load average before/after: {base['load'][0]:.1f}/{base['load'][1]:.1f}, {head['load'][0]:.1f}/{head['load'][1]:.1f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
