"""Command line: ``rollout-equality <command>`` (also ``python -m rollout_equality``).

Commands run single pipeline steps outside Snakemake, e.g. to test one matrix
or to regenerate the baseline with other settings.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from rollout_equality.config.load import load_config
from rollout_equality.config.paths import DOWNLOAD_CACHE, SUITE_TABLES_DIR
from rollout_equality.config.profiles import GPU_RULES
from rollout_equality.config.settings import FUSIONS, HeadSettings


def _cmd_condition(args: argparse.Namespace) -> int:
    from rollout_equality.condition.dobrushin import equality_condition

    path = Path(args.matrix)
    if path.suffix == ".npy":
        A = np.load(path)
    elif path.suffix in {".csv", ".txt"}:
        A = np.loadtxt(path, delimiter="," if path.suffix == ".csv" else None, ndmin=2)
    else:
        raise SystemExit(f"error: {path}: give a .npy, .csv or whitespace-separated .txt matrix")
    (condition,) = _sections(args, "condition")
    result = equality_condition(A, atol=condition.atol, row_sum_atol=condition.row_sum_atol)
    out = {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in result.as_dict().items()}
    json.dump(out, sys.stdout, indent=2)
    print()
    return 0


def _cmd_baseline(args: argparse.Namespace) -> int:
    from rollout_equality.condition.baseline import random_baseline
    from rollout_equality.reporting.writers import write_csv
    from rollout_equality.runtime.files import logging_to

    b, condition = _sections(args, "baseline", "condition")
    with logging_to(args.log):
        df = random_baseline(b.ns, b.trials, b.seed, atol=condition.atol, chunk_size=b.chunk_size)
        write_csv(df, args.out)
    return 0


def _cmd_prepare(args: argparse.Namespace) -> int:
    import yaml

    from rollout_equality.acquire.data import prepare_data
    from rollout_equality.config.load import with_defaults
    from rollout_equality.runtime.files import logging_to

    spec = (
        yaml.safe_load(Path(args.spec).read_text()) if args.spec.endswith((".yaml", ".yml")) else json.loads(args.spec)
    )
    spec = with_defaults("datasets", args.name, spec)  # the schema's defaults, as a workflow run gets them
    with logging_to(args.log):
        prepare_data(args.name, spec, args.out)
    return 0


def _cmd_measure(args: argparse.Namespace) -> int:
    """Measure a model (:func:`rollout_equality.acquire.resolve.resolve_model`) on a prepared data set or on text /
    image files (:mod:`rollout_equality.acquire.data.files`), through the workflow's own entry point
    (:func:`rollout_equality.measure.measure_and_write`), with the config's ``analysis`` as the workflow resolves it
    for this experiment (:func:`rollout_equality.config.checks.experiment_analysis`; flags over it), writing only
    ``--out`` and its companions, named as the workflow names them: the rollout records, the heads file and its
    rollout."""
    from rollout_equality.runtime.code_paths import code_path

    config = load_config(args.configfile)
    extraction, condition = _sections(args, "extraction", "condition", config=config)
    # Before torch, MKL, oneDNN and numba start (each reads its variable once), as the workflow's job prelude does:
    # nothing above imports them, and code_path refuses once one of them is loaded.
    code_path(extraction.code_path)

    from rollout_equality.acquire.data.files import given_record, read_images, read_texts
    from rollout_equality.acquire.extract import load
    from rollout_equality.acquire.models import model_record
    from rollout_equality.acquire.resolve import resolve_model
    from rollout_equality.config.checks import experiment_analysis, run_inputs
    from rollout_equality.measure import Outputs, Reading, measure, measure_and_write
    from rollout_equality.runtime.files import logging_to

    outputs = Outputs.beside(args.out)  # no attention dump

    with logging_to(args.log):
        modality = "text" if args.texts else "image" if args.images else None
        if args.inputs is not None and not args.data:
            raise ValueError("--inputs needs --data (a prepared data set); give fewer --texts or --images instead")
        if args.data:
            from rollout_equality.acquire.data import read_manifest

            modality = read_manifest(args.data)["modality"]
        name, info, rerun = resolve_model(
            args.model, config, modality, name=args.name, revision=args.revision, backend=args.backend
        )
        if args.data:
            ids, inputs, dataset = None, None, Path(args.data).name
        else:
            ids, inputs, dataset = read_texts(args.texts) if args.texts else read_images(args.images)
        analysis = experiment_analysis(config, name, dataset)
        given = {"per_head": args.per_head, "fusions": args.fusions}  # the flags over the config
        heads = HeadSettings.from_config({**analysis, **{k: v for k, v in given.items() if v is not None}})
        if args.data:
            count = args.inputs if args.inputs is not None else run_inputs(config, name, dataset)
            rates = measure(
                info, args.data, outputs, model=name, dataset=dataset, extraction=extraction, condition=condition,
                heads=heads, model_rerun=rerun or None, inputs=count,
            )  # fmt: skip
        else:
            reading = Reading.of(extraction, modality)
            extractor = load(
                info, reading.device, max_tokens=extraction.max_tokens, image_backend=extraction.image_backend
            )
            rates = measure_and_write(
                extractor, ids, inputs, outputs, model=name, dataset=dataset, model_record=model_record(info),
                dataset_record=given_record(dataset, ids, inputs), reading=reading, condition=condition, heads=heads,
            )  # fmt: skip
    extra = [*(["per head"] if heads.per_head else []), *(f"{f} fusion" for f in heads.extra_fusions)]
    print(
        f"{name}: the condition holds in {100 * rates['content']:.1f}% (content tokens) and {100 * rates['all']:.1f}% "
        f"(all tokens) of input-layer pairs\nwrote {outputs.records} and {outputs.rollout}; "
        f"{outputs.heads} and {outputs.heads_rollout} hold "
        + (f"the heads analysis ({', '.join(extra)})" if extra else "no rows (the heads analysis is off)")
    )
    return 0


def fusions_flag(text: str) -> list[str]:
    """``--fusions``: comma-separated names, checked by the settings record
    (:class:`rollout_equality.config.settings.HeadSettings`), as every list of fusions the library takes."""
    try:
        return list(HeadSettings(fusions=tuple(part.strip() for part in text.split(","))).fusions)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"{text!r}: {err}") from None


_FLAGS = {  # the command-line flags that override a setting of config.yaml: (section, key) -> option's dest
    ("condition", "atol"): "atol",
    ("condition", "row_sum_atol"): "row_sum_atol",
    ("baseline", "ns"): "n",
    ("baseline", "trials"): "trials",
    ("baseline", "seed"): "seed",
    ("baseline", "chunk_size"): "chunk_size",
    ("extraction", "batch_size"): "batch_size",
    ("extraction", "device"): "device",
    ("extraction", "max_tokens"): "max_tokens",
    ("extraction", "image_backend"): "image_backend",
}


def _sections(args: argparse.Namespace, *names: str, config: dict | None = None) -> list:
    """config.yaml's sections ``names`` (of ``--configfile``, read and validated once, the schema's defaults filled
    in; or ``config``, read so already) as their records (rollout_equality.config.settings), with the values given on the
    command line in place of the file's."""
    from rollout_equality.config.settings import SECTIONS, from_section

    config = config if config is not None else load_config(args.configfile)
    records = []
    for name in names:
        given = {key: getattr(args, dest) for (section, key), dest in _FLAGS.items() if section == name}
        values = {**config[name], **{key: value for key, value in given.items() if value is not None}}
        records.append(from_section(SECTIONS[name], values))
    return records


def _cmd_check_sources(args: argparse.Namespace) -> int:
    from rollout_equality.acquire.sources import SourcesDriftedError, run
    from rollout_equality.runtime.files import logging_to

    config = load_config(args.configfile)
    unknown = [s for s in args.suite if s not in config["suites"]]
    if unknown:
        raise ValueError(f"no suite {unknown} in the config (suites: {sorted(config['suites'])})")
    import contextlib

    with logging_to(args.log) if args.log else contextlib.nullcontext():
        try:
            run(config, args.suite, args.cache, args.out, echo=sys.stdout)
        except SourcesDriftedError as err:
            print(f"error: {str(err).splitlines()[0]} (the table above says what to do)", file=sys.stderr)
            return 1
    return 0


def _cmd_compare(args: argparse.Namespace) -> int:
    from rollout_equality.reporting.compare import ALPHA, compare

    result = compare(args.a, args.b, alpha=ALPHA if args.alpha is None else args.alpha)
    print(result.report())
    return result.status


def _cmd_slurm_profile(args: argparse.Namespace) -> int:
    import yaml

    from rollout_equality.config.profiles import ProfileError, site_profile
    from rollout_equality.runtime.files import write_text

    base = Path(args.base)
    if not base.is_file():
        raise ProfileError(f"{base} is missing: run this in a checkout of the project (profiles/slurm/config.yaml)")
    profile = site_profile(
        yaml.safe_load(base.read_text()),
        partition=args.partition,
        account=None if args.no_account else args.account,
        gpu_partition=args.gpu_partition,
        gpu_rules=args.gpu_rules,
    )
    out = Path(args.out) / "config.yaml"
    head = (
        f"# Made by `rollout-equality slurm-profile` from {base}: every key of it, with this site's partition,\n"
        f"# account and GPU partition. Make it again after that file changes; give Snakemake --profile {args.out}.\n"
    )
    write_text(out, head + yaml.safe_dump(profile, sort_keys=False))
    print(f"wrote {out}")
    return 0


OUTSIDE = (
    "Outside a checkout of the project: install it (pip install rollout-equality-*.whl, or pip install "
    "git+URL of the repository), then e.g. `rollout-equality measure --model org/name --revision COMMIT --texts "
    "lines.txt --out r.parquet` (a hub id; a folder of model files, a folder the workflow prepared, or "
    "package:MODULE work the same). Each command reads the working directory's config.yaml when there is one, else "
    "the schema's defaults (stderr says which); --configfile my.yaml changes some settings."
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rollout-equality", description=__doc__.splitlines()[0], epilog=OUTSIDE)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("condition", help="test the equality condition on one matrix (or a stack) and print JSON")
    p.add_argument("matrix", help="a .npy array (..., n, n), or a .csv / .txt matrix")
    _condition_flags(p)
    _configfile_flag(p)
    p.set_defaults(func=_cmd_condition)

    p = sub.add_parser("baseline", help="random-matrix baseline table (CSV)")
    p.add_argument("--n", type=int, nargs="+", help="matrix sizes (default: baseline.ns)")
    p.add_argument("--trials", type=int, help="matrices per size (default: baseline.trials)")
    p.add_argument("--seed", type=int, help="default: baseline.seed")
    p.add_argument("--chunk-size", type=int, help="matrices tested at once, memory only (default: baseline.chunk_size)")
    _condition_flags(p)
    _configfile_flag(p)
    p.add_argument("--out", required=True, help="CSV to write")
    p.add_argument("--log", default=None, help="log file (default: stderr)")
    p.set_defaults(func=_cmd_baseline)

    p = sub.add_parser("prepare", help="prepare a data set (images or text segments) with its manifest")
    p.add_argument("name")
    p.add_argument("spec", help="the data set's config entry as JSON, or a YAML file holding it")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--log", default=None)
    p.set_defaults(func=_cmd_prepare)

    p = sub.add_parser(
        "measure",
        help="records of one model on a prepared data set or on texts / images, as rule measure writes them",
        description="Records of one model, measured as rule measure measures (the same entry point, settings, "
        "analysis and checks); writes --out (r.parquet) and beside it, named as the workflow names them, "
        "r.rollout.parquet (the rollout records), r.heads.parquet and r.heads.rollout.parquet (per head and under "
        "the max and min head fusions, as config analysis or --per-head and --fusions ask; no rows otherwise), "
        "nothing else but a hub download or a model it prepares itself in its cache (ROLLOUT_EQUALITY_CACHE, else "
        "~/.cache/rollout-equality). docs/your-model.md says which models work and what each refusal means.",
        epilog=OUTSIDE,
    )
    p.add_argument(
        "--model",
        required=True,
        help="a model name of the config (the folder the workflow prepared for it, when there is one), a folder the "
        "workflow prepared, a folder of model files, package:MODULE, or a hub id",
    )
    p.add_argument("--revision", default="main", help="hub revision of a hub id (pin a commit)")
    p.add_argument("--backend", choices=["transformers", "timm"], default="transformers", help="of a hub id")
    p.add_argument("--name", default=None, help="model name in the records (default: the config's or the folder's)")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--data", help="a prepared data set folder (with manifest.json)")
    src.add_argument("--texts", help="a text file, one input per line")
    src.add_argument("--images", nargs="+", help="image files")
    p.add_argument("--out", required=True, help="records file (.parquet); rollout records go beside it")
    p.add_argument("--batch-size", type=int, help="inputs per forward pass (default: extraction.batch_size)")
    p.add_argument("--device", help="auto, cpu or cuda[:N] (default: extraction.device)")
    p.add_argument("--max-tokens", type=int, help="truncate text inputs to this many tokens (extraction.max_tokens)")
    p.add_argument("--image-backend", help="transformers image processor backend (extraction.image_backend)")
    p.add_argument(
        "--per-head",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="test every head's own attention too, or not (default: the config's analysis.per_head for this "
        "experiment, as the workflow resolves it)",
    )
    p.add_argument(
        "--fusions",
        type=fusions_flag,
        metavar=",".join(FUSIONS),
        help=f"the head fusions tested, comma-separated among {', '.join(FUSIONS)}, mean included (its records "
        "are --out's); max and min fuse the heads as vit-explain's head_fusion does (default: the config's "
        "analysis.fusions for this experiment)",
    )
    p.add_argument(
        "--inputs",
        type=int,
        help="with --data: measure its first N inputs (default: the `inputs` the config's suites give this "
        "experiment, else all)",
    )
    _condition_flags(p)
    _configfile_flag(p)
    p.add_argument("--log", default=None)
    p.set_defaults(func=_cmd_measure)

    p = sub.add_parser(
        "check-sources",
        help="check every hub model, data set and table a suite downloads (revision, files, sizes), downloading none",
    )
    p.add_argument(
        "--suite",
        action="append",
        default=None,
        help="suite to check (repeatable; default: paper, what `download` fetches)",
    )
    _configfile_flag(p)
    p.add_argument("--cache", default=DOWNLOAD_CACHE, help="OpenML's and scikit-learn's caches (default %(default)s)")
    p.add_argument("--out", default=None, help="also write the table as TSV")
    p.add_argument("--log", default=None)
    p.set_defaults(func=_cmd_check_sources)

    p = sub.add_parser(
        "slurm-profile",
        help="write a site profile: profiles/slurm with your partition, account and GPU partition filled in",
        description="Write OUT/config.yaml: profiles/slurm/config.yaml with the site's partition and account (and the "
        "GPU partition of the rules that claim a GPU), every per-rule resource kept (docs/cluster.md). Snakemake "
        "refuses nothing itself: the workflow refuses a profile that still holds a <placeholder>.",
    )
    p.add_argument("--partition", required=True, help="the partition of every job (sinfo lists them)")
    account = p.add_mutually_exclusive_group(required=True)
    account.add_argument("--account", help="the account jobs are charged to")
    account.add_argument("--no-account", action="store_true", help="the site has no accounts (slurm-no-account)")
    p.add_argument("--gpu-partition", help="the partition of the rules that claim a GPU (extraction.device: cuda)")
    p.add_argument(
        "--gpu-rules",
        nargs="+",
        default=list(GPU_RULES),
        help=f"the rules given --gpu-partition (default: {' '.join(GPU_RULES)}; add train_ftt measure_ftt for "
        "tabular.training.device: cuda)",
    )
    p.add_argument("--base", default="profiles/slurm/config.yaml", help="the profile it starts from")
    p.add_argument("--out", default="profiles/site", help="the folder it writes config.yaml into")
    p.set_defaults(func=_cmd_slurm_profile)

    p = sub.add_parser(
        "compare",
        help="does run B reproduce run A? their tables compared row by row, within each number's uncertainty",
        description=f"Compare two tables folders (a run's {SUITE_TABLES_DIR.format(suite='<suite>')}/, or docs/offline) "
        "row by row: one "
        "line per row that is not byte-identical, classed within uncertainty (Fisher's exact test for rates, the "
        "spread across seeds for FT-Transformer scores), different, other inputs (its data set's manifest differs in "
        "the folders' inputs.csv) or missing (in one run only), Holm's correction over all tests; a claim whose "
        "status changed is different. Exit status: 0 nothing different, on other inputs or missing, "
        "1 something is, 2 bad input (docs/outputs.md, Comparing two runs).",
    )
    p.add_argument("a", help="a tables folder, e.g. docs/offline (the kept run)")
    p.add_argument("b", help=f"another, e.g. {SUITE_TABLES_DIR.format(suite='offline')} (your run)")
    p.add_argument(
        "--alpha", type=float, default=None, help="family-wise error rate of Holm's correction (default 0.05)"
    )
    p.set_defaults(func=_cmd_compare)
    return parser


def _configfile_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--configfile",
        action="append",
        default=None,
        help="config file(s) merged in order into the config.yaml of the working directory (as snakemake "
        "--configfile; without one there, into the schema's defaults), for settings not given as flags",
    )


def base_config() -> list[str]:
    """The config file the command line starts from: the working directory's config.yaml, as Snakemake reads it,
    else none (the schema's defaults: the command line needs no checkout)."""
    here = Path("config.yaml")
    return [str(here)] if here.is_file() else []


def _condition_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--atol", type=float, help="condition tolerance (default: condition.atol)")
    p.add_argument("--row-sum-atol", type=float, help="row-sum tolerance (default: condition.row_sum_atol)")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    base = base_config()
    args.configfile = [*base, *(getattr(args, "configfile", None) or [])]  # as Snakemake merges them
    if args.command not in ("prepare", "compare", "slurm-profile"):  # they read no config
        print(
            f"config: {' + '.join(args.configfile if base else ['schema defaults', *args.configfile])}", file=sys.stderr
        )
    if args.command == "check-sources":
        args.suite = args.suite or ["paper"]
    try:
        return args.func(args)
    except (ValueError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except RuntimeError as err:  # ModelUnavailableError and friends: a message, not a traceback
        print(f"error: {err}", file=sys.stderr)
        return 3
    except KeyError as err:
        print(f"error: the setting {err} is missing (config.yaml's schema lists every setting)", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
