"""MPNet's relative position bias near offset 0, and how much of its attention a token gives itself.

    python docs/mpnet_bias.py [--resources DIR] [--out docs/offline]

Reads all-mpnet-base-v2 and the pydoc segments the offline suite prepared (<resources>/models/mpnet/model.json,
<resources>/data/pydoc_topics/; `resources/` of this checkout unless --resources names another) and writes

* ``mpnet_bias.csv``: per head, the learned relative position bias the encoder adds to the attention scores for
  the offsets −1, 0 and +1 (from the weights; the same in every layer, as MPNet shares it);
* ``mpnet_diagonal.csv``: per layer, the head-averaged diagonal A_ii of the content-token matrix (special tokens
  removed, rows renormalised, as the records' ``content`` token set), averaged over the tokens and the inputs,
  with the extraction's ``max_tokens`` from config.yaml.

docs/results.md quotes the copies kept in docs/offline/; rerun this after the offline suite's MPNet or inputs
change, then ``python -m tools.documents``. tests/acquire/test_extract.py checks the bias table against the
weights.
"""

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import yaml

from rollout_equality.acquire.data import load_inputs
from rollout_equality.acquire.extract import load
from rollout_equality.condition.dobrushin import restrict
from rollout_equality.reporting.writers import write_csv

REPO = Path(__file__).resolve().parents[1]
OFFSETS = (-1, 0, 1)


def position_bias(model) -> pd.DataFrame:
    """One row per head: the relative position bias for each of :data:`OFFSETS` (columns ``offset_<k>``)."""
    encoder = model.encoder
    with torch.inference_mode():  # offset = key position - query position, bucketed as the encoder's forward does
        buckets = encoder.relative_position_bucket(torch.tensor([OFFSETS]))
        bias = encoder.relative_attention_bias(buckets)[0].double().numpy()  # (offsets, heads)
    return pd.DataFrame({"head": range(bias.shape[1]), **{f"offset_{k}": bias[i] for i, k in enumerate(OFFSETS)}})


def mean_diagonal(extractor, texts) -> pd.DataFrame:
    """One row per layer: the content-token matrix's mean diagonal, over tokens and then inputs."""
    per_input = [
        [float(np.diag(restrict(layer.astype(np.float64), np.flatnonzero(~special))).mean()) for layer in layers]
        for layers, special, _ in extractor(texts)
    ]
    per_layer = np.mean(per_input, axis=0)
    return pd.DataFrame({"layer": range(len(per_layer)), "inputs": len(per_input), "mean_diagonal": per_layer})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--resources", type=Path, default=REPO / "resources", help="where the suite prepared them")
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "offline", help="folder of the two tables")
    args = parser.parse_args()
    import transformers

    info = json.loads((args.resources / "models" / "mpnet" / "model.json").read_text())
    model = transformers.AutoModel.from_pretrained(info["path"], attn_implementation="eager").eval()
    bias = position_bias(model)
    max_tokens = yaml.safe_load((REPO / "config.yaml").read_text())["extraction"]["max_tokens"]
    texts = load_inputs(args.resources / "data" / "pydoc_topics")[1]
    diagonal = mean_diagonal(load(info, "cpu", max_tokens=max_tokens), texts)
    print(bias.to_string(index=False), diagonal.to_string(index=False), sep="\n\n")
    write_csv(bias, args.out / "mpnet_bias.csv", float_format="%.6g")
    write_csv(diagonal, args.out / "mpnet_diagonal.csv", float_format="%.6g")
    print(f"wrote {args.out / 'mpnet_bias.csv'}, {args.out / 'mpnet_diagonal.csv'}")


if __name__ == "__main__":
    main()
