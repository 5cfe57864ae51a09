"""Cost of the analysis next to the forward pass, and the paper run it implies.

    python benchmarks/extraction_overhead.py [--models NAME ...] [--repeats 3] [--device cpu]

For each paper architecture (the random controls of config.yaml: exact published
sizes, random weights), one input at the paper's resolution (224 px images; text
of --text-tokens tokens): time of the eager forward alone, and of the eager
forward with attentions + head averaging + the condition and rollout analysis of
both token sets (the whole per-input work of rule measure). Prints their ratio
(target ≤ 1.3×) and, from the per-input costs and the paper suite's data set
sizes, the estimated time of the whole paper run on this machine.
A measurement script, not a test: medians of --repeats after a warm-up.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch
import yaml
from _timing import median_time

from rollout_equality.records import analyse_input

REPO = Path(__file__).resolve().parents[1]


def build(spec: dict):
    """The architecture of a random_init entry, in memory, with eager attention."""
    ri = spec["random_init"]
    torch.manual_seed(0)
    if spec["backend"] == "timm":
        import timm

        model = timm.create_model(ri["timm_name"], pretrained=False)
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
    model = transformers.AutoModel.from_config(config, attn_implementation="eager").eval()
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


def full_step(with_attention, x):
    attentions, n_prefix = with_attention(x)
    avg = torch.stack([a.float().mean(dim=1) for a in attentions], dim=1)[0].numpy()
    n = avg.shape[-1]
    special = np.zeros(n, dtype=bool)
    if n_prefix is None:  # text: [CLS] … [SEP]
        special[[0, -1]] = True
    else:
        special[:n_prefix] = True
    analyse_input(avg, special, model="m", dataset="d", input_id="x")


def main():
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    controls = {name: spec for name, spec in config["models"].items() if "random_init" in spec}
    names = ARGS.models or list(controls)
    torch.set_num_threads(torch.get_num_threads())
    print(f"device: {ARGS.device}, torch threads: {torch.get_num_threads()}")
    print(f"{'architecture':<26} {'forward':>10} {'fwd+attn+analysis':>18} {'ratio':>7}")
    per_input = {}
    for name in names:
        plain, with_attention, x = build(controls[name])
        with torch.inference_mode():
            t_plain = median_time(lambda: plain(x), ARGS.repeats)
            t_full = median_time(lambda: full_step(with_attention, x), ARGS.repeats)
        per_input[name.removesuffix("_random")] = t_full
        print(f"{name:<26} {t_plain:9.3f}s {t_full:17.3f}s {t_full / t_plain:6.2f}×", flush=True)
    # the paper run: every paper experiment's data set size × that architecture's per-input cost
    total = 0.0
    for exp in config["suites"]["paper"]:
        cost = per_input.get(exp["model"])
        if cost is None:
            print(f"  (no estimate for {exp['model']}: not measured)")
            continue
        total += cost * config["datasets"][exp["dataset"]]["n"]
    print(f"\nestimated paper run (measure rules, batch 1): {total / 3600:.2f} h on this machine ({ARGS.device})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="*", help="random-control names from config.yaml (default: all)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--text-tokens", type=int, default=128)
    parser.add_argument("--device", default="cpu")
    ARGS = parser.parse_args()
    main()
