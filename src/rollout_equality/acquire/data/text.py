"""Text corpora: deterministic samples of segments from local files, Python's docs or a hub data set.

Sources (``source`` in a text data set's config entry, exactly one):

* ``files: [GLOB, ...]`` — UTF-8 text files;
* ``pydoc_topics: true`` — the help topics of CPython 3.11.7 (``pydoc_data.topics``, ~65k words of English
  prose; real text that needs no network), read from the copy this package ships (:data:`PYDOC_TOPICS`, its
  SHA-256 checked), not from the running interpreter, whose topics change with its release;
* ``hf_dataset: {path, revision, name, data_files, split, text_field}`` — a hub data set
  through :func:`datasets.load_dataset` at a pinned commit (e.g. WikiText-103).

Documents are split into paragraphs at blank lines; paragraphs of at least
``min_words`` words are kept and cut to ``max_words`` words; ``n`` of them are
drawn with ``seed``. Models truncate further to ``extraction.max_tokens``.
"""

from __future__ import annotations

import glob
import json
import re
from pathlib import Path
from typing import Any

import numpy as np

from rollout_equality.acquire.data import load_hub_dataset, write_manifest
from rollout_equality.config.paths import snakemake_command
from rollout_equality.runtime import digests
from rollout_equality.runtime.files import atomic_path

PYDOC_TOPICS = "pydoc_topics.json"
"""The ``pydoc_topics`` source: CPython 3.11.7's ``pydoc_data.topics`` as JSON (topic → text), beside this module;
where it came from and its licence (PSF-2.0): ``pydoc_topics.LICENSE.txt`` beside it."""
PYDOC_TOPICS_SHA256 = "e81a4f3fc71fafbd0d092e58804c106cd251e4580938d87221636fe846f18501"
"""The SHA-256 of :data:`PYDOC_TOPICS`: the text every ``pydoc_topics`` data set is drawn from."""


def pydoc_topics() -> dict[str, str]:
    """{topic: text} of the shipped help topics, checked against :data:`PYDOC_TOPICS_SHA256` (an edited or truncated
    copy raises, naming the file)."""
    from importlib.resources import files

    resource = files(__package__) / PYDOC_TOPICS
    raw = resource.read_bytes()
    found = digests.of_bytes(raw)
    if found != PYDOC_TOPICS_SHA256:
        raise ValueError(
            f"{resource}: SHA-256 {found}, not the {PYDOC_TOPICS_SHA256} of CPython 3.11.7's help topics that "
            "the pydoc_topics source reads; reinstall the package (pip install -e .) to restore the file"
        )
    return json.loads(raw.decode("utf-8"))


def documents(source: dict[str, Any], name: str, out_dir: Path) -> tuple[list[tuple[str, str]], dict]:
    """((reference, text) of every document of a text source, origin).

    ``origin`` records where a downloaded source came from (hub commit and files); a hub data
    set's files are kept under ``out_dir/hub``.
    """
    if "files" in source:
        paths = sorted(
            {p for pattern in source["files"] for p in glob.glob(str(Path(pattern).expanduser()), recursive=True)}
        )
        if not paths:
            raise FileNotFoundError(f"data set {name!r}: no file matches {source['files']}")
        return [(p, Path(p).read_text(encoding="utf-8", errors="replace")) for p in paths], {}
    if "pydoc_topics" in source:
        topics = pydoc_topics()
        return [(f"pydoc_data.topics:{key}", topics[key]) for key in sorted(topics)], {}
    spec = source["hf_dataset"]
    ds, snap = load_hub_dataset(
        name,
        spec,
        f"Prepare it where the hub is reachable (`{snakemake_command('download', cores='4')}`, "
        "e.g. on a login node), or use `files:` with local text files.",
        out_dir / "hub",
    )
    field = spec["text_field"]
    if field not in ds.column_names:
        raise ValueError(
            f"data set {name!r}: hub data set {spec['path']} has no column {field!r} (columns: "
            f"{ds.column_names}); set text_field in its config entry"
        )
    return [(f"{spec['path']}@{snap.commit}:{i}", text) for i, text in enumerate(ds[field])], snap.record()


def segments(docs: list[tuple[str, str]], min_words: int, max_words: int) -> list[tuple[str, str]]:
    """Paragraphs with at least ``min_words`` words, cut to ``max_words``, whitespace normalised."""
    out = []
    for ref, text in docs:
        for k, para in enumerate(re.split(r"\n\s*\n", text)):
            words = para.split()
            if len(words) >= min_words:
                out.append((f"{ref}#{k}", " ".join(words[:max_words])))
    return out


def prepare_text(name: str, spec: dict[str, Any], out_dir) -> dict[str, Any]:
    out_dir = Path(out_dir)
    min_words, max_words, n, seed = spec["min_words"], spec["max_words"], spec["n"], spec["seed"]
    if not 1 <= min_words <= max_words:
        raise ValueError(f"data set {name!r}: need 1 <= min_words <= max_words; got {min_words}, {max_words}")
    docs, origin = documents(spec["source"], name, out_dir)
    pool = segments(docs, min_words, max_words)
    if len(pool) < n:
        raise ValueError(
            f"data set {name!r}: asked for n = {n} segments but the source has only {len(pool)} with >= {min_words} words"
        )
    chosen = np.random.default_rng(seed).choice(len(pool), size=n, replace=False)
    items = []
    with atomic_path(out_dir / "segments.jsonl") as tmp, open(tmp, "w", encoding="utf-8") as fh:
        for k, idx in enumerate(sorted(chosen)):
            ref, text = pool[idx]
            item_id = f"{name}-{k:05d}"
            fh.write(json.dumps({"id": item_id, "ref": ref, "text": text}, ensure_ascii=False) + "\n")
            items.append({"id": item_id, "ref": ref, "sha256": digests.of_bytes(text.encode())})
    manifest = {
        "name": name,
        "modality": "text",
        "source": spec["source"],
        "n": n,
        "seed": seed,
        "min_words": min_words,
        "max_words": max_words,
        "origin": origin,
        "pool_size": len(pool),
        "items": items,
    }
    return write_manifest(out_dir, manifest)
