"""Two runtime replicas serve one legacy Streamable HTTP session without sticky routing: the
session id is sealed under a key both share (--session-key-file), so replica B serves what
replica A opened; a replica with another key refuses it. Raw HTTP, as a load balancer would
spread one client's requests."""

from __future__ import annotations

import itertools
from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from harness import JSON_AND_SSE, LEGACY, Runtime, StartRuntime, initialize_body, key_file, rpc_result, session_headers


@pytest.fixture
def replicas(start: StartRuntime, tmp_path: Path) -> tuple[Runtime, Runtime, Runtime]:
    shared = key_file(tmp_path / "shared.key")
    other = key_file(tmp_path / "other.key")
    a = start(extra_args=("--session-key-file", str(shared)), name="a")
    b = start(extra_args=("--session-key-file", str(shared)), name="b")
    c = start(extra_args=("--session-key-file", str(other)), name="c")
    return a, b, c


def call(rt: Runtime, session_id: str, request_id: int, method: str, params: dict | None = None) -> httpx2.Response:
    body: dict = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        body["params"] = params
    return httpx2.post(rt.url, headers=session_headers(session_id), json=body, timeout=10)


def open_session(rt: Runtime) -> str:
    response = httpx2.post(rt.url, headers=JSON_AND_SSE, json=initialize_body(), timeout=10)
    assert response.status_code == 200, response.text
    assert rpc_result(response)["result"]["protocolVersion"] == LEGACY
    session_id = response.headers.get("mcp-session-id")
    assert session_id, response.headers
    return session_id


def test_a_session_opened_on_one_replica_is_served_by_another(replicas: tuple[Runtime, Runtime, Runtime]) -> None:
    a, b, _ = replicas
    session_id = open_session(a)

    initialized = httpx2.post(
        b.url,
        headers=session_headers(session_id),
        json={"jsonrpc": "2.0", "method": "notifications/initialized"},
        timeout=10,
    )
    assert initialized.status_code == 202, initialized.text

    listed = call(b, session_id, 2, "tools/list")
    assert listed.status_code == 200, listed.text
    assert [t["name"] for t in rpc_result(listed)["result"]["tools"]][:2] == ["greet", "get_forecast"]

    called = call(b, session_id, 3, "tools/call", {"name": "greet", "arguments": {"name": "Ada"}})
    assert called.status_code == 200, called.text
    assert rpc_result(called) == {
        "jsonrpc": "2.0",
        "id": 3,
        "result": {"content": [{"type": "text", "text": "Hello, Ada!"}]},
    }

    # And back on A: either replica, any request.
    back = call(a, session_id, 4, "tools/call", {"name": "greet", "arguments": {"name": "Bo"}})
    assert rpc_result(back)["result"]["content"][0]["text"] == "Hello, Bo!"


def test_a_replica_with_another_key_does_not_know_the_session(replicas: tuple[Runtime, Runtime, Runtime]) -> None:
    a, _, c = replicas
    session_id = open_session(a)
    response = call(c, session_id, 2, "tools/list")
    assert response.status_code == 404, response.text
    assert "error" in response.json()
    # A forged id is refused the same way.
    assert call(a, session_id[:-4] + "AAAA", 3, "tools/list").status_code == 404


def test_delete_on_a_replica_ends_the_session_there(replicas: tuple[Runtime, Runtime, Runtime]) -> None:
    a, b, _ = replicas
    session_id = open_session(a)
    assert call(b, session_id, 2, "tools/list").status_code == 200

    deleted = httpx2.delete(b.url, headers=session_headers(session_id), timeout=10)
    assert deleted.status_code in (200, 202, 204), deleted.text

    after = call(b, session_id, 3, "tools/list")
    assert after.status_code == 404, after.text
    error = after.json()["error"]
    assert error["code"] in (-32600, -32001)


class RoundRobin(httpx2.AsyncBaseTransport):
    """Sends each HTTP request to the next replica in turn: no stickiness at all."""

    def __init__(self, replicas: list[Runtime]) -> None:
        self._ports = itertools.cycle([rt.port for rt in replicas])
        self._inner = httpx2.AsyncHTTPTransport()
        self.sent: list[tuple[str, int]] = []

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        port = next(self._ports)
        request.url = request.url.copy_with(port=port)
        self.sent.append((request.method, port))
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


@pytest.mark.anyio
async def test_the_official_client_works_across_replicas(replicas: tuple[Runtime, Runtime, Runtime]) -> None:
    a, b, _ = replicas
    spread = RoundRobin([a, b])
    async with httpx2.AsyncClient(transport=spread, timeout=httpx2.Timeout(10, read=30)) as http:
        server = streamable_http_client(a.url, http_client=http)
        async with Client(server, mode="legacy", read_timeout_seconds=10) as c:
            assert c.protocol_version == LEGACY
            for n in range(3):
                result = await c.call_tool("greet", {"name": f"replica-{n}"})
                assert result.content[0].text == f"Hello, replica-{n}!"
            assert (await c.read_resource("weather://city/Oslo")).contents[0].text.startswith("Weather in Oslo")
    posts = {port for method, port in spread.sent if method == "POST"}
    assert posts == {a.port, b.port}, spread.sent
