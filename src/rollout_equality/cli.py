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

from rollout_equality.paths import DOWNLOAD_CACHE, MODELS
from rollout_equality.schema import CONFIG


def _cmd_condition(args: argparse.Namespace) -> int:
    from rollout_equality.dobrushin import equality_condition

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
    from rollout_equality.baseline import random_baseline
    from rollout_equality.formats import write_csv
    from rollout_equality.io import logging_to

    b, condition = _sections(args, "baseline", "condition")
    with logging_to(args.log):
        df = random_baseline(b.ns, b.trials, b.seed, atol=condition.atol, chunk_size=b.chunk_size)
        write_csv(df, args.out)
    return 0


def _cmd_prepare(args: argparse.Namespace) -> int:
    import yaml

    from rollout_equality.config import with_defaults
    from rollout_equality.data import prepare_data
    from rollout_equality.io import logging_to

    spec = (
        yaml.safe_load(Path(args.spec).read_text()) if args.spec.endswith((".yaml", ".yml")) else json.loads(args.spec)
    )
    spec = with_defaults("datasets", args.name, spec)  # the schema's defaults, as a workflow run gets them
    with logging_to(args.log):
        prepare_data(args.name, spec, args.out)
    return 0


def _cmd_measure(args: argparse.Namespace) -> int:
    from rollout_equality.extract import load
    from rollout_equality.io import logging_to
    from rollout_equality.measure import measure, measure_inputs
    from rollout_equality.models import prepare_model
    from rollout_equality.records import write_records

    out = Path(args.out)
    rollout_out = out.with_name(out.name.removesuffix(".parquet") + ".rollout.parquet")  # beside it, as --out says
    with logging_to(args.log):
        src = args.model
        spec = {"backend": args.backend, "modality": args.modality}
        if src.startswith("package:") or Path(src).expanduser().is_dir():
            spec["local"] = src
        else:
            spec["hub"] = {"id": src, "revision": args.revision}
        name = args.name or Path(src.removeprefix("package:")).name
        info = prepare_model(name, spec, Path(args.resources) / name, Path(args.resources) / name / "model.json")
        extraction, condition = _sections(args, "extraction", "condition")
        if args.data:
            measure(
                info,
                args.data,
                out,
                rollout_out,
                model=name,
                dataset=Path(args.data).name,
                extraction=extraction,
                condition=condition,
            )
            return 0
        if args.texts:
            inputs = [
                line.strip() for line in Path(args.texts).read_text(encoding="utf-8").splitlines() if line.strip()
            ]
            ids, dataset = [f"line-{i + 1}" for i in range(len(inputs))], Path(args.texts).name
        else:
            from PIL import Image

            inputs = [Image.open(p).convert("RGB") for p in args.images]
            ids, dataset = [Path(p).name for p in args.images], "images"
        extractor = load(
            info, extraction.device, max_tokens=extraction.max_tokens, image_backend=extraction.image_backend
        )
        rows, rollout_rows, _ = measure_inputs(
            extractor,
            ids,
            inputs,
            model=name,
            dataset=dataset,
            condition=condition,
            batch_size=extraction.batch_size,
            batch_by_length=extraction.batch_by_length,
        )
        write_records(
            out,
            rollout_out,
            rows,
            rollout_rows,
            {"model": info, "dataset": {"name": dataset}, "extraction": {"preprocessing": extractor.preprocessing}},
        )
    return 0


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


def _sections(args: argparse.Namespace, *names: str) -> list:
    """config.yaml's sections ``names`` (of ``--configfile``, read and validated once, the schema's defaults filled
    in) as their records (rollout_equality.settings), with the values given on the command line in place of the
    file's."""
    from rollout_equality.settings import SECTIONS, from_section

    config = load_config(args.configfile)
    records = []
    for name in names:
        given = {key: getattr(args, dest) for (section, key), dest in _FLAGS.items() if section == name}
        values = {**config[name], **{key: value for key, value in given.items() if value is not None}}
        records.append(from_section(SECTIONS[name], values))
    return records


def load_config(paths: list[str]) -> dict:
    """config.yaml files merged in order (as Snakemake's ``--configfile`` merges them), checked against the
    schema with its defaults filled in, and its references checked."""
    import yaml
    from snakemake.utils import update_config, validate

    from rollout_equality.config import check_references
    from rollout_equality.schema import SCHEMA

    config: dict = {}
    for path in paths:
        update_config(config, yaml.safe_load(Path(path).read_text()) or {})
    validate(config, str(SCHEMA))
    check_references(config)
    return config


def _cmd_check_sources(args: argparse.Namespace) -> int:
    from rollout_equality.io import logging_to
    from rollout_equality.sources import SourcesDriftedError, run

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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rollout-equality", description=__doc__.splitlines()[0])
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

    p = sub.add_parser("measure", help="records of one model on a prepared data set or a list of texts / images")
    p.add_argument("--model", required=True, help="hub id, local directory, or package:MODULE")
    p.add_argument("--revision", default="main", help="hub revision (pin a commit)")
    p.add_argument("--backend", choices=["transformers", "timm"], default="transformers")
    p.add_argument("--modality", choices=["text", "image"], required=True)
    p.add_argument("--name", default=None, help="model name in the records (default: last part of --model)")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--data", help="a prepared data set folder (with manifest.json)")
    src.add_argument("--texts", help="a text file, one input per line")
    src.add_argument("--images", nargs="+", help="image files")
    p.add_argument("--out", required=True, help="records file (.parquet); rollout records go beside it")
    p.add_argument("--batch-size", type=int, help="inputs per forward pass (default: extraction.batch_size)")
    p.add_argument("--device", help="auto, cpu or cuda[:N] (default: extraction.device)")
    p.add_argument("--max-tokens", type=int, help="truncate text inputs to this many tokens (extraction.max_tokens)")
    p.add_argument("--image-backend", help="transformers image processor backend (extraction.image_backend)")
    _condition_flags(p)
    _configfile_flag(p)
    p.add_argument("--resources", default=MODELS, help="where hub snapshots and model.json go")
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
    return parser


def _configfile_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--configfile",
        action="append",
        default=None,
        help=f"config file(s) merged in order into {CONFIG} (as snakemake --configfile), for settings not given as flags",
    )


def _condition_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--atol", type=float, help="condition tolerance (default: condition.atol)")
    p.add_argument("--row-sum-atol", type=float, help="row-sum tolerance (default: condition.row_sum_atol)")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    args.configfile = [str(CONFIG), *(getattr(args, "configfile", None) or [])]  # as Snakemake merges --configfile
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
