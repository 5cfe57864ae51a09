"""FT-Transformer trainings in fresh processes, as rule train_ftt runs them (shared by the training benchmarks)."""

from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve()


def prepare(config: dict, table: str, folder: Path) -> dict:
    """The table ``table`` of ``config`` prepared as the workflow prepares it (``folder/data.npz``,
    ``folder/manifest.json``); returns its resolved entry (rollout_equality.config.checks.resolved_tables)."""
    from rollout_equality.acquire.tables import load_raw
    from rollout_equality.config.checks import resolved_tables
    from rollout_equality.tabular.prepare import prepare_tabular

    tables = resolved_tables(config)
    if table not in tables:
        raise SystemExit(f"{table!r} is not a table of the config (its tables: {', '.join(tables)})")
    spec = tables[table]
    raw, target = load_raw(table, spec, folder / "cache")
    split = spec["split"]
    folder.mkdir(parents=True, exist_ok=True)
    prepare_tabular(
        table, spec, raw, target, folder / "data.npz", folder / "manifest.json",
        seed=split["seed"], test=split["test"], val=split["val"], recipe=spec["recipe"],
    )  # fmt: skip
    return spec


def traced(build_model, rows: list):
    """``build_model`` whose models append [step, op, digest] to ``rows``: every module's output and the gradient
    reaching it, every parameter's gradient before each optimiser step and the weights after it (``step`` counts
    the optimiser's steps; the evaluation passes between epochs count as their step's)."""
    import torch
    from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

    from rollout_equality.fingerprint import digest

    step = [0]

    def build(*args, **kwargs):
        model = build_model(*args, **kwargs)
        for name, module in model.named_modules():

            def hook(_module, _inputs, output, name=name or "model"):
                for i, out in enumerate(output if isinstance(output, tuple) else (output,)):
                    if isinstance(out, torch.Tensor):
                        rows.append([step[0], f"forward {name}[{i}]", digest(out)])
                        if out.requires_grad:
                            out.register_hook(
                                lambda g, name=name, i=i: rows.append([step[0], f"gradient {name}[{i}]", digest(g)])
                            )

            module.register_forward_hook(hook)

        def before(optimizer, *_):
            rows.extend([step[0], f"parameter gradient {n}", digest(p.grad)] for n, p in model.named_parameters())

        def after(optimizer, *_):
            rows.append([step[0], "weights", digest(torch.cat([p.detach().reshape(-1) for p in model.parameters()]))])
            step[0] += 1

        register_optimizer_step_pre_hook(before)
        register_optimizer_step_post_hook(after)
        return model

    return build


def first_traced_difference(reference: list, other: list) -> str:
    """The first row of two traces (:func:`traced`) whose digest differs: its step and op."""
    for a, b in zip(reference, other):
        if a[:2] != b[:2]:
            return f"the traces part at step {a[0]}: {a[1]} against {b[1]}"
        if a[2] != b[2]:
            return f"step {a[0]}, {a[1]}"
    return "the traces agree" if len(reference) == len(other) else "one trace is longer"


def child(folder: str, spec_json: str, seed: str, code_path: str, out: str, repeats: str = "1") -> None:
    """``repeats`` trainings in this fresh process, as workflow/scripts/train_ftt.py runs one: the job prelude first
    (the config's threads and ``code_path``), then any variables of ``TRAINING_ENV`` (a JSON object), then each
    training into ``out/<i>/``; with ``TRAINING_TRACE`` set, every op of every step digested (:func:`traced`) into
    ``out/<i>/trace.json``."""
    from rollout_equality.runtime.prelude import prelude

    spec = json.loads(spec_json)
    training = spec["training"]
    prelude(training["threads"], code_path)
    os.environ.update(json.loads(os.environ.get("TRAINING_ENV", "{}")))

    from rollout_equality.tabular import ftt

    build_model = ftt.build_model
    for i in range(int(repeats)):
        rows: list = []
        if os.environ.get("TRAINING_TRACE"):
            ftt.build_model = traced(build_model, rows)
        ftt.train_ftt(
            Path(folder) / "data.npz",
            Path(folder) / "manifest.json",
            Path(out) / str(i) / "model.pt",
            Path(out) / str(i) / "metrics.json",
            seed=int(seed),
            max_epochs=training["max_epochs"],
            patience=training["patience"],
            batch_size=training["batch_size"],
            binary_head=spec["recipe"]["binary_head"],
            device="cpu",
            code_path=code_path,
        )
        if rows:
            (Path(out) / str(i) / "trace.json").write_text(json.dumps(rows))


def train(
    folder: Path,
    spec: dict,
    seed: int,
    code_path: str,
    env: dict[str, str] | None = None,
    trace: bool = False,
    repeats: int = 1,
) -> list[dict]:
    """``repeats`` trainings of the table prepared in ``folder``, one after another in one fresh process: for each,
    ``{"model": the checkpoint's bytes, "metrics": its metrics.json, "trace": every op's digest (with ``trace``, else
    None), "wall": the process's seconds, "cpu": its CPU seconds, "mkl_threads": how many of MKL's calls ran on how
    many threads (with ``MKL_VERBOSE=1`` in ``env``, else None)}`` (the process's times and MKL's calls divided by
    ``repeats``: shared by its trainings)."""
    with tempfile.TemporaryDirectory(dir=folder) as out:
        args = [sys.executable, str(HERE), str(folder), json.dumps(spec), str(seed), code_path, out, str(repeats)]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        variables = {"TRAINING_ENV": json.dumps(env or {}), **({"TRAINING_TRACE": "1"} if trace else {})}
        done = subprocess.run(args, env={**os.environ, **variables}, capture_output=True)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode != 0:
            raise RuntimeError(f"a training on code path {code_path!r} failed:\n{done.stderr.decode()[-3000:]}")
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        threads = Counter(re.findall(rb"NThr:(\d+)", done.stdout)) if (env or {}).get("MKL_VERBOSE") else None
        return [
            {
                "model": (Path(out) / str(i) / "model.pt").read_bytes(),
                "metrics": json.loads((Path(out) / str(i) / "metrics.json").read_text()),
                "trace": json.loads((Path(out) / str(i) / "trace.json").read_text()) if trace else None,
                "wall": wall / repeats,
                "cpu": cpu / repeats,
                "mkl_threads": {int(k): v / repeats for k, v in threads.items()} if threads is not None else None,
            }
            for i in range(repeats)
        ]


if __name__ == "__main__":
    child(*sys.argv[1:])
