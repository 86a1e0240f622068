"""Live reload seen by the official Python SDK: editing the served manifest (as a ConfigMap
update would) sends list_changed in every era that has it, resources/updated to subscribers
of a changed resource, and an invalid edit keeps the old declaration serving. Each test has a
runtime of its own, polling its manifest every 200 ms."""

from __future__ import annotations

import json

import anyio
import httpx2
import pytest
from mcp.client.subscriptions import PromptsListChanged, ResourceUpdated, ToolsListChanged

from harness import NOTIFY_TIMEOUT_S, Inbox, Runtime, connect, modern_request, reloads

pytestmark = pytest.mark.anyio

NEW_TOOL = """\
    - name: get_wind
      description: Wind speed for a city.
      inputSchema: {type: object, properties: {city: {type: string}}, required: [city]}
      content:
        - {type: text, text: "Wind in {{ args.city }}: 12 km/h"}
"""
NEW_PROMPT = """\
    - name: pack_list
      description: What to pack.
      messages:
        - role: user
          content: {type: text, text: What should I pack?}
"""
ALERTS_BEFORE = 'text: "No alerts."'
ALERTS_AFTER = 'text: "Storm warning for the coast."'


def add_tool(rt: Runtime) -> None:
    rt.edit_manifest("  resources:\n", NEW_TOOL + "  resources:\n")


def add_prompt(rt: Runtime) -> None:
    text = rt.manifest.read_text()
    rt.write_manifest(text + NEW_PROMPT)  # prompts is the last list of the manifest


async def next_event(sub: object) -> object:
    with anyio.fail_after(NOTIFY_TIMEOUT_S):
        return await sub.__anext__()  # type: ignore[attr-defined]


@pytest.mark.parametrize("era", ["legacy", "sse"])
async def test_legacy_eras_get_tools_list_changed(runtime: Runtime, era: str) -> None:
    inbox, opened = Inbox(), anyio.Event()
    async with connect(runtime, era, message_handler=inbox.handler, stream_open=opened) as c:
        assert "get_wind" not in [t.name for t in (await c.list_tools()).tools]
        with anyio.fail_after(NOTIFY_TIMEOUT_S):
            await opened.wait()
        add_tool(runtime)
        await inbox.wait_for("notifications/tools/list_changed")
        tools = [t.name for t in (await c.list_tools()).tools]
        assert tools[-1] == "get_wind"
        result = await c.call_tool("get_wind", {"city": "Bergen"})
        assert [b.text for b in result.content] == ["Wind in Bergen: 12 km/h"]
    # Only what changed is announced.
    assert inbox.of("notifications/prompts/list_changed") == []
    assert inbox.of("notifications/resources/list_changed") == []


@pytest.mark.parametrize("era", ["modern", "auto"])
async def test_2026_listen_gets_each_kind_it_asked_for(runtime: Runtime, era: str) -> None:
    async with connect(runtime, era) as c:
        assert c.protocol_version == "2026-07-28"
        async with c.listen(tools_list_changed=True, prompts_list_changed=True) as sub:
            assert sub.honored.tools_list_changed and sub.honored.prompts_list_changed
            assert not sub.honored.resources_list_changed
            add_tool(runtime)
            assert isinstance(await next_event(sub), ToolsListChanged)
            add_prompt(runtime)
            assert isinstance(await next_event(sub), PromptsListChanged)
        assert "get_wind" in [t.name for t in (await c.list_tools()).tools]
        assert "pack_list" in [p.name for p in (await c.list_prompts()).prompts]
        assert (await c.call_tool("get_wind", {"city": "Oslo"})).content[0].text == "Wind in Oslo: 12 km/h"


async def test_2026_listen_stream_carries_only_the_kinds_asked_for(runtime: Runtime) -> None:
    """On the wire (the SDK would hide extra events): an acknowledgment echoing the filter, then
    only the requested kinds, each tagged with the listen request's id."""
    headers, body = modern_request(
        "listen-raw-1", "subscriptions/listen", {"notifications": {"promptsListChanged": True}}
    )
    frames: list[dict] = []
    async with httpx2.AsyncClient(timeout=httpx2.Timeout(NOTIFY_TIMEOUT_S)) as http:
        async with http.stream("POST", runtime.url, headers=headers, json=body) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            assert response.headers.get("x-accel-buffering") == "no"
            with anyio.fail_after(NOTIFY_TIMEOUT_S * 2):
                async for line in response.aiter_lines():
                    if not line.startswith("data:"):
                        continue
                    frames.append(json.loads(line[len("data:") :]))
                    method = frames[-1].get("method")
                    if method == "notifications/subscriptions/acknowledged":
                        add_tool(runtime)  # not asked for
                        await reloads(runtime, "success", 1)
                        add_prompt(runtime)
                    elif method == "notifications/prompts/list_changed":
                        break
    methods = [f.get("method") for f in frames]
    assert methods == ["notifications/subscriptions/acknowledged", "notifications/prompts/list_changed"], frames
    assert frames[0]["params"]["notifications"] == {"promptsListChanged": True}
    for frame in frames:
        assert frame["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "listen-raw-1"


async def test_2026_listen_resource_updated(runtime: Runtime) -> None:
    uri = "docs://weather/alerts"
    async with connect(runtime, "modern") as c:
        async with c.listen(resource_subscriptions=[uri]) as sub:
            assert sub.honored.resource_subscriptions == [uri]
            # A change to a resource nobody subscribed to is not announced...
            runtime.edit_manifest("Ask for a forecast by city.", "Ask for a forecast by city or zip.")
            await reloads(runtime, "success", 1)
            # ...a change to the subscribed one is.
            runtime.edit_manifest(ALERTS_BEFORE, ALERTS_AFTER)
            assert await next_event(sub) == ResourceUpdated(uri=uri)
        contents = (await c.read_resource(uri)).contents
        assert contents[0].text == "Storm warning for the coast."


@pytest.mark.parametrize("era", ["legacy", "sse"])
async def test_legacy_eras_get_resource_updated_for_subscribed_uri(runtime: Runtime, era: str) -> None:
    uri = "docs://weather/alerts"
    inbox, opened = Inbox(), anyio.Event()
    async with connect(runtime, era, message_handler=inbox.handler, stream_open=opened) as c:
        await c.subscribe_resource(uri)
        with anyio.fail_after(NOTIFY_TIMEOUT_S):
            await opened.wait()
        runtime.edit_manifest("Ask for a forecast by city.", "Ask for a forecast by city or zip.")
        await reloads(runtime, "success", 1)
        runtime.edit_manifest(ALERTS_BEFORE, ALERTS_AFTER)
        [updated] = await inbox.wait_for("notifications/resources/updated")
        assert updated.params.uri == uri
        assert (await c.read_resource(uri)).contents[0].text == "Storm warning for the coast."
        # After unsubscribing, further changes are not announced.
        await c.unsubscribe_resource(uri)
        runtime.edit_manifest(ALERTS_AFTER, 'text: "All clear."')
        await reloads(runtime, "success", 3)
        await anyio.sleep(0.3)
    assert [m.params.uri for m in inbox.of("notifications/resources/updated")] == [uri]


async def test_file_backed_resource_change_is_announced(runtime: Runtime) -> None:
    """A resource read from a file (a mounted ConfigMap key) changes when the file does."""
    uri = "docs://weather/stations"
    stations = runtime.manifest.with_name("stations.csv")
    async with connect(runtime, "modern") as c:
        async with c.listen(resource_subscriptions=[uri]) as sub:
            stations.write_text(stations.read_text() + "44,Oslo-Blindern\n")
            assert await next_event(sub) == ResourceUpdated(uri=uri)
        assert (await c.read_resource(uri)).contents[0].text.endswith("44,Oslo-Blindern\n")


# edit -> (old text, new text, what the runtime's log must say about it)
BROKEN_EDITS = {
    "yaml syntax": ("  tools:\n", "  tools: [\n", "line 13"),
    "template syntax": ("Hello, {{ args.name }}", "Hello, {{ args.name ", "spec.tools[0].content[0].text"),
    "duplicate tool": ("- name: delete_city", "- name: greet", "spec.tools[2].name"),
    "schema": (
        "type: object\n        properties:\n          name:",
        "type: 12\n        properties:\n          name:",
        "spec.tools[0].inputSchema",
    ),
}


@pytest.mark.parametrize("edit", list(BROKEN_EDITS), ids=list(BROKEN_EDITS))
async def test_invalid_edit_keeps_the_old_declaration(runtime: Runtime, edit: str) -> None:
    inbox, opened = Inbox(), anyio.Event()
    async with connect(runtime, "legacy", message_handler=inbox.handler, stream_open=opened) as c:
        with anyio.fail_after(NOTIFY_TIMEOUT_S):
            await opened.wait()
        tools_before = (await c.list_tools()).tools
        assert runtime.metric("mcp_reloads_total", outcome="error") == 0
        good = runtime.manifest.read_text()

        old, new, logged = BROKEN_EDITS[edit]
        runtime.edit_manifest(old, new)
        await reloads(runtime, "error", 1)
        assert logged in runtime.log_tail(), runtime.log_tail()
        # Still serving the old version, to this session and to new clients, and still ready.
        assert (await c.list_tools()).tools == tools_before
        assert (await c.call_tool("greet", {"name": "Ada"})).content[0].text == "Hello, Ada!"
        async with connect(runtime, "modern") as fresh:
            assert (await fresh.call_tool("greet", {"name": "Bo"})).content[0].text == "Hello, Bo!"
        assert httpx2.get(f"{runtime.admin}/readyz", timeout=5).status_code == 200
        assert runtime.metric("mcp_reloads_total", outcome="success") == 0
        await anyio.sleep(0.3)
        assert inbox.of("notifications/tools/list_changed") == []

        # The watcher keeps going: a good edit after the bad one is served and announced.
        runtime.write_manifest(good.replace("  resources:\n", NEW_TOOL + "  resources:\n", 1))
        await inbox.wait_for("notifications/tools/list_changed")
        assert (await c.list_tools()).tools[-1].name == "get_wind"
    assert runtime.metric("mcp_reloads_total", outcome="error") == 1
    assert runtime.metric("mcp_reloads_total", outcome="success") == 1
