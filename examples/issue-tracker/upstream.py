#!/usr/bin/env python3
"""A tiny issue-tracker REST API to try examples/issue-tracker/issue-tracker.yaml against.

Standard library only. Serves JSON on 127.0.0.1 (port from --port, default 8700), keeps issues in
memory, and requires `Authorization: Bearer <token>` with the token read from --token-file.

  GET    /issues?state=open|closed&label=L&q=TEXT   -> {"items": [...], "total": N}
  GET    /issues/N                                  -> issue, or 404
  POST   /issues        {"title", "body", "labels"} -> 201 issue
  PATCH  /issues/N      {"state"}                   -> issue
  POST   /issues/N/comments {"body"}                -> 201 comment
  GET    /stats                                     -> {"open": N, "closed": M}
"""

from __future__ import annotations

import argparse
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

LOCK = threading.Lock()
ISSUES: dict[int, dict] = {
    1: {"number": 1, "title": "Login page times out", "body": "After 30 s.", "state": "open",
        "labels": ["bug"], "comments": []},
    2: {"number": 2, "title": "Add dark mode", "body": "", "state": "open",
        "labels": ["feature"], "comments": []},
    3: {"number": 3, "title": "Typo in footer", "body": "", "state": "closed",
        "labels": ["bug", "good first issue"], "comments": []},
}  # fmt: skip


class Handler(BaseHTTPRequestHandler):
    token = ""
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt: str, *args: object) -> None:
        print(f"upstream: {self.command} {self.path} -> {args[1] if len(args) > 1 else ''}")

    def reply(self, status: int, value: object) -> None:
        body = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def payload(self) -> dict:
        length = int(self.headers.get("Content-Length") or 0)
        try:
            value = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            value = None
        return value if isinstance(value, dict) else {}

    def authorized(self) -> bool:
        if self.headers.get("Authorization") == f"Bearer {self.token}":
            return True
        self.reply(401, {"error": "missing or wrong bearer token"})
        return False

    def route(self) -> None:
        if not self.authorized():
            return
        url = urlsplit(self.path)
        parts = [p for p in url.path.split("/") if p]
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        with LOCK:
            if parts == ["stats"] and self.command == "GET":
                states = [i["state"] for i in ISSUES.values()]
                return self.reply(200, {"open": states.count("open"), "closed": states.count("closed")})
            if parts == ["issues"] and self.command == "GET":
                items = [
                    i for i in ISSUES.values()
                    if query.get("state", i["state"]) == i["state"]
                    and ("label" not in query or query["label"] in i["labels"])
                    and query.get("q", "").lower() in i["title"].lower()
                ]  # fmt: skip
                return self.reply(200, {"items": items, "total": len(items)})
            if parts == ["issues"] and self.command == "POST":
                data = self.payload()
                if not isinstance(data.get("title"), str) or not data["title"].strip():
                    return self.reply(422, {"error": "title is required"})
                number = max(ISSUES, default=0) + 1
                ISSUES[number] = {
                    "number": number, "title": data["title"], "body": data.get("body", ""),
                    "state": "open", "labels": list(data.get("labels", [])), "comments": [],
                }  # fmt: skip
                return self.reply(201, ISSUES[number])
            if len(parts) >= 2 and parts[0] == "issues" and parts[1].isdigit():
                issue = ISSUES.get(int(parts[1]))
                if issue is None:
                    return self.reply(404, {"error": f"no issue {parts[1]}"})
                if len(parts) == 2 and self.command == "GET":
                    return self.reply(200, issue)
                if len(parts) == 2 and self.command == "DELETE":
                    del ISSUES[issue["number"]]
                    return self.reply(200, issue)
                if len(parts) == 2 and self.command == "PATCH":
                    state = self.payload().get("state")
                    if state not in ("open", "closed"):
                        return self.reply(422, {"error": "state must be open or closed"})
                    issue["state"] = state
                    return self.reply(200, issue)
                if parts[2:] == ["comments"] and self.command == "POST":
                    comment = {"id": len(issue["comments"]) + 1, "body": self.payload().get("body", "")}
                    issue["comments"].append(comment)
                    return self.reply(201, comment)
        self.reply(404, {"error": "no such endpoint"})

    do_GET = do_POST = do_PATCH = do_DELETE = route


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8700)
    parser.add_argument("--token-file", required=True, help="file holding the bearer token")
    args = parser.parse_args()
    with open(args.token_file, encoding="utf-8") as f:
        Handler.token = f.read().strip()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    print(f"issue tracker API on http://127.0.0.1:{server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
