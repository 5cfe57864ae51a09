"""Faults on the way to the hub, rehearsed: a fault-injecting forwarder (tests/hub_rehearsal/faultproxy.py)
between the real clients (huggingface_hub through HF_ENDPOINT) and the olah mirror of a replica whose
weight file is about 12 MB (distilbert-base-uncased's layout and tokenizer, 192-d layers): a little more
than the 10 MiB that huggingface_hub 2 writes at a time, so that a resumed transfer shows.

Each download runs in a fresh interpreter (the clients read HF_ENDPOINT at import); the proxy counts
what crossed the wire.
"""

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from hub_rehearsal import mirror, rehearse, replicas
from hub_rehearsal.faultproxy import Fault, FaultProxy

REPO_ID = "distilbert/distilbert-base-uncased"
WEIGHTS = r"/resolve/[0-9a-f]{40}/model\.safetensors$"

PREPARE = """
    import json, os, sys
    from rollout_equality.acquire.models import ModelUnavailableError, prepare_model
    spec = {"backend": "transformers", "modality": "text", "hub": {"id": sys.argv[1], "revision": sys.argv[2]}}
    try:
        print(json.dumps({"info": prepare_model("distilbert_base", spec, "m", "m/model.json")}))
    except ModelUnavailableError as err:
        print(json.dumps({"error": str(err)}))
"""


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The replica served by olah (module scope: built and started once)."""
    root = tmp_path_factory.mktemp("faults")
    files = replicas.distilbert(REPO_ID, dim=192, hidden_dim=768)
    commit = replicas.commit_tree(root / "mirror" / "models" / REPO_ID, files, "Upload model")
    with mirror.serve(root / "mirror", root / "olah", probe=f"models/{REPO_ID}") as endpoint:
        yield SimpleNamespace(endpoint=endpoint, commit=commit, files=files)


def prepare(proxy: FaultProxy, workdir: Path, revision: str, offline: bool = False) -> dict:
    workdir.mkdir(parents=True, exist_ok=True)
    env = rehearse.environment(workdir, None if offline else proxy.endpoint)
    return rehearse.python(PREPARE, env, workdir, REPO_ID, revision, timeout=120)


def assert_complete(out: dict, served, workdir: Path) -> None:
    """A successful download: the record names the commit and every file's hash, the bytes match the replica's."""
    import hashlib

    info = out["info"]
    assert info["commit"] == served.commit and "model.safetensors" in info["files"]
    record = json.loads((workdir / "m" / "snapshot.json").read_text())
    assert sorted(record["digests"]) == sorted(info["files"])  # every file hash-checked
    weights = (workdir / "m" / "snapshot" / "model.safetensors").read_bytes()
    assert weights == served.files["model.safetensors"]
    assert record["digests"]["model.safetensors"].endswith(
        hashlib.sha1(b"blob %d\0" % len(weights) + weights).hexdigest()
    )


def test_a_connection_that_breaks_mid_file_fails_by_name_and_the_rerun_fetches_only_what_is_missing(served, tmp_path):
    size = len(served.files["model.safetensors"])
    chunk = 10 * 1024 * 1024  # huggingface_hub 2 writes a transfer in chunks of 10 MiB
    assert chunk < size < 2 * chunk
    with FaultProxy(served.endpoint) as proxy:
        # 1. A short break (the connection drops once, 10.2 MB into the file): the client resumes within the
        # run with a Range request from its last whole chunk; only the bytes past it cross the wire twice.
        budget = chunk + 200_000
        proxy.faults = [Fault("drop", WEIGHTS, budget=budget, times=1)]
        short = prepare(proxy, tmp_path / "short", served.commit)
        assert "info" in short, short
        assert_complete(short, served, tmp_path / "short")
        gets = proxy.requests(WEIGHTS)
        assert [g.range for g in gets] == [None, f"bytes={chunk}-"], gets
        assert proxy.sent(WEIGHTS) == size + (budget - chunk)  # resumed, not restarted

        # 2. The network goes down during the transfer (1 MB through, then nothing): the download fails within
        # seconds, naming a broken connection (not a layout problem, not "unreachable"), and records nothing.
        proxy.log.clear()
        proxy.faults = [Fault("drop", WEIGHTS, budget=1_000_000)]
        work = tmp_path / "down"
        down = prepare(proxy, work, served.commit)
        assert "connection to the hub broke during the transfer" in down["error"], down
        assert "model 'distilbert_base'" in down["error"] and "unreachable" not in down["error"]
        # bounded by attempts, not by the clock: huggingface_hub 2 retries a broken transfer at most 5 times
        assert 2 <= len(proxy.requests(WEIGHTS)) <= 6, proxy.requests(WEIGHTS)
        assert not (work / "m" / "model.json").exists() and not (work / "m" / "snapshot.json").exists()
        first = {r.path.rsplit("/", 1)[-1] for r in proxy.log if r.method == "GET" and r.status == 200}
        assert {"config.json", "tokenizer.json", "vocab.txt"} <= first  # the small files arrived

        # 3. The network is back: the rerun fetches only the file that did not arrive (huggingface_hub 2 keeps
        # no partial file between runs: a process-unique temporary file, deleted on failure; so that one is
        # fetched whole) and ends with every file hash-checked.
        proxy.log.clear()
        proxy.faults = []
        again = prepare(proxy, work, served.commit)
        assert_complete(again, served, work)
        fetched = [r.path.rsplit("/", 1)[-1] for r in proxy.log if r.method == "GET" and "/resolve/" in r.path]
        assert fetched == ["model.safetensors"], fetched
        assert proxy.sent(WEIGHTS) == size


def test_damaged_bytes_are_rejected_by_name_nothing_is_recorded_and_the_rerun_succeeds(served, tmp_path):
    with FaultProxy(served.endpoint) as proxy:
        proxy.faults = [Fault("corrupt", WEIGHTS)]
        bad = prepare(proxy, tmp_path, served.commit)
        assert "model.safetensors is not the file of commit " + served.commit in bad["error"], bad
        assert "unreachable" not in bad["error"]
        assert not (tmp_path / "m" / "model.json").exists() and not (tmp_path / "m" / "snapshot.json").exists()
        assert not (tmp_path / "m" / "snapshot" / "model.safetensors").exists()  # deleted, never trusted
        # a compute node (no hub) cannot start from it: nothing is recorded
        offline = prepare(proxy, tmp_path, served.commit, offline=True)
        assert "HF_HUB_OFFLINE=1 forbids downloading it" in offline["error"], offline

        proxy.faults = []
        good = prepare(proxy, tmp_path, served.commit)
        assert_complete(good, served, tmp_path)


def test_rate_limits_and_unavailability_are_carried_by_retries_or_named_after_a_bounded_wait(served, tmp_path):
    with FaultProxy(served.endpoint) as proxy:
        # 429 twice on the weight file, 503 twice on the file list: the clients' retries carry both.
        proxy.faults = [
            Fault("status", WEIGHTS, status=429, times=2, retry_after=1),
            Fault("status", r"/api/models/.*/tree/", status=503, times=2, retry_after=1),
        ]
        carried = prepare(proxy, tmp_path / "carried", served.commit)
        assert "info" in carried, carried
        assert [r.status for r in proxy.requests(WEIGHTS)] == [429, 429, 200]  # each retried once per refusal
        tree = [r.status for r in proxy.requests(r"/tree/")]
        assert tree[:2] == [503, 503] and tree[-1] == 200, tree

        # 503 on every attempt at the weight file: a clear message after a bounded number of attempts (counted,
        # not timed: each waits the Retry-After of 1 s at most; huggingface_hub 2 retries at most 5 times).
        proxy.faults = [Fault("status", WEIGHTS, status=503)]
        before = len(proxy.requests(WEIGHTS))
        refused = prepare(proxy, tmp_path / "refused", served.commit)
        assert "temporarily unavailable (HTTP 503)" in refused["error"], refused
        assert "run the download again in a few minutes" in refused["error"]
        assert 1 <= len(proxy.requests(WEIGHTS)) - before <= 6
