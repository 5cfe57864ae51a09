"""Data preparation: deterministic samples of images and text segments, with manifests.

A prepared data set is a folder ``resources/data/<name>/`` holding the inputs
(``images/*.png`` or ``segments.jsonl``) and ``manifest.json``: the source, the
count, the seed and a SHA-256 of every input, so a rerun can be checked.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from rollout_equality.io import write_json


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def load_hub_dataset(name: str, spec: dict[str, Any], default_split: str, way_out: str):
    """A hub data set through :func:`datasets.load_dataset`, or an error naming the data set and ``way_out``."""
    import datasets

    try:
        return datasets.load_dataset(spec["path"], spec.get("name"), split=spec.get("split", default_split))
    except Exception as err:
        raise RuntimeError(
            f"data set {name!r}: could not load hub data set {spec['path']!r} ({type(err).__name__}: {err}). "
            f"Where the hub is unreachable, {way_out}"
        ) from err


def write_manifest(out_dir: str | os.PathLike, manifest: dict[str, Any]) -> dict[str, Any]:
    """Write ``manifest.json`` last and atomically: its presence marks a complete data set.

    Adds ``sha256``, a hash over every item's id and content hash, and returns the manifest.
    """
    items = "".join(f"{it['id']} {it['sha256']}\n" for it in manifest["items"])
    manifest = {**manifest, "sha256": sha256_bytes(items.encode())}
    write_json(Path(out_dir) / "manifest.json", manifest)
    return manifest


def read_manifest(data_dir: str | os.PathLike) -> dict[str, Any]:
    path = Path(data_dir) / "manifest.json"
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: prepare the data set first (rule prepare_data)")
    return json.loads(path.read_text())


def prepare(name: str, spec: dict[str, Any], out_dir: str | os.PathLike) -> dict[str, Any]:
    """Prepare data set ``name`` from its config entry into ``out_dir``; return the manifest."""
    if spec["modality"] == "text":
        from rollout_equality.data.text import prepare_text

        return prepare_text(name, spec, out_dir)
    if spec["modality"] == "image":
        from rollout_equality.data.images import prepare_images

        return prepare_images(name, spec, out_dir)
    raise ValueError(f"data set {name!r}: modality must be text or image; got {spec['modality']!r}")


def load_inputs(data_dir: str | os.PathLike) -> tuple[list[str], list[Any], dict[str, Any]]:
    """The prepared inputs of a data set: (ids, inputs, manifest); inputs are strings or PIL images."""
    manifest = read_manifest(data_dir)
    data_dir = Path(data_dir)
    ids = [it["id"] for it in manifest["items"]]
    if manifest["modality"] == "text":
        by_id = {}
        with open(data_dir / "segments.jsonl", encoding="utf-8") as fh:
            for line in fh:
                rec = json.loads(line)
                by_id[rec["id"]] = rec["text"]
        return ids, [by_id[i] for i in ids], manifest
    from PIL import Image

    images = []
    for it in manifest["items"]:
        with Image.open(data_dir / it["file"]) as im:
            images.append(im.convert("RGB"))
    return ids, images, manifest
