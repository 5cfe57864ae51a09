"""Why a call over the network failed: one classifier for every client the project uses.

huggingface_hub (through httpx), openml (requests and urllib3) and scikit-learn's fetchers (urllib) each raise
their own errors, often raised from others. :func:`cause` reads an error and every error it was raised from, and
returns a :class:`Cause`: what the server answered, if it answered by name or by HTTP status, and whether the
network failed, by never connecting or by a connection that broke off. The callers say it in their own words: the
download (:func:`rollout_equality.acquire.hub.describe`), the preflight (:mod:`rollout_equality.acquire.sources`)
and the tables' fetcher (:mod:`rollout_equality.acquire.tables`); the hub's calls are made again after a broken
connection (:func:`rollout_equality.acquire.hub.retry_dropped`).
"""

from __future__ import annotations

import socket
import urllib.error
from typing import Iterable, NamedTuple

ANSWERS = {
    "GatedRepoError": "gated",
    "RepositoryNotFoundError": "no_repository",
    "RevisionNotFoundError": "no_revision",
    "EntryNotFoundError": "no_file",
    "RemoteEntryNotFoundError": "no_file",
}
"""The hub's errors that name what the server answered, by class name (huggingface_hub is not imported to classify),
each with its :attr:`Cause.answer`; earlier entries win when a chain holds several."""

INCOMPLETE = "IncompleteSnapshotError"
"""huggingface_hub's error for a copy on disk that lacks files it may not fetch (:attr:`Cause.incomplete`)."""

OFFLINE_MODE = "OfflineModeIsEnabled"
"""huggingface_hub's error for a call that ``HF_HUB_OFFLINE=1`` forbade: the network is not reached."""


class Cause(NamedTuple):
    """What a failed call says about why it failed (:func:`cause`)."""

    answer: str | None
    """What the server answered by name (:data:`ANSWERS`): ``gated``, ``no_repository``, ``no_revision`` or
    ``no_file``; None when it answered nothing of the kind."""
    connection: str | None
    """``unreachable``: no connection could be made (DNS, refused, time-out) or the client was forbidden to make one;
    ``broken``: a connection that had been made broke off (reset, closed mid-answer, a read error); None: the network
    did not fail."""
    status: int | None
    """The first HTTP status of the chain: the server answered, e.g. 429, 503 or 500."""
    incomplete: bool
    """A copy on disk lacks files and the client may not fetch them (:data:`INCOMPLETE`)."""

    @property
    def network(self) -> bool:
        """Whether the network failed (the server was not reached, or the connection broke off)."""
        return self.connection is not None


def cause(err: BaseException) -> Cause:
    """The :class:`Cause` of ``err``, read from it and every error it was raised from."""
    errors = list(_chain(err))
    names = {type(e).__name__ for e in errors}
    answer = next((a for name, a in ANSWERS.items() if name in names), None)
    connection = None
    types = _connection_types()
    if any(_unreached(e, types) for e in errors):
        connection = "broken" if _broken(errors) else "unreachable"
    status = next((s for s in map(_http_status, errors) if s), None)
    return Cause(answer, connection, status, INCOMPLETE in names)


def _chain(err: BaseException) -> Iterable[BaseException]:
    seen: set[int] = set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        yield err
        err = err.__cause__ or err.__context__


def _http_status(err: BaseException) -> int | None:
    response = getattr(err, "response", None)
    return getattr(response, "status_code", None)


def _types(modules: tuple[tuple[str, tuple[str, ...]], ...]) -> tuple[type, ...]:
    """The exception classes ``names`` of each module that is installed."""
    found: list[type] = []
    for module, names in modules:
        try:
            mod = __import__(module, fromlist=list(names))
        except ImportError:
            continue
        found += [getattr(mod, n) for n in names if isinstance(getattr(mod, n, None), type)]
    return tuple(found)


def _connection_types() -> tuple[type, ...]:
    """Every client's errors for a failure to reach the server or to keep the connection."""
    return (ConnectionError, TimeoutError, socket.gaierror, socket.timeout) + _types(
        (
            ("httpx2", ("TransportError",)),  # huggingface_hub 2: connect/read errors, time-outs
            ("httpx", ("TransportError",)),
            ("requests.exceptions", ("ConnectionError", "Timeout")),  # openml, older clients
            ("urllib3.exceptions", ("MaxRetryError", "NewConnectionError", "ProtocolError", "TimeoutError")),
            ("aiohttp", ("ClientConnectionError",)),
        )
    )


def _unreached(e: BaseException, types: tuple[type, ...]) -> bool:
    """Whether ``e`` alone is a failure of the network (not an answer of the server); ``types``:
    :func:`_connection_types`."""
    if isinstance(e, urllib.error.HTTPError):  # an answer from the server, not a failure to reach it
        return False
    if isinstance(e, urllib.error.URLError) or (isinstance(e, types) and not _http_status(e)):
        return True
    return type(e).__name__ == OFFLINE_MODE


BROKE_OFF = ("RemoteProtocolError", "ReadError", "WriteError", "CloseError", "ProtocolError", "IncompleteRead")
"""A connection that had been made and broke off (the peer closed it mid-answer, a read or write error): httpx's
and httpx2's errors, urllib3's ``ProtocolError``, http.client's ``IncompleteRead``."""

NEVER_MADE = ("ConnectError", "ConnectTimeout", "gaierror", "ConnectionRefusedError", "NewConnectionError")
"""A connection that could not be made at all (DNS, refused, the connect time-out): never a broken one."""


def _broken(errors: list[BaseException]) -> bool:
    names = {type(e).__name__ for e in errors}
    return bool(names & set(BROKE_OFF)) and not names & set(NEVER_MADE)
