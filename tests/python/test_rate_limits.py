"""`spec.limits` as clients meet them: the official Python SDK reads a tool's refusal (text,
`isError` and the limit in `_meta`) in every era and the 429 of another method as an MCP error;
two runtime processes serving one server, each with half the declared limit as the operator
renders it, stay together within the declared limit under a round-robin client; a retry after
`Retry-After` passes."""

from __future__ import annotations

import math
import time
from pathlib import Path

import httpx2
import pytest
from mcp.shared.exceptions import MCPError

from harness import ERAS, StartRuntime, connect, modern_request

pytestmark = pytest.mark.anyio

GUARDED = """apiVersion: kube-mcp.io/v1alpha1
kind: MCPServer
metadata: {name: guarded}
spec:
  limits:
    LIMIT
  tools:
    - name: create_issue
      content: [{type: text, text: created}]
"""
TOOL_LIMIT = "tools: {create_issue: {rate: 1/h, perPrincipal: true}}"
SERVER_LIMIT = "server: {rate: 3/h}"

# The declared limit is {rate: 60/min, burst: 10}; each of two replicas enforces half of it,
# written as the operator writes a share (`Limits::divided`).
DECLARED_RATE_PER_S = 1.0
DECLARED_BURST = 10
SHARE = """apiVersion: kube-mcp.io/v1alpha1
kind: MCPServer
metadata: {name: shared}
spec:
  limits:
    server: {rate: 30/min, burst: 5}
  tools:
    - name: ping_me
      content: [{type: text, text: pong}]
"""


def manifest(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name / "manifest.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(text)
    return path


@pytest.mark.parametrize("era", ERAS)
async def test_the_sdk_reads_a_tool_refused_by_its_limit(start: StartRuntime, tmp_path: Path, era: str) -> None:
    rt = start(manifest=manifest(tmp_path, era, GUARDED.replace("LIMIT", TOOL_LIMIT)))
    async with connect(rt, era) as client:
        first = await client.call_tool("create_issue", {})
        assert not first.is_error and first.content[0].text == "created"
        refused = await client.call_tool("create_issue", {})
    assert refused.is_error
    text = refused.content[0].text
    assert text.startswith("rate limit: tool `create_issue` for each caller allows 1/h on this replica; retry in"), text
    limit = (refused.meta or {})["kube-mcp.io/limit"]
    assert limit["scope"] == "tool" and limit["limit"] == "1/h" and limit["retryAfterMs"] > 3_000_000
    assert rt.metric("mcp_rate_limited_total", scope="tool") == 1


async def test_the_sdk_reads_a_429_as_an_mcp_error(start: StartRuntime, tmp_path: Path) -> None:
    rt = start(manifest=manifest(tmp_path, "list", GUARDED.replace("LIMIT", SERVER_LIMIT)))
    async with connect(rt, "modern") as client:
        with pytest.raises(MCPError) as raised:
            for _ in range(4):  # the client's own requests count too
                await client.list_tools()
    assert raised.value.error.code == -32000
    assert raised.value.error.message.startswith("rate limit: this server allows 3/h on this replica"), raised.value
    assert raised.value.error.data["scope"] == "server"


def list_tools(url: str, request_id: int) -> httpx2.Response:
    headers, body = modern_request(request_id, "tools/list")
    return httpx2.post(url, json=body, headers=headers, timeout=10)


def test_two_replicas_stay_within_the_declared_limit(start: StartRuntime, tmp_path: Path) -> None:
    replicas = [start(manifest=manifest(tmp_path, f"replica-{i}", SHARE)) for i in range(2)]
    accepted = refused = 0
    started = time.monotonic()
    # Round robin, as a Service spreads stateless requests; bounded in count and time.
    for n in range(80):
        response = list_tools(replicas[n % 2].url, n)
        if response.status_code == 200:
            accepted += 1
        else:
            assert response.status_code == 429, response.text
            refused += 1
        if time.monotonic() - started > 5:
            break
    elapsed = time.monotonic() - started
    # What the declared limit allows over the window: its burst, plus its rate for the time
    # taken (plus one cell per replica for where each stood in its interval).
    bound = DECLARED_BURST + math.ceil(DECLARED_RATE_PER_S * elapsed) + len(replicas)
    assert accepted <= bound, f"{accepted} accepted in {elapsed:.2f}s; the declared limit allows {bound}"
    # Even traffic can use the whole limit: both halves of the burst were spent.
    assert accepted >= DECLARED_BURST, f"only {accepted} accepted"
    assert refused > 0
    limited = sum(rt.metric("mcp_rate_limited_total", scope="server") for rt in replicas)
    assert limited == refused


def test_a_retry_after_retry_after_passes(start: StartRuntime, tmp_path: Path) -> None:
    rt = start(manifest=manifest(tmp_path, "retry", SHARE))
    for n in range(5):
        assert list_tools(rt.url, n).status_code == 200
    refused = list_tools(rt.url, 5)
    assert refused.status_code == 429
    wait = int(refused.headers["Retry-After"])
    assert 1 <= wait <= 2, wait  # one request every 2 s
    time.sleep(wait)
    assert list_tools(rt.url, 6).status_code == 200
