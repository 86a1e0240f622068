"""`x-mcp-header` (SEP-2243) with the official Python SDK (mcp==2.3.0), which mirrors the marked
arguments of a listed tool into `Mcp-Param-*` headers by itself (no hook needed to send them):
the runtime accepts what it sends (Base64 form for non-ASCII, integers, booleans) and refuses
with -32020 a call whose headers are missing or altered on the way (an httpx2 request hook plays
the altering proxy)."""

from __future__ import annotations

from collections.abc import Callable

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from harness import MANIFESTS, MODERN, StartRuntime

pytestmark = pytest.mark.anyio

MANIFEST = MANIFESTS / "param-headers.yaml"
ARGS = {"region": "Zürich", "limit": 42, "dry": True, "query": "SELECT 1"}


def client(url: str, hook: Callable[[httpx2.Request], None], mode: str = MODERN) -> Client:
    """An SDK client whose every HTTP request passes through `hook` first."""

    async def on_request(request: httpx2.Request) -> None:
        hook(request)

    http = httpx2.AsyncClient(timeout=10, event_hooks={"request": [on_request]})
    return Client(streamable_http_client(url, http_client=http), mode=mode, cache=None)


def param_headers(request: httpx2.Request) -> dict[str, str]:
    return {k.lower(): v for k, v in request.headers.items() if k.lower().startswith("mcp-param-")}


async def test_the_sdk_sends_the_headers_and_the_call_passes(start: StartRuntime) -> None:
    rt = start(MANIFEST)
    sent: list[dict[str, str]] = []

    def record(request: httpx2.Request) -> None:
        if request.headers.get("mcp-method") == "tools/call":
            sent.append(param_headers(request))

    async with client(rt.url, record) as c:
        tools = (await c.list_tools()).tools
        assert tools[0].input_schema["properties"]["region"]["x-mcp-header"] == "Region"
        result = await c.call_tool("execute_sql", ARGS)
    assert result.is_error is False
    assert result.content[0].text == "Zürich (42, True): SELECT 1"
    assert sent == [
        {
            "mcp-param-region": "=?base64?WsO8cmljaA==?=",
            "mcp-param-limit": "42",
            "mcp-param-dry-run": "true",
        }
    ]


async def test_a_call_without_the_headers_is_refused_and_the_sdk_recovers(start: StartRuntime) -> None:
    """The SDK mirrors only tools it has listed: a blind call carries no Mcp-Param headers, the
    runtime refuses it with -32020 (HeaderMismatch), and the SDK lists the tools and resends it
    once, as the spec tells clients to."""
    rt = start(MANIFEST)
    seen: list[tuple[str, dict[str, str]]] = []

    def record(request: httpx2.Request) -> None:
        seen.append((request.headers.get("mcp-method", ""), param_headers(request)))

    async with client(rt.url, record) as c:
        result = await c.call_tool("execute_sql", ARGS)
    assert result.is_error is False
    calls = [(method, headers) for method, headers in seen if method in ("tools/call", "tools/list")]
    assert [method for method, _ in calls] == ["tools/call", "tools/list", "tools/call"]
    assert calls[0][1] == {}, "the refused first call carried no headers"
    assert calls[2][1]["mcp-param-region"] == "=?base64?WsO8cmljaA==?="


@pytest.mark.parametrize(
    ("header", "value"),
    [("Mcp-Param-Region", "us-west1"), ("Mcp-Param-Limit", "41"), ("Mcp-Param-Dry-Run", "maybe")],
)
async def test_a_header_altered_on_the_way_is_refused(start: StartRuntime, header: str, value: str) -> None:
    rt = start(MANIFEST)

    def alter(request: httpx2.Request) -> None:
        if request.headers.get("mcp-method") == "tools/call":
            request.headers[header] = value

    async with client(rt.url, alter) as c:
        await c.list_tools()
        with pytest.raises(MCPError) as raised:
            await c.call_tool("execute_sql", ARGS)
    assert raised.value.error.code == -32020


async def test_a_legacy_session_call_passes(start: StartRuntime) -> None:
    rt = start(MANIFEST)
    async with client(rt.url, lambda _: None, mode="legacy") as c:
        await c.list_tools()
        result = await c.call_tool("execute_sql", ARGS)
    assert result.is_error is False
