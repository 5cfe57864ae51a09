"""The pair of rows at maximal total variation, per layer, in two vision models on the same photographs.

    python docs/max_tv_pairs.py [--models dinov2_small_imgfocus dinov2_small_random] [--dataset offline_photos]
                                [--resources DIR] [--out docs/offline/max_tv_pairs.csv]

Reads the models and the data set the offline suite prepared (<resources>/models/<name>/model.json,
<resources>/data/<dataset>/; `resources/` of this checkout unless --resources names another) and prints, per
model and layer, medians over the inputs of the content-token matrix (CLS removed, rows renormalised, as the records' `content` token set; `--token-set all` keeps
CLS, as token 0): the patch-grid distance between the two rows i, j of the pair at maximal TV
(Chebyshev, in patches; -1 when one of them is CLS), their mutual attention A_ij + A_ji, the diagonal
entries A_ii, A_jj against what the other row gives them (A_ji, A_ij) and the gap |A_ii - A_ji|, the share
of inputs where the pair is mutually self-dominant, the mean diagonal over all rows, and the largest column
mean (the share of all attention that the most attended token receives). --out writes the same table as CSV
(one row per model and layer, with the grid's side and the number of inputs); docs/results.md quotes the one
kept in docs/offline/ (written with the defaults), so rerun this after the offline suite's inputs or models
change, then `python -m tools.documents`.
"""

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from rollout_equality.acquire.data import load_inputs
from rollout_equality.acquire.extract import load
from rollout_equality.condition.dobrushin import pairwise_tv, restrict
from rollout_equality.reporting.writers import write_csv

REPO = Path(__file__).resolve().parents[1]


def pair_stats(A: np.ndarray, grid: int, offset: int = 0) -> dict[str, float]:
    """Statistics of the pair at maximal TV of one matrix A (n, n) whose tokens from ``offset`` on form a
    grid x grid patch grid (``offset`` = 1: CLS first)."""
    tv = pairwise_tv(A)
    i, j = np.unravel_index(np.argmax(np.triu(tv, 1)), tv.shape)
    (ri, ci), (rj, cj) = divmod(int(i) - offset, grid), divmod(int(j) - offset, grid)
    return {
        "tv": float(tv[i, j]),
        "distance": -1 if min(i, j) < offset else max(abs(ri - rj), abs(ci - cj)),
        "mutual": float(A[i, j] + A[j, i]),
        "A_ii": float(A[i, i]),
        "A_ji": float(A[j, i]),
        "A_jj": float(A[j, j]),
        "A_ij": float(A[i, j]),
        "gap": float(abs(A[i, i] - A[j, i])),
        "dominant": float(A[i, i] >= A[j, i] and A[j, j] >= A[i, j]),
        "diag": float(np.mean(np.diag(A))),
        "top_col": float(A.mean(axis=0).max()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=["dinov2_small_imgfocus", "dinov2_small_random"])
    parser.add_argument("--dataset", default="offline_photos")
    parser.add_argument("--token-set", choices=["content", "all"], default="content")
    parser.add_argument("--resources", type=Path, default=REPO / "resources", help="where the suite prepared them")
    parser.add_argument("--out", type=Path, help="also write the table as CSV here")
    args = parser.parse_args()
    ids, images, _ = load_inputs(args.resources / "data" / args.dataset)
    image_backend = yaml.safe_load((REPO / "config.yaml").read_text())["extraction"]["image_backend"]
    rows = []
    for name in args.models:
        info = json.loads((args.resources / "models" / name / "model.json").read_text())
        extractor = load(info, "cpu", image_backend=image_backend)
        stats = []  # (input, layer) -> dict
        for attention, special, _ in extractor(images):
            content = np.flatnonzero(~special)
            grid = int(round(np.sqrt(len(content))))
            if args.token_set == "all":
                offset = int(special.sum())
                assert special[:offset].all(), "special tokens first"
                stats.append([pair_stats(layer.astype(np.float64), grid, offset) for layer in attention])
            else:
                stats.append([pair_stats(restrict(layer.astype(np.float64), content), grid) for layer in attention])
        print(f"\n{name} on {args.dataset} ({len(ids)} inputs, {args.token_set} tokens), medians over inputs")
        print("(dominant: share of inputs; distance -1: the pair includes CLS)")
        keys = list(stats[0][0])
        print("layer " + " ".join(f"{k:>8}" for k in keys))
        for layer in range(len(stats[0])):
            row = {k: [s[layer][k] for s in stats] for k in keys}
            row = {k: float(np.mean(v) if k == "dominant" else np.median(v)) for k, v in row.items()}
            print(f"{layer:5d} " + " ".join(f"{v:8.2f}" if k == "dominant" else f"{v:8.4f}" for k, v in row.items()))
            head = {"model": name, "dataset": args.dataset, "token_set": args.token_set, "layer": layer}
            rows.append({**head, "inputs": len(ids), "grid": grid, **row})
    if args.out:
        write_csv(pd.DataFrame(rows), args.out, float_format="%.6g")
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
