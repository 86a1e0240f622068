"""The benchmark's peer on the official Python SDK (mcp==2.3.0): one text tool `echo` that returns
its `message` argument and one static resource, on one uvicorn process:

  POST /mcp with 2026-07-28 `_meta`        -> the SDK's stateless 2026-07-28 path, JSON responses;
  POST /mcp initialize / Mcp-Session-Id    -> legacy Streamable HTTP sessions (GET, DELETE);
  GET /sse + POST /messages/               -> the deprecated HTTP+SSE transport.

Usage: python server.py PORT
"""

import sys

import uvicorn
from mcp.server.mcpserver import MCPServer

RESOURCE_URI = "bench://static/readme"
RESOURCE_TEXT = "kube-mcp benchmark static resource."

mcp = MCPServer("bench", log_level="WARNING")


@mcp.tool(description="Echoes the message.", structured_output=False)
def echo(message: str) -> str:
    return message


@mcp.resource(RESOURCE_URI, name="readme", mime_type="text/plain")
def readme() -> str:
    return RESOURCE_TEXT


def app():
    # No cap on sessions (the idle workload opens many) and no idle expiry during a run.
    streamable = mcp.streamable_http_app(json_response=True, max_sessions=None, session_idle_timeout=None)
    streamable.router.routes.extend(mcp.sse_app().routes)
    return streamable


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 8000
    uvicorn.run(app(), host="127.0.0.1", port=port, log_level="warning", timeout_keep_alive=120)
