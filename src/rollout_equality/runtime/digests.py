"""SHA-256 digests: every one the library computes, in one format.

A digest is the lowercase hex of the SHA-256 of some bytes (:func:`of_bytes`, :func:`of_buffers`), of a file read in chunks (:func:`of_file`)
or of several files read one after another (:func:`of_files`: a split archive's, without joining it). That is the form
every record, manifest and model file stores. Two records name the algorithm beside the hex (:func:`labelled`,
``sha256:<hex>``), because theirs may be another: the hub's file listings (an LFS file's SHA-256 or a git blob's SHA-1,
:func:`rollout_equality.acquire.hub.file_digest`) and the lock's digest (:func:`rollout_equality.runtime.lock.lock_digest`).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable

LABEL = "sha256:"
_CHUNK = 1 << 20


def of_bytes(data: bytes) -> str:
    """The SHA-256 of ``data``, as hex."""
    return hashlib.sha256(data).hexdigest()


def of_buffers(buffers: Iterable) -> str:
    """The SHA-256 of the buffers' bytes (anything with the buffer protocol: bytes, a contiguous numpy array) one
    after another, as hex."""
    h = hashlib.sha256()
    for buffer in buffers:
        h.update(buffer)
    return h.hexdigest()


def of_files(paths: Iterable[str | os.PathLike]) -> str:
    """The SHA-256 of the files' bytes read one after another, as hex (of one file: :func:`of_file`)."""
    h = hashlib.sha256()
    for path in paths:
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(_CHUNK), b""):
                h.update(chunk)
    return h.hexdigest()


def of_file(path: str | os.PathLike) -> str:
    """The SHA-256 of a file's bytes, as hex, read in chunks."""
    return of_files([path])


def labelled(hexdigest: str) -> str:
    """``sha256:<hex>``: a digest named beside digests of another algorithm."""
    return LABEL + hexdigest
