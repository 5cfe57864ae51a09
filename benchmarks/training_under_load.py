"""Does FT-Transformer's training give the same checkpoint when the cores are oversubscribed? Trains one table many
times, each in a fresh process as rule train_ftt does (the job prelude: the config's threads and code path), with busy
loops on every core, and counts the checkpoints whose bytes differ from an unloaded reference.

    python benchmarks/training_under_load.py [--configfile .test/config.yaml] [--table cancer@no_noise] [--runs 60]
        [--paths native compatible] [--busy 3] [--parallel 1] [--per-process 1] [--env VAR=VALUE ...] [--trace]

The default is the training that once gave another checkpoint in CI's test of the tiny run on 1 and 2 cores
(tests/workflow/test_workflow.py): the tiny configuration's ablation table ``cancer@no_noise`` (scikit-learn's breast
cancer table without quantile noise, seed 0, 2 epochs of 2 steps), loaded as it was when the difference was
reproduced on an Intel Xeon (3 busy loops on 2 cores, one training at a time: another checkpoint once in ~20). Per
code path:
two unloaded trainings (they must agree: the reference), then ``--runs`` trainings, ``--parallel`` processes at a
time (as jobs side by side), ``--per-process`` trainings one after another in each (1: a fresh process each, as the
workflow trains; more: the imports' time shared), with ``--busy`` spinning processes. Prints, per path, how many loaded
checkpoints differ, and for each that differs the first parameter and how far. ``--env`` sets variables in every
training after the job prelude's (to test a candidate cause, or to undo one the prelude sets). ``--trace`` digests
every op of every step in each training and names, for a checkpoint that differs, the first op and step where its
training parted from the reference's (the op names the kernel to suspect). Exit status: 0 when no
loaded checkpoint differs, 1 when one does, 2 on bad input. With ``--env MKL_VERBOSE=1`` it also counts MKL's calls by
the threads they ran on (a call on fewer threads than it was given would add in another order). A measurement, not
a test.
"""

from __future__ import annotations

import argparse
import io
import multiprocessing
import os
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from _timing import machine
from _training import first_traced_difference, prepare, train

from rollout_equality.config.load import load_config

REPO = Path(__file__).resolve().parents[1]


def first_difference(reference: bytes, other: bytes) -> str:
    """The first parameter (in the state dict's order) whose values differ, and by how much."""
    import torch

    a, b = (torch.load(io.BytesIO(x), map_location="cpu") for x in (reference, other))
    for name in a:
        if not torch.equal(a[name], b[name]):
            return f"{name} (max |Δ| {(a[name] - b[name]).abs().max().item():.2e})"
    return "the same values in other bytes"


def spin() -> None:
    while True:
        pass


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--configfile", type=Path, default=REPO / ".test/config.yaml")
    parser.add_argument("--table", default="cancer@no_noise")
    parser.add_argument("--runs", type=int, default=60, help="loaded trainings per code path")
    parser.add_argument("--paths", nargs="+", default=["native", "compatible"])
    parser.add_argument("--busy", type=int, default=3, help="spinning processes while loaded")
    parser.add_argument("--parallel", type=int, default=1, help="loaded training processes at a time")
    parser.add_argument("--per-process", type=int, default=1, help="trainings one after another in each process")
    parser.add_argument("--env", nargs="*", default=[], metavar="VAR=VALUE", help="set in every training")
    parser.add_argument("--trace", action="store_true", help="digest every op; name where a differing run parts")
    args = parser.parse_args(argv)
    if min(args.runs, args.parallel, args.per_process) < 1 or args.busy < 0:
        print("--runs, --parallel and --per-process must be at least 1, --busy at least 0", file=sys.stderr)
        return 2
    bad = [e for e in args.env if "=" not in e]
    if bad:
        print(f"--env takes VAR=VALUE; got {bad}", file=sys.stderr)
        return 2
    env = dict(e.split("=", 1) for e in args.env)
    cpus = len(os.sched_getaffinity(0))
    print(f"{machine()}; table {args.table} of {args.configfile}; extra variables {env or 'none'}", flush=True)
    differing = 0
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        spec = prepare(load_config([str(args.configfile)]), args.table, folder)
        seed = spec["seeds"][0]
        print(f"training: seed {seed}, {spec['training']}", flush=True)
        for path in args.paths:
            start = time.monotonic()
            reference, again = (train(folder, spec, seed, path, env, args.trace)[0] for _ in range(2))
            if reference["model"] != again["model"]:
                where = first_difference(reference["model"], again["model"])
                if args.trace:
                    where += f"; {first_traced_difference(reference['trace'], again['trace'])}"
                print(f"{path}: two unloaded trainings differ ({where}): no reference")
                differing += 1
                continue
            spinners = [multiprocessing.Process(target=spin, daemon=True) for _ in range(args.busy)]
            for p in spinners:
                p.start()
            try:
                diffs = []
                processes = -(-args.runs // args.per_process)
                with ThreadPoolExecutor(args.parallel) as pool:
                    batches = pool.map(
                        lambda _: train(folder, spec, seed, path, env, args.trace, args.per_process), range(processes)
                    )
                    seen = [found for batch in batches for found in batch]
                    for run, found in enumerate(seen):
                        if found["model"] != reference["model"]:
                            where = first_difference(reference["model"], found["model"])
                            if args.trace:
                                where += f"; {first_traced_difference(reference['trace'], found['trace'])}"
                            if found["mkl_threads"] is not None:
                                where += f"; its process's MKL calls by threads {found['mkl_threads']}"
                            diffs.append((run, where))
                            print(f"  {path} run {run}: differs, first at {where}", flush=True)
            finally:
                for p in spinners:
                    p.terminate()
            differing += len(diffs)
            if "MKL_VERBOSE" in env:
                calls = Counter()
                for found in seen:
                    calls.update(found["mkl_threads"])
                print(f"{path}: MKL's calls by threads, over every loaded training: {dict(sorted(calls.items()))}")
            print(
                f"{path}: {len(diffs)} of {processes * args.per_process} loaded trainings differ from the unloaded reference "
                f"({args.per_process} a process, {args.parallel} processes at a time, {len(spinners)} spinning processes on {cpus} CPUs, load "
                f"{os.getloadavg()[0]:.1f}; {time.monotonic() - start:.0f} s)",
                flush=True,
            )
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
