#!/usr/bin/env python3
"""bench/otlp-sink.py: the cheapest OTLP/HTTP trace receiver, for measuring what tracing costs the
runtime (bench/callgrind.sh with CG_SINK=1). Accepts POST /v1/traces on 127.0.0.1, reads and
drops the body (bounded), answers an empty ExportTraceServiceResponse (zero protobuf bytes).
Prints the port it listens on, then `exports N bytes M` when stopped (SIGTERM/SIGINT).

Does socket I/O on 127.0.0.1 only. Usage: bench/otlp-sink.py [PORT]   (0: a free port)
"""

from __future__ import annotations

import signal
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MAX_BODY = 16 * 1024 * 1024
received = {"exports": 0, "bytes": 0}


class Sink(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:  # noqa: N802 (the stdlib's name)
        length = int(self.headers.get("Content-Length") or 0)
        if self.path != "/v1/traces" or not 0 <= length <= MAX_BODY:
            self.send_error(404 if self.path != "/v1/traces" else 413)
            return
        self.rfile.read(length)
        received["exports"] += 1
        received["bytes"] += length
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *_: object) -> None:
        pass


def main() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1]) if len(sys.argv) > 1 else 0), Sink)

    def stop(*_: object) -> None:
        print(f"exports {received['exports']} bytes {received['bytes']}", flush=True)
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
