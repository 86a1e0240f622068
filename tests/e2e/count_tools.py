"""Lists every tool an MCP server serves, page by page, with the official MCP Python SDK, and
checks the count and that no name repeats. Exits non-zero otherwise.

Usage: python count_tools.py URL EXPECTED_COUNT
"""

import asyncio
import sys

from mcp import Client

MAX_PAGES = 1000  # a server that never stops paging fails instead of hanging


async def main() -> None:
    url, expected = sys.argv[1], int(sys.argv[2])
    names: list[str] = []
    async with Client(url) as client:
        cursor = None
        for _ in range(MAX_PAGES):
            page = await client.list_tools(cursor=cursor)
            names.extend(tool.name for tool in page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        else:
            raise SystemExit(f"still paging after {MAX_PAGES} pages")
    assert len(set(names)) == len(names), "a tool name repeats"
    assert len(names) == expected, f"{len(names)} tools listed, {expected} expected"
    print(f"ok - {len(names)} tools listed")


if __name__ == "__main__":
    asyncio.run(main())
