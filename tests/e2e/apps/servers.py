"""The servers of tests/e2e/apps.sh, in one process on 127.0.0.1 (the script stops it by pid).

  python3 servers.py DIR HOST_PORT RUNTIME_URL ALLOWED_PORT DENIED_PORT CERT KEY

HOST_PORT serves the host page (DIR/host.html, DIR/host.js), proxies /mcp to RUNTIME_URL so
the page's MCP client is same-origin (mcp-runtime sends no CORS headers), and answers
/hits with what the two origins were asked. ALLOWED_PORT and DENIED_PORT are https origins
(CERT/KEY: a self-signed certificate the browser is told to accept) that answer any GET with
their name and `Access-Control-Allow-Origin: *`, so only a CSP can keep a view from them.
"""

import http.client
import json
import ssl
import sys
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

HITS = {"allowed": Counter(), "denied": Counter()}
FORWARDED = ("content-type", "accept", "authorization", "last-event-id")


def origin_handler(name):
    class Origin(BaseHTTPRequestHandler):
        def do_GET(self):
            HITS[name][self.path] += 1
            body = name.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Access-Control-Allow-Origin", "*")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_):
            pass

    return Origin


def host_handler(root, runtime):
    upstream = urlsplit(runtime)
    files = {"/": ("host.html", "text/html"), "/host.js": ("host.js", "text/javascript")}

    class Host(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def reply(self, status, body, content_type, headers=()):
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            for name, value in headers:
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            path = urlsplit(self.path).path
            if path == "/hits":
                self.reply(200, json.dumps(HITS).encode(), "application/json")
            elif path in files:
                name, content_type = files[path]
                self.reply(200, (root / name).read_bytes(), content_type)
            else:
                # Includes GET /mcp: no standalone stream through this proxy (405 is allowed).
                self.reply(405 if path == "/mcp" else 404, b"", "text/plain")

        def proxy(self):
            # Whole answers only: a POST's SSE stream ends with its response, which is enough here.
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            headers = {k: v for k, v in self.headers.items()
                       if k.lower() in FORWARDED or k.lower().startswith("mcp-")}
            conn = http.client.HTTPConnection(upstream.hostname, upstream.port, timeout=30)
            try:
                conn.request(self.command, upstream.path or "/mcp", body=body, headers=headers)
                answer = conn.getresponse()
                data = answer.read()
                kept = [(k, v) for k, v in answer.getheaders()
                        if k.lower().startswith("mcp-") or k.lower() == "www-authenticate"]
                self.reply(answer.status, data, answer.getheader("Content-Type", "text/plain"), kept)
            finally:
                conn.close()

        do_POST = do_DELETE = proxy

        def log_message(self, *_):
            pass

    return Host


def serve(server):
    threading.Thread(target=server.serve_forever, daemon=True).start()


def main():
    root, host_port, runtime, allowed, denied, cert, key = sys.argv[1:8]
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    for name, port in (("allowed", allowed), ("denied", denied)):
        server = ThreadingHTTPServer(("127.0.0.1", int(port)), origin_handler(name))
        server.socket = tls.wrap_socket(server.socket, server_side=True)
        serve(server)
    ThreadingHTTPServer(("127.0.0.1", int(host_port)), host_handler(Path(root), runtime)).serve_forever()


if __name__ == "__main__":
    main()
