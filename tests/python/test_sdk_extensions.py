"""Extensions advertised in `capabilities.extensions` (SEP-2133), seen by the official Python
SDK: under `spec.auth` the runtime lists the two authorization extensions it supports
(`oauth-client-credentials`, `enterprise-managed-authorization`), and the SDK's own
client-credentials provider gets a token from a real authorization server (oidc-provider) and
is served with it; without `spec.auth` nothing is listed. The SDK declares no extension, so
every call here is also the plain behaviour a client declaring none gets."""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.streamable_http import streamable_http_client

from auth_server import authorization_server
from harness import TokenMemory, MODERN, WEATHER, StartRuntime

pytestmark = pytest.mark.anyio

AUTH_EXTENSIONS = {
    "io.modelcontextprotocol/oauth-client-credentials",
    "io.modelcontextprotocol/enterprise-managed-authorization",
}

MANIFEST = """\
apiVersion: kube-mcp.io/v1alpha1
kind: MCPServer
metadata: {name: machines}
spec:
  auth:
    issuer: ISSUER
    requiredScopes: [mcp]
  tools:
    - name: hello
      description: Greets a machine.
      content: [{type: text, text: hello}]
"""


@pytest.fixture(scope="module")
def issuer(tmp_path_factory: pytest.TempPathFactory):
    with authorization_server(tmp_path_factory.mktemp("as") / "as.log") as url:
        yield url


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_client_credentials_client_sees_the_auth_extensions(
    start: StartRuntime, tmp_path: Path, issuer: str, mode: str
) -> None:
    manifest = tmp_path / "manifest" / "machines.yaml"
    manifest.parent.mkdir()
    manifest.write_text(MANIFEST.replace("ISSUER", issuer))
    rt = start(manifest)
    provider = ClientCredentialsOAuthProvider(
        server_url=rt.url,
        storage=TokenMemory(),
        client_id="reader",
        client_secret="reader-secret",
        scope="mcp",
        issuer=issuer,
    )
    async with (
        httpx2.AsyncClient(auth=provider, timeout=10) as http,
        Client(streamable_http_client(rt.url, http_client=http), mode=mode, cache=None) as c,
    ):
        assert c.protocol_version == (MODERN if mode == "auto" else "2025-11-25")
        extensions = c.server_capabilities.extensions or {}
        assert set(extensions) == AUTH_EXTENSIONS
        assert all(settings == {} for settings in extensions.values())
        result = await c.call_tool("hello", {})
    assert [block.text for block in result.content] == ["hello"]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_without_spec_auth_no_extension_is_advertised(start: StartRuntime, mode: str) -> None:
    rt = start(WEATHER)
    async with Client(rt.url, mode=mode, cache=None) as c:
        assert c.server_capabilities.extensions is None
        assert c.server_capabilities.tools is not None
