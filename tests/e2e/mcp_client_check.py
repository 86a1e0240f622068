"""Talks to an mcp-runtime serving the manifest the operator rendered, with the official MCP
Python SDK, in both connection modes: the legacy initialize handshake and automatic discovery
(2026-07-28 stateless when the server offers it). Exits non-zero when an answer is wrong.

Usage: python mcp_client_check.py URL GREETING_PREFIX
"""

import asyncio
import sys

from mcp import Client


async def check(url: str, mode: str, greeting: str) -> None:
    async with Client(url, mode=mode) as client:
        tools = await client.list_tools()
        names = {tool.name for tool in tools.tools}
        assert {"greet", "get_forecast"} <= names, names

        result = await client.call_tool("greet", {"name": "Ada"})
        assert not result.is_error, result
        text = result.content[0].text
        assert text == f"{greeting}, Ada!", text

        forecast = await client.call_tool("get_forecast", {"city": "Paris"})
        assert not forecast.is_error, forecast
        assert forecast.structured_content["city"] == "Paris", forecast

        resource = await client.read_resource("docs://weather/readme")
        assert resource.contents[0].text.startswith("# Weather"), resource

        prompt = await client.get_prompt("plan_trip", {"city": "Tokyo"})
        assert "Tokyo" in prompt.messages[0].content.text, prompt
    print(f"ok - mcp client ({mode}): tools/list, tools/call, resources/read, prompts/get")


async def main() -> None:
    url, greeting = sys.argv[1], sys.argv[2]
    for mode in ("legacy", "auto"):
        await check(url, mode, greeting)


if __name__ == "__main__":
    asyncio.run(main())
