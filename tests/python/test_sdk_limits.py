"""Runtime limits as the official Python SDK meets them: cursor pagination of list results
(--page-size) and the legacy session limit (--max-sessions), whose refusal must reach the
client as a clear error rather than a hang, while stateless 2026 clients are unaffected."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from mcp.shared.exceptions import MCPError

from harness import ERAS, Runtime, StartRuntime, connect, start_runtime

pytestmark = pytest.mark.anyio

ALL_TOOLS = ["greet", "get_forecast", "delete_city", "build_report", "audit"]


def leaves(error: BaseException) -> list[BaseException]:
    """The exceptions inside (possibly nested) exception groups."""
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in leaves(inner)]
    return [error]


@pytest.fixture(scope="module")
def paged_runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    rt = start_runtime(tmp_path_factory.mktemp("paged"), extra_args=("--page-size", "2"))
    yield rt
    if problem := rt.stop():
        pytest.fail(f"unclean runtime shutdown: {rt}: {problem}", pytrace=False)


@pytest.mark.parametrize("era", ERAS)
async def test_cursor_pagination(paged_runtime: Runtime, era: str) -> None:
    pages: list[list[str]] = []
    async with connect(paged_runtime, era) as c:
        cursor = None
        for _ in range(10):  # bounded: 5 tools in pages of 2 is 3 pages
            page = await c.list_tools(cursor=cursor)
            pages.append([t.name for t in page.tools])
            cursor = page.next_cursor
            if not cursor:
                break
        resources = await c.list_resources()
    assert pages == [ALL_TOOLS[0:2], ALL_TOOLS[2:4], ALL_TOOLS[4:]]
    assert len(resources.resources) == 2 and resources.next_cursor


async def test_invalid_cursor_is_an_error(paged_runtime: Runtime) -> None:
    async with connect(paged_runtime, "modern") as c:
        with pytest.raises(MCPError) as raised:
            await c.list_tools(cursor="not-a-cursor")
    assert raised.value.error.code == -32602


async def test_session_limit_refusal_is_clear(start: StartRuntime) -> None:
    rt = start(extra_args=("--max-sessions", "1"))
    async with connect(rt, "legacy") as first:
        await first.list_tools()

        with pytest.raises(BaseException) as raised:
            async with connect(rt, "legacy") as second:
                await second.list_tools()
        [refusal] = [e for e in leaves(raised.value) if isinstance(e, MCPError)]
        assert "too many sessions" in refusal.error.message

        with pytest.raises(BaseException) as raised:
            async with connect(rt, "sse") as third:
                await third.list_tools()
        assert any("503" in str(e) for e in leaves(raised.value)), leaves(raised.value)

        # Stateless clients hold no session, so the limit does not apply to them.
        async with connect(rt, "modern") as modern:
            assert (await modern.call_tool("greet", {"name": "Ada"})).content[0].text == "Hello, Ada!"
        assert (await first.call_tool("greet", {"name": "Bo"})).content[0].text == "Hello, Bo!"

    # The first client ended its session (DELETE), so there is room again.
    async with connect(rt, "legacy") as again:
        assert len((await again.list_tools()).tools) == 5
    assert rt.metric("mcp_session_refusals_total") == 2
