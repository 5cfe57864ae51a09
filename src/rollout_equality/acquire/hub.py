"""The Hugging Face hub: revisions resolved to commits, only the files a loader reads, and errors
that name their real cause.

Three things go wrong when a pipeline meets the hub, and each gets its own message (the cause read by
:func:`rollout_equality.acquire.network.cause`, the message by :func:`describe`):

* the network: the hub cannot be reached (DNS, refused or reset connections, time-outs), or
  ``HF_HUB_OFFLINE=1`` forbids it and the files are not on disk — only these say "unreachable";
* the repository: it does not exist, is gated, has no such revision, or lacks a file;
* the content: e.g. a loading-script data set, which ``datasets`` >= 4 refuses.

:func:`snapshot` downloads a model repository's loader files into a folder of the project and
records what it fetched (``snapshot.json`` beside the folder), so that a second run with
``HF_HUB_OFFLINE=1`` — on a cluster's compute node, say — finds them there and checks that they
are complete. Data set repositories go the same way (``repo_type="dataset"``, the files chosen
by :func:`match_files`): ``datasets`` then reads the local copy. (Left to itself, offline,
``datasets`` falls back without an error to whatever revision of a data set it cached last, and
cannot find its cache at all when ``data_files`` are given.)
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from rollout_equality.acquire import network
from rollout_equality.runtime import digests
from rollout_equality.runtime.files import write_json

log = logging.getLogger(__name__)

COMMIT = re.compile(r"[0-9a-f]{40}")

WEIGHT_FILES = (
    ("model.safetensors", re.compile(r"[^/]+\.safetensors")),
    ("pytorch_model.bin", re.compile(r"pytorch_model[^/]*\.bin")),
)
"""The PyTorch weights a loader reads, in the order it prefers them: each the file itself, or its index
(``<file>.index.json``) with the shards its pattern matches beside it. The one list of weight file names:
:mod:`rollout_equality.acquire.models` reads it too."""
WEIGHT_NAMES = tuple(name for name, _ in WEIGHT_FILES)
"""The names of :data:`WEIGHT_FILES`."""
INDEX = ".index.json"
# Besides the weights, a loader reads configuration, tokenizer and preprocessor files at the top
# level: JSON (config, tokenizer, preprocessor), vocabularies and merges (.txt, .vocab, bpe.codes),
# SentencePiece models (.model, .spm), tiktoken files, chat templates (.jinja). Indexes of other
# weight formats are left out.
METADATA_SUFFIXES = (".json", ".txt", ".model", ".spm", ".vocab", ".codes", ".tiktoken", ".jinja")
OTHER_FORMAT_INDEXES = re.compile(r".*\.(h5|msgpack|ot|onnx)\.index\.json|tf_model.*\.json|flax_model.*\.json")


# How long one hub API call of the preflight may wait. Reaching the server is decided within CONNECT_SECONDS (an
# unreachable hub fails fast instead of after ~30 s of retries); a server that accepted the connection then has
# ANSWER_SECONDS to answer. A loaded hub or mirror answers late, and a late answer is still an answer: within that
# budget no message depends on how quickly the server answered.
CONNECT_SECONDS = 10.0
ANSWER_SECONDS = 300.0


def api_timeout():
    """The time-out of one hub API call: :data:`CONNECT_SECONDS` to connect, :data:`ANSWER_SECONDS` to answer."""
    import httpx2  # huggingface_hub 2's HTTP client

    return httpx2.Timeout(ANSWER_SECONDS, connect=CONNECT_SECONDS)


# A connection the server dropped after accepting it (a kept-alive connection closed by a loaded server, a reset):
# the call is made again after these waits (seconds), then the error stands. A refused or unresolvable connection is
# not retried (an unreachable hub fails fast).
DROPPED_RETRY_WAITS = (1.0, 2.0, 4.0)


def retry_dropped(call: Callable[[], Any], what: str) -> Any:
    """``call()``, made again (:data:`DROPPED_RETRY_WAITS`) when the server dropped the connection it had accepted."""
    import time

    for wait in (*DROPPED_RETRY_WAITS, None):
        try:
            return call()
        except Exception as err:
            if wait is None or network.cause(err).connection != "broken":
                raise
            log.info(
                "%s: the server dropped the connection (%s: %s); again in %.0f s", what, type(err).__name__, err, wait
            )
            time.sleep(wait)


class HubError(RuntimeError):
    """A hub repository could not be had; the message names the cause and what to do."""


def offline() -> bool:
    """True when ``HF_HUB_OFFLINE`` forbids network access."""
    return os.environ.get("HF_HUB_OFFLINE", "0").strip().lower() not in ("", "0", "false", "no", "off")


def describe(err: BaseException, what: str) -> str:
    """One sentence on why ``what`` (e.g. "model 'x' (org/repo@rev)") could not be had: the cause
    (:func:`rollout_equality.acquire.network.cause`) in a download's words."""
    found = network.cause(err)
    text = f"{type(err).__name__}: {err}".strip()
    if found.answer == "gated":
        return (
            f"{what} is gated on the hub: accept its terms on its hub page and log in (`hf auth login` or "
            f"HF_TOKEN). ({text})"
        )
    if found.answer == "no_repository":
        return f"{what}: the hub has no such repository (or it is private): check the id in config.yaml. ({text})"
    if found.answer == "no_revision":
        return f"{what}: the repository has no such revision: check the revision in config.yaml. ({text})"
    if found.answer == "no_file":
        return f"{what}: a file is missing from the repository at that revision. ({text})"
    if found.incomplete and offline():
        return (
            f"{what}: the copy on disk is incomplete and HF_HUB_OFFLINE=1 forbids finishing it: run the "
            f"download again where the hub is reachable. ({text})"
        )
    if found.network:
        if offline():
            return f"{what} is not on disk and HF_HUB_OFFLINE=1 forbids downloading it. ({text})"
        if found.connection == "broken":
            return (
                f"{what}: the connection to the hub broke during the transfer: run the download again once the "
                f"network is back; the files that arrived whole are kept, only the others are fetched. ({text})"
            )
        return f"the hub is unreachable, so {what} could not be downloaded. ({text})"
    if found.status in (429, 503):
        busy = "is rate-limiting this machine" if found.status == 429 else "is temporarily unavailable"
        return (
            f"{what}: the hub {busy} (HTTP {found.status}) and still answered so after the client's retries: run "
            f"the download again in a few minutes (logging in, `hf auth login` or HF_TOKEN, raises the rate limit). "
            f"({text})"
        )
    if found.status:
        return f"{what}: the hub answered HTTP {found.status}. ({text})"
    return f"{what}: {text}"


# --- models ---------------------------------------------------------------------------------------


def loader_files(repo_files: Iterable[str]) -> list[str]:
    """The files of a model repository that transformers or timm read, sorted.

    The PyTorch weights in one format — ``model.safetensors`` (or its index and the safetensors
    shards beside it), else ``pytorch_model.bin`` (or its index and shards) — and the top-level
    configuration, tokenizer and preprocessor files (:data:`METADATA_SUFFIXES`). TensorFlow, Flax,
    Rust, ONNX and CoreML copies of the weights, sub-folders and model cards are left out. Raises
    :class:`HubError` when the repository holds no PyTorch weights or no ``config.json``.
    """
    files = sorted(set(repo_files))
    top = [f for f in files if "/" not in f]
    weights: list[str] | None = None
    for name, shard in WEIGHT_FILES:
        if name in top:
            weights = [name]
        elif name + INDEX in top:
            weights = [name + INDEX] + [f for f in top if shard.fullmatch(f)]
        if weights:
            break
    if weights is None:
        raise HubError(f"the repository holds no PyTorch weights ({' or '.join(WEIGHT_NAMES)}); files: {files}")
    if "config.json" not in top:
        raise HubError(f"the repository holds no config.json at its top level; files: {files}")
    index_names = {name + suffix for name in WEIGHT_NAMES for suffix in ("", INDEX)}
    metadata = [
        f
        for f in top
        if f.endswith(METADATA_SUFFIXES) and f not in index_names and not OTHER_FORMAT_INDEXES.fullmatch(f)
    ]
    return sorted(set(weights + metadata))


@dataclass
class Snapshot:
    """A hub repository's chosen files in a local folder, at one commit."""

    path: Path
    repo_id: str
    revision: str
    commit: str
    files: dict[str, int] = field(default_factory=dict)  # name → size in bytes
    repo_type: str = "model"
    selection: Any = "loader_files"  # what chose the files (the record is reused only for the same choice)
    digests: dict[str, str] = field(default_factory=dict)  # name → "sha256:…" (LFS) or "git-sha1:…" (blob)

    @property
    def size(self) -> int:
        return sum(self.files.values())

    def record(self) -> dict[str, Any]:
        return {
            "repo_id": self.repo_id,
            "repo_type": self.repo_type,
            "revision": self.revision,
            "commit": self.commit,
            "selection": self.selection,
            "files": self.files,
            "digests": self.digests,
            "bytes": self.size,
        }


def _read_record(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _digest_of(entry) -> str | None:
    """The content hash the hub lists for a file: its LFS SHA-256, else its git blob id."""
    lfs = getattr(entry, "lfs", None)
    if lfs is not None and getattr(lfs, "sha256", None):
        return digests.labelled(lfs.sha256)
    return f"git-sha1:{entry.blob_id}" if getattr(entry, "blob_id", None) else None


def file_digest(path: Path, kind: str) -> str:
    """A file's digest as the hub lists it: ``sha256:…`` (an LFS file's,
    :func:`rollout_equality.runtime.digests.labelled`) or ``git-sha1:…``, the id git gives the file as a blob."""
    if kind == "sha256":
        return digests.labelled(digests.of_file(path))
    h = hashlib.sha1(f"blob {path.stat().st_size}\0".encode())
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return f"git-sha1:{h.hexdigest()}"


def _missing(local_dir: Path, files: dict[str, int]) -> list[str]:
    return [f for f, size in files.items() if not (local_dir / f).is_file() or (local_dir / f).stat().st_size != size]


def _prune(local_dir: Path, keep: Iterable[str]) -> None:
    """Remove files under ``local_dir`` that the snapshot does not hold (a loader reads whole folders)."""
    keep = set(keep)
    for path in sorted(local_dir.rglob("*"), reverse=True):
        rel = path.relative_to(local_dir).as_posix()
        if rel == ".cache" or rel.startswith(".cache/"):
            continue
        if path.is_file() and rel not in keep:
            path.unlink()
        elif path.is_dir() and not any(path.iterdir()):
            path.rmdir()


@dataclass
class Listing:
    """A hub repository's file list at one commit and the files chosen from it (nothing downloaded)."""

    repo_id: str
    repo_type: str
    revision: str
    commit: str
    entries: dict[str, Any]  # name → the hub's RepoFile (size, blob id, LFS hash)
    chosen: list[str]
    gated: Any = None  # the hub's `gated` (False, "auto", "manual"); None when the revision was not looked up

    @property
    def tree(self) -> dict[str, int]:
        return {name: int(entry.size) for name, entry in self.entries.items()}

    @property
    def files(self) -> dict[str, int]:
        tree = self.tree
        return {name: tree[name] for name in self.chosen}


def list_files(
    repo_id: str,
    revision: str,
    *,
    repo_type: str = "model",
    select: Callable[[dict[str, int], str], list[str]] | None = None,
    look_up: bool = False,
) -> Listing:
    """Resolve ``revision`` to its commit, read the repository's file list at that commit and choose the files
    a loader reads: ``select(files, commit)`` (name → size), default :func:`loader_files`.

    Two small API calls, no file downloaded (a ``select`` may read a data set's card). A branch is always
    looked up; a commit only with ``look_up`` (which also reports whether the repository is gated).
    Raises what huggingface_hub raises (see :func:`describe`) or what ``select`` raises.
    """
    from huggingface_hub import HfApi
    from huggingface_hub.hf_api import RepoFile

    api = HfApi()
    gated = None
    if COMMIT.fullmatch(revision) and not look_up:
        commit = revision
    else:  # a probe first, quick to connect: an unreachable hub otherwise costs ~30 s of retries
        info = retry_dropped(
            lambda: api.repo_info(repo_id, repo_type=repo_type, revision=revision, timeout=api_timeout()),
            f"{repo_id}@{revision}",
        )
        commit, gated = info.sha, getattr(info, "gated", None)

    def tree() -> dict[str, RepoFile]:
        listing = api.list_repo_tree(repo_id, repo_type=repo_type, revision=commit, recursive=True)
        return {f.path: f for f in listing if isinstance(f, RepoFile)}

    entries = retry_dropped(tree, f"{repo_id}@{commit}: file list")
    tree = {name: int(f.size) for name, f in entries.items()}
    chosen = sorted(select(tree, commit) if select else loader_files(tree))
    return Listing(repo_id, repo_type, revision, commit, entries, chosen, gated)


def _discard(local_dir: Path, name: str) -> None:
    """Remove a downloaded file and huggingface_hub's record of it, so that the next download fetches it again."""
    from huggingface_hub._local_folder import get_local_download_paths

    (local_dir / name).unlink(missing_ok=True)
    get_local_download_paths(local_dir, name).metadata_path.unlink(missing_ok=True)


def snapshot(
    repo_id: str,
    revision: str,
    local_dir: str | os.PathLike,
    *,
    what: str,
    ways_out: str = "",
    repo_type: str = "model",
    select: Callable[[dict[str, int], str], list[str]] | None = None,
    selection: Any = "loader_files",
) -> Snapshot:
    """The files of a hub repository that a loader reads, at ``revision``, in ``local_dir``.

    ``select(files, commit)`` chooses the files from the repository's list (name → size; default
    :func:`loader_files`); ``selection`` names that choice (JSON) so that a record is reused only
    for the same request. ``<local_dir>.json`` records commit, files, sizes and content hashes.

    * A recorded copy of this request whose files are all there with their sizes is used
      without any network call when ``revision`` is a commit (commits never change) or when
      ``HF_HUB_OFFLINE=1``; offline, anything else raises, naming what is missing.
    * Otherwise the revision is resolved to its commit, the file list read at that commit
      (:func:`list_files`), the chosen files downloaded (resumable: unchanged files are not fetched
      again, a transfer that broke off continues where it stopped), each checked against the size
      and hash the hub lists (a file that fails is deleted, so that the next run fetches it again),
      files that do not belong removed, and only then is the record written.

    Raises :class:`HubError` naming the cause.
    """
    import glob

    from huggingface_hub import snapshot_download

    local_dir = Path(local_dir)
    record_path = local_dir.with_name(local_dir.name + ".json")
    record = _read_record(record_path)
    same = bool(
        record
        and record.get("repo_id") == repo_id
        and record.get("repo_type", "model") == repo_type
        and revision in (record.get("revision"), record.get("commit"))
        and json.dumps(record.get("selection"), sort_keys=True) == json.dumps(selection, sort_keys=True)
    )
    if same and (COMMIT.fullmatch(revision) or offline()):
        files = {k: int(v) for k, v in record["files"].items()}
        missing = _missing(local_dir, files)
        if not missing:
            return Snapshot(
                local_dir, repo_id, revision, record["commit"], files, repo_type, selection, record.get("digests", {})
            )
        if offline():
            raise HubError(
                f"{what}: files {missing} under {local_dir} are missing or of the wrong size, and "
                f"HF_HUB_OFFLINE=1 forbids fetching them again. {ways_out}".strip()
            )
    elif offline():
        raise HubError(
            f"{what} is not on disk ({record_path} records no download of this repository, revision and "
            f"choice of files) and HF_HUB_OFFLINE=1 forbids downloading it. {ways_out}".strip()
        )
    try:
        record_path.unlink(missing_ok=True)  # from here on, the folder is not trusted until checked again
        listing = list_files(repo_id, revision, repo_type=repo_type, select=select)
        commit, wanted, files = listing.commit, listing.chosen, listing.files
        log.info(
            "%s: %d of %d files at commit %s, %.1f MB: %s",
            what,
            len(files),
            len(listing.entries),
            commit,
            sum(files.values()) / 1e6,
            ", ".join(wanted),
        )
        snapshot_download(
            repo_id,
            repo_type=repo_type,
            revision=commit,
            local_dir=local_dir,
            allow_patterns=[glob.escape(f) for f in wanted],
        )
    except HubError as err:
        raise HubError(f"{what}: {err}") from err.__cause__
    except Exception as err:  # the ways out (another machine, a local copy) help only when the hub cannot be reached
        ways = ways_out if network.cause(err).connection == "unreachable" else ""
        raise HubError(f"{describe(err, what)} {ways}".strip()) from err
    digests = {}
    for name in wanted:
        expected = _digest_of(listing.entries[name])
        path = local_dir / name
        if not path.is_file() or path.stat().st_size != files[name]:
            found = path.stat().st_size if path.is_file() else "no file"
            _discard(local_dir, name)
            raise HubError(
                f"{what}: {name} did not arrive whole at commit {commit} (expected {files[name]} bytes, got "
                f"{found}); it was deleted: run the download again"
            )
        if expected:
            found = file_digest(path, expected.split(":", 1)[0])
            if found != expected:
                _discard(local_dir, name)
                raise HubError(
                    f"{what}: {name} is not the file of commit {commit} ({found}, the hub lists {expected}): the "
                    "bytes were damaged on the way; the file was deleted and nothing recorded: run the download again"
                )
            digests[name] = expected
    _prune(local_dir, wanted)
    snap = Snapshot(local_dir, repo_id, revision, commit, files, repo_type, selection, digests)
    write_json(record_path, snap.record())
    return snap


def glob_regex(pattern: str) -> re.Pattern:
    """A repository path pattern as ``datasets`` globs it: ``*``, ``?`` and ``[...]`` stay within one
    folder, ``**`` crosses folders."""
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and "]" in pattern[i + 2 :]:
            end = pattern.index("]", i + 2)
            body = pattern[i + 1 : end]
            body = "^" + body[1:] if body.startswith("!") else body
            out.append(f"[{body.replace(chr(92), chr(92) * 2)}]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out))


def match_files(files: Iterable[str], patterns: str | list[str]) -> list[str]:
    """The repository files matching any of ``patterns`` (see :func:`glob_regex`), sorted."""
    regexes = [glob_regex(p) for p in ([patterns] if isinstance(patterns, str) else patterns)]
    return sorted(f for f in files if any(r.fullmatch(f) for r in regexes))
