"""The GPU path checked on a GPU: records against the CPU's, FT-Transformer's training bytes, times, a paper-run estimate.

Two steps, because a GPU machine may have no network, no snakemake and no data wheels:

    # here, after a run that prepared the offline suite's models and data (`snakemake --cores 2 offline`):
    python benchmarks/gpu_check.py bundle --run DIR --out .whl/gpu_check
    # on the GPU machine, with its own python (torch, transformers, timm, numba, numpy, pandas, pyarrow):
    PYTHONPATH=src python3 benchmarks/gpu_check.py run --bundle .whl/gpu_check [--device cuda] [--out DIR]

``bundle`` writes a self-contained folder: config.yaml as the loader completed it, every untrained control of config.yaml's paper architectures as
prepared by the workflow (configuration, tokenizer or image processor; the weights are drawn from the seed at
load), the first images and text segments of the offline data sets, the prepared UCI Adult table, and the wheels
of the pure-Python packages the library needs beyond such a machine's (rtdl_revisiting_models). ``run`` adds them
to its path and, for each architecture, measures the same inputs on the CPU and on ``--device`` with the
project's own extractors and analysis (rollout_equality.measure.measure_inputs, config.yaml's settings), and
prints:

* the records compared: the largest |Δκ| and |Δκ(½(I+A))| per token set, and every ``holds`` flip with its
  margin (the CPU's slack against the tolerance: how near the decision the pair was);
* the time per input of the forward pass on the device and of the whole per-input work, sequential and
  overlapped (the analysis of batch k on the CPU while batch k + 1 runs on the device: extraction.overlap);
* FT-Transformer trained twice on the device (deterministic algorithms) and once on the CPU on UCI Adult: whether
  the two device runs give the same bytes, and each run's test accuracy and seconds per epoch;
* the paper suite's measuring time on this machine, estimated from the per-input times and the data sets' sizes.

Everything fits in about five minutes on one GPU with the defaults. A measurement script, not a test.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TABLE = "adult_uci"
IMAGE_DATA, TEXT_DATA = "offline_photos", "pydoc_topics"


def paper_controls(config: dict) -> dict[str, str]:
    """Paper model → the untrained control of its architecture (``<model>_random`` in config.yaml)."""
    models = {e["model"] for e in config["suites"]["paper"]}
    return {m: f"{m}_random" for m in sorted(models) if f"{m}_random" in config["models"]}


def bundle(run: Path, out: Path, inputs: int) -> None:
    """Write the bundle ``run`` reads (see the module) from the prepared resources of the run in ``run``."""
    from rollout_equality.config.load import load_config

    config = load_config([str(REPO / "config.yaml")])
    if out.exists():
        shutil.rmtree(out)
    (out / "models").mkdir(parents=True)
    for control in sorted(set(paper_controls(config).values())):
        # the prepared folder as it is: its model.json records its files relative to itself
        shutil.copytree(run / f"resources/models/{control}", out / "models" / control)
    for dataset in (IMAGE_DATA, TEXT_DATA):
        manifest = json.loads((run / f"resources/data/{dataset}/manifest.json").read_text())
        manifest["items"] = manifest["items"][:inputs]
        (out / "data" / dataset).mkdir(parents=True)
        for item in manifest["items"]:
            if "file" in item:
                (out / "data" / dataset / item["file"]).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(run / f"resources/data/{dataset}/{item['file']}", out / "data" / dataset / item["file"])
        if manifest["modality"] == "text":
            ids = {item["id"] for item in manifest["items"]}
            lines = (run / f"resources/data/{dataset}/segments.jsonl").read_text().splitlines()
            kept = [line for line in lines if json.loads(line)["id"] in ids]
            (out / "data" / dataset / "segments.jsonl").write_text("\n".join(kept) + "\n")
        (out / "data" / dataset / "manifest.json").write_text(json.dumps(manifest, indent=1))
    shutil.copytree(run / f"resources/tabular/{TABLE}", out / "tabular" / TABLE)
    (out / "wheels").mkdir()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "-q",
            "-d",
            str(out / "wheels"),
            "rtdl_revisiting_models",
        ],
        check=True,
    )
    (out / "config.json").write_text(json.dumps(config))  # loaded here: the GPU machine needs no jsonschema
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"bundle {out}: {size / 1e6:.1f} MB")


def _records_compared(cpu: list[dict], dev: list[dict], atol: float) -> dict:
    import numpy as np

    assert [(r["input_id"], r["layer"], r["token_set"]) for r in cpu] == [
        (r["input_id"], r["layer"], r["token_set"]) for r in dev
    ]
    out = {}
    for ts in ("content", "all"):
        pairs = [(a, b) for a, b in zip(cpu, dev) if a["token_set"] == ts]
        out[ts] = {
            "max_dkappa": float(max(abs(a["kappa"] - b["kappa"]) for a, b in pairs)),
            "max_dkappa_half": float(max(abs(a["kappa_half"] - b["kappa_half"]) for a, b in pairs)),
            "rate_cpu": float(np.mean([a["holds"] for a, _ in pairs])),
            "rate_device": float(np.mean([b["holds"] for _, b in pairs])),
            "flips": [
                {
                    "input": a["input_id"],
                    "layer": a["layer"],
                    "cpu": a["holds"],
                    "slack_cpu": a["slack"],
                    "slack_device": b["slack"],
                    "margin": abs(a["slack"] - atol),
                }
                for a, b in pairs
                if a["holds"] != b["holds"]
            ],
        }
    return out


def _timed(extractor, device: str):
    """``extractor`` that adds the wall time of its forward passes (synchronised on CUDA) to ``.seconds``."""
    import torch

    def run(batch):
        start = time.perf_counter()
        out = extractor(batch)
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        run.seconds += time.perf_counter() - start
        return out

    run.seconds = 0.0
    run.preprocessing = extractor.preprocessing
    return run


def check_architectures(bundle_dir: Path, device: str, config: dict, batch: int, models: list[str] | None) -> dict:
    from rollout_equality.acquire.data import load_inputs
    from rollout_equality.acquire.extract import load
    from rollout_equality.acquire.models import read_model_info
    from rollout_equality.config.settings import Condition, from_section
    from rollout_equality.measure import Reading, measure_inputs

    condition = from_section(Condition, config["condition"])
    extraction = config["extraction"]
    threads = extraction.get("threads", 2)
    data = {m: load_inputs(bundle_dir / "data" / d)[:2] for m, d in (("image", IMAGE_DATA), ("text", TEXT_DATA))}
    results = {}
    for paper_model, control in paper_controls(config).items():
        if models and paper_model not in models:
            continue
        info = read_model_info(bundle_dir / "models" / control / "model.json")
        ids, inputs = data[info["modality"]]
        common = dict(model=control, dataset="bundle", condition=condition)
        plain = Reading(
            device="cpu", threads=threads, batch_size=batch, overlap=False, batch_by_length=False, dump_inputs=0
        )
        runs, times = {}, {}
        for where in ("cpu", device):
            ex = load(info, where, max_tokens=extraction["max_tokens"], image_backend=extraction.get("image_backend"))
            ex(inputs[:1])  # warm-up: kernels, allocator, cuDNN plans
            timed = _timed(ex, where)
            start = time.perf_counter()
            runs[where] = measure_inputs(timed, ids, inputs, reading=dataclasses.replace(plain, device=where), **common)
            total = time.perf_counter() - start
            times[where] = {"forward": timed.seconds / len(ids), "sequential": total / len(ids)}
            if where != "cpu":
                start = time.perf_counter()
                both = dataclasses.replace(plain, device=where, overlap=True)
                overlapped = measure_inputs(ex, ids, inputs, reading=both, **common)
                times[where]["overlapped"] = (time.perf_counter() - start) / len(ids)
                assert overlapped.records == runs[where].records, (
                    f"{control}: overlapped records differ from sequential ones"
                )
            del ex
        compared = _records_compared(runs["cpu"].records.layer, runs[device].records.layer, condition.atol)
        results[paper_model] = {"control": control, "inputs": len(ids), "records": compared, "seconds": times}
        flips = sum(len(v["flips"]) for v in compared.values())
        print(
            f"{control:<26} max|Δκ| content {compared['content']['max_dkappa']:.1e} all "
            f"{compared['all']['max_dkappa']:.1e}, {flips} flips; {device} forward {times[device]['forward']:.4f} s, "
            f"overlapped {times[device].get('overlapped', float('nan')):.4f} s per input (cpu: "
            f"{times['cpu']['sequential']:.3f} s)",
            flush=True,
        )
    return results


def check_ftt(bundle_dir: Path, device: str, config: dict, epochs: int, rows: int | None) -> dict:
    import numpy as np
    import torch

    from rollout_equality.runtime import digests
    from rollout_equality.tabular.ftt import train_ftt

    training = config["tabular"]["training"]
    table = bundle_dir / "tabular" / TABLE
    runs = {}
    with tempfile.TemporaryDirectory() as tmp, np.load(table / "data.npz") as npz:
        np.savez(Path(tmp) / "data.npz", **{k: npz[k][:rows] for k in npz.files})  # the first rows of each part
        for name, where in (("device_1", device), ("device_2", device), ("cpu", "cpu")):
            torch.set_num_threads(training.get("threads", 2))
            metrics = train_ftt(
                Path(tmp) / "data.npz",
                table / "manifest.json",
                Path(tmp) / f"{name}.pt",
                Path(tmp) / f"{name}.json",
                seed=0,
                max_epochs=epochs,
                patience=training["patience"],
                batch_size=training["batch_size"],
                binary_head="one_logit",
                code_path=training["code_path"],
                device=where,
            )
            digest = digests.of_file(Path(tmp) / f"{name}.pt")
            runs[name] = {"test": metrics["test"], "seconds_per_epoch": metrics["seconds_per_epoch"], "sha256": digest}
    same = runs["device_1"]["sha256"] == runs["device_2"]["sha256"]
    print(
        f"FT-Transformer on {TABLE}, {epochs} epochs: two {device} runs {'the same bytes' if same else 'DIFFER'}; "
        f"test accuracy {device} {runs['device_1']['test']:.6f}, cpu {runs['cpu']['test']:.6f}; s/epoch {device} "
        f"{runs['device_1']['seconds_per_epoch']:.2f}, cpu {runs['cpu']['seconds_per_epoch']:.2f}",
        flush=True,
    )
    return {"same_bytes_on_device": same, **runs}


def estimate(config: dict, results: dict) -> float:
    """Seconds of the paper suite's measuring on this machine: each experiment's inputs × its architecture's
    overlapped time per input."""
    total = 0.0
    for exp in config["suites"]["paper"]:
        per_input = results[exp["model"]]["seconds"]
        device = next(k for k in per_input if k != "cpu")
        total += config["datasets"][exp["dataset"]]["n"] * per_input[device]["overlapped"]
    return total


def run(
    bundle_dir: Path, device: str, batch: int, epochs: int, rows: int | None, models: list[str] | None, out: Path | None
) -> None:
    for wheel in sorted((bundle_dir / "wheels").glob("*.whl")):  # pure-Python wheels import from their zip
        sys.path.insert(0, str(wheel))
    import torch

    from rollout_equality.runtime.device import resolve_device
    from rollout_equality.runtime.provenance import provenance

    device = resolve_device(device)
    config = json.loads((bundle_dir / "config.json").read_text())  # config.yaml as the loader completed it
    facts = provenance(device, threads=config["extraction"].get("threads", 2))
    print(json.dumps(facts), flush=True)
    start = time.perf_counter()
    results = {"machine": facts, "architectures": check_architectures(bundle_dir, device, config, batch, models)}
    results["ftt"] = check_ftt(bundle_dir, device, config, epochs, rows)
    if not models:
        results["paper_measuring_seconds"] = estimate(config, results["architectures"])
    results["seconds"] = time.perf_counter() - start
    if not models:
        print(
            f"estimated paper suite measuring on {facts.get('gpu', device)}: "
            f"{results['paper_measuring_seconds'] / 60:.1f} min (torch {torch.__version__})"
        )
    print(f"this check took {results['seconds']:.0f} s")
    if out:
        out.mkdir(parents=True, exist_ok=True)
        (out / "gpu_check.json").write_text(json.dumps(results, indent=1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("bundle", help="write the folder `run` needs, from a run's prepared resources")
    b.add_argument("--run", type=Path, required=True, help="a run's working directory (its resources/)")
    b.add_argument("--out", type=Path, required=True)
    b.add_argument("--inputs", type=int, default=8, help="images and text segments per architecture (default 8)")
    r = sub.add_parser("run", help="compare the CPU with --device on the bundle")
    r.add_argument("--bundle", type=Path, required=True)
    r.add_argument("--device", default="cuda", help="the device checked against the CPU (default cuda)")
    r.add_argument("--batch", type=int, default=8, help="inputs per forward pass (default 8)")
    r.add_argument("--epochs", type=int, default=2, help="FT-Transformer epochs per training run (default 2)")
    r.add_argument("--ftt-rows", type=int, help="train on the first rows of each split only (default: all)")
    r.add_argument("--models", nargs="+", help="paper models whose architecture to check (default: all; no estimate)")
    r.add_argument("--out", type=Path, help="folder for gpu_check.json")
    args = parser.parse_args()
    if args.command == "bundle":
        bundle(args.run, args.out, args.inputs)
    else:
        run(args.bundle, args.device, args.batch, args.epochs, args.ftt_rows, args.models, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
