"""MCP Apps (`io.modelcontextprotocol/ui`, SEP-1865) with the official Python SDK (mcp==2.3.0):
a client that advertises the extension with the view's MIME type (`mcp.client.advertise`) sees
`_meta.ui` on tools, the tool only the view calls, and the view's sandbox rules when it reads
the `ui://` resource, in both eras; a client that advertises nothing gets the plain tools and
the same text answer. No browser here: tests/e2e/apps.sh renders the view with the ext-apps host
bridge in Chromium and checks the browser enforces its CSP."""

from __future__ import annotations

import pytest
from mcp import Client
from mcp.client.extension import advertise

from harness import MANIFESTS, MODERN, StartRuntime

pytestmark = pytest.mark.anyio

MANIFEST = MANIFESTS / "apps.yaml"
MIME = "text/html;profile=mcp-app"
UI = "io.modelcontextprotocol/ui"


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_host_with_mcp_apps_sees_the_view(start: StartRuntime, mode: str) -> None:
    rt = start(MANIFEST)
    async with Client(rt.url, mode=mode, cache=None, extensions=[advertise(UI, {"mimeTypes": [MIME]})]) as c:
        assert UI in (c.server_capabilities.extensions or {})
        tools = {t.name: t for t in (await c.list_tools()).tools}
        assert set(tools) == {"get_pod", "refresh_pods"}
        assert tools["get_pod"].meta["ui"] == {"resourceUri": "ui://pods/view", "visibility": ["model", "app"]}
        assert tools["refresh_pods"].meta["ui"]["visibility"] == ["app"]
        view = (await c.read_resource("ui://pods/view")).contents[0]
        assert view.mime_type == MIME
        assert view.text.startswith("<!doctype html>")
        assert view.meta["ui"] == {"csp": {"connectDomains": ["https://api.example.com"]}, "prefersBorder": True}
        result = await c.call_tool("get_pod", {"name": "web-1"})
    assert [b.text for b in result.content] == ["pod web-1 is Running"]


@pytest.mark.parametrize("mode", [MODERN, "legacy"])
async def test_a_client_without_it_gets_plain_tools(start: StartRuntime, mode: str) -> None:
    rt = start(MANIFEST)
    async with Client(rt.url, mode=mode, cache=None) as c:
        tools = (await c.list_tools()).tools
        assert [t.name for t in tools] == ["get_pod"]
        assert not (tools[0].meta or {}).get("ui")
        result = await c.call_tool("get_pod", {"name": "web-1"})
    assert [b.text for b in result.content] == ["pod web-1 is Running"]
