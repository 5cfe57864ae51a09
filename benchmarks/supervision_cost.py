"""What the compatible code path costs the supervision study's training: one seed's trainings on the native and the
compatible path, interleaved, each in a fresh process as rule train_supervision runs it.

    python benchmarks/supervision_cost.py [--configfile config.yaml] [--seed 0] [--objectives supervised dino]
                                          [--epochs 2] [--repeats 2] [--threads 1] [--paths native compatible]

The study's digits are prepared once as the workflow prepares them, and each path's initialisation of the seed is
drawn once in its own process (rule init_supervision). Then, ``repeats`` times, each objective is trained on the
native path and on the compatible path, one after the other (the job prelude: the study's threads and the code path;
the compatible path's PortableAdamW), with the study's settings but ``--epochs`` epochs (the warm-up shortened to fit).
Prints each training's wall time, CPU time (user and system, of the process: imports and the data's loading
included) and the SHA-256 of its weights, then per objective the compatible path's wall and CPU time over the native
path's, summed over the repeats. ``--paths native`` (or ``compatible``) trains on one path only: with ``--epochs 0``
(the study's) its weights' digest can be set beside a workflow run's checkpoint (``--threads``: another thread
count). A measurement, not a test: on a shared machine read the CPU-time ratio (the 1-minute load average is printed
at the start and the end).

    python benchmarks/supervision_cost.py --paths native --epochs 0 --objectives supervised
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
REPO = HERE.parents[1]
PATHS = ("native", "compatible")


def child(task: str, spec_json: str) -> None:
    """In this fresh process: the job prelude, then ``init`` (write_init) or ``train`` (train) as ``spec`` says."""
    spec = json.loads(spec_json)
    from rollout_equality.runtime.prelude import prelude

    prelude(spec["threads"], spec["code_path"])
    from rollout_equality.studies.supervision import train as tr

    if task == "init":
        tr.write_init(spec["vit"], spec["seed"], spec["out"], spec["threads"], spec["code_path"])
    else:
        tr.train(
            spec["objective"], spec["init"], spec["train"], spec["test"], spec["training"], spec["vit"],
            spec["seed"], spec["out"], spec["threads"], spec["code_path"],
        )  # fmt: skip


def run(task: str, spec: dict) -> dict:
    """``task`` in a fresh process: its wall and CPU seconds, and (a training) the SHA-256 of its weights."""
    from rollout_equality.runtime import digests

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, str(HERE), "--child", task, json.dumps(spec)], capture_output=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"{task} on code path {spec['code_path']!r} failed:\n{done.stderr.decode()[-3000:]}")
    out = Path(spec["out"])
    return {
        "wall": wall,
        "cpu": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
        "weights": digests.of_file(out / "model.safetensors"),
        "info": json.loads((out / "training.json").read_text()),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--configfile", type=Path, default=REPO / "config.yaml")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--objectives", nargs="*", default=["supervised", "dino"])
    parser.add_argument("--epochs", type=int, default=2, help="epochs a training (the study's: omit with 0)")
    parser.add_argument("--repeats", type=int, default=2, help="rounds of (native, compatible) per objective")
    parser.add_argument("--threads", type=int, help="torch's threads (default: the study's)")
    parser.add_argument("--paths", nargs="*", choices=PATHS, default=list(PATHS), help="code paths, in this order")
    args = parser.parse_args(argv)

    from _timing import machine

    from rollout_equality.acquire.data import prepare_data
    from rollout_equality.config.load import load_config

    config = load_config([str(args.configfile)])
    section = config["supervision"]
    training = copy.deepcopy(section["training"])
    if args.epochs:
        training["warmup_epochs"] = min(training["warmup_epochs"], max(args.epochs - 1, 0))
        training["epochs"] = args.epochs
    threads = args.threads or section["threads"]
    print(
        f"{machine()}; seed {args.seed}, {training['epochs']} epochs, {threads} thread(s), {args.configfile.name}",
        flush=True,
    )
    paths = args.paths
    totals = {(o, p): {"wall": 0.0, "cpu": 0.0} for o in args.objectives for p in paths}
    with tempfile.TemporaryDirectory(prefix="supervision_cost.") as tmp:
        root = Path(tmp)
        data = {}
        for key in ("train_data", "test_data"):
            name = section[key]
            data[key] = root / name
            prepare_data(name, config["datasets"][name], data[key])
        base = {"vit": section["vit"], "seed": args.seed, "threads": threads}
        for path in paths:
            run("init", {**base, "code_path": path, "out": str(root / f"init_{path}")})
        for repeat in range(args.repeats):
            for objective in args.objectives:
                runs = {}
                for path in paths:
                    spec = {
                        **base,
                        "code_path": path,
                        "objective": objective,
                        "init": str(root / f"init_{path}"),
                        "train": str(data["train_data"]),
                        "test": str(data["test_data"]),
                        "training": training,
                        "out": str(root / f"{objective}_{path}_{repeat}"),
                    }
                    runs[path] = found = run("train", spec)
                    totals[(objective, path)]["wall"] += found["wall"]
                    totals[(objective, path)]["cpu"] += found["cpu"]
                    accuracy = found["info"].get("test_accuracy")
                    print(
                        f"round {repeat + 1} {objective} {path}: {found['wall']:.1f} s, {found['cpu']:.1f} CPU-s "
                        f"(training {found['info']['seconds']:.1f} s), weights {found['weights']}"
                        + (f", test accuracy {accuracy:.4f}" if accuracy is not None else ""),
                        flush=True,
                    )
                if len(paths) == 2:
                    n, c = (runs[p] for p in PATHS)
                    print(f"  compatible/native: {c['wall'] / n['wall']:.2f}x wall, {c['cpu'] / n['cpu']:.2f}x CPU")
    if len(paths) < 2:
        return 0
    for objective in args.objectives:
        n, c = (totals[(objective, p)] for p in PATHS)
        print(
            f"{objective}, {args.repeats} round(s): native {n['wall']:.0f} s ({n['cpu']:.0f} CPU-s), compatible "
            f"{c['wall']:.0f} s ({c['cpu']:.0f} CPU-s): {c['wall'] / n['wall']:.2f}x the wall time, "
            f"{c['cpu'] / n['cpu']:.2f}x the CPU time"
        )
    n = {k: sum(totals[(o, "native")][k] for o in args.objectives) for k in ("wall", "cpu")}
    c = {k: sum(totals[(o, "compatible")][k] for o in args.objectives) for k in ("wall", "cpu")}
    print(
        f"all: {c['wall'] / n['wall']:.2f}x the wall time, {c['cpu'] / n['cpu']:.2f}x the CPU time; load at the end "
        f"{os.getloadavg()[0]:.1f}"
    )
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(*sys.argv[2:4])
    else:
        sys.exit(main())
