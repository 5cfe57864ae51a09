from snakemake.utils import min_version, validate

min_version("9.0")


validate(config, "../schemas/config.schema.yaml")


BASELINE_TARGETS = [
    "results/baseline/random_baseline.csv",
    "paper/tables/baseline.tex",
    "paper/figures/baseline_rate.pdf",
    "paper/figures/baseline_rate.png",
]

PAPER_TARGETS = BASELINE_TARGETS
OFFLINE_TARGETS = BASELINE_TARGETS
