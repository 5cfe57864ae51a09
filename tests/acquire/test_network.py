"""The one classifier of network errors (rollout_equality.acquire.network): what the server answered, whether the
network failed and how, whatever client raised it and however deep in the chain."""

import http.client
import socket
import urllib.error

import httpx2
import pytest
import requests
import urllib3
from huggingface_hub import errors as hf_errors

from rollout_equality.acquire import hub, network


def _response(status: int) -> httpx2.Response:
    return httpx2.Response(status, request=httpx2.Request("GET", "https://huggingface.co/api/models/org/repo"))


def _raised_from(outer: BaseException, inner: BaseException) -> BaseException:
    try:
        try:
            raise inner
        except type(inner) as err:
            raise outer from err
    except type(outer) as err:
        return err


@pytest.mark.parametrize(
    "err, connection",
    [
        (httpx2.ConnectError("[Errno 111] Connection refused"), "unreachable"),
        (httpx2.ConnectTimeout("timed out"), "unreachable"),
        (httpx2.ReadTimeout("timed out"), "unreachable"),
        (requests.exceptions.ConnectionError("Max retries exceeded"), "unreachable"),
        (urllib.error.URLError(socket.gaierror(-2, "Name or service not known")), "unreachable"),
        (hf_errors.OfflineModeIsEnabled("HF_HUB_OFFLINE=1"), "unreachable"),
        (httpx2.ReadError("[Errno 104] Connection reset by peer"), "broken"),
        (httpx2.WriteError("[Errno 32] Broken pipe"), "broken"),
        (httpx2.RemoteProtocolError("peer closed connection without sending complete message body"), "broken"),
        (urllib3.exceptions.ProtocolError("Connection broken: IncompleteRead"), "broken"),
        # a read error behind a connection that was never made is not a broken transfer
        (_raised_from(httpx2.ReadError("read"), httpx2.ConnectError("refused")), "unreachable"),
        # a connection failure behind the hub's own error is found
        (_raised_from(hf_errors.LocalEntryNotFoundError("not in the cache"), httpx2.ConnectError("x")), "unreachable"),
        (hf_errors.HfHubHTTPError("Service Unavailable", response=_response(503)), None),
        (urllib.error.HTTPError("https://x", 404, "Not Found", {}, None), None),
        (http.client.IncompleteRead(b"partial"), None),  # not a network failure on its own
        (RuntimeError("Dataset scripts are no longer supported"), None),
    ],
)
def test_the_network_fails_by_never_connecting_or_by_a_connection_that_broke(err, connection):
    found = network.cause(err)
    assert found.connection == connection
    assert found.network is (connection is not None)


@pytest.mark.parametrize(
    "err, answer, status",
    [
        (hf_errors.GatedRepoError("Access restricted", response=_response(401)), "gated", 401),
        (hf_errors.RepositoryNotFoundError("Repository Not Found", response=_response(404)), "no_repository", 404),
        (hf_errors.RevisionNotFoundError("Invalid rev id", response=_response(404)), "no_revision", 404),
        (hf_errors.RemoteEntryNotFoundError("no such file", response=_response(404)), "no_file", 404),
        (hf_errors.HfHubHTTPError("Too Many Requests", response=_response(429)), None, 429),
        (_raised_from(RuntimeError("wrapped"), hf_errors.HfHubHTTPError("err", response=_response(500))), None, 500),
        (ValueError("something else"), None, None),
    ],
)
def test_what_the_server_answered_is_read_by_name_and_by_status(err, answer, status):
    found = network.cause(err)
    assert (found.answer, found.status, found.network) == (answer, status, False)


def test_the_download_retries_exactly_the_connections_the_classifier_calls_broken(monkeypatch):
    """One classifier decides both the retry of a hub call and the download's message: a write error (a kept-alive
    connection the server closed) is retried like a read error; a refused connection is not."""
    monkeypatch.setattr(hub, "DROPPED_RETRY_WAITS", (0.0,))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    for error, retried in ((httpx2.WriteError("broken pipe"), True), (httpx2.ConnectError("refused"), False)):
        calls = []

        def call():
            calls.append(1)
            if len(calls) == 1:
                raise error
            return "answer"

        if retried:
            assert hub.retry_dropped(call, "org/repo@main") == "answer" and len(calls) == 2
            assert "broke during the transfer" in hub.describe(error, "model 'x'")
        else:
            with pytest.raises(type(error)):
                hub.retry_dropped(call, "org/repo@main")
            assert len(calls) == 1 and "unreachable" in hub.describe(error, "model 'x'")
