"""Two runtime processes sharing --session-key-file, each advertising its own 127.0.0.1 address
(--advertise-address): a legacy session lives on the process that opened it, and what a client
sends for it through the other process is forwarded there. Raw HTTP, so each test picks the
process every request goes to (as a load balancer would spread them); then the official SDK
with its requests spread over both. Each test fails without routing: the other process
would adopt the session and keep its own copy of its state."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx2
import pytest
from mcp import types

from harness import JSON_AND_SSE, MANIFESTS, WEATHER, Runtime, StartRuntime, initialize_body, key_file, rpc_result, session_headers

INTERACTIVE = MANIFESTS / "interactive.yaml"
ALERTS = "docs://weather/alerts"


def pair(start: StartRuntime, tmp_path: Path, manifest: Path = WEATHER, *extra: str) -> tuple[Runtime, Runtime]:
    key = tmp_path / "shared.key"
    if not key.exists():
        key_file(key)
    flags = ("--session-key-file", str(key), "--advertise-address", "127.0.0.1", *extra)
    return start(manifest, extra_args=flags, name="a"), start(manifest, extra_args=flags, name="b")


def open_session(rt: Runtime, capabilities: dict | None = None) -> str:
    response = httpx2.post(rt.url, headers=JSON_AND_SSE, json=initialize_body(1, capabilities), timeout=10)
    assert response.status_code == 200, response.text
    session_id = response.headers["mcp-session-id"]
    notified = post(rt, session_id, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert notified.status_code == 202, notified.text
    return session_id


def post(rt: Runtime, session_id: str, message: dict, **extra: str) -> httpx2.Response:
    return httpx2.post(rt.url, headers=dict(session_headers(session_id), **extra), json=message, timeout=10)


def request(rt: Runtime, session_id: str, request_id: int, method: str, params: dict | None = None) -> dict:
    body: dict = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params or {}}
    response = post(rt, session_id, body)
    assert response.status_code == 200, response.text
    return rpc_result(response)


def messages(lines: Iterator[str]) -> Iterator[dict]:
    """The JSON-RPC messages of an SSE stream, as they arrive."""
    for line in lines:
        if line.startswith("data:") and line[len("data:") :].strip():
            data = line[len("data:") :].strip()
            if data.startswith("{"):
                yield json.loads(data)


def next_message(stream: Iterator[dict], method: str | None = None) -> dict:
    """The next message (of `method`, skipping pings and others, when given)."""
    for message in stream:
        if method is None or message.get("method") == method:
            return message
    pytest.fail(f"the stream ended before {method or 'a message'}")


def forwards(rt: Runtime, outcome: str) -> float:
    return rt.metric("mcp_session_forwards_total", outcome=outcome)


def test_an_answer_posted_to_the_other_process_completes_the_call(start: StartRuntime, tmp_path: Path) -> None:
    a, b = pair(start, tmp_path, INTERACTIVE)
    session_id = open_session(a, {"elicitation": {}})
    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "delete_issue", "arguments": {"id": 5}}}
    with httpx2.stream("POST", a.url, headers=session_headers(session_id), json=call, timeout=10) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        stream = messages(response.iter_lines())
        asked = next_message(stream, "elicitation/create")
        assert "project" in json.dumps(asked["params"]["requestedSchema"])
        answer = {"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept", "content": {"project": "alpha"}}}
        assert post(b, session_id, answer).status_code == 202
        confirm = next_message(stream, "elicitation/create")
        assert confirm["params"]["message"] == "Delete issue #5 of alpha for good?"
        answer = {"jsonrpc": "2.0", "id": confirm["id"], "result": {"action": "accept", "content": {"confirm": True}}}
        assert post(b, session_id, answer).status_code == 202
        done = next(m for m in stream if m.get("id") == 7)
    assert done["result"]["content"][0]["text"] == "deleted issue 5 in alpha", done
    assert forwards(b, "forwarded") == 2
    assert forwards(a, "forwarded") == 0


def test_a_cancellation_through_one_process_stops_the_call_on_the_other(start: StartRuntime, tmp_path: Path) -> None:
    a, b = pair(start, tmp_path, INTERACTIVE)
    session_id = open_session(a, {"elicitation": {}})
    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "delete_issue", "arguments": {"id": 5}}}
    with httpx2.stream("POST", a.url, headers=session_headers(session_id), json=call, timeout=10) as response:
        stream = messages(response.iter_lines())
        next_message(stream, "elicitation/create")
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7, "reason": "changed my mind"}}
        assert post(b, session_id, cancel).status_code == 202
        # The call waiting on A stops now (its answer would have waited minutes).
        answer = next(m for m in stream if m.get("id") == 7)
    assert "cancelled" in answer["error"]["message"], answer


def test_pings_answered_through_one_process_keep_the_stream_on_the_other(start: StartRuntime, tmp_path: Path) -> None:
    a, b = pair(start, tmp_path, WEATHER, "--ping-interval", "300ms", "--ping-timeout", "1s")
    session_id = open_session(a)
    get_headers = dict(session_headers(session_id), Accept="text/event-stream")
    with httpx2.stream("GET", a.url, headers=get_headers, timeout=httpx2.Timeout(10, read=5)) as stream_response:
        stream = messages(stream_response.iter_lines())
        for _ in range(4):
            ping = next_message(stream, "ping")
            assert post(b, session_id, {"jsonrpc": "2.0", "id": ping["id"], "result": {}}).status_code == 202
    # Past every ping's deadline: each was answered in time, through B, and A kept the session.
    time.sleep(1.5)
    assert a.metric("mcp_ping_failures_total") == 0
    assert request(a, session_id, 2, "tools/list")["result"]["tools"]


def test_set_level_through_one_process_applies_to_calls_on_the_other(start: StartRuntime, tmp_path: Path) -> None:
    a, b = pair(start, tmp_path)
    session_id = open_session(a)
    assert request(b, session_id, 2, "logging/setLevel", {"level": "warning"})["result"] == {}
    call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "audit", "arguments": {}}}
    response = post(a, session_id, call)
    assert response.headers["content-type"].startswith("text/event-stream"), response.text
    logged = [m["params"]["level"] for m in messages(iter(response.text.splitlines())) if m.get("method") == "notifications/message"]
    assert logged == ["warning", "error"]


def test_a_subscription_through_one_process_reaches_its_stream_on_the_other(start: StartRuntime, tmp_path: Path) -> None:
    a, b = pair(start, tmp_path)
    session_id = open_session(a)
    get_headers = dict(session_headers(session_id), Accept="text/event-stream")
    with httpx2.stream("GET", b.url, headers=get_headers, timeout=httpx2.Timeout(10, read=15)) as stream_response:
        assert stream_response.status_code == 200
        assert request(b, session_id, 2, "resources/subscribe", {"uri": ALERTS})["result"] == {}
        # Only A's manifest changes: the stream held through B must be A's.
        a.edit_manifest('text: "No alerts."', 'text: "Storm warning for the coast."')
        updated = next_message(messages(stream_response.iter_lines()), "notifications/resources/updated")
    assert updated["params"]["uri"] == ALERTS
    assert forwards(b, "forwarded") == 2


def test_delete_through_one_process_ends_the_session_on_the_other(start: StartRuntime, tmp_path: Path) -> None:
    a, b = pair(start, tmp_path)
    session_id = open_session(a)
    # A client's own forwarding marker is no hop token: the request is still forwarded.
    deleted = httpx2.delete(b.url, headers=dict(session_headers(session_id), **{"kube-mcp-forwarded": "x"}), timeout=10)
    assert deleted.status_code == 204, deleted.text
    assert "kube-mcp-served" not in deleted.headers
    for rt in (a, b):
        after = post(rt, session_id, {"jsonrpc": "2.0", "id": 9, "method": "tools/list"})
        assert after.status_code == 404, (rt, after.text)


def test_an_http_sse_answer_posted_to_the_other_process_completes_the_call(start: StartRuntime, tmp_path: Path) -> None:
    a, b = pair(start, tmp_path, INTERACTIVE)
    timeout = httpx2.Timeout(10, read=15)
    with httpx2.stream("GET", a.sse_url, headers={"Accept": "text/event-stream"}, timeout=timeout) as response:
        lines = response.iter_lines()
        endpoint = next(line[len("data:") :].strip() for line in lines if line.startswith("data:"))
        assert endpoint.startswith("/messages?sessionId=")
        stream = messages(lines)

        def send(rt: Runtime, message: dict) -> None:
            sent = httpx2.post(f"{rt.base}{endpoint}", json=message, timeout=10)
            assert sent.status_code == 202, sent.text

        init = {
            "protocolVersion": "2024-11-05",
            "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "kube-mcp-pytest", "version": "0"},
        }
        send(a, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init})
        assert next_message(stream)["id"] == 1
        send(b, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        call = {"name": "delete_issue", "arguments": {"id": 6, "project": "beta"}}
        send(b, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call})
        confirm = next_message(stream, "elicitation/create")
        assert confirm["params"]["message"] == "Delete issue #6 of beta for good?"
        send(b, {"jsonrpc": "2.0", "id": confirm["id"], "result": {"action": "accept", "content": {"confirm": True}}})
        done = next(m for m in stream if m.get("id") == 2)
    assert done["result"]["content"][0]["text"] == "deleted issue 6 in beta", done
    assert forwards(b, "forwarded") == 3


def test_when_the_owner_is_gone_another_process_adopts_the_session(start: StartRuntime, tmp_path: Path) -> None:
    a, b = pair(start, tmp_path)
    session_id = open_session(a)
    assert request(b, session_id, 2, "tools/list")["result"]["tools"]
    assert forwards(b, "forwarded") == 1
    assert a.stop() is None
    called = request(b, session_id, 3, "tools/call", {"name": "greet", "arguments": {"name": "Ada"}})
    assert called["result"]["content"][0]["text"] == "Hello, Ada!"
    assert forwards(b, "unreachable") == 1
    # Adopted: served here from now on, without trying the owner again.
    assert request(b, session_id, 4, "tools/list")["result"]["tools"]
    assert forwards(b, "unreachable") == 1
    assert forwards(b, "forwarded") == 1


class Foreign(BaseHTTPRequestHandler):
    """Something else listening where the owner was (its address was reused): answers 404."""

    seen: list[dict[str, str]] = []

    def do_POST(self) -> None:  # noqa: N802 (the standard library's name)
        self.rfile.read(int(self.headers.get("content-length", 0)))
        Foreign.seen.append({k.lower(): v for k, v in self.headers.items()})
        self.send_response(404)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def test_an_address_that_is_no_longer_a_replica_is_not_trusted(start: StartRuntime, tmp_path: Path) -> None:
    a, b = pair(start, tmp_path)
    session_id = open_session(a)
    assert a.stop() is None
    Foreign.seen = []
    foreign = ThreadingHTTPServer(("127.0.0.1", a.port), Foreign)
    threading.Thread(target=foreign.serve_forever, daemon=True).start()
    try:
        first = request(b, session_id, 2, "tools/call", {"name": "greet", "arguments": {"name": "Ada"}})
        assert first["result"]["content"][0]["text"] == "Hello, Ada!"
        assert request(b, session_id, 3, "tools/list")["result"]["tools"]
    finally:
        foreign.shutdown()
        foreign.server_close()
    # Asked once (with a hop token, the client's headers, and the body), then left alone.
    assert len(Foreign.seen) == 1
    assert Foreign.seen[0]["kube-mcp-forwarded"] and Foreign.seen[0]["mcp-session-id"] == session_id
    assert forwards(b, "not_owner") == 1
    assert forwards(b, "forwarded") == 0


@pytest.mark.anyio
async def test_the_official_client_answers_through_either_process(start: StartRuntime, tmp_path: Path) -> None:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    from test_replicas import RoundRobin

    a, b = pair(start, tmp_path, INTERACTIVE)
    answers = [
        types.ElicitResult(action="accept", content={"project": "beta"}),
        types.ElicitResult(action="accept", content={"confirm": True}),
    ]

    async def elicit(context: object, params: object) -> types.ElicitResult:
        return answers.pop(0)

    spread = RoundRobin([a, b])
    async with httpx2.AsyncClient(transport=spread, timeout=httpx2.Timeout(10, read=30)) as http:
        server = streamable_http_client(a.url, http_client=http)
        async with Client(server, mode="legacy", read_timeout_seconds=10, elicitation_callback=elicit) as c:
            result = await c.call_tool("delete_issue", {"id": 8})
            assert result.content[0].text == "deleted issue 8 in beta"
    assert not answers
    assert {port for method, port in spread.sent if method == "POST"} == {a.port, b.port}
    assert forwards(a, "forwarded") + forwards(b, "forwarded") >= 2
