"""Models: where their files come from and how they become a local directory.

A model entry of ``config.yaml`` names its ``backend`` (``transformers`` or
``timm``), its ``modality`` (``text`` or ``image``) and exactly one source:

* ``hub: {id, revision}`` — a Hugging Face hub repository at a pinned commit (or a branch,
  resolved and recorded at download): only the files the loader reads (PyTorch weights in one
  format, configuration, tokenizer, preprocessor) are downloaded into ``resources/``, and a
  second run with ``HF_HUB_OFFLINE=1`` finds them there (:mod:`rollout_equality.hub`);
* ``local: DIR`` — a directory holding ``save_pretrained`` (transformers) or
  ``config.json`` + ``model.safetensors`` (timm) files; ``package:MODULE`` names a
  Python package that ships weights and has ``get_model_path()``;
* ``random_init: {seed, config | timm_name, ...}`` — the architecture built from
  its configuration with random weights (an untrained control), saved to a
  directory first so that it is loaded exactly like a downloaded model.

Every source ends as a directory that :func:`rollout_equality.extract.load`
reads; :func:`prepare_model` writes ``model.json`` describing it.
"""

from __future__ import annotations

import importlib
import logging
import os
from pathlib import Path
from typing import Any

from rollout_equality import hub
from rollout_equality.io import write_json

log = logging.getLogger(__name__)

BACKENDS = ("transformers", "timm")
MODALITIES = ("text", "image")


class ModelUnavailableError(RuntimeError):
    """The model's files cannot be had here (offline and not cached, or not found)."""


def _ways_out(name: str) -> str:
    return (
        f"Ways out: run `snakemake resources/models/{name}/model.json` (or `snakemake download` for the whole "
        f"paper suite) where the hub is reachable, e.g. a login node: the files land in resources/models/{name}/ "
        "inside this project, which compute jobs read with HF_HUB_OFFLINE=1; or set `local: /path/to/snapshot` "
        f"for {name!r} in config.yaml; or run the offline suite (`snakemake --cores 2 offline`), which needs no "
        "network."
    )


def resolve_local(source: str) -> Path:
    """A ``local:`` source as a directory: a path, or ``package:MODULE`` (its ``get_model_path()``)."""
    if source.startswith("package:"):
        module_name = source.removeprefix("package:")
        try:
            module = importlib.import_module(module_name)
        except ImportError as err:
            raise ModelUnavailableError(
                f"package {module_name!r} is not installed; `pip install {module_name.replace('_', '-')}`"
            ) from err
        path = Path(module.get_model_path())
    else:
        path = Path(source).expanduser()
    if not path.is_dir():
        raise ModelUnavailableError(f"model directory {path} does not exist")
    return path


def download_hub(name: str, repo_id: str, revision: str, local_dir: Path) -> hub.Snapshot:
    """The loader files of a hub repository in ``local_dir`` (see :func:`rollout_equality.hub.snapshot`).

    Online the revision is resolved to a commit and only the files transformers or timm read are
    fetched; with ``HF_HUB_OFFLINE=1`` the files a previous download left in ``local_dir`` are
    checked and used. Fails within seconds with :class:`ModelUnavailableError`, naming the cause
    (unreachable hub, unknown repository or revision, gated repository, files missing on disk) and
    the ways out.
    """
    try:
        return hub.snapshot(
            repo_id, revision, local_dir, what=f"model {name!r} ({repo_id}@{revision})", ways_out=_ways_out(name)
        )
    except hub.HubError as err:
        raise ModelUnavailableError(str(err)) from err


def build_random(name: str, spec: dict[str, Any], backend: str, modality: str, out_dir: Path) -> Path:
    """Build a randomly initialised model from its configuration and save it to ``out_dir``."""
    import torch

    seed = int(spec["seed"])
    out_dir.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    if backend == "timm":
        import timm

        from rollout_equality.extract.timm_backend import save_timm

        model = timm.create_model(spec["timm_name"], pretrained=False, **spec["kwargs"])
        save_timm(model, spec["timm_name"], out_dir, model_args=spec["kwargs"])
        return out_dir

    import transformers

    config_dict = dict(spec["config"])
    model_type = config_dict.pop("model_type")
    if modality == "text":
        tokenizer = transformers.AutoTokenizer.from_pretrained(resolve_local(spec["tokenizer"]))
        config_dict.setdefault("vocab_size", len(tokenizer))
        tokenizer.save_pretrained(out_dir)
    else:
        kwargs = dict(spec["image_processor"])
        processor_cls = getattr(transformers, kwargs.pop("type"))
        processor_cls(**kwargs).save_pretrained(out_dir)
    config = transformers.AutoConfig.for_model(model_type, **config_dict)
    model = transformers.AutoModel.from_config(config)
    model.save_pretrained(out_dir)
    return out_dir


def prepare_model(name: str, spec: dict[str, Any], model_dir: str | os.PathLike, manifest: str | os.PathLike) -> dict:
    """Make model ``name`` available as a local directory and write its ``model.json`` to ``manifest``.

    Hub snapshots go to ``model_dir/snapshot``, random builds to ``model_dir/random_init``;
    ``local`` sources stay where they are.
    """
    backend, modality = spec["backend"], spec["modality"]
    if backend not in BACKENDS:
        raise ValueError(f"model {name!r}: backend must be one of {BACKENDS}; got {backend!r}")
    if modality not in MODALITIES:
        raise ValueError(f"model {name!r}: modality must be one of {MODALITIES}; got {modality!r}")
    sources = [k for k in ("hub", "local", "random_init") if k in spec]
    if len(sources) != 1:
        raise ValueError(f"model {name!r}: give exactly one of hub, local, random_init; got {sources or 'none'}")
    info: dict[str, Any] = {"name": name, "backend": backend, "modality": modality, "source": sources[0]}
    target = Path(model_dir)
    if "hub" in spec:
        repo_id, revision = spec["hub"]["id"], spec["hub"]["revision"]
        snap = download_hub(name, repo_id, revision, target / "snapshot")
        path = snap.path
        info.update(hub_id=repo_id, revision=revision, commit=snap.commit, files=snap.files, bytes=snap.size)
        if not hub.COMMIT.fullmatch(revision):
            log.warning(
                "model %s is not pinned: resolved %s@%s to commit %s; pin it in config.yaml",
                name,
                repo_id,
                revision,
                snap.commit,
            )
    elif "local" in spec:
        path = resolve_local(spec["local"])
        info.update(local=spec["local"])
    else:
        path = build_random(name, spec["random_init"], backend, modality, target / "random_init")
        info.update(random_init=spec["random_init"])
    info["path"] = str(Path(path).resolve())
    write_json(manifest, info)
    log.info("model %s ready at %s", name, info["path"])
    return info
