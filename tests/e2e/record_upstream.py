"""A loopback upstream for tests/e2e/approvals.sh that records every request it receives.

Usage: python3 record_upstream.py PORT FILE
Listens on 127.0.0.1:PORT; appends each request as one JSON line to FILE (method, path and the
body as JSON, or as text when it is not JSON) and answers 200 with {"ok": true}. Stopped by its
PID. Does socket and file I/O.
"""

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MAX_BODY = 1 << 20
LOCK = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:  # quiet
        pass

    def _record(self) -> None:
        length = min(int(self.headers.get("Content-Length") or 0), MAX_BODY)
        raw = self.rfile.read(length).decode("utf-8", "replace") if length else ""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw
        with LOCK, open(sys.argv[2], "a", encoding="utf-8") as sink:
            sink.write(json.dumps({"method": self.command, "path": self.path, "body": body}) + "\n")
        answer = b'{"ok": true}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    do_GET = do_POST = do_PUT = do_DELETE = _record


if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
