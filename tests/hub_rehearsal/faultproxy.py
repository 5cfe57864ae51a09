"""A fault-injecting HTTP forwarder between the real clients (``HF_ENDPOINT``) and the olah mirror.

Loopback only, threads of the standard library's ``http.server``, bounded: every upstream call
has a time-out, bodies are a few MB, the server stops with the ``with`` block. It forwards each
request to the mirror and, where a :class:`Fault` matches the request's method and path:

* ``drop``: sends the answer's headers and at most ``budget`` body bytes in all (over every
  matching request), then closes the connection mid-body; once the budget is spent, matching
  requests get headers and no body (a network that went down during a transfer; with
  ``times=1``, a single break);
* ``corrupt``: flips one byte in the middle of the body (same length: only a hash check sees it);
* ``status``: answers ``status`` (e.g. 429, 503, with ``Retry-After``) instead of forwarding, for
  every matching request; any fault hits only the first ``times`` matching requests when given.

:attr:`FaultProxy.log` records every request (method, path, Range header, status, body bytes
sent), so that a test can count what crossed the wire. olah answers a Range request (a resumed
transfer) with the whole file; the hub answers 206 with the bytes asked for, and so does the
proxy (from olah's whole answer).
"""

from __future__ import annotations

import http.client
import re
import socket
import threading
import urllib.parse
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "content-length"}


@dataclass
class Fault:
    kind: str  # drop | corrupt | status
    path: str  # a regular expression searched in the request path
    method: str = "GET"
    budget: int = 0  # drop: body bytes delivered before the connection is cut (over all matching requests)
    status: int = 503  # status: the answer
    times: int | None = None  # how many matching requests it hits (None: every one)
    retry_after: int | None = 1  # status: the Retry-After header (seconds)

    def matches(self, method: str, path: str) -> bool:
        return method == self.method and re.search(self.path, path) is not None and self.times != 0


@dataclass
class Record:
    method: str
    path: str
    range: str | None
    status: int
    body_bytes: int
    fault: str | None


class FaultProxy:
    """``with FaultProxy(upstream) as proxy:`` — ``proxy.endpoint`` for HF_ENDPOINT; ``proxy.faults`` the faults
    in force (change them between runs); ``proxy.log`` what was served."""

    def __init__(self, upstream: str, timeout: float = 30.0):
        parsed = urllib.parse.urlsplit(upstream)
        self.upstream = upstream.rstrip("/")
        self.host, self.port, self.timeout = parsed.hostname, parsed.port, timeout
        self.faults: list[Fault] = []
        self.log: list[Record] = []
        self.lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def do_GET(self):
                proxy._serve(self)

            do_HEAD = do_GET

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FaultProxy:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)

    def sent(self, path: str, method: str = "GET") -> int:
        """Body bytes served for requests whose path matches ``path``."""
        return sum(r.body_bytes for r in self.log if r.method == method and re.search(path, r.path))

    def requests(self, path: str, method: str = "GET") -> list[Record]:
        return [r for r in self.log if r.method == method and re.search(path, r.path)]

    def _fault(self, method: str, path: str) -> Fault | None:
        with self.lock:
            for fault in self.faults:
                if fault.matches(method, path):
                    if fault.times is not None:
                        fault.times -= 1
                    return fault
        return None

    def _record(self, handler, status: int, body_bytes: int, fault: Fault | None) -> None:
        with self.lock:
            self.log.append(
                Record(
                    handler.command,
                    handler.path,
                    handler.headers.get("Range"),
                    status,
                    body_bytes,
                    fault and fault.kind,
                )
            )

    def _serve(self, handler: BaseHTTPRequestHandler) -> None:
        method, path = handler.command, handler.path
        handler.close_connection = True
        fault = self._fault(method, path)
        if fault is not None and fault.kind == "status":
            body = b'{"error": "injected fault"}'
            handler.send_response(fault.status)
            if fault.retry_after is not None:
                handler.send_header("Retry-After", str(fault.retry_after))
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(body)))
            handler.send_header("Connection", "close")
            handler.end_headers()
            if method != "HEAD":
                handler.wfile.write(body)
            self._record(handler, fault.status, len(body) if method != "HEAD" else 0, fault)
            return
        headers = {k: v for k, v in handler.headers.items() if k.lower() not in HOP_BY_HOP and k.lower() != "host"}
        headers["Accept-Encoding"] = "identity"  # bytes on the wire are the file's bytes
        conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        try:
            conn.request(method, path, headers=headers)
            answer = conn.getresponse()
            body = answer.read() if method != "HEAD" else b""
            status, answer_headers = answer.status, answer.getheaders()
        finally:
            conn.close()
        extra_headers = []
        wanted = re.fullmatch(r"bytes=(\d+)-", handler.headers.get("Range") or "")
        if wanted and status == 200 and method == "GET":  # olah answers a range with the whole file; the hub with 206
            start = int(wanted.group(1))
            status, extra_headers = 206, [("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")]
            body = body[start:]
        if fault is not None and fault.kind == "corrupt" and body:
            body = bytearray(body)
            body[len(body) // 2] ^= 0xFF
            body = bytes(body)
        handler.send_response(status)
        for key, value in answer_headers:
            if key.lower() in HOP_BY_HOP or (extra_headers and key.lower() == "content-range"):
                continue
            if key.lower() == "location":
                value = value.replace(self.upstream, self.endpoint)
            handler.send_header(key, value)
        for key, value in extra_headers:
            handler.send_header(key, value)
        length = next((v for k, v in answer_headers if k.lower() == "content-length"), None)
        handler.send_header("Content-Length", str(len(body)) if method != "HEAD" else (length or "0"))
        handler.send_header("Connection", "close")
        handler.end_headers()
        if method == "HEAD":
            self._record(handler, status, 0, fault)
            return
        if fault is not None and fault.kind == "drop":
            with self.lock:
                n = min(fault.budget, len(body))
                fault.budget -= n
            handler.wfile.write(body[:n])
            handler.wfile.flush()
            self._record(handler, status, n, fault)
            try:
                handler.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        handler.wfile.write(body)
        self._record(handler, status, len(body), fault)
