"""Checks of config.yaml that its JSON schema cannot express: names that refer to other entries.

The schema (``src/rollout_equality/config/config.schema.yaml``) checks every key, type and range, and the loader
(:mod:`rollout_equality.config.load`) fills in its defaults; :func:`check_references` then checks that every experiment names a model and a data set
defined in the config, of the same modality, that every tabular suite names defined tables, that
the dynamics study's ALBERT runs read text, and that every claim's subject is a defined model or
table. Each error names the entry and what to fix.
"""

from __future__ import annotations

from typing import Any

from rollout_equality.config.schema import default


def check_references(config: dict[str, Any]) -> None:
    """Raise ``ValueError`` naming the first experiment, table or ALBERT run that refers to nothing valid."""
    from rollout_equality.config.supervision import check_supervision

    check_supervision(config)
    models, datasets = config["models"], config["datasets"]

    def experiment(where: str, exp: dict[str, str], modality: str | None = None) -> None:
        model, dataset = exp["model"], exp["dataset"]
        if model not in models:
            raise ValueError(f"{where}: model {model!r} is not defined under models: in the config")
        if dataset not in datasets:
            raise ValueError(f"{where}: data set {dataset!r} is not defined under datasets: in the config")
        reads, holds = models[model]["modality"], datasets[dataset]["modality"]
        if reads != holds:
            raise ValueError(f"{where}: model {model!r} reads {reads} but data set {dataset!r} holds {holds}")
        if modality is not None and reads != modality:
            raise ValueError(f"{where}: the model {model!r} and data set {dataset!r} are {reads}; it needs {modality}")

    for suite, experiments in config["suites"].items():
        for exp in experiments:
            experiment(f"suite {suite!r}", exp)
    tables = config["tabular"]["datasets"]
    for suite, names in config["tabular"]["suites"].items():
        for name in names:
            if name not in tables:
                raise ValueError(f"tabular suite {suite!r}: table {name!r} is not defined under tabular.datasets")
    for suite, exp in config["dynamics"]["albert"]["suites"].items():
        experiment(f"dynamics.albert.suites.{suite} (ALBERT)", exp, modality="text")
    ablation = config["tabular"].get("ablation")
    if ablation:
        if ablation["table"] not in tables:
            raise ValueError(f"tabular.ablation: table {ablation['table']!r} is not defined under tabular.datasets")
        for suite in ablation["suites"]:
            if suite not in config["suites"]:
                raise ValueError(f"tabular.ablation.suites: {suite!r} is not a suite (suites: in the config)")
        claim = ablation.get("claim")
        entry = config["claims"].get(claim, {})
        about_ftt = any(s.startswith(FTT_PREFIX) for s in entry.get("subjects", []))
        if claim is not None and (entry.get("kind") != "rate" or not about_ftt):
            raise ValueError(
                f"tabular.ablation.claim: {claim!r} is not a claim of kind rate about FT-Transformer (subjects "
                "ftt:<table>) under claims:"
            )
    check_claims(config)
    check_analysis(config)
    check_inputs(config)
    for name, entry in resolved_tables(config).items():
        if entry["split"]["test"] == "source" and "csv" not in entry["source"]:
            raise ValueError(
                f"tabular table {name!r}: split test: source needs a csv source with `test_path` (the source's own "
                "test rows); give a fraction instead"
            )
        if entry["split"]["test"] == "source" and not entry["source"]["csv"].get("test_path"):
            raise ValueError(f"tabular table {name!r}: split test: source needs `test_path` in its csv source")


ANALYSIS_KEYS = ("per_head", "fusions")
"""The settings of the per-head and fused analysis (config ``analysis``; :class:`rollout_equality.config.settings.HeadSettings`)."""


def _analysis(config: dict[str, Any], suite: str, entry: dict[str, Any] | None = None) -> dict[str, Any]:
    """``{per_head, fusions}`` of ``suite`` (and of its experiment ``entry``): the entry's keys over the suite's
    (``analysis.suites``) over ``analysis``'s own, whose defaults the schema states."""
    section = config.get("analysis", {})
    resolved = {key: section.get(key, default("analysis", key)) for key in ANALYSIS_KEYS}
    for layer in (section.get("suites", {}).get(suite, {}), entry or {}):
        resolved.update({key: layer[key] for key in ANALYSIS_KEYS if key in layer})
    return {"per_head": bool(resolved["per_head"]), "fusions": list(resolved["fusions"])}


def _settings_by_run(config: dict[str, Any]) -> dict[tuple[str, ...], dict[tuple, list[str]]]:
    """Every run the suites list (``("experiment", model, dataset)`` and ``("ftt", table)``) → its settings (as a
    hashable key) → the suites that give it them. A config without suites (the command line's overlay alone, or
    the schema's defaults) lists none."""
    runs: dict[tuple[str, ...], dict[tuple, list[str]]] = {}

    def add(run, suite, settings):
        key = (settings["per_head"], tuple(settings["fusions"]))
        runs.setdefault(run, {}).setdefault(key, []).append(suite)

    for suite, experiments in config.get("suites", {}).items():
        for exp in experiments:
            add(("experiment", exp["model"], exp["dataset"]), suite, _analysis(config, suite, exp))
    for suite, tables in config.get("tabular", {}).get("suites", {}).items():
        for table in tables:
            add(("ftt", table), suite, _analysis(config, suite))
    return runs


def check_analysis(config: dict[str, Any]) -> None:
    """Raise ``ValueError`` naming a run (experiment or FT-Transformer table) that two suites list with different
    ``analysis`` settings (its records are written once), and a suite under ``analysis.suites`` that is none."""
    for suite in config.get("analysis", {}).get("suites", {}):
        if suite not in config["suites"]:
            raise ValueError(f"analysis.suites: {suite!r} is not a suite (suites: in the config)")
    for run, settings in _settings_by_run(config).items():
        if len(settings) > 1:
            what = f"experiment {run[1]} on {run[2]}" if run[0] == "experiment" else f"FT-Transformer table {run[1]}"
            listed = "; ".join(
                f"suites {', '.join(s)}: per_head {p}, fusions {list(f)}" for (p, f), s in settings.items()
            )
            raise ValueError(
                f"{what} is measured once but its suites ask for different analysis settings ({listed}): give it one "
                "setting (on the experiment, or under analysis.suites)"
            )


def _inputs_by_experiment(config: dict[str, Any]) -> dict[tuple[str, str], dict[int | None, list[str]]]:
    """Every experiment the suites list (model, data set) → its ``inputs`` (None: all) → the suites that give it."""
    runs: dict[tuple[str, str], dict[int | None, list[str]]] = {}
    for suite, experiments in config.get("suites", {}).items():
        for exp in experiments:
            runs.setdefault((exp["model"], exp["dataset"]), {}).setdefault(exp.get("inputs"), []).append(suite)
    return runs


def check_inputs(config: dict[str, Any]) -> None:
    """Raise ``ValueError`` naming an experiment that two suites measure on different numbers of inputs (its records
    are written once), or on more inputs than its data set holds."""
    for (model, dataset), counts in _inputs_by_experiment(config).items():
        if len(counts) > 1:
            listed = "; ".join(f"suites {', '.join(s)}: {'all' if n is None else n}" for n, s in counts.items())
            raise ValueError(
                f"experiment {model} on {dataset} is measured once but its suites ask for different inputs ({listed}): "
                "give it one `inputs`"
            )
        (n,) = counts
        held = config["datasets"].get(dataset, {}).get("n")
        if n is not None and held is not None and n > held:
            raise ValueError(
                f"experiment {model} on {dataset}: inputs {n} exceeds the data set's n ({held}): lower inputs or "
                f"raise datasets.{dataset}.n"
            )


def run_inputs(config: dict[str, Any], model: str, dataset: str) -> int | None:
    """How many of its data set's inputs the experiment ``model`` on ``dataset`` measures (None: all), as the suites
    that list it give it (:func:`check_inputs` keeps them one)."""
    counts = _inputs_by_experiment(config).get((model, dataset), {None: []})
    return next(iter(counts))


def run_analysis(config: dict[str, Any], model: str, dataset: str | None = None) -> dict[str, Any]:
    """``{per_head, fusions}`` of an experiment (``model`` on ``dataset``) or, with ``dataset`` None, of the
    FT-Transformer runs of table ``model``: as the suites that list it resolve them (:func:`check_analysis` keeps
    them one), else ``analysis``'s own (a run no suite lists, e.g. the recipe ablation's)."""
    run = ("ftt", model) if dataset is None else ("experiment", model, dataset)
    settings = _settings_by_run(config).get(run)
    if not settings:
        return _analysis(config, suite="")
    (per_head, fusions), *_ = settings
    return {"per_head": per_head, "fusions": list(fusions)}


def experiment_analysis(config: dict[str, Any], model: str, dataset: str) -> dict[str, Any]:
    """``{per_head, fusions}`` of the experiment ``model`` on ``dataset``: the supervision study's own for its models
    (:mod:`rollout_equality.config.supervision`), else as the suites resolve it (:func:`run_analysis`). What rule
    measure and the command line measure."""
    from rollout_equality.config.supervision import study_models

    if model in study_models(config):
        return dict(config["supervision"]["analysis"])
    return run_analysis(config, model, dataset)


def suite_analyses(config: dict[str, Any], suite: str) -> bool:
    """Whether any run of ``suite`` measures beyond the head-averaged records (per head, or a fusion other than
    mean): then the suite has head tables and a heads figure."""
    runs = [_analysis(config, suite, exp) for exp in config["suites"].get(suite, [])]
    runs += [_analysis(config, suite)] * len(config["tabular"]["suites"].get(suite, []))
    return any(r["per_head"] or r["fusions"] != ["mean"] for r in runs)


def dropped_by_overlay(shipped: dict[str, Any], config: dict[str, Any]) -> list[str]:
    """What an overlay (``--configfile my.yaml``, ``--config``) left out of the suites of the config file it was merged
    into: one message for each suite of ``shipped`` (that file, as read; ``suites`` and ``tabular.suites``) whose
    experiments (model and data set) or tables are not all in the suite of the same name in ``config`` (the run's
    config). Snakemake merges an overlay's mappings into the file but replaces its lists, so an overlay that lists
    a suite replaces it whole."""

    def experiment(e: dict[str, Any]) -> str:
        return f"{e['model']} on {e['dataset']}"

    sections = (
        ("suites", shipped.get("suites") or {}, config["suites"], experiment, "suites: {mine: [...]}"),
        (
            "tabular.suites",
            (shipped.get("tabular") or {}).get("suites") or {},
            config["tabular"]["suites"],
            str,
            "tabular.suites: {mine: [...]} with suites: {mine: []}",
        ),
    )
    messages = []
    for where, old, new, key, own in sections:
        for suite, entries in old.items():
            kept = {key(e) for e in new.get(suite, [])}
            gone = [key(e) for e in entries or [] if key(e) not in kept]
            if gone:
                named = ", ".join(gone[:3]) + (f" and {len(gone) - 3} more" if len(gone) > 3 else "")
                messages.append(
                    f"{where}.{suite}: this run keeps {len(entries) - len(gone)} of the {len(entries)} entries of the "
                    f"config file ({named} left out). Snakemake merges an overlay's mappings into the config "
                    f"file but replaces its lists: an overlay that lists {where}.{suite} replaces it whole. To add a "
                    f"model or table, give it a suite of its own beside the shipped ones ({own}; target suite_mine); "
                    "to run part of a suite on purpose, go on."
                )
    return messages


def model_kinds(models: dict[str, Any]) -> dict[str, str]:
    """Each model of ``models:`` by its source: ``untrained control`` for ``random_init`` (the architecture with
    weights drawn at random), ``trained`` for every source that reads weights (hub, local, dist_zip, onnx_export).
    The figures group their rows by it."""
    return {name: "untrained control" if "random_init" in entry else "trained" for name, entry in models.items()}


FTT_PREFIX = "ftt:"
"""A claim's subject ``ftt:<table>`` stands for every FT-Transformer run of a table of ``tabular.datasets``."""


def check_claims(config: dict[str, Any]) -> None:
    """Raise ``ValueError`` naming the claim and the name when a claim's subject (or out-of-sample model) is
    neither a model under ``models:`` nor ``ftt:<table>`` of a table under ``tabular.datasets``; or when more
    than one claim is of kind ``baseline`` (the figure and the paper quote one range)."""
    models, tables = config["models"], config["tabular"]["datasets"]
    for name, claim in config["claims"].items():
        for subject in [*claim.get("subjects", []), *claim.get("out_of_sample", {})]:
            if subject.startswith(FTT_PREFIX):
                if subject.removeprefix(FTT_PREFIX) not in tables:
                    raise ValueError(
                        f"claims.{name}: subject {subject!r} names table {subject.removeprefix(FTT_PREFIX)!r}, "
                        "which is not defined under tabular.datasets"
                    )
            elif subject not in models:
                raise ValueError(
                    f"claims.{name}: subject {subject!r} is not defined under models: in the config (rename it "
                    f"here too, or write ftt:<table> for a table of tabular.datasets)"
                )
    kinds = [name for name, claim in config["claims"].items() if claim["kind"] == "baseline"]
    if len(kinds) > 1:
        raise ValueError(f"claims: {', '.join(kinds)} are all of kind baseline; keep one")


def baseline_claim(spec: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """The claim of kind ``baseline`` of the ``claims:`` section ``spec`` (at most one: :func:`check_claims`), or
    None. Here, not in :mod:`rollout_equality.reporting.claims`, because the workflow reads it when it parses: this module
    imports nothing heavy (claims imports scipy.stats, and through the baseline numba: a second at every start-up
    of Snakemake, twice per SLURM job)."""
    found = [c for c in spec.values() if c["kind"] == "baseline"]
    return found[0] if found else None


def claim_reasons(config: dict[str, Any], suite: str) -> dict[str, str]:
    """Why suite ``suite`` has no records of a claim's subject, for every subject it does not measure:
    the suites that do measure it, or that none does."""
    reasons = {}
    for claim in config["claims"].values():
        for subject in claim.get("subjects", []):
            if subject.startswith(FTT_PREFIX):
                table = subject.removeprefix(FTT_PREFIX)
                where = [s for s, names in config["tabular"]["suites"].items() if table in names]
                section = "tabular.suites"
            else:
                where = [s for s, exps in config["suites"].items() if any(e["model"] == subject for e in exps)]
                section = "suites"
            if suite in where:
                continue
            others = ", ".join(repr(s) for s in where)
            reasons[subject] = (
                f"not in suite {suite!r}: measured by suite {others}"
                if where
                else f"in no suite (add it under {section}:)"
            )
    return reasons


ABLATION_SEP = "@"
"""Tables of the recipe ablation are named ``<table>@<setting>``."""


def resolved_tables(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every table the workflow prepares, each entry complete: the ``tabular.datasets`` entries and one table
    ``<table>@<setting>`` per setting of ``tabular.ablation``.

    Each entry holds its ``source``, ``task``, ``missing``, ``published`` (or None), ``seeds``, and its ``split``,
    ``recipe`` and ``training``: the ``tabular`` section's, updated by the entry's own, then (ablation) by the
    ablation's ``training`` and the setting's; a setting's ``source`` replaces the table's. An ablation table adds ``ablation``: {table, setting,
    label}.
    """
    import copy

    tab = config["tabular"]
    out: dict[str, dict[str, Any]] = {}
    for name, entry in tab["datasets"].items():
        out[name] = {
            "task": entry["task"],
            "missing": entry["missing"],
            "source": copy.deepcopy(entry["source"]),
            "published": entry.get("published"),
            "seeds": list(entry.get("seeds", tab["seeds"])),
            "split": {**tab["split"], **entry.get("split", {})},
            "recipe": {**tab["recipe"], **entry.get("recipe", {})},
            "training": {**tab["training"], **entry.get("training", {})},
        }
    ablation = tab.get("ablation")
    if ablation and ablation["table"] in out:
        base = out[ablation["table"]]
        base = {**base, "training": {**base["training"], **ablation.get("training", {})}}
        for setting, change in ablation["settings"].items():
            out[f"{ablation['table']}{ABLATION_SEP}{setting}"] = {
                **base,
                "source": copy.deepcopy(change.get("source", base["source"])),
                "seeds": list(ablation["seeds"]),
                "split": {**base["split"], **change.get("split", {})},
                "recipe": {**base["recipe"], **change.get("recipe", {})},
                "training": {**base["training"], **change.get("training", {})},
                "ablation": {"table": ablation["table"], "setting": setting, "label": change.get("label", setting)},
            }
    return out
