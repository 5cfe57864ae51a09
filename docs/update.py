"""Copy the offline suite's figures and tables that README.md shows and quotes into docs/offline/.

Run after `snakemake --cores 2 offline` with the default config; tests/test_readme.py then checks
every number README.md quotes against these tables.
"""

import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FILES = {
    "depth.png": "paper/figures/offline/depth.png",
    "slack.png": "paper/figures/offline/slack.png",
    "rollout.png": "paper/figures/offline/rollout.png",
    "baseline_rate.png": "paper/figures/baseline_rate.png",
    "heatmap.png": "paper/figures/offline/heatmap.png",
    "random_baseline.csv": "results/baseline/random_baseline.csv",
    "model_rates.csv": "results/tables/offline/model_rates.csv",
    "depth_rates.csv": "results/tables/offline/depth_rates.csv",
    "ftt_scores.csv": "results/tables/offline/ftt_scores.csv",
}

if __name__ == "__main__":
    out = Path(__file__).parent / "offline"
    out.mkdir(exist_ok=True)
    for name, source in FILES.items():
        path = REPO / source
        if not path.is_file():
            raise SystemExit(f"{path} is missing: run `snakemake --cores 2 offline` first")
        shutil.copyfile(path, out / name)
        print(f"{source} -> docs/offline/{name}")
