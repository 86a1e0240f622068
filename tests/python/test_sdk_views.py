"""Views per audience (`spec.views`) through the official Python SDK against the real binary: a
client pointed at a view's URL sees only the view's tools, resources and prompts, in every era
(2026-07-28, legacy Streamable HTTP, HTTP+SSE), and a tool outside the view is refused exactly as
an undeclared one; the server's own URL still serves everything. Does process I/O (starts the
runtime)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from mcp.shared.exceptions import MCPError

from harness import Runtime, connect, start_runtime

pytestmark = pytest.mark.anyio

ERAS = ["modern", "legacy", "sse"]


def manifest() -> str:
    def tool(name: str) -> dict:
        return {"name": name, "content": [{"type": "text", "text": f"{name} done"}]}

    spec = {
        "tools": [tool("get_pod"), tool("list_pods"), tool("delete_pod"), tool("restart_deployment")],
        "resources": [
            {"uri": "docs://runbook", "name": "runbook", "text": "restart first"},
            {"uri": "docs://secrets", "name": "secrets", "text": "hunter2"},
        ],
        "prompts": [
            {"name": "triage", "messages": [{"role": "user", "content": {"type": "text", "text": "triage"}}]},
            {"name": "drain", "messages": [{"role": "user", "content": {"type": "text", "text": "drain"}}]},
        ],
        "views": [
            {
                "name": "readers",
                "path": "/readers",
                "tools": ["get_*", "list_*"],
                "resources": ["runbook"],
                "prompts": ["triage"],
            },
            {"name": "operators", "path": "/teams/operators", "tools": ["*"]},
        ],
    }
    doc = {"apiVersion": "kube-mcp.io/v1alpha1", "kind": "MCPServer", "metadata": {"name": "views"}, "spec": spec}
    return json.dumps(doc)  # JSON is YAML


@dataclass
class At:
    """The runtime as seen at a view's path: what `connect` reads of a `Runtime`."""

    rt: Runtime
    path: str

    @property
    def url(self) -> str:
        return f"{self.rt.base}{self.path}/mcp"

    @property
    def sse_url(self) -> str:
        return f"{self.rt.base}{self.path}/sse"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    source = tmp_path_factory.mktemp("views-src") / "views.yaml"
    source.write_text(manifest())
    rt = start_runtime(tmp_path_factory.mktemp("views"), source)
    yield rt
    if problem := rt.stop():
        pytest.fail(f"unclean runtime shutdown: {rt}: {problem}", pytrace=False)


@pytest.mark.parametrize("era", ERAS)
async def test_a_view_shows_only_its_items(served: Runtime, era: str) -> None:
    async with connect(At(served, "/readers"), era) as c:  # type: ignore[arg-type]
        assert [t.name for t in (await c.list_tools()).tools] == ["get_pod", "list_pods"]
        assert [r.name for r in (await c.list_resources()).resources] == ["runbook"]
        assert [p.name for p in (await c.list_prompts()).prompts] == ["triage"]
        called = await c.call_tool("list_pods", {})
        assert not called.is_error
        assert called.content[0].text == "list_pods done"
    async with connect(At(served, "/teams/operators"), era) as c:  # type: ignore[arg-type]
        names = [t.name for t in (await c.list_tools()).tools]
        assert names == ["get_pod", "list_pods", "delete_pod", "restart_deployment"]
        assert (await c.list_prompts()).prompts == []
    async with connect(served, era) as c:
        assert len((await c.list_tools()).tools) == 4
        assert len((await c.list_resources()).resources) == 2


@pytest.mark.parametrize("era", ERAS)
async def test_outside_the_view_is_refused_like_undeclared(served: Runtime, era: str) -> None:
    async with connect(At(served, "/readers"), era) as c:  # type: ignore[arg-type]
        with pytest.raises(MCPError) as hidden:
            await c.call_tool("delete_pod", {})
        with pytest.raises(MCPError) as missing:
            await c.call_tool("no_such_tool", {})
        assert hidden.value.error.code == missing.value.error.code == -32602
        assert hidden.value.error.message.replace("delete_pod", "X") == missing.value.error.message.replace(
            "no_such_tool", "X"
        )
        with pytest.raises(MCPError) as unread:
            await c.read_resource("docs://secrets")
        with pytest.raises(MCPError) as unknown:
            await c.read_resource("docs://nothing")
        assert unread.value.error.code == unknown.value.error.code
        with pytest.raises(MCPError):
            await c.get_prompt("drain")
    # Served by the server itself, the same tool works.
    async with connect(served, era) as c:
        called = await c.call_tool("delete_pod", {})
        assert not called.is_error
