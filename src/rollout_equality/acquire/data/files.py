"""Inputs given as files rather than prepared (the command line's ``--texts`` and ``--images``): their ids, the
inputs, and the records' data set provenance as a prepared data set's manifest gives it."""

from __future__ import annotations

import os
from pathlib import Path

from rollout_equality.acquire.data import image_sha256, manifest_sha256
from rollout_equality.runtime import digests


def read_texts(path: str | os.PathLike) -> tuple[list[str], list[str], str]:
    """(ids, texts, data set name) of a text file, one input per non-empty line."""
    path = Path(path)
    texts = [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if not texts:
        raise ValueError(f"{path} holds no text (give one input per line)")
    return [f"line-{i + 1}" for i in range(len(texts))], texts, path.name


def read_images(paths: list[str | os.PathLike]) -> tuple[list[str], list, str]:
    """(ids, RGB images, data set name) of image files; a file that is not a readable image is named."""
    from PIL import Image, UnidentifiedImageError

    images = []
    for p in paths:
        try:
            with Image.open(p) as im:
                images.append(im.convert("RGB"))
        except (OSError, UnidentifiedImageError) as err:
            raise ValueError(f"{p} cannot be read as an image: {err}") from err
    return [Path(p).name for p in paths], images, "images"


def given_record(name: str, ids: list[str], inputs: list) -> dict:
    """The records' data set provenance for inputs given on the command line: their count and a SHA-256 over every
    input's id and content (text as UTF-8, images as shape and RGB pixels), as a prepared data set's manifest has
    it."""
    each = [digests.of_bytes(x.encode()) if isinstance(x, str) else image_sha256(x) for x in inputs]
    return {
        "name": name,
        "sha256": manifest_sha256([{"id": i, "sha256": d} for i, d in zip(ids, each)]),
        "n": len(ids),
    }
