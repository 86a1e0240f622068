"""Approval gates (`tools[].approval`) for clients that take tasks: a guarded call whose approval
is pending becomes a task that stays `working` until an approver decides with the real CLI
(`mcp-runtime approve|deny ID --approvals-dir DIR`); reading it then runs the exact sealed call
once and records its sealed outcome in the approval, so a second read, also through a second
runtime process sharing the session key and the approvals directory, answers the same without
calling the upstream again.

Clients: the official Python SDK (mcp 2.3.0) has no client side of tasks in either era, so this
is raw HTTP (httpx2) shaped as the specs say: the 2026-07-28 Tasks extension and 2025-11-25's
task-augmented `tools/call`. The SDK's own flow (no tasks: a tool error and a retry) is
tests/python/test_sdk_approvals.py."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import httpx2
import pytest
from harness import JSON_AND_SSE, MANIFESTS, MODERN, Runtime, StartRuntime, initialize_body, key_file, rpc_result, runtime_bin, session_headers
from http_upstream import Upstream

TASKS = "io.modelcontextprotocol/tasks"
META = "kube-mcp.io/authorization"
CLI_TIMEOUT_S = 10.0


@pytest.fixture(scope="module")
def upstream():
    server = Upstream().start()
    yield server
    server.stop()


@pytest.fixture
def replicas(start: StartRuntime, tmp_path: Path, upstream: Upstream) -> tuple[Runtime, Runtime, Path]:
    manifest = tmp_path / "src" / "approvals.yaml"
    manifest.parent.mkdir()
    manifest.write_text((MANIFESTS / "approvals.yaml").read_text().replace("@UPSTREAM@", upstream.base))
    approvals = tmp_path / "approvals"
    shared = key_file(tmp_path / "shared.key")
    args = ("--session-key-file", str(shared), "--approvals-dir", str(approvals))
    return start(manifest, extra_args=args, name="a"), start(manifest, extra_args=args, name="b"), approvals


def modern(rt: Runtime, method: str, params: dict, tasks: bool = True) -> dict:
    """A raw 2026-07-28 request's JSON-RPC answer; `tasks` declares the Tasks extension."""
    capabilities = {"extensions": {TASKS: {}}} if tasks else {}
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "kube-mcp-pytest", "version": "0"},
    }
    headers = dict(JSON_AND_SSE, **{"MCP-Protocol-Version": MODERN, "Mcp-Method": method})
    name = params.get("taskId") or params.get("name")
    if name is not None:
        headers["Mcp-Name"] = name
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": meta}}
    message = rpc_result(httpx2.post(rt.url, headers=headers, json=body, timeout=30))
    assert "result" in message, message
    return message["result"]


def cli(*args: str) -> str:
    done = subprocess.run(
        [str(runtime_bin()), *args], capture_output=True, text=True, timeout=CLI_TIMEOUT_S, stdin=subprocess.DEVNULL
    )
    assert done.returncode == 0, f"{args}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout


def seen(upstream: Upstream, prefix: str) -> list[dict]:
    with upstream.state.lock:
        return [r for r in upstream.state.seen if r["target"].startswith(prefix)]


def ask(rt: Runtime, tool: str, args: dict) -> tuple[dict, str]:
    """A guarded call that becomes a task: the created task and its approval's id."""
    created = modern(rt, "tools/call", {"name": tool, "arguments": args})
    assert created["resultType"] == "task" and created["status"] == "working", created
    approval = created["_meta"][META]["authorizationContextId"]
    return created, approval


def test_an_approved_task_runs_the_exact_call_once_and_every_replica_reads_its_outcome(replicas, upstream):
    a, b, approvals = replicas
    args = {"name": "prod-tasks", "force": True}
    target = "/echo/namespaces/prod-tasks"
    created, approval = ask(a, "delete_namespace", args)
    task_id = created["taskId"]
    message = created["statusMessage"]
    assert '"Delete namespace prod-tasks?"' in message and "`oncall`" in message, message
    assert f"mcp-runtime approve {approval} --approvals-dir {approvals}" in message, message
    assert 0 < created["ttlMs"] and created["pollIntervalMs"] == 2000
    assert "prod-tasks" not in task_id and approval not in task_id, "the id is sealed"
    for rt in (a, b):
        assert modern(rt, "tasks/get", {"taskId": task_id})["status"] == "working"
    assert seen(upstream, target) == [], "nothing runs before the approval"

    cli("approve", approval, "--approvals-dir", str(approvals))
    done = modern(b, "tasks/get", {"taskId": task_id})
    assert done["status"] == "completed", done
    result = done["result"]
    assert not result.get("isError"), result
    [received] = seen(upstream, target)
    assert json.loads(received["body"]) == args, "exactly the arguments approved"
    # Read again, on both replicas: the recorded outcome, no second call.
    for rt in (a, b):
        again = modern(rt, "tasks/get", {"taskId": task_id})
        assert again["status"] == "completed" and again["result"] == result
    assert len(seen(upstream, target)) == 1
    [record] = json.loads(cli("approvals", "list", "--approvals-dir", str(approvals), "--json"))
    assert record["state"] == "used"
    outcome = (approvals / f"{approval}.outcome.json").read_text()
    assert "prod-tasks" not in outcome and "namespaces" not in outcome, "the outcome is sealed"


def test_a_client_without_tasks_still_gets_the_tool_error(replicas, upstream):
    a, _, _ = replicas
    result = modern(a, "tools/call", {"name": "delete_namespace", "arguments": {"name": "plain"}}, tasks=False)
    assert result.get("resultType") != "task" and result["isError"] is True, result
    assert "same arguments" in result["content"][0]["text"]


def test_a_denied_task_completes_with_a_tool_error(replicas, upstream):
    a, b, approvals = replicas
    created, approval = ask(a, "delete_namespace", {"name": "denied-ns"})
    cli("deny", approval, "--approvals-dir", str(approvals))
    done = modern(b, "tasks/get", {"taskId": created["taskId"]})
    assert done["status"] == "completed" and done["result"]["isError"] is True, done
    assert "denied this call" in done["result"]["content"][0]["text"]
    assert seen(upstream, "/echo/namespaces/denied-ns") == []


def test_an_undecided_task_expires_with_a_tool_error(replicas, upstream):
    a, _, _ = replicas
    created, _ = ask(a, "quick_delete", {"name": "late"})
    time.sleep(2.5)  # the tool's ttlMs is 2000
    done = modern(a, "tasks/get", {"taskId": created["taskId"]})
    assert done["status"] == "completed" and done["result"]["isError"] is True, done
    assert "expired" in done["result"]["content"][0]["text"]
    assert seen(upstream, "/echo/quick/late") == []


def test_cancel_acknowledges_and_runs_nothing(replicas, upstream):
    a, _, approvals = replicas
    created, _ = ask(a, "delete_namespace", {"name": "cancelled-ns"})
    acknowledged = modern(a, "tasks/cancel", {"taskId": created["taskId"]})
    assert "status" not in acknowledged and acknowledged["resultType"] == "complete", acknowledged
    # Nothing was recorded: the approval waits for approvers, and the task still reads working.
    assert modern(a, "tasks/get", {"taskId": created["taskId"]})["status"] == "working"
    assert seen(upstream, "/echo/namespaces/cancelled-ns") == []


def test_a_2025_11_25_task_augmented_call_waits_for_its_approval(replicas, upstream):
    a, b, approvals = replicas
    r = httpx2.post(a.url, headers=JSON_AND_SSE, json=initialize_body(capabilities={"tasks": {}}), timeout=10)
    headers = session_headers(r.headers["mcp-session-id"])
    httpx2.post(a.url, headers=headers, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, timeout=10)

    def rpc(rt: Runtime, method: str, params: dict) -> dict:
        body = {"jsonrpc": "2.0", "id": 2, "method": method, "params": params}
        message = rpc_result(httpx2.post(rt.url, headers=headers, json=body, timeout=30))
        assert "result" in message, message
        return message["result"]

    tools = {t["name"]: t for t in rpc(a, "tools/list", {})["tools"]}
    assert tools["delete_namespace"]["execution"] == {"taskSupport": "optional"}, "it may be task-augmented"
    args = {"name": "legacy-ns"}
    created = rpc(a, "tools/call", {"name": "delete_namespace", "arguments": args, "task": {}})
    task = created["task"]
    assert task["status"] == "working" and "Delete namespace legacy-ns?" in task["statusMessage"], created
    approval = created["_meta"][META]["authorizationContextId"]
    assert rpc(b, "tasks/get", {"taskId": task["taskId"]})["status"] == "working"
    cli("approve", approval, "--approvals-dir", str(approvals))
    result = rpc(b, "tasks/result", {"taskId": task["taskId"]})
    assert not result.get("isError"), result
    assert result["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task["taskId"]}
    [received] = seen(upstream, "/echo/namespaces/legacy-ns")
    assert json.loads(received["body"]) == args
    assert rpc(a, "tasks/get", {"taskId": task["taskId"]})["status"] == "completed"
    assert len(seen(upstream, "/echo/namespaces/legacy-ns")) == 1
