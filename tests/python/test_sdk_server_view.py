"""What the runtime records about official-SDK clients (its /metrics): which handshake each way
of connecting really used, open sessions per transport, and tool-call outcomes."""

from __future__ import annotations

import anyio
import pytest

from harness import Runtime, connect

pytestmark = pytest.mark.anyio


async def wait_gauge(rt: Runtime, value: float, timeout: float = 5.0, **labels: str) -> None:
    with anyio.move_on_after(timeout):
        while rt.metric("mcp_sessions_active", **labels) != value:
            await anyio.sleep(0.05)
        return
    pytest.fail(f"mcp_sessions_active{labels} = {rt.metric('mcp_sessions_active', **labels)}, expected {value}")


@pytest.mark.parametrize(
    ("era", "discovers", "initializes"),
    [("modern", 0, 0), ("auto", 1, 0), ("legacy", 0, 1), ("sse", 0, 1)],
)
async def test_each_way_of_connecting_uses_its_handshake(
    runtime: Runtime, era: str, discovers: int, initializes: int
) -> None:
    async with connect(runtime, era) as c:
        await c.list_tools()
    assert runtime.metric("mcp_requests_total", method="server/discover") == discovers
    assert runtime.metric("mcp_requests_total", method="initialize", outcome="ok") == initializes
    assert runtime.metric("mcp_requests_total", method="tools/list", outcome="ok") == 1


@pytest.mark.parametrize(("era", "transport"), [("legacy", "streamable_http"), ("sse", "sse")])
async def test_session_gauge_follows_client_lifetime(runtime: Runtime, era: str, transport: str) -> None:
    assert runtime.metric("mcp_sessions_active", transport=transport) == 0
    async with connect(runtime, era) as c:
        await c.list_tools()
        await wait_gauge(runtime, 1, transport=transport)
    # The SDK ends a Streamable HTTP session with DELETE and an HTTP+SSE one by closing the stream.
    await wait_gauge(runtime, 0, transport=transport)


async def test_stateless_clients_open_no_session(runtime: Runtime) -> None:
    async with connect(runtime, "modern") as c:
        await c.call_tool("greet", {"name": "Ada"})
        assert runtime.metric("mcp_sessions_active") == 0


async def test_tool_call_outcomes_are_counted(runtime: Runtime) -> None:
    async with connect(runtime, "modern") as c:
        await c.call_tool("greet", {"name": "Ada"})
        await c.call_tool("greet", {"name": 7})  # bad arguments: a tool error
        await c.call_tool("delete_city", {"city": "Lyon"})  # declared isError
    assert runtime.metric("mcp_tool_calls_total", tool="greet", outcome="ok") == 1
    assert runtime.metric("mcp_tool_calls_total", tool="greet", outcome="error") == 1
    assert runtime.metric("mcp_tool_calls_total", tool="delete_city", outcome="error") == 1
    assert runtime.metric("mcp_tool_call_duration_seconds_count", tool="greet") == 2


async def test_listen_requests_are_counted(runtime: Runtime) -> None:
    async with connect(runtime, "modern") as c:
        async with c.listen(tools_list_changed=True) as sub:
            assert sub.honored.tools_list_changed
    # Counted when the stream ends at the latest; allow the server a moment to see it end.
    with anyio.move_on_after(3):
        while runtime.metric("mcp_requests_total", method="subscriptions/listen") < 1:
            await anyio.sleep(0.05)
    assert runtime.metric("mcp_requests_total", method="subscriptions/listen", outcome="ok") == 1


@pytest.mark.parametrize(("era", "handshake"), [("auto", "discover"), ("legacy", "initialize"), ("sse", "initialize")])
async def test_the_served_declaration_is_reported_where_the_sdk_keeps_the_handshake(
    runtime: Runtime, era: str, handshake: str
) -> None:
    """The operator's `Verified` check reads `_meta["kube-mcp.io/declaration"]`; a client sees it on
    the handshake result it keeps, and the hash is the one `/metrics` exports."""
    async with connect(runtime, era) as c:
        session = c.session
        result = session.discover_result if handshake == "discover" else session.initialize_result
        assert result is not None
        report = (result.meta or {}).get("kube-mcp.io/declaration")
        assert report is not None, result
        counts = {
            "tools": len((await c.list_tools()).tools),
            "resources": len((await c.list_resources()).resources),
            "resourceTemplates": len((await c.list_resource_templates()).resource_templates),
            "prompts": len((await c.list_prompts()).prompts),
        }
        if handshake == "discover":
            # Merged into `_meta`, not replacing the server identity next to it.
            assert session.server_info is not None and session.server_info.name
    assert {k: v for k, v in report.items() if k != "hash"} == counts
    assert len(report["hash"]) == 16 and int(report["hash"], 16) >= 0
    assert runtime.metric("mcp_runtime_declaration_info", hash=report["hash"]) == 1
    assert runtime.metrics().count("mcp_runtime_declaration_info{") == 1
