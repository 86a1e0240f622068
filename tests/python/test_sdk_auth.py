"""Authentication end to end: a real authorization server (oidc-provider) on 127.0.0.1 issuing
JWT access tokens with RFC 8707 resource indicators, the runtime as its resource server, and the
official Python SDK's OAuth client discovering everything from the runtime's 401 (protected
resource metadata, authorization server metadata, dynamic registration, PKCE) in 2026-07-28
mode, legacy sessions and HTTP+SSE. Raw HTTP checks the challenges, scopes, `allow` conditions,
session binding and stream expiry that a well-behaved client never triggers."""

from __future__ import annotations

import base64
import json
import time
from contextlib import AsyncExitStack
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientMetadata
from mcp.shared.exceptions import MCPError

from auth_server import authorization_server, client_credentials, sign_in
from harness import TokenMemory, JSON_AND_SSE, MODERN, Runtime, StartRuntime, initialize_body, key_file, metric_labels, modern_request

pytestmark = pytest.mark.anyio

MANIFEST = """\
apiVersion: kube-mcp.io/v1alpha1
kind: MCPServer
metadata: {name: auth-demo}
spec:
  auth:
    issuer: ISSUER
    requiredScopes: [mcp]
  tools:
    - name: hello
      description: Greets whoever is allowed in.
      content: [{type: text, text: hello}]
    - name: close_issue
      description: Closes an issue in a repository the caller's token names.
      requiredScopes: ["issues:write"]
      inputSchema: {type: object, properties: {repo: {type: string}}, required: [repo]}
      allow: "{{ args.repo in token.claims.repos }}"
      content: [{type: text, text: "closed an issue in {{ args.repo }}"}]
  resources:
    - uri: issues://closed
      name: closed
      description: Issues closed lately; only for callers who may close them.
      requiredScopes: ["issues:write"]
      text: none yet
"""


@pytest.fixture(scope="module")
def issuer(tmp_path_factory: pytest.TempPathFactory):
    with authorization_server(tmp_path_factory.mktemp("as") / "as.log") as url:
        yield url


def serve(start: StartRuntime, tmp_path: Path, issuer: str) -> Runtime:
    manifest = tmp_path / "manifest" / "auth.yaml"
    manifest.parent.mkdir()
    manifest.write_text(MANIFEST.replace("ISSUER", issuer))
    return start(manifest)


@pytest.fixture
def authed(start: StartRuntime, tmp_path: Path, issuer: str) -> Runtime:
    return serve(start, tmp_path, issuer)


def oauth(server_url: str) -> tuple[OAuthClientProvider, TokenMemory]:
    """The SDK's OAuth client, configured with nothing but a redirect URI: it must learn the
    authorization server, the scopes and the resource from the runtime."""
    answer: dict[str, str] = {}

    async def redirect_handler(url: str) -> None:
        answer.update(await anyio.to_thread.run_sync(sign_in, url))

    async def callback_handler() -> AuthorizationCodeResult:
        return AuthorizationCodeResult(code=answer["code"], state=answer.get("state"), iss=answer.get("iss"))

    storage = TokenMemory()
    provider = OAuthClientProvider(
        server_url=server_url,
        client_metadata=OAuthClientMetadata(
            redirect_uris=["http://127.0.0.1:9/callback"],
            client_name="kube-mcp auth test",
            grant_types=["authorization_code", "refresh_token"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )
    return provider, storage


@pytest.mark.parametrize("era", ["modern", "legacy", "sse"])
async def test_sdk_oauth_client_discovers_everything_from_a_401(authed: Runtime, era: str) -> None:
    provider, storage = oauth(authed.sse_url if era == "sse" else authed.url)
    async with httpx2.AsyncClient(auth=provider, timeout=30) as http:
        if era == "sse":
            transport = sse_client(authed.sse_url, auth=provider, timeout=30, sse_read_timeout=60)
        else:
            transport = streamable_http_client(authed.url, http_client=http)
        mode = MODERN if era == "modern" else "legacy"
        async with Client(transport, mode=mode, cache=None, read_timeout_seconds=30) as client:
            result = await client.call_tool("hello", {})
            assert [c.text for c in result.content] == ["hello"]
    # Everything came from the 401: the token is for this resource and holds the scope the
    # challenge named.
    assert storage.tokens is not None and storage.client is not None
    assert "mcp" in (storage.tokens.scope or "").split()
    assert authed.metric("mcp_auth_failures_total", reason="missing") >= 1


def call(rt: Runtime, token: str | None, method: str, fields: dict, name: str | None = None, **extra) -> httpx2.Response:
    """A raw 2026-07-28 request with `fields` as its params."""
    headers, body = modern_request(1, "tools/list")
    headers["Mcp-Method"], body["method"] = method, method
    body["params"] = {**fields, "_meta": body["params"]["_meta"]}
    if name is not None:
        headers["Mcp-Name"] = name
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return httpx2.post(rt.url, headers=headers, json=body, timeout=10, **extra)


async def test_challenges_scopes_and_conditions(authed: Runtime, issuer: str) -> None:
    resource = authed.base
    metadata_url = f"{authed.base}/.well-known/oauth-protected-resource"
    reader = client_credentials(issuer, "reader", "mcp", resource)
    writer = client_credentials(issuer, "writer", "mcp issues:write", resource)
    outsider = client_credentials(issuer, "outsider", "issues:write", resource)
    elsewhere = client_credentials(issuer, "writer", "mcp issues:write", "http://127.0.0.1:1/mcp")

    # No token: 401 and where to learn more; the metadata names the resource and its issuer.
    r = call(authed, None, "tools/list", {})
    assert r.status_code == 401
    assert r.headers["www-authenticate"] == f'Bearer resource_metadata="{metadata_url}", scope="mcp"'
    doc = httpx2.get(metadata_url, timeout=5).json()
    assert doc["resource"] == resource and doc["authorization_servers"] == [issuer]
    assert doc["bearer_methods_supported"] == ["header"]
    assert httpx2.get(f"{metadata_url}/mcp", timeout=5).json() == doc

    # A token for another resource, and a token in the query string, are refused.
    r = call(authed, elsewhere, "tools/list", {})
    assert r.status_code == 401 and 'error="invalid_token"' in r.headers["www-authenticate"]
    r = call(authed, reader, "tools/list", {}, params={"access_token": reader})
    assert r.status_code == 401 and 'error="invalid_request"' in r.headers["www-authenticate"]
    # A token without the server's scope: 403 naming it.
    r = call(authed, outsider, "tools/call", {"name": "hello", "arguments": {}}, name="hello")
    assert r.status_code == 403 and 'error="insufficient_scope"' in r.headers["www-authenticate"]

    # The reader sees and calls only what its scopes allow; the tool it lacks a scope for is
    # refused with every scope it needs.
    r = call(authed, reader, "tools/list", {})
    assert r.status_code == 200, r.text
    assert [t["name"] for t in r.json()["result"]["tools"]] == ["hello"]
    assert r.json()["result"]["cacheScope"] == "private"
    args = {"name": "close_issue", "arguments": {"repo": "kube-mcp/kube-mcp"}}
    r = call(authed, reader, "tools/call", args, name="close_issue")
    assert r.status_code == 403
    assert 'scope="mcp issues:write", error="insufficient_scope"' in r.headers["www-authenticate"]

    # The writer sees both; `allow` decides over the arguments, as a tool error the model reads.
    r = call(authed, writer, "tools/list", {})
    assert [t["name"] for t in r.json()["result"]["tools"]] == ["hello", "close_issue"]
    r = call(authed, writer, "tools/call", args, name="close_issue")
    assert r.json()["result"]["content"][0]["text"] == "closed an issue in kube-mcp/kube-mcp"
    other = {"name": "close_issue", "arguments": {"repo": "someone/else"}}
    r = call(authed, writer, "tools/call", other, name="close_issue")
    assert r.status_code == 200 and r.json()["result"]["isError"] is True

    assert authed.metric("mcp_auth_failures_total", reason="insufficient_scope") == 2
    assert authed.metric("mcp_auth_failures_total", reason="wrong_audience") == 1
    # Tokens never reach logs or metrics.
    assert reader not in authed.metrics() and reader.split(".")[1] not in authed.log_tail(1000)


async def test_a_session_serves_only_the_principal_that_opened_it(authed: Runtime, issuer: str) -> None:
    reader = client_credentials(issuer, "reader", "mcp", authed.base)
    writer = client_credentials(issuer, "writer", "mcp issues:write", authed.base)
    headers = dict(JSON_AND_SSE, Authorization=f"Bearer {reader}")
    r = httpx2.post(authed.url, headers=headers, json=initialize_body(), timeout=10)
    assert r.status_code == 200, r.text
    session = r.headers["mcp-session-id"]
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    own = dict(headers, **{"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"})
    assert httpx2.post(authed.url, headers=own, json=ping, timeout=10).status_code == 200
    stolen = dict(own, Authorization=f"Bearer {writer}")
    r = httpx2.post(authed.url, headers=stolen, json=ping, timeout=10)
    assert r.status_code == 403
    assert authed.metric("mcp_auth_failures_total", reason="wrong_principal") == 1


async def test_a_stream_ends_when_its_token_expires(start: StartRuntime, tmp_path: Path) -> None:
    with authorization_server(tmp_path / "as-short.log", token_ttl_s=2) as short_issuer:
        rt = serve(start, tmp_path, short_issuer)
        token = client_credentials(short_issuer, "reader", "mcp", rt.base)
        started = time.monotonic()
        with httpx2.stream(
            "GET", rt.sse_url, headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(10, read=20)
        ) as stream:
            assert stream.status_code == 200
            for _ in stream.iter_bytes():
                pass
        # Ended by the server at `exp` (2 s), long before the 20 s read timeout.
        assert time.monotonic() - started < 10


async def test_listening_to_a_resource_needs_what_reading_it_needs(authed: Runtime, issuer: str) -> None:
    reader = client_credentials(issuer, "reader", "mcp", authed.base)
    writer = client_credentials(issuer, "writer", "mcp issues:write", authed.base)
    r = call(authed, reader, "resources/read", {"uri": "issues://closed"}, name="issues://closed")
    assert r.status_code == 403
    # A listen stream would tell the reader when the resource changes: refused the same way,
    # with every scope in one challenge.
    listen = {"notifications": {"resourceSubscriptions": ["issues://closed"]}}
    r = call(authed, reader, "subscriptions/listen", listen)
    assert r.status_code == 403
    assert 'scope="mcp issues:write", error="insufficient_scope"' in r.headers["www-authenticate"]
    # The writer may read it, so it may listen: the stream opens.
    headers, body = modern_request(1, "subscriptions/listen", listen)
    headers["Authorization"] = f"Bearer {writer}"
    with httpx2.stream("POST", authed.url, headers=headers, json=body, timeout=10) as stream:
        assert stream.status_code == 200
        assert stream.headers["content-type"].startswith("text/event-stream")


def bearer_transport(rt: Runtime, era: str, token: str):
    """An SDK transport for `era` that sends `token` on every request (a client that already
    holds one)."""
    headers = {"Authorization": f"Bearer {token}"}
    if era == "sse":
        return sse_client(rt.sse_url, headers=headers, timeout=30, sse_read_timeout=60)
    return streamable_http_client(rt.url, http_client=httpx2.AsyncClient(headers=headers, timeout=30))


@pytest.mark.parametrize("era", ["modern", "legacy", "sse"])
async def test_lists_and_calls_follow_the_callers_scopes_in_every_era(authed: Runtime, issuer: str, era: str) -> None:
    reader = client_credentials(issuer, "reader", "mcp", authed.base)
    writer = client_credentials(issuer, "writer", "mcp issues:write", authed.base)
    mode = MODERN if era == "modern" else "legacy"
    args = {"repo": "kube-mcp/kube-mcp"}
    async with AsyncExitStack() as stack:
        client = await stack.enter_async_context(
            Client(bearer_transport(authed, era, reader), mode=mode, cache=None, read_timeout_seconds=30)
        )
        assert [t.name for t in (await client.list_tools()).tools] == ["hello"]
        assert [r.uri for r in (await client.list_resources()).resources] == []
        before = authed.metric("mcp_auth_failures_total", reason="insufficient_scope")
        # Refused with a 403 before any dispatch; over HTTP+SSE the error also comes on the
        # session stream, so the client does not wait for its timeout.
        with anyio.fail_after(10), pytest.raises(MCPError):
            await client.call_tool("close_issue", args)
        assert authed.metric("mcp_auth_failures_total", reason="insufficient_scope") == before + 1
    async with AsyncExitStack() as stack:
        client = await stack.enter_async_context(
            Client(bearer_transport(authed, era, writer), mode=mode, cache=None, read_timeout_seconds=30)
        )
        assert [t.name for t in (await client.list_tools()).tools] == ["hello", "close_issue"]
        assert [str(r.uri) for r in (await client.list_resources()).resources] == ["issues://closed"]
        result = await client.call_tool("close_issue", args)
        assert result.content[0].text == "closed an issue in kube-mcp/kube-mcp"
        refused = await client.call_tool("close_issue", {"repo": "someone/else"})
        assert refused.is_error is True


def _claims(token: str) -> dict:
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


async def test_audit_records_name_the_principal_never_the_token(
    start: StartRuntime, tmp_path: Path, issuer: str
) -> None:
    manifest = tmp_path / "manifest" / "auth.yaml"
    manifest.parent.mkdir()
    manifest.write_text(MANIFEST.replace("ISSUER", issuer))
    rt = start(manifest, ("--audit-log", "stdout"))
    writer = client_credentials(issuer, "writer", "mcp issues:write", rt.base)
    args = {"name": "close_issue", "arguments": {"repo": "kube-mcp/kube-mcp"}}
    assert call(rt, writer, "tools/call", args, name="close_issue").status_code == 200
    other = {"name": "close_issue", "arguments": {"repo": "someone/else"}}
    assert call(rt, writer, "tools/call", other, name="close_issue").json()["result"]["isError"] is True
    # Refused by the transport before any dispatch (the reader lacks the tool's scope).
    reader = client_credentials(issuer, "reader", "mcp", rt.base)
    assert call(rt, reader, "tools/call", args, name="close_issue").status_code == 403
    # A legacy session carries its opener as the caller too.
    headers = dict(JSON_AND_SSE, Authorization=f"Bearer {writer}")
    r = httpx2.post(rt.url, headers=headers, json=initialize_body(), timeout=10)
    own = dict(headers, **{"Mcp-Session-Id": r.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-11-25"})
    hello = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "hello", "arguments": {}}}
    assert httpx2.post(rt.url, headers=own, json=hello, timeout=10).status_code == 200

    served = metric_labels(rt.metrics(), "mcp_runtime_declaration_info")
    deadline = time.monotonic() + 5
    while len(records := _audit_lines(rt)) < 4 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [(r["tool"], r["outcome"], r.get("httpStatus")) for r in records] == [
        ("close_issue", "ok", None),
        ("close_issue", "failed", None),
        ("close_issue", "refused", 403),
        ("hello", "ok", None),
    ], records
    callers = [writer, writer, reader, writer]
    for record, token in zip(records, callers):
        claims = _claims(token)
        assert record["principal"] == {"issuer": claims["iss"], "subject": claims["sub"]}
        # The declaration that answered is the one the runtime reports serving.
        assert [{"hash": record["declaration"]}] == served
    text = rt.log.read_text(errors="replace")
    for token in (writer, reader):
        assert token not in text and token.split(".")[2] not in text


def _audit_lines(rt: Runtime) -> list[dict]:
    lines = rt.log.read_text(errors="replace").splitlines()
    return [json.loads(line) for line in lines if line.startswith("{") and '"audit"' in line]


async def test_a_session_is_checked_where_its_handler_looks_it_up(authed: Runtime, issuer: str) -> None:
    """`POST /messages` serves the session of its `sessionId`: that one must be the caller's,
    whatever `Mcp-Session-Id` the request also carries."""
    reader = client_credentials(issuer, "reader", "mcp", authed.base)
    writer = client_credentials(issuer, "writer", "mcp issues:write", authed.base)
    mine = httpx2.post(authed.url, headers=dict(JSON_AND_SSE, Authorization=f"Bearer {writer}"), json=initialize_body(), timeout=10)
    assert mine.status_code == 200, mine.text
    timeout = httpx2.Timeout(10, read=20)
    with httpx2.stream("GET", authed.sse_url, headers={"Authorization": f"Bearer {reader}"}, timeout=timeout) as stream:
        endpoint = next(line[len("data:") :].strip() for line in stream.iter_lines() if line.startswith("data:"))
        headers = {"Authorization": f"Bearer {writer}", "Mcp-Session-Id": mine.headers["mcp-session-id"]}
        ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
        r = httpx2.post(f"{authed.base}{endpoint}", headers=headers, json=ping, timeout=10)
        # Before, the header's session was checked and the reader's stream served the writer.
        assert r.status_code == 403, r.text
    assert authed.metric("mcp_auth_failures_total", reason="wrong_principal") == 1


async def test_a_forwarded_request_is_authenticated_where_it_arrives(start: StartRuntime, tmp_path: Path, issuer: str) -> None:
    """Two processes routing legacy sessions (--advertise-address): the process a request
    reaches authenticates it and forwards only what it accepted, without the token; the owner
    trusts the caller sealed in the hop token."""
    key = key_file(tmp_path / "shared.key")
    public = "http://127.0.0.1/auth-demo"
    flags = ("--session-key-file", str(key), "--advertise-address", "127.0.0.1", "--public-url", public)
    manifest = tmp_path / "manifest" / "auth.yaml"
    manifest.parent.mkdir()
    manifest.write_text(MANIFEST.replace("ISSUER", issuer))
    a, b = start(manifest, extra_args=flags, name="a"), start(manifest, extra_args=flags, name="b")
    reader = client_credentials(issuer, "reader", "mcp", public)
    writer = client_credentials(issuer, "writer", "mcp issues:write", public)
    headers = dict(JSON_AND_SSE, Authorization=f"Bearer {reader}")
    r = httpx2.post(a.url, headers=headers, json=initialize_body(), timeout=10)
    assert r.status_code == 200, r.text
    own = dict(headers, **{"Mcp-Session-Id": r.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-11-25"})
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    assert httpx2.post(b.url, headers=own, json=ping, timeout=10).status_code == 200
    r = httpx2.post(b.url, headers=dict(own, Authorization=f"Bearer {writer}"), json=ping, timeout=10)
    assert r.status_code == 403
    anonymous = {k: v for k, v in own.items() if k != "Authorization"}
    r = httpx2.post(b.url, headers=anonymous, json=ping, timeout=10)
    assert r.status_code == 401 and r.headers["www-authenticate"].startswith("Bearer resource_metadata=")
    # The receiving process refused both; only the accepted request was forwarded.
    assert b.metric("mcp_auth_failures_total", reason="wrong_principal") == 1
    assert b.metric("mcp_auth_failures_total", reason="missing") == 1
    assert a.metric("mcp_auth_failures_total") == 0
    assert b.metric("mcp_session_forwards_total", outcome="forwarded") == 1
    for rt in (a, b):
        assert reader.split(".")[1] not in rt.log_tail(1000) and writer.split(".")[1] not in rt.log_tail(1000)
