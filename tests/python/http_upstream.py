"""A small local upstream for the HTTP backend tests: the answers httpbin cannot give.

Does socket I/O: a threaded stdlib HTTP server on 127.0.0.1 with a free port, stopped by the
test. It records what it saw (raw request targets, attempts, aborted slow answers) so tests can
check what the runtime sent, and whether it hung up.

Endpoints: /echo/<anything> (method, raw target, headers, body as JSON), /slow?key=K&seconds=N
(dribbles a body; records "aborted" when the client goes away), /huge?bytes=N[&chunked=1],
/malformed (invalid JSON), /redirect-away (302 to another host name), /redirect-same,
/flaky?key=K&fail=N (503 for the first N attempts), /counter and POST /bump.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit


class State:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.seen: list[dict] = []
        self.attempts: dict[str, int] = {}
        self.slow: dict[str, str] = {}
        self.counter = 0


class Handler(BaseHTTPRequestHandler):
    server: "Upstream"
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:  # quiet
        pass

    def _send(self, status: int, body: bytes, ctype: str = "application/json", headers: dict | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, value: object, headers: dict | None = None) -> None:
        self._send(status, json.dumps(value).encode(), headers=headers)

    def do_GET(self) -> None:
        self._route()

    def do_POST(self) -> None:
        self._route()

    def do_PUT(self) -> None:
        self._route()

    def _route(self) -> None:
        state = self.server.state
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        url = urlsplit(self.path)
        q = {k: v[-1] for k, v in parse_qs(url.query).items()}
        record = {
            "method": self.command,
            "target": self.path,
            "headers": {k: v for k, v in self.headers.items()},
            "body": body.decode("utf-8", "replace"),
        }
        with state.lock:
            state.seen.append(record)
        path = url.path
        if path.startswith("/echo/"):
            self._json(200, record)
        elif path == "/slow":
            self._slow(q.get("key", "slow"), float(q.get("seconds", "5")))
        elif path == "/huge":
            n = int(q.get("bytes", "1000000"))
            if q.get("chunked"):
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                chunk = b"x" * 65536
                sent = 0
                try:
                    while sent < n:
                        part = chunk[: min(len(chunk), n - sent)]
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
                        sent += len(part)
                    self.wfile.write(b"0\r\n\r\n")
                except OSError:
                    pass
            else:
                self._send(200, b"x" * n, "text/plain")
        elif path == "/malformed":
            self._send(200, b'{"items": [1, 2', "application/json")
        elif path == "/redirect-away":
            port = self.server.server_address[1]
            self._send(302, b"", "text/plain", {"Location": f"http://localhost:{port}/echo/stolen"})
        elif path == "/redirect-same":
            self._send(302, b"", "text/plain", {"Location": "/echo/followed"})
        elif path == "/flaky":
            key = q.get("key", "flaky")
            with state.lock:
                state.attempts[key] = state.attempts.get(key, 0) + 1
                n = state.attempts[key]
            if n <= int(q.get("fail", "1")):
                self._json(503, {"error": "try again", "attempt": n})
            else:
                self._json(200, {"attempts": n})
        elif path == "/counter":
            self._json(200, {"value": state.counter})
        elif path == "/bump":
            with state.lock:
                state.counter += 1
            self._json(200, {"value": state.counter})
        else:
            self._json(404, {"error": "no such endpoint", "path": path})

    def _slow(self, key: str, seconds: float) -> None:
        state = self.server.state
        with state.lock:
            state.slow[key] = "started"
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        deadline = time.monotonic() + seconds
        try:
            while time.monotonic() < deadline:
                self.wfile.write(b"1\r\n.\r\n")
                self.wfile.flush()
                time.sleep(0.05)
            self.wfile.write(b"0\r\n\r\n")
            outcome = "completed"
        except OSError:
            outcome = "aborted"
        with state.lock:
            state.slow[key] = outcome


class Upstream(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.state = State()
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def start(self) -> "Upstream":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()

    def wait_slow(self, key: str, outcome: str, timeout: float = 10.0) -> str:
        """Waits until the slow answer `key` ends as `outcome`; returns what it ended as."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.state.lock:
                now = self.state.slow.get(key)
            if now == outcome:
                return now
            time.sleep(0.05)
        return self.state.slow.get(key, "never started")
