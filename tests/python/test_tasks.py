"""Long-running declared tools over MCP Tasks, end to end: a real asynchronous job API on
127.0.0.1 (tests/jobs/job_api.py: 202 + Location, slow jobs, DELETE cancels) behind two runtime
processes sharing one session key, so a task started on one is polled to completion through the
other, with no task store.

Clients: the official Python SDK (mcp 2.3.0) implements no client side of tasks in either era
(no `tasks/get`, no task-augmented `call_tool`), so task traffic here is raw HTTP (httpx2), which
also lets the tests alter ids and headers; the official TypeScript Tasks client
(@modelcontextprotocol/ext-tasks) drives both eras in test_ts_tasks.py. Raw traffic is shaped as
the specs say: the 2026-07-28 Tasks extension (`io.modelcontextprotocol/tasks`) and
2025-11-25's experimental tasks. The SDK is the client *without* tasks: it gets the bounded
blocking fallback, and a `task: required` tool refuses it with -32021."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from harness import JSON_AND_SSE, LEGACY, MODERN, Runtime, StartRuntime, initialize_body, key_file, rpc_result, session_headers

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "jobs"))
from job_api import JobServer, serve_in_thread  # noqa: E402

pytestmark = pytest.mark.anyio

HERE = Path(__file__).parent
TASKS = "io.modelcontextprotocol/tasks"


@pytest.fixture
def jobs() -> Iterator[JobServer]:
    server = serve_in_thread()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def replicas(start: StartRuntime, tmp_path: Path, jobs: JobServer) -> tuple[Runtime, Runtime, Runtime]:
    manifest = tmp_path / "manifest" / "tasks.yaml"
    manifest.parent.mkdir()
    manifest.write_text((HERE / "manifests" / "tasks.yaml").read_text().replace("@JOBS@", jobs.url))
    shared = key_file(tmp_path / "shared.key")
    other = key_file(tmp_path / "other.key")
    a = start(manifest, extra_args=("--session-key-file", str(shared)), name="a")
    b = start(manifest, extra_args=("--session-key-file", str(shared)), name="b")
    c = start(manifest, extra_args=("--session-key-file", str(other)), name="c")
    return a, b, c


def modern(rt: Runtime, method: str, params: dict, name: str | None = None, tasks: bool = True) -> httpx2.Response:
    """A raw 2026-07-28 request; `tasks` declares the Tasks extension in its capabilities."""
    capabilities = {"extensions": {TASKS: {}}} if tasks else {}
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "kube-mcp-pytest", "version": "0"},
    }
    headers = dict(JSON_AND_SSE, **{"MCP-Protocol-Version": MODERN, "Mcp-Method": method})
    if name is None:
        name = params.get("taskId") or params.get("name")
    if name is not None:
        headers["Mcp-Name"] = name
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": meta}}
    return httpx2.post(rt.url, headers=headers, json=body, timeout=30)


def result_of(response: httpx2.Response) -> dict:
    message = rpc_result(response)
    assert "result" in message, message
    return message["result"]


def error_of(response: httpx2.Response) -> dict:
    message = rpc_result(response)
    assert "error" in message, message
    return message["error"]


def poll(rt: Runtime, task_id: str, timeout: float = 15.0) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        task = result_of(modern(rt, "tasks/get", {"taskId": task_id}))
        if task["status"] in ("completed", "failed", "cancelled"):
            return task
        time.sleep(0.1)
    raise AssertionError(f"task {task_id} did not finish within {timeout} s")


def test_a_task_started_on_one_replica_completes_through_the_other(replicas, jobs: JobServer) -> None:
    a, b, _ = replicas
    created = result_of(modern(a, "tools/call", {"name": "export_report", "arguments": {"seconds": 1, "label": "q3"}}))
    assert created["resultType"] == "task" and created["status"] == "working", created
    assert isinstance(created["ttlMs"], int) and created["pollIntervalMs"] == 200
    assert jobs.url not in created["taskId"], "the status URL must not be readable in the id"
    # Durable before the answer: the other replica knows it at once.
    first = result_of(modern(b, "tasks/get", {"taskId": created["taskId"]}))
    assert first["status"] == "working" and first["resultType"] == "complete", first
    done = poll(b, created["taskId"])
    assert done["status"] == "completed", done
    assert done["result"]["structuredContent"] == {"label": "q3", "rows": 42}
    assert "isError" not in done["result"]
    seen = httpx2.get(f"{jobs.url}/log", timeout=5).json()["requests"]
    reads = [r for r in seen if r[:2] == ["GET", "/jobs/1"]]
    assert reads and all(r[2] == "Bearer job-token" for r in reads), seen


def test_a_failed_job_is_a_completed_task_with_a_tool_error(replicas) -> None:
    a, b, _ = replicas
    args = {"seconds": 0.2, "label": "bad", "outcome": "error"}
    created = result_of(modern(a, "tools/call", {"name": "export_report", "arguments": args}))
    done = poll(b, created["taskId"])
    assert done["status"] == "completed" and done["result"]["isError"] is True, done


def test_cancel_reaches_the_upstream(replicas, jobs: JobServer) -> None:
    a, b, _ = replicas
    created = result_of(modern(a, "tools/call", {"name": "export_report", "arguments": {"seconds": 60}}))
    ack = result_of(modern(b, "tasks/cancel", {"taskId": created["taskId"]}))
    assert ack["resultType"] == "complete" and set(ack) <= {"resultType", "_meta"}, ack
    assert httpx2.get(f"{jobs.url}/log", timeout=5).json()["cancelled"] == ["1"]
    assert poll(a, created["taskId"])["status"] == "cancelled"
    # Idempotent on a terminal task: the same empty acknowledgement, no second DELETE.
    assert "taskId" not in result_of(modern(a, "tasks/cancel", {"taskId": created["taskId"]}))
    assert httpx2.get(f"{jobs.url}/log", timeout=5).json()["cancelled"] == ["1"]


def test_tampered_expired_and_foreign_ids_are_refused_alike(replicas) -> None:
    a, b, c = replicas
    created = result_of(modern(a, "tools/call", {"name": "export_required", "arguments": {"seconds": 30}}))
    task_id = created["taskId"]
    flipped = task_id[:-3] + ("A" if task_id[-3] != "A" else "B") + task_id[-2:]
    refusals = [
        error_of(modern(b, "tasks/get", {"taskId": flipped})),
        error_of(modern(c, "tasks/get", {"taskId": task_id})),  # another session key
        error_of(modern(b, "tasks/get", {"taskId": "not-a-task"})),
    ]
    time.sleep(1.6)  # export_required's ttlMs is 1500
    refusals.append(error_of(modern(b, "tasks/get", {"taskId": task_id})))
    for error in refusals:
        assert error["code"] == -32602, error
        assert error["message"] == refusals[0]["message"], "a refusal must not say why"


def test_task_methods_need_the_extension_and_the_routing_header(replicas) -> None:
    a, _, _ = replicas
    r = modern(a, "tasks/get", {"taskId": "x"}, tasks=False)
    assert r.status_code == 400 and error_of(r)["code"] == -32021
    assert error_of(r)["data"]["requiredCapabilities"] == {"extensions": {TASKS: {}}}
    r = modern(a, "tasks/get", {"taskId": "x"}, name="y")
    assert r.status_code == 400 and error_of(r)["code"] == -32020
    for removed in ("tasks/result", "tasks/list"):
        assert error_of(modern(a, removed, {"taskId": "x"}))["code"] == -32601
    discover = result_of(modern(a, "server/discover", {}))
    assert TASKS in discover["capabilities"]["extensions"] and "tasks" not in discover["capabilities"]
    # A sync tool never becomes a task, even with a legacy `task` param.
    greeted = result_of(modern(a, "tools/call", {"name": "greet", "arguments": {"name": "Ada"}, "task": {"ttl": 1000}}))
    assert greeted["resultType"] == "complete" and greeted["content"][0]["text"] == "Hello, Ada!"


async def test_a_listen_stream_carries_task_status_notifications(replicas) -> None:
    a, b, _ = replicas
    created = result_of(modern(a, "tools/call", {"name": "export_report", "arguments": {"seconds": 1.5, "label": "n"}}))
    task_id = created["taskId"]
    listen = {"notifications": {"taskIds": [task_id, "not-a-task"]}}
    r = modern(b, "subscriptions/listen", listen, tasks=False)
    assert r.status_code == 400 and error_of(r)["code"] == -32021
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS: {}}},
    }
    headers = dict(JSON_AND_SSE, **{"MCP-Protocol-Version": MODERN, "Mcp-Method": "subscriptions/listen"})
    body = {"jsonrpc": "2.0", "id": "listen-1", "method": "subscriptions/listen", "params": {**listen, "_meta": meta}}
    frames: list[dict] = []
    async with httpx2.AsyncClient(timeout=httpx2.Timeout(15)) as http:
        async with http.stream("POST", b.url, headers=headers, json=body) as response:
            assert response.status_code == 200
            with anyio.fail_after(15):
                async for line in response.aiter_lines():
                    if line.startswith("data:"):
                        frames.append(json.loads(line[len("data:") :]))
                        if frames[-1].get("params", {}).get("status") == "completed":
                            break
    ack, *statuses = frames
    assert ack["method"] == "notifications/subscriptions/acknowledged"
    # Only the task this caller may open is followed.
    assert ack["params"]["notifications"] == {"taskIds": [task_id]}
    assert [f["method"] for f in statuses] == ["notifications/tasks"] * len(statuses)
    assert [f["params"]["status"] for f in statuses] == ["working", "completed"], statuses
    done = statuses[-1]["params"]
    assert done["taskId"] == task_id and done["result"]["structuredContent"] == {"label": "n", "rows": 42}
    assert done["_meta"]["io.modelcontextprotocol/subscriptionId"] == "listen-1"


async def test_a_client_without_tasks_waits_or_is_refused(replicas) -> None:
    a, _, _ = replicas
    async with Client(a.url, mode="2026-07-28") as client:
        result = await client.call_tool("export_report", {"seconds": 0.5, "label": "inline"})
        assert result.is_error is False and result.structured_content == {"label": "inline", "rows": 42}
        with pytest.raises(MCPError) as refused:
            await client.call_tool("export_required", {"seconds": 0.1})
        assert refused.value.error.code == -32021


def test_a_job_is_cancelled_when_a_waiting_client_goes_away(replicas, jobs: JobServer) -> None:
    a, _, _ = replicas
    # A client without tasks waits inline; closing the request is how it cancels.
    params = {"name": "export_report", "arguments": {"seconds": 60}}
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
    headers = dict(JSON_AND_SSE, **{"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": "export_report"})
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {**params, "_meta": meta}}
    with pytest.raises(httpx2.ReadTimeout):
        with httpx2.stream("POST", a.url, headers=headers, json=body, timeout=1.5) as response:
            response.read()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if httpx2.get(f"{jobs.url}/log", timeout=5).json()["cancelled"] == ["1"]:
            return
        time.sleep(0.1)
    raise AssertionError("the upstream job was not cancelled")


def test_a_2025_11_25_session_uses_task_augmented_calls(replicas, jobs: JobServer) -> None:
    a, b, _ = replicas
    r = httpx2.post(a.url, headers=JSON_AND_SSE, json=initialize_body(capabilities={"tasks": {}}), timeout=10)
    init = result_of(r)
    assert init["capabilities"]["tasks"] == {"cancel": {}, "requests": {"tools": {"call": {}}}}
    session = r.headers["mcp-session-id"]
    headers = session_headers(session)
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    httpx2.post(a.url, headers=headers, json=initialized, timeout=10)

    def rpc(rt: Runtime, method: str, params: dict) -> httpx2.Response:
        body = {"jsonrpc": "2.0", "id": 2, "method": method, "params": params}
        return httpx2.post(rt.url, headers=headers, json=body, timeout=30)

    tools = {t["name"]: t for t in result_of(rpc(a, "tools/list", {}))["tools"]}
    assert tools["export_report"]["execution"] == {"taskSupport": "optional"}
    assert tools["export_required"]["execution"] == {"taskSupport": "required"}
    assert "execution" not in tools["greet"]
    call = {"name": "export_report", "arguments": {"seconds": 0.5, "label": "legacy"}, "task": {"ttl": 30000}}
    task = result_of(rpc(a, "tools/call", call))["task"]
    assert task["status"] == "working" and task["ttl"] == 30000 and task["pollInterval"] == 200
    got = result_of(rpc(b, "tasks/get", {"taskId": task["taskId"]}))
    assert got["taskId"] == task["taskId"] and "result" not in got
    result = result_of(rpc(b, "tasks/result", {"taskId": task["taskId"]}))
    assert result["structuredContent"] == {"label": "legacy", "rows": 42}
    assert result["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task["taskId"]}
    # Not augmented: a tool that must be a task is refused as the 2025-11-25 spec says.
    refused = rpc_result(rpc(a, "tools/call", {"name": "export_required", "arguments": {"seconds": 1}}))
    assert refused["error"]["code"] == -32601
    assert rpc_result(rpc(a, "tasks/list", {}))["error"]["code"] == -32601
    # tasks/cancel answers the task, cancelled, once the upstream took the cancel request...
    call = {"name": "export_report", "arguments": {"seconds": 60}, "task": {}}
    running = result_of(rpc(a, "tools/call", call))["task"]["taskId"]
    assert result_of(rpc(b, "tasks/cancel", {"taskId": running}))["status"] == "cancelled"
    assert httpx2.get(f"{jobs.url}/log", timeout=5).json()["cancelled"] == ["2"]
    # ...and refuses where there is none (finished, or no cancel request declared).
    assert rpc_result(rpc(b, "tasks/cancel", {"taskId": task["taskId"]}))["error"]["code"] == -32602
    call = {"name": "export_required", "arguments": {"seconds": 60}, "task": {}}
    uncancellable = result_of(rpc(a, "tools/call", call))["task"]["taskId"]
    assert rpc_result(rpc(b, "tasks/cancel", {"taskId": uncancellable}))["error"]["code"] == -32602


@pytest.fixture(scope="module")
def issuer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from auth_server import authorization_server

    with authorization_server(tmp_path_factory.mktemp("as") / "as.log") as url:
        yield url


def test_a_task_id_is_useless_to_another_principal(start: StartRuntime, tmp_path: Path, jobs: JobServer, issuer: str) -> None:
    from auth_server import client_credentials

    manifest = tmp_path / "manifest" / "tasks.yaml"
    manifest.parent.mkdir()
    text = (HERE / "manifests" / "tasks.yaml").read_text().replace("@JOBS@", jobs.url)
    manifest.write_text(text.replace("spec:\n", f"spec:\n  auth: {{issuer: '{issuer}', requiredScopes: [mcp]}}\n", 1))
    rt = start(manifest)
    reader = client_credentials(issuer, "reader", "mcp", rt.base)
    writer = client_credentials(issuer, "writer", "mcp issues:write", rt.base)

    def as_(token: str, method: str, params: dict) -> httpx2.Response:
        capabilities = {"extensions": {TASKS: {}}}
        meta = {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": capabilities,
        }
        headers = dict(JSON_AND_SSE, **{"MCP-Protocol-Version": MODERN, "Mcp-Method": method})
        headers["Mcp-Name"] = params.get("taskId") or params["name"]
        headers["Authorization"] = f"Bearer {token}"
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": meta}}
        return httpx2.post(rt.url, headers=headers, json=body, timeout=30)

    created = result_of(as_(reader, "tools/call", {"name": "export_report", "arguments": {"seconds": 30}}))
    task_id = created["taskId"]
    assert result_of(as_(reader, "tasks/get", {"taskId": task_id}))["status"] == "working"
    stolen = error_of(as_(writer, "tasks/get", {"taskId": task_id}))
    assert stolen["code"] == -32602 and "unknown task" in stolen["message"], stolen
    assert error_of(as_(writer, "tasks/cancel", {"taskId": task_id}))["code"] == -32602
    assert httpx2.get(f"{jobs.url}/log", timeout=5).json()["cancelled"] == []


async def test_a_2025_11_25_session_stream_carries_task_status(replicas) -> None:
    a, _, _ = replicas
    r = httpx2.post(a.url, headers=JSON_AND_SSE, json=initialize_body(capabilities={"tasks": {}}), timeout=10)
    headers = session_headers(r.headers["mcp-session-id"])
    httpx2.post(a.url, headers=headers, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, timeout=10)
    frames: list[dict] = []
    async with httpx2.AsyncClient(timeout=httpx2.Timeout(15)) as http:
        async with http.stream("GET", a.url, headers=dict(headers, Accept="text/event-stream")) as stream:
            assert stream.status_code == 200
            call = {"name": "export_report", "arguments": {"seconds": 0.5, "label": "s"}, "task": {}}
            body = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}
            task_id = result_of(await http.post(a.url, headers=headers, json=body))["task"]["taskId"]
            with anyio.fail_after(15):
                async for line in stream.aiter_lines():
                    if line.startswith("data:") and line[len("data:") :].strip():
                        frames.append(json.loads(line[len("data:") :]))
                        if frames[-1].get("method") == "notifications/tasks/status":
                            break
    status = frames[-1]["params"]
    assert status["taskId"] == task_id and status["status"] == "completed", frames
    assert "ttl" in status and "result" not in status
