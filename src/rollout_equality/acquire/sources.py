"""A preflight of every source a download needs: in seconds, before a byte of weights is fetched.

For the suites asked, :func:`check_sources` looks at each source that needs the network:

* a hub model or data set: its revision resolved to a commit, its file list read at that commit
  (two small API calls, :func:`rollout_equality.acquire.hub.list_files`), the files chosen by the same
  code as the download (:func:`rollout_equality.acquire.hub.loader_files` for models,
  :func:`rollout_equality.acquire.data.hub_selector` for a data set's ``data_files`` or configuration),
  their total size, and whether the repository is gated;
* an OpenML table: its data set description (the cheapest real call openml-python offers; read
  from the project's cache when a download put it there): the data set exists and its default
  target is the configured one;
* a scikit-learn table fetched once (California Housing): the archive's URL and SHA-256, fixed in
  scikit-learn's code; a HEAD request unless scikit-learn's cache already holds the table.

Every problem is collected (not only the first): a revision that does not exist, a pattern that
matches no file, a repository without PyTorch weights or ``config.json``, a gated repository
without a token, an unreachable server; each with what to do. :func:`format_report` prints the
table. With ``HF_HUB_OFFLINE=1`` nothing is checked (each line says so): the download step then
uses the files recorded on disk.
"""

from __future__ import annotations

import logging
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rollout_equality.acquire import hub, network

log = logging.getLogger(__name__)

HUB_URL = "https://huggingface.co"
# Tables scikit-learn fetches once: name → (module, its RemoteFileMetadata, the cache file its fetcher writes).
SKLEARN_ARCHIVES = {"california_housing": ("sklearn.datasets._california_housing", "ARCHIVE", "cal_housing_py3.pkz")}


@dataclass
class Check:
    """What the preflight found for one source."""

    kind: str  # model, dataset, table
    name: str  # the config entry
    source: str  # e.g. "hub facebook/dinov2-small", "OpenML 1590"
    revision: str = ""
    commit: str = ""
    files: dict[str, int | None] = field(default_factory=dict)  # chosen files → size in bytes (None: unknown)
    gated: str = "no"
    problem: str = ""
    todo: str = ""
    note: str = ""  # e.g. "not checked: HF_HUB_OFFLINE=1", "cached"

    @property
    def size(self) -> int | None:
        sizes = list(self.files.values())
        return sum(sizes) if sizes and None not in sizes else None


def suite_sources(config: dict[str, Any], suite: str) -> dict[str, list[str]]:
    """The models, data sets and tables ``suite`` fetches: its experiments, its ALBERT run, its tables and
    (when the suite shows it) the recipe ablation's tables. What the ``download`` target prepares."""
    from rollout_equality.config.checks import resolved_tables

    experiments = list(config["suites"].get(suite, []))
    albert = config["dynamics"]["albert"]["suites"]
    if suite in albert:
        experiments.append(albert[suite])
    tables = list(config["tabular"]["suites"].get(suite, []))
    ablation = config["tabular"].get("ablation")
    if ablation and suite in ablation["suites"]:
        tables += [t for t, e in resolved_tables(config).items() if "ablation" in e]
    return {
        "models": list(dict.fromkeys(e["model"] for e in experiments)),
        "datasets": list(dict.fromkeys(e["dataset"] for e in experiments)),
        "tables": list(dict.fromkeys(tables)),
    }


def needs_network(kind: str, spec: dict[str, Any]) -> bool:
    """Whether a config entry (models / datasets / resolved tables) is fetched over the network."""
    if kind == "models":
        return "hub" in spec
    if kind == "datasets":
        return "hf_dataset" in spec["source"]
    source = spec["source"]
    return "openml" in source or source.get("sklearn") in SKLEARN_ARCHIVES


def network_sources(config: dict[str, Any], suites: list[str]) -> list[tuple[str, str, dict[str, Any]]]:
    """(kind, name, entry) of every source of ``suites`` that needs the network, each once."""
    from rollout_equality.config.checks import resolved_tables

    tables = resolved_tables(config)
    entries = {"models": config["models"], "datasets": config["datasets"], "tables": tables}
    seen: dict[tuple[str, str], dict[str, Any]] = {}
    for suite in suites:
        for kind, names in suite_sources(config, suite).items():
            for name in names:
                if needs_network(kind, entries[kind][name]):
                    seen.setdefault((kind, name), entries[kind][name])
    return [(kind, name, spec) for (kind, name), spec in seen.items()]


# --- one source -----------------------------------------------------------------------------------


def _hub_problem(err: BaseException, repo_id: str, revision: str, repo_type: str, check: Check) -> None:
    """Fill ``check.problem`` / ``check.todo`` from an error of :func:`hub.list_files`: its cause
    (:func:`rollout_equality.acquire.network.cause`) in the preflight's words."""
    from rollout_equality.acquire.data import DataUnavailableError

    found = network.cause(err)
    page = f"{HUB_URL}/{'datasets/' if repo_type == 'dataset' else ''}{repo_id}"
    if isinstance(err, DataUnavailableError):
        check.problem = str(err)
        check.todo = (
            "pin a commit whose files match (the repository's history: "
            f"{page}/commits/main), or change `data_files` to the files at the pinned commit"
        )
    elif found.answer == "gated":
        check.gated = "yes"
        check.problem = f"{repo_id} is gated and this machine may not read it"
        check.todo = f"accept its terms on {page} and log in (`hf auth login` or HF_TOKEN)"
    elif found.answer == "no_revision":
        check.problem = f"{repo_id} has no revision {revision}"
        check.todo = f"pin a commit that exists (history: {page}/commits/main) in config.yaml"
    elif found.answer == "no_repository":
        check.problem = f"the hub has no repository {repo_id} (or it is private)"
        check.todo = "check the id in config.yaml; for a private repository, log in (`hf auth login` or HF_TOKEN)"
    elif isinstance(err, hub.HubError):  # loader_files: no PyTorch weights or no config.json
        check.problem = f"{repo_id}@{revision}: {err}"
        check.todo = "pin a commit that holds config.json and model.safetensors (or pytorch_model.bin)"
    elif found.network:
        check.problem = f"the hub is unreachable ({type(err).__name__}: {err})"
        check.todo = "run this where the hub is reachable (a login node), or check HF_ENDPOINT and proxy settings"
    else:
        check.problem = hub.describe(err, f"{repo_id}@{revision}")
        check.todo = "see the message; run the check again"
        main = _main_commit(repo_id, repo_type) if revision != "main" else None
        if main:  # the repository answers for main: it is the revision that fails (a mirror may not say 404)
            check.problem = (
                f"{repo_id} does not resolve revision {revision} (the hub answered HTTP {found.status}), while its "
                f"main is at {main}"
            )
            check.todo = f"pin a commit that exists (history: {page}/commits/main) in config.yaml"


def _main_commit(repo_id: str, repo_type: str) -> str | None:
    """The commit of the repository's ``main``, or None when the server says it has none or cannot be reached.

    Asked only after the server answered for the revision, so it is reachable: the answer gets the budget of any
    hub call (:func:`hub.api_timeout`, :func:`hub.retry_dropped`), and a late answer gives the same message as a prompt
    one.
    """
    from huggingface_hub import HfApi

    try:
        api = HfApi()
        return hub.retry_dropped(
            lambda: api.repo_info(repo_id, repo_type=repo_type, revision="main", timeout=hub.api_timeout()),
            f"{repo_id}@main",
        ).sha
    except Exception as err:
        log.info("%s: main not resolved either (%s: %s)", repo_id, type(err).__name__, err)
        return None


def check_hub(kind: str, name: str, repo_id: str, revision: str, repo_type: str, select=None) -> Check:
    """Resolve, list and choose files as the download would, without downloading them."""
    check = Check(kind, name, f"hub {'dataset ' if repo_type == 'dataset' else ''}{repo_id}", revision)
    if hub.offline():
        check.note = "not checked: HF_HUB_OFFLINE=1 (the download uses the files recorded on disk)"
        return check
    try:
        listing = hub.list_files(repo_id, revision, repo_type=repo_type, select=select, look_up=True)
    except Exception as err:
        _hub_problem(err, repo_id, revision, repo_type, check)
        return check
    check.commit, check.files = listing.commit, dict(listing.files)
    check.gated = str(listing.gated) if listing.gated else "no"
    if not hub.COMMIT.fullmatch(revision):
        check.note = f"not pinned: pin {listing.commit} in config.yaml"
    if listing.gated:
        from huggingface_hub import get_token

        if get_token() is None:
            check.problem = f"{repo_id} is gated ({listing.gated}) and no token is set"
            check.todo = f"accept its terms on {HUB_URL}/{repo_id} and log in (`hf auth login` or HF_TOKEN)"
    return check


def check_openml(name: str, source: dict[str, Any], cache_dir: str | os.PathLike) -> Check:
    """OpenML: the data set description (cached by openml-python under ``cache_dir/openml``)."""
    import openml

    from rollout_equality.acquire.tables import openml_target

    dataset_id, target = int(source["id"]), source.get("target")
    check = Check("table", name, f"OpenML {dataset_id}", "description")
    root = Path(cache_dir) / "openml"
    openml.config.set_root_cache_directory(str(root.resolve()))
    openml.config.connection_n_retries = 1
    try:
        dataset = openml.datasets.get_dataset(
            dataset_id, download_data=False, download_qualities=False, download_features_meta_data=False
        )
    except Exception as err:
        check.problem = f"OpenML {dataset_id}: {type(err).__name__}: {err}"
        check.todo = (
            "run this where openml.org is reachable (a login node)"
            if network.cause(err).network
            else "check the id in config.yaml (OpenML's page: https://www.openml.org/d/" + str(dataset_id) + ")"
        )
        return check
    check.commit = f"{dataset.name} version {dataset.version} (immutable)"
    data_url = getattr(dataset, "_parquet_url", None) or dataset.url or "data"
    check.files = {Path(str(data_url)).name: None}
    try:
        openml_target(name, dataset_id, dataset, target)
    except ValueError as err:
        check.problem, check.todo = str(err), "set `target:` to the data set's default target, or drop it"
    return check


def check_sklearn(name: str, table: str, cache_dir: str | os.PathLike) -> Check:
    """A scikit-learn fetcher's archive: URL and checksum from scikit-learn's code; a HEAD request unless cached."""
    import importlib
    import urllib.request

    module, attr, cached = SKLEARN_ARCHIVES[table]
    archive = getattr(importlib.import_module(module), attr)
    check = Check("table", name, f"scikit-learn {table}", "archive", f"{archive.url} (sha256 {archive.checksum[:12]}…)")
    check.files = {archive.filename: None}
    if (Path(cache_dir) / "scikit_learn_data" / cached).is_file():
        check.note = "cached"
        return check
    try:
        request = urllib.request.Request(archive.url, method="HEAD")
        with urllib.request.urlopen(request, timeout=10) as answer:
            length = answer.headers.get("Content-Length")
            check.files = {archive.filename: int(length) if length else None}
    except Exception as err:
        check.problem = f"{archive.url}: {type(err).__name__}: {err}"
        check.todo = (
            "run this where the archive's host is reachable (a login node)"
            if network.cause(err).network
            else "the archive moved: update scikit-learn, or use a `csv:` source with a local copy"
        )
    return check


def check_source(kind: str, name: str, spec: dict[str, Any], cache_dir: str | os.PathLike) -> Check:
    """One network source of the config (see :func:`network_sources`)."""
    if kind == "models":
        return check_hub("model", name, spec["hub"]["id"], spec["hub"]["revision"], "model")
    if kind == "datasets":
        from rollout_equality.acquire.data import hub_selector

        hf = spec["source"]["hf_dataset"]
        return check_hub("dataset", name, hf["path"], hf["revision"], "dataset", select=hub_selector(name, hf))
    source = spec["source"]
    if "openml" in source:
        return check_openml(name, source["openml"], cache_dir)
    return check_sklearn(name, source["sklearn"], cache_dir)


def check_sources(
    config: dict[str, Any], suites: list[str], cache_dir: str | os.PathLike, workers: int = 8
) -> list[Check]:
    """Check every network source of ``suites`` (concurrently); the checks in the order of the config."""
    sources = network_sources(config, suites)
    with ThreadPoolExecutor(max(1, min(workers, len(sources)))) as pool:
        return list(pool.map(lambda s: check_source(*s, cache_dir), sources))


# --- the report ------------------------------------------------------------------------------------


def _size(n: int | None) -> str:
    if n is None:
        return "?"
    return f"{n / 1e9:.2f} GB" if n >= 1e9 else f"{n / 1e6:.1f} MB" if n >= 1e5 else f"{n / 1e3:.1f} kB"


def format_report(checks: list[Check]) -> str:
    """The table (one line per source) and, below it, every problem with what to do."""
    rows = [("source", "entry", "revision → commit", "files", "size", "gated", "status")]
    for c in checks:
        resolved = c.revision if not c.commit or c.commit == c.revision else f"{c.revision} → {c.commit}"
        if hub.COMMIT.fullmatch(c.revision) and c.commit == c.revision:
            resolved = f"{c.revision[:12]} (commit)"
        elif hub.COMMIT.fullmatch(c.commit):
            resolved = f"{c.revision} → {c.commit[:12]}"
        files = ", ".join(c.files) if len(c.files) <= 4 else f"{len(c.files)} files: {', '.join(list(c.files)[:3])}, …"
        status = "PROBLEM" if c.problem else (c.note or "ok")
        rows.append((c.source, f"{c.kind} {c.name}", resolved, files or "-", _size(c.size), c.gated, status))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    problems = [c for c in checks if c.problem]
    total = sum(c.size or 0 for c in checks)
    lines.append("")
    lines.append(f"{len(checks)} sources, {_size(total)} to download at most, {len(problems)} problem(s)")
    for c in problems:
        lines.append(f"- {c.kind} {c.name!r} ({c.source}@{c.revision}): {c.problem}\n  what to do: {c.todo}")
    return "\n".join(lines)


def write_tsv(checks: list[Check], path: str | os.PathLike) -> None:
    """The checks as a tab-separated table (atomically)."""
    from rollout_equality.runtime.files import atomic_path

    header = ["kind", "name", "source", "revision", "commit", "files", "bytes", "gated", "problem", "todo", "note"]
    out = ["\t".join(header)]
    for c in checks:
        cells = [c.kind, c.name, c.source, c.revision, c.commit, ",".join(c.files), str(c.size or "")]
        out.append(
            "\t".join(x.replace("\t", " ").replace("\n", " ") for x in cells + [c.gated, c.problem, c.todo, c.note])
        )
    with atomic_path(path) as tmp:
        Path(tmp).write_text("\n".join(out) + "\n", encoding="utf-8")


class SourcesDriftedError(RuntimeError):
    """One or more sources cannot be downloaded as configured; the message lists them all."""


def run(
    config: dict[str, Any],
    suites: list[str],
    cache_dir: str | os.PathLike,
    out: str | os.PathLike | None = None,
    echo=None,
) -> list[Check]:
    """Check, log the report (and print it to ``echo``, a stream), write ``out`` (TSV) when all is well; raise
    :class:`SourcesDriftedError` listing every problem. Returns the checks."""
    import time

    start = time.perf_counter()
    checks = check_sources(config, suites, cache_dir)
    elapsed = time.perf_counter() - start
    report = format_report(checks) + f"\n(checked in {elapsed:.1f} s)"
    log.info("sources of %s checked in %.1f s:\n%s", ", ".join(suites), elapsed, report)
    if echo is not None:
        print(report, file=echo, flush=True)
    problems = [c for c in checks if c.problem]
    if problems:
        raise SourcesDriftedError(
            f"{len(problems)} of {len(checks)} sources of {', '.join(suites)} cannot be downloaded as configured\n"
            + "\n".join(f"- {c.kind} {c.name!r}: {c.problem} (what to do: {c.todo})" for c in problems)
        )
    if out is not None:
        write_tsv(checks, out)
    return checks
