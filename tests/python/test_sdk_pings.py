"""Server pings on open legacy-era streams (--ping-interval / --ping-timeout): the official SDK
answers them, so its sessions live on; a client that never answers is cut off and its session
ended. Pings every 100 ms with a 500 ms timeout keep this quick."""

from __future__ import annotations

import json
import time

import anyio
import httpx2
import pytest

from harness import JSON_AND_SSE, LEGACY, NOTIFY_TIMEOUT_S, Inbox, Runtime, StartRuntime, connect, initialize_body

PING_ARGS = ("--ping-interval", "100ms", "--ping-timeout", "500ms")


@pytest.fixture
def pinging(start: StartRuntime) -> Runtime:
    return start(extra_args=PING_ARGS)


@pytest.mark.anyio
@pytest.mark.parametrize(("era", "transport"), [("legacy", "streamable_http"), ("sse", "sse")])
async def test_official_client_answers_pings_and_stays_connected(pinging: Runtime, era: str, transport: str) -> None:
    inbox, opened = Inbox(), anyio.Event()
    try:
        async with connect(pinging, era, message_handler=inbox.handler, stream_open=opened) as c:
            with anyio.fail_after(NOTIFY_TIMEOUT_S):
                await opened.wait()
            await anyio.sleep(1.5)  # three ping timeouts, fifteen pings
            assert (await c.call_tool("greet", {"name": "Ada"})).content[0].text == "Hello, Ada!"
            assert pinging.metric("mcp_sessions_active", transport=transport) == 1
    except* anyio.BrokenResourceError:
        # A teardown race in the SDK's HTTP+SSE client (mcp.client.sse): its reader task can be
        # handed a ping after the session closed its inbox, and raises on the way out. Every
        # check above has passed by then.
        assert transport == "sse"
    assert pinging.metric("mcp_ping_failures_total") == 0
    assert inbox.errors == []


def test_silent_client_is_cut_off(pinging: Runtime) -> None:
    opened = httpx2.post(pinging.url, headers=JSON_AND_SSE, json=initialize_body(), timeout=10)
    session = dict(JSON_AND_SSE, **{"Mcp-Session-Id": opened.headers["mcp-session-id"], "MCP-Protocol-Version": LEGACY})
    assert (
        httpx2.post(
            pinging.url, headers=session, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, timeout=10
        ).status_code
        == 202
    )

    pings: list[dict] = []
    started = time.monotonic()
    # The server must end the stream itself; the read timeout only bounds a broken server.
    with httpx2.stream("GET", pinging.url, headers=dict(session, Accept="text/event-stream"), timeout=5) as stream:
        assert stream.status_code == 200
        for line in stream.iter_lines():
            if line.startswith("data:"):
                message = json.loads(line[len("data:") :])
                if message.get("method") == "ping":
                    pings.append(message)
            assert time.monotonic() - started < 5, "stream still open 5 s after pings went unanswered"
    assert pings and all("id" in p for p in pings)
    assert pinging.metric("mcp_ping_failures_total") == 1
    assert pinging.metric("mcp_sessions_active", transport="streamable_http") == 0
    after = httpx2.post(
        pinging.url, headers=session, json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, timeout=10
    )
    assert after.status_code == 404
