"""Data preparation: deterministic samples of images and text segments, with manifests.

A prepared data set is a folder ``resources/data/<name>/`` holding the inputs
(``images/*.png`` or ``segments.jsonl``) and ``manifest.json``: the source, the
count, the seed and a SHA-256 of every input, so a rerun can be checked. The sources:
:mod:`.images` (image folders, hub data sets, sample photographs, the digits of :mod:`.digits`) and :mod:`.text`
(local files, Python's docs, hub data sets). :mod:`.files` reads inputs given as files instead (the command line's
``--texts`` and ``--images``), with the same provenance.
"""

from __future__ import annotations

import glob
import json
import logging
import os
import tempfile
from pathlib import Path
from typing import Any

from rollout_equality.acquire import hub
from rollout_equality.config.paths import snakemake_command
from rollout_equality.runtime import digests
from rollout_equality.runtime.files import write_json

log = logging.getLogger(__name__)


def image_sha256(image: Any) -> str:
    """SHA-256 of an RGB image (PIL image or (height, width, 3) uint8 array): its shape, then its pixels, so that
    the same bytes in another shape (a 4×6 image against a 6×4 one) hash differently."""
    import numpy as np

    pixels = np.ascontiguousarray(np.asarray(image), dtype=np.uint8)
    if pixels.ndim != 3 or pixels.shape[2] != 3:
        raise ValueError(f"an RGB image has shape (height, width, 3); got {pixels.shape}")
    height, width, _ = pixels.shape
    return digests.of_bytes(f"rgb {height}x{width}\n".encode() + pixels.tobytes())


def manifest_sha256(items: list[dict[str, Any]]) -> str:
    """A data set's digest, which records cite: a hash over every item's id and content hash, in order."""
    return digests.of_bytes("".join(f"{it['id']} {it['sha256']}\n" for it in items).encode())


class DataUnavailableError(RuntimeError):
    """A data set's source cannot be had here; the message names the cause and what to do."""


def split_patterns(data_files: Any, split: str) -> list[str] | None:
    """The patterns of ``split`` in a ``data_files`` value: a mapping split → patterns, or bare
    patterns (a string or a list), which hold the split asked for."""
    if isinstance(data_files, dict):
        found = data_files.get(split)
        return None if found is None else ([found] if isinstance(found, str) else list(found))
    return [data_files] if isinstance(data_files, str) else list(data_files)


def _config_patterns(readme: str, config: str, split: str) -> list[str] | None:
    """The data file patterns of ``config``/``split`` in a data set card's ``configs:`` header."""
    import yaml

    header = readme.split("---", 2)[1] if readme.startswith("---") else ""
    for entry in (yaml.safe_load(header) or {}).get("configs", []):
        if entry.get("config_name") == config:
            files = entry.get("data_files", [])
            if isinstance(files, list) and files and isinstance(files[0], dict):
                files = {f["split"]: f["path"] for f in files}
            elif split != "train":  # a card's bare patterns are its train split
                return None
            return split_patterns(files, split)
    return None


def _what(name: str, spec: dict[str, Any]) -> str:
    return f"data set {name!r} (hub data set {spec['path']}@{spec['revision']})"


def hub_selector(name: str, spec: dict[str, Any]):
    """``select(tree, commit)`` for :func:`rollout_equality.acquire.hub.snapshot` and :func:`~rollout_equality.acquire.hub.list_files`:
    the files of a hub data set entry's split (``data_files`` patterns, or configuration ``name`` of the card's
    ``configs:`` header, the card read at ``commit``). Raises :class:`DataUnavailableError` naming what matched nothing."""
    path, split, what = spec["path"], spec["split"], _what(name, spec)

    def select(tree: dict[str, int], commit: str) -> list[str]:
        if "data_files" in spec:
            patterns = split_patterns(spec["data_files"], split)
            source = f"data_files {spec['data_files']!r}"
        else:
            from huggingface_hub import hf_hub_download

            config = spec.get("name")
            readme = ""
            if "README.md" in tree:
                with tempfile.TemporaryDirectory() as tmp:
                    readme = Path(
                        hf_hub_download(path, "README.md", repo_type="dataset", revision=commit, local_dir=tmp)
                    ).read_text(encoding="utf-8")
            patterns = _config_patterns(readme, config, split) if config else None
            source = f"configuration {config!r} of its card's `configs:` header"
        scripts = [f for f in tree if "/" not in f and f.endswith(".py")]
        if patterns is None:
            hint = (
                f" It holds a loading script ({', '.join(scripts)}), which datasets >= 4 refuses: pin a commit "
                "that holds the data as parquet files and name them with `data_files: {SPLIT: PATTERN}`."
                if scripts
                else " Name the files with `data_files: {SPLIT: PATTERN}`."
            )
            raise DataUnavailableError(f"{what}: no files of split {split!r} in {source}.{hint}")
        files = hub.match_files(tree, patterns)
        if not files:
            raise DataUnavailableError(
                f"{what}: {patterns} match no file of the repository at commit {commit}; its files: {sorted(tree)[:20]}"
            )
        return files

    return select


def load_hub_dataset(name: str, spec: dict[str, Any], way_out: str, local_dir: str | os.PathLike):
    """(data set, snapshot) of one split of a hub data set, read by :func:`datasets.load_dataset`.

    ``spec``: ``path``, ``revision`` (a commit, or a branch resolved to its commit and recorded),
    ``split``, and which files hold the split: ``data_files`` (patterns, as datasets reads them),
    or ``name``, a configuration of the card's ``configs:`` header. Only those files are
    downloaded (:func:`rollout_equality.acquire.hub.snapshot`, into ``local_dir``), so that a second run
    with ``HF_HUB_OFFLINE=1`` reads them from disk; ``datasets`` loads the local copy. Failures
    raise :class:`DataUnavailableError` naming the cause (a loading-script data set, a
    configuration or pattern that matches nothing, an unknown revision, ...); only a connection
    failure says the hub is unreachable, and only then is ``way_out`` offered.
    """
    import datasets

    path, revision = spec["path"], spec["revision"]
    split = spec["split"]
    what = _what(name, spec)

    select = hub_selector(name, spec)
    selection = {"data_files": spec.get("data_files"), "name": spec.get("name"), "split": split}
    try:
        snap = hub.snapshot(
            path,
            revision,
            local_dir,
            what=what,
            ways_out=way_out,
            repo_type="dataset",
            select=select,
            selection=selection,
        )
    except hub.HubError as err:
        if isinstance(err.__cause__, DataUnavailableError):
            raise err.__cause__ from None
        raise DataUnavailableError(str(err)) from err
    if not hub.COMMIT.fullmatch(revision):
        log.warning("%s is not pinned: resolved to commit %s; pin it in config.yaml", what, snap.commit)
    try:  # held in memory, datasets' Arrow copy in a temporary folder: nothing is written outside resources/
        files = [glob.escape(f) for f in sorted(snap.files)]
        with tempfile.TemporaryDirectory(prefix="datasets-") as cache:
            ds = datasets.load_dataset(
                str(snap.path), data_files={split: files}, split=split, cache_dir=cache, keep_in_memory=True
            )
    except Exception as err:
        raise DataUnavailableError(
            f"{what}: datasets could not read the downloaded files {sorted(snap.files)} "
            f"under {snap.path}: {type(err).__name__}: {err}"
        ) from err
    return ds, snap


def write_manifest(out_dir: str | os.PathLike, manifest: dict[str, Any]) -> dict[str, Any]:
    """Write ``manifest.json`` last and atomically: its presence marks a complete data set.

    Adds ``sha256``, a hash over every item's id and content hash, and returns the manifest.
    """
    manifest = {**manifest, "sha256": manifest_sha256(manifest["items"])}
    write_json(Path(out_dir) / "manifest.json", manifest)
    return manifest


def read_manifest(data_dir: str | os.PathLike) -> dict[str, Any]:
    path = Path(data_dir) / "manifest.json"
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: prepare the data set first (rule prepare_data)")
    return json.loads(path.read_text())


def prepare_data(name: str, spec: dict[str, Any], out_dir: str | os.PathLike) -> dict[str, Any]:
    """Prepare data set ``name`` from its config entry into ``out_dir``; return the manifest. The entry is checked
    against the schema first (its modality, its one source), and completed with the schema's defaults."""
    from rollout_equality.config.load import checked

    spec = checked(("properties", "datasets", "additionalProperties"), f"data set {name!r}", spec)
    if spec["modality"] == "text":
        from rollout_equality.acquire.data.text import prepare_text

        return prepare_text(name, spec, out_dir)
    from rollout_equality.acquire.data.images import prepare_images

    return prepare_images(name, spec, out_dir)


class ModifiedInputError(RuntimeError):
    """A prepared input is not what its manifest records (missing, unreadable or other content)."""


def load_inputs(data_dir: str | os.PathLike) -> tuple[list[str], list[Any], dict[str, Any]]:
    """The prepared inputs of a data set: (ids, inputs, manifest); inputs are strings or PIL images (RGB).

    Every input is checked against the SHA-256 its manifest records (of the text's UTF-8 bytes, of an image's shape
    and RGB pixels, :func:`image_sha256`), and the manifest's own digest (which records cite) against its items,
    before anything is measured: a missing, unreadable or edited input or manifest raises
    :class:`ModifiedInputError` naming the file and the rule to rerun, so that records never claim a manifest their
    inputs do not match."""
    manifest = read_manifest(data_dir)
    data_dir = Path(data_dir)
    rerun = (
        f"prepare the data set again ({snakemake_command(str(data_dir / 'manifest.json'), '--forcerun', 'prepare_data')}, "
        f"or delete {data_dir})"
    )
    try:
        digest = manifest_sha256(manifest["items"])
    except (KeyError, TypeError) as err:
        raise ModifiedInputError(
            f"{data_dir / 'manifest.json'} lists its items without ids or hashes; {rerun}"
        ) from err
    if manifest.get("sha256") != digest:
        raise ModifiedInputError(
            f"{data_dir / 'manifest.json'}: its sha256 {manifest.get('sha256')} is not the digest of the items it "
            f"lists ({digest}); {rerun}"
        )
    ids = [it["id"] for it in manifest["items"]]
    if manifest["modality"] == "text":
        path = data_dir / "segments.jsonl"
        by_id = {}
        try:
            with open(path, encoding="utf-8") as fh:
                for line in fh:
                    rec = json.loads(line)
                    by_id[rec["id"]] = rec["text"]
        except (OSError, ValueError, KeyError) as err:
            raise ModifiedInputError(f"{path} cannot be read as the prepared segments ({err}); {rerun}") from err
        texts = []
        for item in manifest["items"]:
            text = by_id.get(item["id"])
            if text is None or digests.of_bytes(text.encode()) != item["sha256"]:
                what = "is missing from" if text is None else "differs from the text prepared in"
                raise ModifiedInputError(f"segment {item['id']} {what} {path}; {rerun}")
            texts.append(text)
        return ids, texts, manifest
    from PIL import Image

    images = []
    for item in manifest["items"]:
        path = data_dir / item["file"]
        try:
            with Image.open(path) as im:
                image = im.convert("RGB")
        except OSError as err:  # missing, truncated or not an image
            raise ModifiedInputError(f"{path} cannot be read as an image ({err}); {rerun}") from err
        if image_sha256(image) != item["sha256"]:
            raise ModifiedInputError(f"{path} is not the image that was prepared (its pixels differ); {rerun}")
        images.append(image)
    return ids, images, manifest
