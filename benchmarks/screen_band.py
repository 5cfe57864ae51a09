"""How much of each matrix the float32 screen sends back to float64, on the offline suite's kinds of matrices.

    python benchmarks/screen_band.py [--models minilm dinov2_small_random ...] [--inputs 4]

For each model (config.yaml's entries: the trained MiniLM shipped on PyPI and the untrained controls at
their published sizes) on a few offline inputs (pydoc topics for text, scikit-image photographs at
224 px), and for FT-Transformer's first block (default architecture on breast_cancer rows, untrained and
after a short training), prints per token set the share of pairs the screen re-checks in float64
(rollout_equality.condition.kernels.analyse_batch: the condition test of each layer, and κ of the rollout at each depth):
median, share of matrices above 1 % and above the default engine's screen_max_work (where the rest of a batch
falls back to the float64 sweep). The fallback is switched off here, so every matrix's own band is measured.
A measurement script, not a test.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
import torch

from rollout_equality.condition.dobrushin import DEFAULT_ENGINE, Engine, _analyse, restrict
from rollout_equality.config.load import load_config

REPO = Path(__file__).resolve().parents[1]

EVERY_BAND = Engine(screen_min_n=2, screen_max_work=np.inf)
"""The screen for every matrix, the small ones too, with no fallback: every matrix's own band is measured."""


def shares(stack: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(condition test's re-checked share per layer, rollout κ's re-checked share per depth) of (L, n, n)."""
    L, n, _ = stack.shape
    pairs = max(n * (n - 1) // 2, 1)
    w = np.empty(L, dtype=np.int64)
    _analyse(np.ascontiguousarray(stack), 1e-9, 1e-5, EVERY_BAND, condition=True, work=w)
    B = 0.5 * (np.eye(n) + stack)
    R = np.empty_like(B)
    R[0] = B[0]
    for layer in range(1, L):
        R[layer] = B[layer] @ R[layer - 1]
    wr = np.empty(L, dtype=np.int64)
    _analyse(R, 0.0, 1e-5 * L, EVERY_BAND, condition=False, work=wr)
    return w / pairs, wr / pairs


def model_layers(name: str, spec: dict, n_inputs: int, tmp: Path, image_backend: str):
    from rollout_equality.acquire.extract import load
    from rollout_equality.acquire.models import prepare_model

    info = prepare_model(name, spec, tmp / name, tmp / name / "model.json")
    ex = load(info, "cpu", max_tokens=256, image_backend=image_backend)
    if spec["modality"] == "text":
        import pydoc_data.topics

        inputs = [" ".join(t.split()[:100]) for t in list(pydoc_data.topics.topics.values())[:n_inputs]]
    else:
        import skimage.data
        from PIL import Image

        names = ["astronaut", "chelsea", "coffee", "rocket", "camera", "coins"][:n_inputs]
        inputs = [Image.fromarray(getattr(skimage.data, k)()).convert("RGB") for k in names]
    with torch.inference_mode():
        return [(attention.layers.astype(np.float64), attention.special) for attention in ex(inputs)]


def ftt_layers(n_inputs: int, epochs: int):
    """First-block attention (the only square blocks' first) of a default FT-Transformer on breast_cancer rows."""
    from rtdl_revisiting_models import FTTransformer
    from sklearn.datasets import load_breast_cancer

    from rollout_equality.tabular.ftt import block_attention

    X, y = load_breast_cancer(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    torch.manual_seed(0)
    model = FTTransformer(
        n_cont_features=X.shape[1], cat_cardinalities=[], d_out=1, **FTTransformer.get_default_kwargs()
    )
    xc, yt = torch.tensor(X, dtype=torch.float32), torch.tensor(y, dtype=torch.float32)
    opt = model.make_default_optimizer()
    for _ in range(epochs):
        model.train()
        for idx in torch.randperm(len(X)).split(64):
            opt.zero_grad()
            torch.nn.functional.binary_cross_entropy_with_logits(model(xc[idx], None).squeeze(-1), yt[idx]).backward()
            opt.step()
    with torch.no_grad():
        att = block_attention(model, xc[:n_inputs], None).double().numpy()  # (B, L, n, n)
    n = att.shape[-1]
    special = np.zeros(n, dtype=bool)
    special[0] = True
    return [(a[:-1], special) for a in att]  # the last block is CLS-only: the square ones


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--models",
        nargs="*",
        default=["minilm", "dinov2_small_random", "dinov2_small_reg_random", "roberta_base_random"],
    )
    parser.add_argument("--inputs", type=int, default=4)
    parser.add_argument("--ftt-epochs", type=int, default=10)
    args = parser.parse_args()
    config = load_config([str(REPO / "config.yaml")])
    tmp = Path(tempfile.mkdtemp())
    sources = [
        (
            name,
            lambda name=name: model_layers(
                name, config["models"][name], args.inputs, tmp, config["extraction"]["image_backend"]
            ),
        )
        for name in args.models
    ]
    sources += [("ftt_first_block_untrained", lambda: ftt_layers(args.inputs * 4, 0))]
    sources += [(f"ftt_first_block_{args.ftt_epochs}_epochs", lambda: ftt_layers(args.inputs * 4, args.ftt_epochs))]
    print(f"re-checked share of pairs (fallback above {DEFAULT_ENGINE.screen_max_work:.0%} switched off here)")
    print(
        f"{'matrices':<32} {'set':<8} {'n':>5} {'what':<10} {'count':>6} {'median':>8} {'>1%':>6} {'>limit':>7} {'max':>6}"
    )
    for name, get in sources:
        per = {}
        for layers, special in get():
            for token_set in ("all", "content"):
                A = layers if token_set == "all" else restrict(layers, ~special)
                if name.startswith("ftt"):
                    A = A[:1]  # the first block
                cond, roll = shares(A)
                c, r, ns = per.setdefault(token_set, ([], [], []))
                c.extend(cond)
                r.extend(roll[1:] if len(roll) > 1 else [])
                ns.append(A.shape[-1])
        for token_set, (c, r, ns) in per.items():
            for what, v in (("layers", c), ("rollout", r)):
                if not v:
                    continue
                v = np.asarray(v)
                print(
                    f"{name:<32} {token_set:<8} {int(np.median(ns)):>5} {what:<10} {len(v):>6} {np.median(v):8.2%} "
                    f"{np.mean(v > 0.01):6.0%} {np.mean(v > DEFAULT_ENGINE.screen_max_work):7.0%} {v.max():6.0%}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
