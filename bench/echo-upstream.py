#!/usr/bin/env python3
"""The loopback upstream of bench/token-exchange.sh: echoes each POST's JSON body, if the request
carries the credential the variant expects, and counts what it saw.

    echo-upstream.py static SECRET       # `Authorization: Bearer SECRET` exactly
    echo-upstream.py exchange AUDIENCE   # `Authorization: Bearer <JWT>` whose payload has AUDIENCE
                                         # in `aud` and is not the caller's token (`aud` of the
                                         # caller's is the login client)

Prints `port N` once it listens on 127.0.0.1 (a port the kernel picks). `GET /stats` answers
`{"requests", "refused", "tokens"}` (tokens: distinct credentials seen), so the script can check
that every call reached it with the right credential and, for token exchange, that one exchanged
token served them all. The JWT payload is decoded, not verified (tests/python/test_token_exchange.py
verifies signatures against the server's keys); decoded once per distinct token, so the upstream
stays cheap: only the runtime is measured. Socket I/O on 127.0.0.1 only; stopped by its PID.
"""

from __future__ import annotations

import base64
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Upstream(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, mode: str, expected: str) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.mode, self.expected = mode, expected
        self.lock = threading.Lock()
        self.requests = self.refused = 0
        self.verdicts: dict[str, bool] = {}

    def accepts(self, header: str) -> bool:
        with self.lock:
            verdict = self.verdicts.get(header)
        if verdict is None:
            verdict = self.judge(header)
            with self.lock:
                self.verdicts[header] = verdict
        return verdict

    def judge(self, header: str) -> bool:
        if not header.startswith("Bearer "):
            return False
        token = header.removeprefix("Bearer ")
        if self.mode == "static":
            return token == self.expected
        try:
            payload = token.split(".")[1]
            claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        except (IndexError, ValueError):
            return False
        aud = claims.get("aud")
        return self.expected in (aud if isinstance(aud, list) else [aud])


class Handler(BaseHTTPRequestHandler):
    server: Upstream
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes: without TCP_NODELAY the second waits for the
    # runtime's delayed ACK (40 ms a call).
    disable_nagle_algorithm = True

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        if self.path != "/stats":
            self.answer(404, b"{}")
            return
        with self.server.lock:
            stats = {"requests": self.server.requests, "refused": self.server.refused,
                     "tokens": len(self.server.verdicts)}  # fmt: skip
        self.answer(200, json.dumps(stats).encode())

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        ok = self.server.accepts(self.headers.get("Authorization", ""))
        with self.server.lock:
            self.server.requests += 1
            self.server.refused += not ok
        if ok:
            self.answer(200, body)
        else:
            self.answer(401, b'{"error":"invalid_token"}')

    def answer(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def main() -> None:
    if len(sys.argv) != 3 or sys.argv[1] not in ("static", "exchange"):
        sys.exit(__doc__)
    server = Upstream(sys.argv[1], sys.argv[2])
    print(f"port {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
