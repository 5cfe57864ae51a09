"""check_sources without a hub: which sources a suite needs, how each failure is named, what the report says.
(Against real replicas served by olah: tests/workflow/test_rehearsal.py.)"""

import httpx2
import pytest
from conftest import REPO
from huggingface_hub import errors as hf_errors

from rollout_equality.acquire import hub, sources
from rollout_equality.cli import main
from rollout_equality.config.load import load_config


@pytest.fixture(scope="module")
def config():
    return load_config([str(REPO / "config.yaml")])


def test_a_suite_fetches_its_models_data_sets_tables_and_albert_run(config):
    paper = sources.suite_sources(config, "paper")
    assert "albert_base" in paper["models"] and "dinov2_small" in paper["models"]
    assert paper["datasets"] == ["imagenet_val", "wikitext"]
    assert paper["tables"] == ["california", "adult"]  # the recipe ablation is opt-in: not shown by default
    with_ablation = load_config([str(REPO / "config.yaml"), str(REPO / "overlays/ftt_ablation.yaml")])
    tables = sources.suite_sources(with_ablation, "paper")["tables"]
    assert tables[:2] == ["california", "adult"] and len(tables) > 2
    assert all(t.startswith("adult_uci@") for t in tables[2:])  # the recipe ablation the overlay shows
    network = [(k, n) for k, n, _ in sources.network_sources(config, ["paper"])]
    assert ("tables", "california") in network and ("tables", "adult") in network
    assert not any(n.startswith("adult_uci") for _, n in network)  # a CSV in a wheel needs no network
    assert sources.network_sources(config, ["offline"]) == []


def _response(status: int, code: str | None = None) -> httpx2.Response:
    headers = {"X-Error-Code": code} if code else {}
    return httpx2.Response(status, request=httpx2.Request("GET", "https://huggingface.co/api/x"), headers=headers)


def test_every_problem_is_listed_at_once_each_with_what_to_do(config, monkeypatch):
    from rollout_equality.acquire.data import DataUnavailableError

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(sources, "_main_commit", lambda repo_id, repo_type: None)
    failures = {
        "facebook/dinov2-small": hf_errors.RevisionNotFoundError(
            "Invalid rev", response=_response(404, "RevisionNotFound")
        ),
        "facebook/dinov2-base": hf_errors.GatedRepoError("Access restricted", response=_response(401, "GatedRepo")),
        "facebook/dinov2-large": hf_errors.RepositoryNotFoundError(
            "not found", response=_response(404, "RepoNotFound")
        ),
        "FacebookAI/roberta-base": hub.HubError("the repository holds no config.json at its top level; files: []"),
        "distilbert/distilbert-base-uncased": httpx2.ConnectError("[Errno -2] Name or service not known"),
        "frgfm/imagenette": DataUnavailableError("['full_size/validation/*.parquet'] match no file"),
    }

    def fake_list(repo_id, revision, *, repo_type="model", select=None, look_up=False):
        if repo_id in failures:
            raise failures[repo_id]
        gated = "manual" if repo_id == "albert/albert-base-v2" else False
        return hub.Listing(repo_id, repo_type, revision, revision, {}, [], gated)

    monkeypatch.setattr(hub, "list_files", fake_list)
    monkeypatch.setattr("huggingface_hub.get_token", lambda: None)
    monkeypatch.setattr(sources, "check_openml", lambda name, source, cache: sources.Check("table", name, "OpenML"))
    monkeypatch.setattr(sources, "check_sklearn", lambda name, table, cache: sources.Check("table", name, "sklearn"))
    checks = sources.check_sources(config, ["paper"], "resources/cache")
    found = {c.name: (c.problem, c.todo) for c in checks if c.problem}
    assert set(found) == {
        "dinov2_small",
        "dinov2_base",
        "dinov2_large",
        "roberta_base",
        "distilbert_base",
        "imagenet_val",
        "albert_base",
    }
    assert "has no revision 150c8e7b" in found["dinov2_small"][0] and "commits/main" in found["dinov2_small"][1]
    assert "is gated" in found["dinov2_base"][0] and "hf auth login" in found["dinov2_base"][1]
    assert "no repository" in found["dinov2_large"][0]
    assert "config.json" in found["roberta_base"][1]
    assert "unreachable" in found["distilbert_base"][0] and "login node" in found["distilbert_base"][1]
    assert "match no file" in found["imagenet_val"][0] and "data_files" in found["imagenet_val"][1]
    assert "gated (manual) and no token" in found["albert_base"][0]
    report = sources.format_report(checks)
    assert report.count("\n- ") == 7 and "7 problem(s)" in report
    with pytest.raises(sources.SourcesDriftedError, match="7 of 15 sources of paper"):
        sources.run(config, ["paper"], "resources/cache")


def test_offline_nothing_is_checked_and_each_line_says_so(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    check = sources.check_hub("model", "m", "org/repo", "main", "model")
    assert not check.problem and "not checked: HF_HUB_OFFLINE=1" in check.note


def test_the_command_line_verb_refuses_an_unknown_suite(capsys):
    assert main(["check-sources", "--suite", "nope", "--configfile", str(REPO / "config.yaml")]) == 2
    assert "no suite ['nope']" in capsys.readouterr().err


def test_a_model_repository_without_config_json_is_refused_by_name():
    with pytest.raises(hub.HubError, match="no config.json"):
        hub.loader_files(["model.safetensors", "tokenizer.json"])


def test_a_late_answer_for_main_still_names_the_unresolved_revision(monkeypatch):
    """A mirror that answers an unknown commit with HTTP 500 and is slow to answer for `main` (a loaded machine):
    the message names the revision whatever the delay, once the server has accepted the connection."""
    import json
    import threading
    import time
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    import huggingface_hub.constants

    main = "a" * 40

    class Mirror(BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path.endswith("/revision/main"):
                time.sleep(2 * hub.CONNECT_SECONDS)  # later than reaching the server may take
                body, status = json.dumps({"id": "org/repo", "sha": main}).encode(), 200
            else:
                body, status = b"Internal Server Error", 500
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Mirror)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setattr(hub, "CONNECT_SECONDS", 0.5)
    monkeypatch.setattr(huggingface_hub.constants, "ENDPOINT", f"http://127.0.0.1:{server.server_port}")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    try:
        check = sources.check_hub("model", "m", "org/repo", "f" * 40, "model")
    finally:
        server.shutdown()
    assert (
        check.problem
        == f"org/repo does not resolve revision {'f' * 40} (the hub answered HTTP 500), while its main is at {main}"
    )
    assert "pin a commit that exists" in check.todo


def test_a_dropped_connection_is_asked_again_and_a_refused_one_is_not(monkeypatch):
    """A server that accepted the connection and dropped it (a loaded mirror closing a kept-alive connection) is
    asked again after a wait; a refused connection fails at once (an unreachable hub is named in seconds)."""
    monkeypatch.setattr(hub, "DROPPED_RETRY_WAITS", (0.0, 0.0, 0.0))
    calls = []

    def flaky(errors):
        def call():
            calls.append(1)
            if len(calls) <= errors:
                raise httpx2.ReadError("[Errno 104] Connection reset by peer")
            return "answer"

        return call

    assert hub.retry_dropped(flaky(3), "org/repo@main") == "answer" and len(calls) == 4
    calls.clear()
    with pytest.raises(httpx2.ReadError):
        hub.retry_dropped(flaky(4), "org/repo@main")
    assert len(calls) == 4
    calls.clear()

    def refused():
        calls.append(1)
        raise httpx2.ConnectError("[Errno 111] Connection refused")

    with pytest.raises(httpx2.ConnectError):
        hub.retry_dropped(refused, "org/repo@main")
    assert len(calls) == 1
