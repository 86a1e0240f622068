"""`--transports` with the official Python SDK (mcp==2.3.0): with 2026-07-28 turned off, the
SDK's auto mode reads the 404 (a plain-text hint, not a modern JSON-RPC error) as "no modern
endpoint" and falls back to a legacy session, as the spec's backward-compatibility rules
expect; with HTTP+SSE turned off, the SDK's SSE client cannot connect while Streamable HTTP
still serves."""

from __future__ import annotations

import httpx2
import pytest
from mcp import Client
from mcp.client.sse import sse_client

from harness import LEGACY, MODERN, StartRuntime

pytestmark = pytest.mark.anyio


async def test_auto_mode_falls_back_when_modern_is_off(start: StartRuntime) -> None:
    rt = start(extra_args=("--transports", "streamable,sse"))
    async with Client(rt.url, mode="auto", cache=None) as c:
        assert c.protocol_version == LEGACY
        assert [t.name for t in (await c.list_tools()).tools][0] == "greet"


async def test_http_sse_off_refuses_the_sse_client_only(start: StartRuntime) -> None:
    rt = start(extra_args=("--transports", "modern,streamable"))
    r = httpx2.get(rt.sse_url, timeout=5)
    assert r.status_code == 404
    assert "--transports" in r.text
    with pytest.raises(httpx2.HTTPStatusError, match="404"):
        async with Client(sse_client(rt.sse_url, timeout=5), mode="legacy") as c:
            await c.list_tools()
    for mode in ("auto", "legacy"):
        async with Client(rt.url, mode=mode, cache=None) as c:
            assert c.protocol_version == (MODERN if mode == "auto" else LEGACY)
