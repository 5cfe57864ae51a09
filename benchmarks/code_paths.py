"""Which CPU code paths change the bits of a result, and what pinning them costs.

    python benchmarks/code_paths.py --run DIR [--variants NAME ...] [--epochs 1] [--threads 2]

DIR is a run's working directory whose ``resources/`` holds the prepared UCI Adult table (``adult_uci``), the
trained MiniLM (``minilm``) and DINOv2-S (``dinov2_small_imgfocus``) with their data sets (``pydoc_topics``,
``offline_photos``), e.g. after ``snakemake --cores 2 offline`` or only their prepare steps.

Each variant runs in a fresh interpreter with environment variables that force one library onto another code path,
as another CPU would run it: torch's ATen kernels (``ATEN_CPU_CAPABILITY``: default / avx2 / avx512), MKL's BLAS
(``MKL_CBWR``: COMPATIBLE / AVX2 / AVX512), oneDNN's JIT (``ONEDNN_MAX_CPU_ISA``: SSE41 / AVX2 / ...) and numba's
kernels (``NUMBA_CPU_NAME``), and a different thread count. In each it

* trains FT-Transformer on the first 8,192 training rows of UCI Adult for ``--epochs`` epochs (seed 0, the
  config's batch size; scored on the first 2,048 validation and test rows) and hashes the trained weights;
* measures the trained MiniLM on 16 text segments and DINOv2-S on 4 photographs (rollout_equality.measure
  .measure_inputs with config.yaml's settings) and keeps the head-averaged attention and the records.

It prints (and with ``--csv`` writes) one row per variant against the first (``native``): whether the trained weights
are the same bytes and how far they moved, the test accuracy, the largest attention, κ and rollout-κ differences,
the records' ``holds`` flips, whether every record is the same bytes, and the CPU time of training and of measuring
relative to the first (CPU seconds of the process: less sensitive than wall time to other work on the machine). A
measurement script, not a test; its numbers depend on the machine (``lscpu`` names it).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))  # this checkout's library (its code paths, its extractors)
from _timing import cpu_model  # noqa: E402

from rollout_equality.runtime import digests  # noqa: E402
from rollout_equality.runtime.code_paths import CODE_PATHS  # noqa: E402

VARIANTS = {  # one library forced at a time, then the code paths the config may fix (rollout_equality.runtime.prelude)
    "native": {},
    "aten_avx2": {"ATEN_CPU_CAPABILITY": "avx2"},
    "aten_default": {"ATEN_CPU_CAPABILITY": "default"},
    "mkl_avx2": {"MKL_CBWR": "AVX2"},
    "mkl_compatible": {"MKL_CBWR": "COMPATIBLE"},
    "onednn_avx2": {"ONEDNN_MAX_CPU_ISA": "AVX2"},
    "numba_haswell": {"NUMBA_CPU_NAME": "haswell"},
    **{f"code_path_{name}": variables for name, variables in CODE_PATHS.items() if variables},
    "threads_1": {"threads": 1},
}


TRAIN_ROWS, EVAL_ROWS = 8192, 2048  # UCI Adult's first training and evaluation rows: 32 steps an epoch
SUBJECTS = (  # label, model, data set, inputs, batch, max_tokens
    ("minilm", "minilm", "pydoc_topics", 16, 8, 128),
    ("minilm_32", "minilm", "pydoc_topics", 8, 2, 32),  # the tiny configuration's shapes
    ("dinov2_small_imgfocus", "dinov2_small_imgfocus", "offline_photos", 4, 2, None),
)
FORCING = ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "ONEDNN_MAX_CPU_ISA", "NUMBA_CPU_NAME")


def _cpu_seconds() -> float:
    """CPU time of this process, all its threads (user + system): less sensitive than wall time to other work."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def worker(run: Path, out: Path, epochs: int, threads: int) -> None:
    """One variant, in this process (its environment already set): train, measure, write ``out`` (npz + json)."""
    import numpy as np
    import torch

    torch.set_num_threads(threads)
    from rollout_equality.acquire.data import load_inputs
    from rollout_equality.acquire.extract import load
    from rollout_equality.acquire.models import read_model_info
    from rollout_equality.config.load import load_config
    from rollout_equality.config.settings import Condition, Extraction, from_section
    from rollout_equality.measure import Reading, measure_inputs
    from rollout_equality.runtime.code_paths import active
    from rollout_equality.tabular.ftt import train_ftt

    config = load_config([str(REPO / "config.yaml")])
    condition = from_section(Condition, config["condition"])
    extraction = from_section(Extraction, config["extraction"])
    found: dict = {"capability": torch.backends.cpu.get_cpu_capability()}
    arrays: dict = {}
    table = run / "resources/tabular/adult_uci"
    with tempfile.TemporaryDirectory() as tmp, np.load(table / "data.npz") as npz:
        rows = {"train": TRAIN_ROWS, "val": EVAL_ROWS, "test": EVAL_ROWS}  # the first rows of each part
        np.savez(Path(tmp) / "data.npz", **{k: npz[k][: rows[k.rsplit("_", 1)[1]]] for k in npz.files})
        start, cpu = time.perf_counter(), _cpu_seconds()
        metrics = train_ftt(
            Path(tmp) / "data.npz",
            table / "manifest.json",
            Path(tmp) / "model.pt",
            Path(tmp) / "metrics.json",
            seed=0,
            max_epochs=epochs,
            patience=16,
            batch_size=config["tabular"]["training"]["batch_size"],
            binary_head="one_logit",
            code_path=active(),
            device="cpu",
        )
        found["train_s"], found["train_cpu_s"] = time.perf_counter() - start, _cpu_seconds() - cpu
        state = torch.load(Path(tmp) / "model.pt")
    found["weights_sha256"] = digests.of_bytes(b"".join(v.numpy().tobytes() for v in state.values()))
    found["test"] = metrics["test"]
    arrays["weights"] = np.concatenate([v.numpy().ravel() for v in state.values()]).astype(np.float64)
    for label, model, dataset, count, batch, max_tokens in SUBJECTS:
        info = read_model_info(run / f"resources/models/{model}/model.json")
        ids, inputs, _ = load_inputs(run / f"resources/data/{dataset}")
        extractor = load(info, "cpu", max_tokens=max_tokens, image_backend=extraction.image_backend)
        # warm-up on one input: numba compiles its kernels for this code path once (then caches them), not timed
        plain = Reading(
            device="cpu", threads=threads, batch_size=1, overlap=False, batch_by_length=False, dump_inputs=0
        )
        measure_inputs(extractor, ids[:1], inputs[:1], model=model, dataset=dataset, condition=condition, reading=plain)
        start, cpu = time.perf_counter(), _cpu_seconds()
        (layer_rows, rollout_rows, *_), dump = measure_inputs(
            extractor,
            ids[:count],
            inputs[:count],
            model=model,
            dataset=dataset,
            condition=condition,
            reading=dataclasses.replace(plain, batch_size=batch, dump_inputs=count),  # dump: the attention analysed
        )
        attention = [dump[i][0] for i in ids[:count]]
        model = label
        found[f"{model}_s"], found[f"{model}_cpu_s"] = time.perf_counter() - start, _cpu_seconds() - cpu
        arrays[f"{model}/attention"] = np.concatenate([a.ravel() for a in attention]).astype(np.float64)
        for key in ("kappa", "kappa_half", "slack"):
            arrays[f"{model}/{key}"] = np.array([r[key] for r in layer_rows])
        arrays[f"{model}/holds"] = np.array([r["holds"] for r in layer_rows])
        arrays[f"{model}/kappa_rollout"] = np.array([r["kappa_rollout"] for r in rollout_rows])
        records = json.dumps([layer_rows, rollout_rows], sort_keys=True).encode()
        found[f"{model}_records_sha256"] = digests.of_bytes(records)
    np.savez(out.with_suffix(".npz"), **arrays)
    out.with_suffix(".json").write_text(json.dumps(found))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, required=True, help="a run's working directory (its resources/)")
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--epochs", type=int, default=1, help="FT-Transformer epochs on UCI Adult (default 1)")
    parser.add_argument("--threads", type=int, default=2, help="torch's threads (default 2, the config's)")
    parser.add_argument("--keep", type=Path, help="keep each variant's results here; a rerun measures only the others")
    parser.add_argument("--csv", type=Path, help="also write the comparison as CSV (benchmarks/code_paths.csv)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.run.resolve(), args.out, args.epochs, args.threads)
        return 0

    import numpy as np

    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        kept = args.keep or Path(tmp)
        kept.mkdir(parents=True, exist_ok=True)
        for name in args.variants:
            out = kept / name
            if out.with_suffix(".json").is_file():  # measured by an earlier run into --keep
                results[name] = (
                    json.loads(out.with_suffix(".json").read_text()),
                    dict(np.load(out.with_suffix(".npz"))),
                )
                continue
            env = {k: v for k, v in os.environ.items() if k not in FORCING}
            spec = dict(VARIANTS[name])
            threads = spec.pop("threads", args.threads)
            env.update(spec, HF_HUB_OFFLINE="1", OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
            cmd = [sys.executable, __file__, "--run", str(args.run), "--worker", name, "--out", str(out)]
            cmd += ["--epochs", str(args.epochs), "--threads", str(threads)]
            print(f"{name}: {' '.join(f'{k}={v}' for k, v in spec.items()) or 'no variable'}", flush=True)
            subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
            results[name] = (json.loads(out.with_suffix(".json").read_text()), dict(np.load(out.with_suffix(".npz"))))

    from rollout_equality.config.load import load_config

    batch = load_config([str(REPO / "config.yaml")])["tabular"]["training"]["batch_size"]
    table = compare(results, args.variants, threads=args.threads, steps=args.epochs * -(-TRAIN_ROWS // batch))
    cells = [[f"{v:.3g}" if isinstance(v, float) else str(v) for v in row] for row in table.itertuples(index=False)]
    print("\n| " + " | ".join(table.columns) + " |\n|" + " --- |" * len(table.columns))
    print("\n".join("| " + " | ".join(row) + " |" for row in cells))
    print(f"\nagainst {args.variants[0]} (torch {results[args.variants[0]][0]['capability']}); {args.threads} threads")
    if args.csv:
        table.to_csv(args.csv, index=False, float_format="%.3g", lineterminator="\n")
    return 0


def compare(results: dict, variants: list[str], *, threads: int, steps: int):
    """One row per variant against the first: the forced variables, torch's capability, whether FT-Transformer's
    weights are the same bytes and by how much they moved, its test accuracy, its training's CPU seconds relative to
    the first's; per subject the largest attention, κ and rollout-κ differences, the ``holds`` flips among the
    records, and the measuring's CPU seconds relative to the first's."""
    import numpy as np
    import pandas as pd

    base, base_arrays = results[variants[0]]
    rows = []
    for name in variants:
        found, arrays = results[name]
        spec = {k: v for k, v in VARIANTS[name].items() if k != "threads"}
        row = {
            "variant": name,
            "variables": " ".join(f"{k}={v}" for k, v in spec.items()) or "-",
            "threads": VARIANTS[name].get("threads", threads),
            "cpu": cpu_model(),
            "aten": found["capability"],
            "ftt_weights": "same" if found["weights_sha256"] == base["weights_sha256"] else "other",
            "ftt_max_dw": float(np.abs(arrays["weights"] - base_arrays["weights"]).max()),
            "ftt_steps": steps,
            "ftt_test": found["test"],
            "ftt_train_cpu": found["train_cpu_s"] / base["train_cpu_s"],
        }
        for label, *_ in SUBJECTS:
            row[f"{label}_max_dattn"] = float(
                np.abs(arrays[f"{label}/attention"] - base_arrays[f"{label}/attention"]).max()
            )
            row[f"{label}_max_dkappa"] = float(np.abs(arrays[f"{label}/kappa"] - base_arrays[f"{label}/kappa"]).max())
            row[f"{label}_max_dkappa_rollout"] = float(
                np.abs(arrays[f"{label}/kappa_rollout"] - base_arrays[f"{label}/kappa_rollout"]).max()
            )
            row[f"{label}_flips"] = int((arrays[f"{label}/holds"] != base_arrays[f"{label}/holds"]).sum())
            row[f"{label}_rows"] = int(arrays[f"{label}/holds"].size)
            row[f"{label}_records"] = (
                "same" if found[f"{label}_records_sha256"] == base[f"{label}_records_sha256"] else "other"
            )
            row[f"{label}_cpu"] = found[f"{label}_cpu_s"] / base[f"{label}_cpu_s"]
        rows.append(row)
    return pd.DataFrame(rows)


if __name__ == "__main__":
    raise SystemExit(main())
