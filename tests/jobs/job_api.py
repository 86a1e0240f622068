"""A real asynchronous job API on loopback, Python standard library only, for the tasks tests
(tests/python/test_tasks.py) and the conformance run (tests/conformance/run.sh starts it with
plain `python3 tests/jobs/job_api.py --port-file FILE`).

Does socket I/O: a threaded HTTP server on 127.0.0.1. Jobs live in memory, bounded
(MAX_JOBS; the oldest finished job is forgotten first).

  POST /jobs            body {"seconds": N, "label": L, "outcome": "ok"|"error"|"vanish"}
                        -> 202, Location: /jobs/<id>, body {"id", "statusUrl"}
  GET  /jobs/<id>       -> 200 {"id", "state": working|done|failed|cancelled, "label", "result"?}
                        (404 when unknown; 410 for an "outcome: vanish" job once its time is up)
  GET  /jobs/<id>/result -> 200 the result JSON once done, else 409
  DELETE /jobs/<id>     -> 204, the job is cancelled (recorded: GET /log lists every cancel)
  GET  /log             -> 200 {"cancelled": [ids], "requests": [[method, path, authorization?]]}
"""

from __future__ import annotations

import argparse
import itertools
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

MAX_JOBS = 10_000
MAX_SECONDS = 3_600.0
MAX_BODY = 64 * 1024


class Jobs:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.jobs: dict[str, dict] = {}
        self.ids = itertools.count(1)
        self.cancelled: list[str] = []
        self.requests: list[list] = []

    def start(self, seconds: float, label: str, outcome: str) -> dict:
        with self.lock:
            if len(self.jobs) >= MAX_JOBS:
                oldest = next(iter(self.jobs))
                del self.jobs[oldest]
            job_id = str(next(self.ids))
            job = {"id": job_id, "label": label, "outcome": outcome, "ends": time.monotonic() + seconds, "cancelled": False}
            self.jobs[job_id] = job
            return job

    def view(self, job: dict) -> dict:
        if job["cancelled"]:
            return {"id": job["id"], "state": "cancelled", "label": job["label"]}
        if time.monotonic() < job["ends"]:
            return {"id": job["id"], "state": "working", "label": job["label"]}
        if job["outcome"] == "error":
            return {"id": job["id"], "state": "failed", "label": job["label"], "error": f"job {job['label']} failed"}
        return {"id": job["id"], "state": "done", "label": job["label"], "result": {"label": job["label"], "rows": 42}}


class Handler(BaseHTTPRequestHandler):
    server: "JobServer"
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:  # quiet
        pass

    def _json(self, status: int, value: object | None, headers: dict | None = None) -> None:
        body = b"" if value is None else json.dumps(value).encode()
        self.send_response(status)
        if value is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, text in (headers or {}).items():
            self.send_header(name, text)
        self.end_headers()
        self.wfile.write(body)

    def _job(self, job_id: str) -> dict | None:
        return self.server.jobs.jobs.get(job_id)

    def _record(self) -> None:
        jobs = self.server.jobs
        with jobs.lock:
            jobs.requests.append([self.command, self.path, self.headers.get("Authorization")])
            del jobs.requests[:-1000]

    def do_POST(self) -> None:
        self._record()
        length = min(int(self.headers.get("Content-Length") or 0), MAX_BODY)
        raw = self.rfile.read(length) if length else b"{}"
        if self.path != "/jobs":
            return self._json(404, {"error": "not found"})
        try:
            spec = json.loads(raw or b"{}")
            seconds = min(max(float(spec.get("seconds", 1)), 0.0), MAX_SECONDS)
        except (ValueError, TypeError, AttributeError):
            return self._json(400, {"error": "body must be JSON with a number `seconds`"})
        label = str(spec.get("label", ""))
        outcome = str(spec.get("outcome", "ok"))
        job = self.server.jobs.start(seconds, label, outcome)
        status_path = f"/jobs/{job['id']}"
        self._json(202, {"id": job["id"], "statusUrl": status_path}, {"Location": status_path})

    def do_GET(self) -> None:
        self._record()
        jobs = self.server.jobs
        if self.path == "/log":
            with jobs.lock:
                return self._json(200, {"cancelled": list(jobs.cancelled), "requests": list(jobs.requests)})
        parts = self.path.strip("/").split("/")
        if len(parts) not in (2, 3) or parts[0] != "jobs":
            return self._json(404, {"error": "not found"})
        with jobs.lock:
            job = self._job(parts[1])
            view = jobs.view(job) if job else None
        if job is None or view is None:
            return self._json(404, {"error": "no such job"})
        if job["outcome"] == "vanish" and view["state"] != "working":
            return self._json(410, {"error": "the job is gone"})
        if len(parts) == 3:
            if parts[2] != "result":
                return self._json(404, {"error": "not found"})
            if view["state"] != "done":
                return self._json(409, {"error": f"the job is {view['state']}"})
            return self._json(200, view["result"])
        self._json(200, view)

    def do_DELETE(self) -> None:
        self._record()
        jobs = self.server.jobs
        parts = self.path.strip("/").split("/")
        with jobs.lock:
            job = self._job(parts[1]) if len(parts) == 2 and parts[0] == "jobs" else None
            if job is not None:
                job["cancelled"] = True
                jobs.cancelled.append(job["id"])
        self._json(204 if job else 404, None if job else {"error": "no such job"})


class JobServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, port: int = 0) -> None:
        super().__init__(("127.0.0.1", port), Handler)
        self.jobs = Jobs()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


def serve_in_thread(port: int = 0) -> JobServer:
    """Starts a job API on 127.0.0.1 in a daemon thread (tests call `.shutdown()`)."""
    server = JobServer(port)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file", type=Path, help="write the chosen port here once listening")
    args = parser.parse_args()
    server = JobServer(args.port)
    if args.port_file:
        tmp = args.port_file.with_suffix(".tmp")
        tmp.write_text(str(server.server_address[1]))
        tmp.rename(args.port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
