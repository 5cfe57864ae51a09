"""Cost of the analysis next to the forward pass, and the paper run it implies.

    python benchmarks/extraction_overhead.py [--models NAME ...] [--repeats 3] [--batch 8] [--device cpu]

For each paper architecture (the random controls of config.yaml: exact published
sizes, random weights), inputs at the paper's resolution (224 px images; text of
--text-tokens tokens), --batches batches of --batch inputs: time per input of the eager
forward alone, and of rule measure's whole per-input work (eager forward with
attentions, head averaging, the condition and rollout analysis of both token sets,
through rollout_equality.measure.measure_inputs), once analysing after each forward
(sequential, the default of extraction.overlap on a CPU) and once analysing batch k while
batch k + 1 runs (overlap, its default on a GPU; torch keeps one CPU thread then, so on a
CPU the overlapped forward runs on one thread), both with the default engine (the float32 screen), and the
sequential run again with the float64 sweep alone (``Engine(screen=False)`` of rollout_equality.condition.dobrushin: the
same records bit for bit), side by side; with --per-head, the sequential run again with every head's own
analysis and the max and min fusions (config ``analysis``: the offline suite's setting). Prints the ratios to the
forward alone (target ≤ 1.3× without --per-head's run), the rows of
benchmarks/README.md's table and, from the default engine's per-input costs and the paper suite's data set sizes,
the estimated time of the whole paper run on this machine. On a CUDA device (--device cuda) the forward runs
there and the analysis on the CPU beside it.
A measurement script, not a test: medians of --repeats rounds (each round times every run once) after
a warm-up round.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import numpy as np
import torch
from _timing import interleaved_medians, table_row

from rollout_equality.condition.dobrushin import DEFAULT_ENGINE, Engine
from rollout_equality.config.load import load_config
from rollout_equality.config.settings import FUSIONS, OFF, Condition, HeadSettings, from_section
from rollout_equality.measure import Reading, measure_inputs

REPO = Path(__file__).resolve().parents[1]


def build(spec: dict):
    """The architecture of a random_init entry, in memory, with eager attention."""
    ri = spec["random_init"]
    torch.manual_seed(0)
    if spec["backend"] == "timm":
        import timm

        model = timm.create_model(ri["timm_name"], pretrained=False).eval().to(ARGS.device)
        for m in model.modules():
            if hasattr(m, "fused_attn"):
                m.fused_attn = False
        from timm.utils import AttentionExtract

        extract = AttentionExtract(model, method="fx")
        n_prefix = model.num_prefix_tokens

        def plain(x):
            return model(x)

        def with_attention(x):
            return list(extract(x).values()), n_prefix

        return plain, with_attention, torch.randn(1, 3, 224, 224)
    import transformers

    cfg = dict(ri["config"])
    config = transformers.AutoConfig.for_model(cfg.pop("model_type"), **cfg)
    model = transformers.AutoModel.from_config(config, attn_implementation="eager").eval().to(ARGS.device)
    if spec["modality"] == "image":
        x = {"pixel_values": torch.randn(1, 3, 224, 224)}
        n_prefix = 1 + getattr(config, "num_register_tokens", 0)
    else:
        x = {"input_ids": torch.randint(1000, 2000, (1, ARGS.text_tokens))}
        n_prefix = None

    def plain(inp):
        return model(**inp)

    def with_attention(inp):
        return list(model(**inp, output_attentions=True).attentions), n_prefix

    return plain, with_attention, x


def extractor_of(with_attention, device, seen: dict):
    """rule measure's extractor for a batch (a list of the same input): forward, head average, special mask; the
    token count goes to seen["n"]."""

    def run(batch, heads=False):
        x = batch[0]
        if isinstance(x, dict):
            x = {k: v.expand(len(batch), *v.shape[1:]).to(device) for k, v in x.items()}
        else:
            x = x.expand(len(batch), *x.shape[1:]).to(device)
        attentions, n_prefix = with_attention(x)
        avg = torch.stack([a.float().mean(dim=1) for a in attentions], dim=1).cpu().numpy()
        n = seen["n"] = avg.shape[-1]
        special = np.zeros(n, dtype=bool)
        if n_prefix is None:  # text: [CLS] … [SEP]
            special[[0, -1]] = True
        else:
            special[:n_prefix] = True
        if heads:  # every head's attention beside the average, as the extractors give it: (L, H, n, n) float32
            every = torch.stack([a.float() for a in attentions], dim=1).cpu().numpy()
            return [(layers, special, h) for layers, h in zip(avg, every)]
        return [(layers, special) for layers in avg]

    return run


def main():
    config = load_config([str(REPO / "config.yaml")])
    controls = {name: spec for name, spec in config["models"].items() if "random_init" in spec}
    names = ARGS.models or list(controls)
    device = torch.device(ARGS.device)
    print(f"device: {device}, torch threads: {torch.get_num_threads()}, batch {ARGS.batch} × {ARGS.batches}")
    print(
        f"{'architecture':<26} {'forward/input':>14} {'seq f64':>9} {'sequential':>11} {'overlap':>9} {'heads':>9}"
        f" {'ratio f64':>10} {'ratio seq':>10} {'ratio ovl':>10} {'ratio hds':>10}"
    )
    condition = from_section(Condition, config["condition"])
    settings = dict(model="m", dataset="d", condition=condition)
    reading = Reading(
        device=str(device),
        threads=torch.get_num_threads(),
        batch_size=ARGS.batch,
        overlap=False,
        batch_by_length=False,
        dump_inputs=0,
    )
    per_input = {}
    rows = []
    for name in names:
        plain, with_attention, x = build(controls[name])
        seen: dict = {}
        extractor = extractor_of(with_attention, device, seen)
        inputs = [x] * (ARGS.batch * ARGS.batches)
        ids = [f"x{i}" for i in range(len(inputs))]

        def forward_only():
            for _ in range(ARGS.batches):
                batch = [x] * ARGS.batch
                xb = (
                    {k: v.expand(ARGS.batch, *v.shape[1:]).to(device) for k, v in x.items()}
                    if isinstance(x, dict)
                    else x.expand(ARGS.batch, *x.shape[1:]).to(device)
                )
                plain(xb)
                del batch
            if device.type == "cuda":
                torch.cuda.synchronize()

        def measured(overlap, engine, heads=OFF):
            measure_inputs(
                extractor,
                ids,
                inputs,
                reading=dataclasses.replace(reading, overlap=overlap),
                engine=engine,
                heads=heads,
                **settings,
            )

        fns = [
            forward_only,
            lambda: measured(False, Engine(screen=False)),
            lambda: measured(False, DEFAULT_ENGINE),
            lambda: measured(True, DEFAULT_ENGINE),
            lambda: measured(False, DEFAULT_ENGINE, HeadSettings(per_head=True, fusions=FUSIONS)),
        ]
        run = [True, True, True, not ARGS.no_overlap, ARGS.per_head]
        with torch.inference_mode():
            measured_times = iter(interleaved_medians([f for f, on in zip(fns, run) if on], ARGS.repeats))
            times = [next(measured_times) / len(inputs) if on else float("nan") for on in run]
        t_plain, t_f64, t_seq, t_ovl, t_heads = times
        # the paper run uses the default kernels (the screen)
        per_input[name.removesuffix("_random")] = min(t_seq, t_ovl) if len(times) > 3 else t_seq
        print(
            f"{name:<26} {t_plain:13.3f}s {t_f64:8.3f}s {t_seq:10.3f}s {t_ovl:8.3f}s {t_heads:8.3f}s"
            f" {t_f64 / t_plain:9.2f}× {t_seq / t_plain:9.2f}× {t_ovl / t_plain:9.2f}× {t_heads / t_plain:9.2f}×",
            flush=True,
        )
        size = f"{name}, n = {seen['n']}, batch {ARGS.batch} on {device}"
        rows.append(table_row("extraction_overhead", size, "forward alone, per input", t_plain, "–"))
        for label, t in (
            ("measure, screen", t_seq),
            ("measure, float64 sweep", t_f64),
            ("measure, overlap", t_ovl),
            ("measure, screen, per head and max/min fusions", t_heads),
        ):
            if t == t:  # not NaN: measured
                rows.append(
                    table_row("extraction_overhead", size, f"{label}, per input", t, f"{t / t_plain:.2f}× forward")
                )
    print("\nrows of benchmarks/README.md's table:")
    print("\n".join(rows))
    # the paper run: every paper experiment's data set size × that architecture's per-input cost
    total = 0.0
    for exp in config["suites"]["paper"]:
        cost = per_input.get(exp["model"])
        if cost is None:
            print(f"  (no estimate for {exp['model']}: not measured)")
            continue
        total += cost * config["datasets"][exp["dataset"]]["n"]
    print(f"\nestimated paper run (measure rules): {total / 3600:.2f} h on this machine ({ARGS.device})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="*", help="random-control names from config.yaml (default: all)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--text-tokens", type=int, default=128)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--batch", type=int, default=8, help="inputs per forward pass (extraction.batch_size)")
    parser.add_argument("--batches", type=int, default=3, help="batches per timed run")
    parser.add_argument("--no-overlap", action="store_true", help="skip the overlapped run")
    parser.add_argument(
        "--per-head",
        action="store_true",
        help="also time the sequential run with every head kept and analysed, and the max and min fusions "
        "(config analysis: per_head true, fusions [mean, max, min])",
    )
    ARGS = parser.parse_args()
    main()
