"""What a command line names as a model, made ready to measure as the workflow would: a name of the config, a folder
the workflow prepared, a folder of model files, ``package:MODULE`` or a hub id (:func:`resolve_model`)."""

from __future__ import annotations

import json
import logging
import os
import re
from pathlib import Path
from typing import Any, NamedTuple

from rollout_equality.acquire.models import (
    check_model,
    file_records,
    package_distribution,
    prepare_model,
    read_model_info,
    resolve_local,
)
from rollout_equality.config.paths import MODEL_INFO, snakemake_command

log = logging.getLogger(__name__)

HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")
"""A hub repository id, ``org/name``."""


class Resolved(NamedTuple):
    """A model ready to measure (:func:`resolve_model`)."""

    name: str
    """Its name in the records."""
    info: dict[str, Any]
    """Its ``model.json``-like description, ``path`` where its files are (what the extractors load)."""
    rerun: str
    """What to run again when its prepared files changed ("" for files described in memory)."""


def cache_dir() -> Path:
    """Where the command line keeps the models it prepares itself (hub snapshots, unpacked archives, built controls):
    ``$ROLLOUT_EQUALITY_CACHE``, else ``$XDG_CACHE_HOME/rollout-equality`` (``~/.cache/rollout-equality``); never the
    workflow's ``resources/``."""
    if os.environ.get("ROLLOUT_EQUALITY_CACHE"):
        return Path(os.environ["ROLLOUT_EQUALITY_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "rollout-equality"


def resolve_model(
    src: str,
    config: dict[str, Any],
    modality: str,
    *,
    name: str | None = None,
    revision: str = "main",
    backend: str = "transformers",
) -> Resolved:
    """The model ``src`` names (the command line's ``--model``), checked to read ``modality`` and its prepared files
    checked; ``name`` names it in the records (default: the config's or the folder's); ``revision`` and ``backend``
    are a hub id's:

    * a name of the config's ``models:``: the folder the workflow prepared for it (``resources/models/<name>``,
      read as rule measure reads it, its files checked) when there is one, else prepared into :func:`cache_dir`;
    * a folder the workflow prepared (it holds ``model.json``): read the same way;
    * a model folder (transformers or timm files) or ``package:MODULE``: described in memory, nothing written;
    * a hub id (``org/name``): downloaded at ``--revision`` into :func:`cache_dir`.
    """
    folder = Path(src).expanduser()
    if src in config["models"]:
        prepared = Path(MODEL_INFO.format(model=src))
        if prepared.is_file():
            info = read_model_info(prepared)
            rerun = f"prepare it again ({snakemake_command(str(prepared), '--forcerun', 'prepare_model')})"
        else:
            spec = config["models"][src]
            _fits(src, spec["modality"], modality)
            info = prepare_model(src, spec, cache_dir() / src, cache_dir() / src / "model.json")
            rerun = f"delete {cache_dir() / src} and run again"
        log.info("model %r of the config: %s", src, prepared if prepared.is_file() else cache_dir() / src)
    elif (folder / "model.json").is_file():
        info = read_model_info(folder / "model.json")
        rerun = f"prepare it again ({snakemake_command(str(folder / 'model.json'), '--forcerun', 'prepare_model')})"
    elif src.startswith("package:") or folder.is_dir():
        path = resolve_local(src)
        backend, found = describe_folder(path)
        info = {"name": name or path.name, "backend": backend, "modality": found, "source": "local", "local": src}
        if src.startswith("package:"):
            info["distribution"] = package_distribution(src.removeprefix("package:"))
        info["path"] = str(path.resolve())
        info["files"], info["stamps"] = file_records(path)  # what was measured, for the records' provenance
        rerun = ""
    elif HUB_ID.fullmatch(src):
        folder_name = name or src.split("/")[-1]
        spec = {"backend": backend, "modality": modality, "hub": {"id": src, "revision": revision}}
        info = prepare_model(folder_name, spec, cache_dir() / folder_name, cache_dir() / folder_name / "model.json")
        rerun = f"delete {cache_dir() / folder_name} and run again"
        info["modality"] = describe_folder(Path(info["path"]))[1]  # what the files say, not what was asked
    else:
        raise ValueError(
            f"model {src!r} is neither a model of the config ({', '.join(sorted(config['models']))}), a folder "
            "(a model's files, or one the workflow prepared), package:MODULE, nor a hub id (org/name)"
        )
    _fits(src, info["modality"], modality)
    if rerun:
        check_model(info, rerun)
    return Resolved(name or info.get("name") or src, info, rerun)


def _fits(model: str, reads: str, given: str) -> None:
    if reads != given:
        raise ValueError(f"model {model!r} reads {reads} inputs, but {given} inputs were given")


def describe_folder(path: Path) -> tuple[str, str]:
    """(backend, modality) of a folder of model files, from its files alone (nothing is loaded): timm's
    ``config.json`` names an ``architecture``; a transformers ``config.json`` a ``model_type`` that the installed
    transformers knows, with a tokenizer (text) or an image processor (image) beside it. Raises ValueError naming
    the folder and what it lacks."""
    config_file = path / "config.json"
    if not config_file.is_file():
        raise ValueError(
            f"{path} is neither a model folder (config.json and weights, as save_pretrained or timm write them) nor a "
            "folder the workflow prepared (model.json)"
        )
    config = json.loads(config_file.read_text())
    if "architecture" in config:
        return "timm", "image"
    model_type = config.get("model_type")
    import transformers

    if model_type not in transformers.CONFIG_MAPPING:
        raise ValueError(
            f"{config_file}: model_type {model_type!r} is not one transformers {transformers.__version__} knows; "
            "install a transformers release that has it, or give a folder of a known architecture"
        )
    image = (path / "preprocessor_config.json").is_file()
    text = any((path / f).is_file() for f in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "spiece.model"))
    if image == text:
        raise ValueError(
            f"{path}: cannot tell whether the model reads text or images (it has "
            f"{'both a tokenizer and' if image else 'neither a tokenizer nor'} an image processor)"
        )
    return "transformers", "image" if image else "text"
