"""Command line: ``rollout-equality <command>`` (also ``python -m rollout_equality``).

Commands run single pipeline steps outside Snakemake, e.g. to test one matrix
or to regenerate the baseline with other settings.
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from pathlib import Path

import numpy as np

from rollout_equality.config.load import load_config
from rollout_equality.config.paths import DATA_MANIFEST, DOWNLOAD_CACHE, MODELS, SUITE_TABLES_DIR
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


def version() -> str:
    """What ``--version`` prints: the package's version, then the lock of the checkout it is imported from (its
    digest, :func:`rollout_equality.runtime.lock.lock_digest`) and whether this environment is that lock, or that
    there is no lock beside it (an installed wheel)."""
    import rollout_equality
    from rollout_equality.runtime.lock import checkout_lock, differences, lock_digest, read_pins

    lines = [f"rollout-equality {rollout_equality.__version__}"]
    lock = checkout_lock()
    if lock is None:
        lines.append(
            "lock: none beside this installation (not a checkout); a checkout's requirements/lock.txt pins the "
            "environment the project's results were made in"
        )
        return "\n".join(lines)
    wheels = lock.parent / "offline-data.txt"
    departures = differences(read_pins(lock), read_pins(wheels) if wheels.is_file() else {})
    lines.append(f"lock: {lock_digest(lock)} ({lock})")
    lines.append(
        "this environment: the lock's"
        if not departures
        else f"this environment departs from the lock in {len(departures)} distributions: "
        + "; ".join(departures[:3])
        + ("; …" if len(departures) > 3 else "")
    )
    return "\n".join(lines)


class _Version(argparse.Action):
    """``--version``: print :func:`version` and exit (computed when asked for, not when the parser is built)."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        print(version())
        parser.exit()


class _Described(argparse.HelpFormatter):
    """A subcommand's --help: its description and epilog filled paragraph by paragraph (blank lines between them
    kept), and the examples block as written, one command a line."""

    def _fill_text(self, text, width, indent):
        blocks = text.split("\n\n")
        return "\n\n".join(
            block if block.startswith(EXAMPLES) else textwrap.fill(" ".join(block.split()), width, initial_indent=indent,
                                                                     subsequent_indent=indent, break_on_hyphens=False,
                                                                     break_long_words=False)
            for block in blocks
        )  # fmt: skip


EXAMPLES = "examples:"


def _command(sub, name: str, *, help: str, description: str, examples: list[str], epilog: str | None = None):
    """The subcommand ``name``: one line in the command list (``help``), and in its own --help a ``description``
    (paragraphs separated by blank lines), its ``examples`` (each a whole command line) and an ``epilog``.
    tests/test_cli_help.py parses every example with this parser."""
    shown = EXAMPLES + "\n" + "\n".join(f"  {example}" for example in examples)
    return sub.add_parser(
        name,
        help=help,
        description=description,
        epilog=shown + (f"\n\n{epilog}" if epilog else ""),
        formatter_class=_Described,
    )


DATA_DIR = str(Path(DATA_MANIFEST).parent)
"""A prepared data set's folder (``{dataset}`` to fill in), as the workflow names it."""

LOG_HELP = (
    "append the command's messages to this file, as a rule writes its log: file (progress bars, what it did, "
    "warnings, a failure's traceback); default: stderr"
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rollout-equality", description=__doc__.splitlines()[0], epilog=OUTSIDE)
    parser.add_argument(
        "--version", action=_Version, help="print the version and the digest of the checkout's lock, and exit"
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = _command(
        sub,
        "condition",
        help="test the equality condition on one matrix (or a stack) and print JSON",
        description="Test the equality condition on a row-stochastic matrix A, or on each matrix of a stack (..., n, "
        "n), and print the result as JSON: holds (a mutually self-dominant pair attains κ(A)), holds_direct "
        "(κ(½(I + A)) computed from its entries equals ½(1 + κ(A))), kappa, kappa_half, bound, slack, n_max_pairs "
        "and the witness pair (-1: none).\n\n"
        "The tolerances are config.yaml's condition.atol and condition.row_sum_atol unless given. A row that does "
        "not sum to 1 within --row-sum-atol is refused, never renormalised; the message names the matrix's type. "
        "From Python: rollout_equality.equality_condition (docs/library.md).",
        examples=[
            "rollout-equality condition matrix.npy",
            "rollout-equality condition attention.csv --atol 1e-9",
            "rollout-equality condition layers.npy --row-sum-atol 0.0078125",
        ],
        epilog="matrix.npy: a numpy array saved by numpy.save; attention.csv: one row of A a line; layers.npy: a "
        "stack, e.g. bfloat16 attention saved as float32, accepted within bfloat16's machine epsilon (2^-7).",
    )
    p.add_argument("matrix", help="a .npy array (..., n, n), or a .csv / .txt matrix")
    _condition_flags(p)
    _configfile_flag(p)
    p.set_defaults(func=_cmd_condition)

    p = _command(
        sub,
        "baseline",
        help="random-matrix baseline table (CSV)",
        description="Test the condition on uniformly random row-stochastic matrices of each size, as rule "
        "random_baseline does, and write one CSV row per size: n, trials, holds, rate and its Wilson 95% interval "
        "(ci_low, ci_high). The sizes, trials and seed are config.yaml's baseline section unless given; the same "
        "seed gives the same table.",
        examples=[
            "rollout-equality baseline --n 4 16 --trials 1000 --seed 0 --out b.csv",
            "rollout-equality baseline --out b.csv --log baseline.log",
        ],
    )
    p.add_argument("--n", type=int, nargs="+", help="matrix sizes (default: baseline.ns)")
    p.add_argument("--trials", type=int, help="matrices per size (default: baseline.trials)")
    p.add_argument("--seed", type=int, help="default: baseline.seed")
    p.add_argument("--chunk-size", type=int, help="matrices tested at once, memory only (default: baseline.chunk_size)")
    _condition_flags(p)
    _configfile_flag(p)
    p.add_argument("--out", required=True, help="CSV to write")
    p.add_argument("--log", default=None, metavar="FILE", help=LOG_HELP)
    p.set_defaults(func=_cmd_baseline)

    p = _command(
        sub,
        "prepare",
        help="prepare a data set (images or text segments) with its manifest",
        description="Prepare a data set as rule prepare_data does: draw its inputs (text segments or images) as its "
        "config entry says, with the schema's defaults for what the entry leaves out, and write them into --out "
        "with manifest.json (each input's id and SHA-256). `measure --data` reads the folder. Reads no "
        "config.yaml: the entry is given whole, as JSON or as a YAML file (docs/configuration.md, datasets).",
        examples=[
            'rollout-equality prepare pydoc \'{"modality": "text", "source": {"pydoc_topics": true}, '
            '"n": 20, "seed": 0}\' --out data/pydoc',
            "rollout-equality prepare photos photos.yaml --out data/photos --log prepare.log",
        ],
    )
    p.add_argument("name", help="the data set's name (in its manifest and in the records)")
    p.add_argument("spec", help="the data set's config entry as JSON, or a YAML file holding it")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--log", default=None, metavar="FILE", help=LOG_HELP)
    p.set_defaults(func=_cmd_prepare)

    p = _command(
        sub,
        "measure",
        help="records of one model on a prepared data set or on texts / images, as rule measure writes them",
        description="Records of one model, measured as rule measure measures (the same entry point, settings, "
        "analysis and checks); writes --out (r.parquet) and beside it, named as the workflow names them, "
        "r.rollout.parquet (the rollout records), r.heads.parquet and r.heads.rollout.parquet (per head and under "
        "the max and min head fusions, as config analysis or --per-head and --fusions ask; no rows otherwise), "
        "nothing else but a hub download or a model it prepares itself in its cache (ROLLOUT_EQUALITY_CACHE, else "
        "~/.cache/rollout-equality). docs/your-model.md says which models work and what each refusal means.",
        examples=[
            "rollout-equality measure --model minilm --texts lines.txt --out r.parquet",
            "rollout-equality measure --model facebook/dinov2-small --revision COMMIT --images a.jpg b.jpg "
            "--per-head --fusions mean,max,min --out r.parquet",
            f"rollout-equality measure --model {MODELS}/minilm --data {DATA_DIR.format(dataset='pydoc_topics')} "
            "--out r.parquet --log measure.log",
        ],
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
    p.add_argument("--log", default=None, metavar="FILE", help=LOG_HELP)
    p.set_defaults(func=_cmd_measure)

    p = _command(
        sub,
        "check-sources",
        help="check every hub model, data set and table a suite downloads (revision, files, sizes), downloading none",
        description="Ask the hub and OpenML whether every model, data set and table a suite downloads is there as "
        "config.yaml pins it: the revision, the files and their sizes. Downloads nothing. Prints one row per "
        "source, with what to do where one drifted, and exits with status 1 if one did (0: every source can be "
        "downloaded as configured). Rule check_network_sources runs the same check before any download.",
        examples=[
            "rollout-equality check-sources --suite paper",
            "rollout-equality check-sources --suite paper --suite offline --out sources.tsv --log sources.log",
        ],
    )
    p.add_argument(
        "--suite",
        action="append",
        default=None,
        help="suite to check (repeatable; default: paper, what `download` fetches)",
    )
    _configfile_flag(p)
    p.add_argument("--cache", default=DOWNLOAD_CACHE, help="OpenML's and scikit-learn's caches (default %(default)s)")
    p.add_argument("--out", default=None, help="also write the table as TSV (when every source is there)")
    p.add_argument("--log", default=None, metavar="FILE", help=LOG_HELP)
    p.set_defaults(func=_cmd_check_sources)

    p = _command(
        sub,
        "slurm-profile",
        help="write a site profile: profiles/slurm with your partition, account and GPU partition filled in",
        description="Write OUT/config.yaml: profiles/slurm/config.yaml with the site's partition and account (and the "
        "GPU partition of the rules that claim a GPU), every per-rule resource kept (docs/cluster.md). Snakemake "
        "refuses nothing itself: the workflow refuses a profile that still holds a <placeholder>.",
        examples=[
            "rollout-equality slurm-profile --partition debug --no-account --gpu-partition gpu",
            "rollout-equality slurm-profile --partition batch --account lab --out profiles/site",
        ],
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

    p = _command(
        sub,
        "compare",
        help="does run B reproduce run A? their tables compared row by row, within each number's uncertainty",
        description=f"Compare two tables folders (a run's {SUITE_TABLES_DIR.format(suite='<suite>')}/, or docs/offline) "
        "row by row: one "
        "line per row that is not byte-identical, classed within uncertainty (Fisher's exact test for rates, the "
        "spread across seeds for FT-Transformer scores), different, other inputs (its data set's manifest differs in "
        "the folders' inputs.csv) or missing (in one run only), Holm's correction over all tests; a claim whose "
        "status changed is different. Exit status: 0 nothing different, on other inputs or missing, "
        "1 something is, 2 bad input (docs/outputs.md, Comparing two runs).",
        examples=[
            f"rollout-equality compare docs/offline {SUITE_TABLES_DIR.format(suite='offline')}",
            f"rollout-equality compare {SUITE_TABLES_DIR.format(suite='paper')} "
            f"../rerun/{SUITE_TABLES_DIR.format(suite='paper')} --alpha 0.01",
        ],
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
