"""Atomic file output, logging to a rule's log, and progress bars: how every pipeline step writes."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import tempfile
from pathlib import Path
from typing import Iterator

_UMASK = os.umask(0)
os.umask(_UMASK)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it onto ``path`` only on success.

    A step that fails half-way leaves no file that a later step could trust.
    The suffix is kept so that writers choosing a format by extension still work.
    """
    path = Path(path)
    if path.exists() and not path.is_file():
        # never swap a device (e.g. /dev/null), a directory or a socket for a regular file
        raise ValueError(f"refusing to write {path}: it exists and is not a regular file")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=f".tmp{path.suffix}", dir=path.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.chmod(tmp_path, 0o666 & ~_UMASK)  # mkstemp makes 0600 files; give what an open() would
        os.replace(tmp_path, path)
    finally:
        tmp_path.unlink(missing_ok=True)


def require_paths(paths, keys, who: str) -> None:
    """Raise :class:`ValueError` naming ``who`` and the ``keys`` that ``paths`` (a mapping) lacks."""
    missing = [k for k in keys if k not in paths]
    if missing:
        raise ValueError(f"{who} needs a path for {missing}")


def write_text(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``path`` atomically (UTF-8, newline as given)."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_json(path: str | os.PathLike, obj, **dumps_kwargs) -> None:
    """Write ``obj`` as indented JSON with sorted keys and a final newline, atomically."""
    import json

    write_text(path, json.dumps(obj, indent=2, sort_keys=True, **dumps_kwargs) + "\n")


def write_parquet(table, path: str | os.PathLike, metadata: dict) -> None:
    """Write a pyarrow ``table`` atomically, ``metadata`` (JSON) under the schema key
    ``rollout_equality`` beside whatever metadata the table already carries."""
    import json

    import pyarrow.parquet as pq

    table = table.replace_schema_metadata(
        {**(table.schema.metadata or {}), b"rollout_equality": json.dumps(metadata, sort_keys=True).encode()}
    )
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp)


@contextlib.contextmanager
def logging_to(log_file: str | os.PathLike | None) -> Iterator[None]:
    """Send logging records and stderr (tqdm progress bars, warnings) to ``log_file``.

    With None, log to the current stderr. Used by every workflow script so that
    each rule's ``log:`` file holds its progress and messages.
    """
    handlers: list[logging.Handler]
    if log_file is None:
        handlers = [logging.StreamHandler(sys.stderr)]
        stream = None
    else:
        Path(log_file).parent.mkdir(parents=True, exist_ok=True)
        stream = open(log_file, "a", encoding="utf-8", buffering=1)
        handlers = [logging.StreamHandler(stream)]
    fmt = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    root = logging.getLogger()
    old_level, old_handlers = root.level, root.handlers[:]
    for h in handlers:
        h.setFormatter(fmt)
    root.handlers = handlers
    root.setLevel(logging.INFO)
    old_stderr = sys.stderr
    try:
        if stream is not None:
            sys.stderr = stream
        yield
    except BaseException:
        if stream is not None:  # the log file gets the traceback; on a terminal it shows anyway
            logging.getLogger(__name__).exception("step failed")
        raise
    finally:
        sys.stderr = old_stderr
        root.handlers = old_handlers
        root.setLevel(old_level)
        if stream is not None:
            stream.close()


def progress(iterable, desc: str, unit: str = "it", disable: bool = False, **kwargs):
    """A tqdm progress bar on stderr: live in a terminal, one line every 10 s in a log file."""
    from tqdm.auto import tqdm

    interactive = sys.stderr.isatty()
    return tqdm(
        iterable,
        desc=desc,
        unit=unit,
        disable=disable,
        file=sys.stderr,
        mininterval=0.1 if interactive else 10.0,
        ascii=not interactive,
        **kwargs,
    )
