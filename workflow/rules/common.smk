import re
import sys
from pathlib import Path

from snakemake.utils import min_version, validate

sys.path.insert(0, str(Path(workflow.main_snakefile).parent / "src"))  # this checkout's library first
from rollout_equality import paper
from rollout_equality.config import check_references

min_version("9.0")


validate(config, "../schemas/config.schema.yaml")


MODELS = config["models"]
DATASETS = config["datasets"]
TABULAR = config["tabular"]["datasets"]
ALBERT_SUITES = config["dynamics"]["albert"]["suites"]

check_references(config)


def albert_output(suite, ext):
    if suite not in ALBERT_SUITES:
        raise ValueError(f"no ALBERT run for suite {suite!r}: add it under dynamics.albert.suites")
    exp = ALBERT_SUITES[suite]
    return f"results/dynamics/albert/{exp['model']}/{exp['dataset']}.{ext}"


def dynamics_targets(suite):
    """The simulations' tables and figures, and the suite's ALBERT run (when it has one)."""
    targets = ["results/tables/dynamics/simulations.csv", "paper/figures/dynamics/consensus.pdf"]
    if suite in ALBERT_SUITES:
        targets += [f"results/tables/dynamics/{suite}/albert_steps.csv", f"paper/figures/dynamics/{suite}/albert.pdf"]
    return targets


def ftt_seeds(table):
    """Seeds trained for a table: its own `seeds`, else tabular.seeds."""
    return TABULAR[table].get("seeds", config["tabular"]["seeds"])


def ftt_metrics(suite):
    return [
        f"results/ftt/{t}/seed{s}/metrics.json"
        for t in config["tabular"]["suites"].get(suite, [])
        for s in ftt_seeds(t)
    ]


def _alternatives(names):
    return "|".join(re.escape(n) for n in sorted(names)) or "(?!)"


wildcard_constraints:
    model=_alternatives(MODELS),
    dataset=_alternatives(DATASETS),
    tabular=_alternatives(TABULAR),
    seed=r"\d+",
    suite=_alternatives(config["suites"]),


BASELINE_TARGETS = [
    "results/baseline/random_baseline.csv",
    "paper/tables/baseline.tex",
    "paper/figures/baseline_rate.pdf",
    "paper/figures/baseline_rate.png",
]


def suite_records(suite):
    """Every layer-records file of ``suite`` (transformers / timm experiments and FT-Transformer seeds)."""
    paths = [f"results/records/{e['model']}/{e['dataset']}.parquet" for e in config["suites"].get(suite, [])]
    for table in config["tabular"]["suites"].get(suite, []):
        paths += [f"results/records/ftt_seed{seed}/{table}.parquet" for seed in ftt_seeds(table)]
    return paths


def suite_targets(suite):
    """Records and per-layer summaries of every experiment of ``suite``."""
    targets = []
    for exp in config["suites"].get(suite, []):
        targets += [
            f"results/records/{exp['model']}/{exp['dataset']}.parquet",
            f"results/summaries/{exp['model']}/{exp['dataset']}.csv",
        ]
    for table in config["tabular"]["suites"].get(suite, []):
        for seed in ftt_seeds(table):
            targets += [
                f"results/records/ftt_seed{seed}/{table}.parquet",
                f"results/summaries/ftt_seed{seed}/{table}.csv",
            ]
    if config["tabular"]["suites"].get(suite):
        targets.append(f"results/tables/{suite}/ftt_scores.csv")
    if suite_records(suite):
        targets += [f"results/tables/{suite}/claims.csv", f"paper/figures/{suite}/depth.pdf"]
    return targets


def download_targets(suite):
    """Every model, data set and table that ``suite`` (and its ALBERT run) fetches: the local rules' outputs."""
    experiments = list(config["suites"].get(suite, []))
    if suite in ALBERT_SUITES:
        experiments.append(ALBERT_SUITES[suite])
    targets = [f"resources/models/{e['model']}/model.json" for e in experiments]
    targets += [f"resources/data/{e['dataset']}/manifest.json" for e in experiments]
    targets += [f"resources/tabular/{t}/raw.parquet" for t in config["tabular"]["suites"].get(suite, [])]
    return list(dict.fromkeys(targets))


PAPER_TARGETS = BASELINE_TARGETS + suite_targets("paper")
OFFLINE_TARGETS = BASELINE_TARGETS + suite_targets("offline")


def paper_reads(suite):
    """The generated tables and figures paper/main.tex reads for ``suite``, from its own \\input and
    \\includegraphics lines (rollout_equality.paper.inputs): a changed table rebuilds the PDF."""
    main = Path("paper/main.tex")
    return paper.inputs(main, suite) if main.exists() else []
