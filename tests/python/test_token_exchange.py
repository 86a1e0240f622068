"""`http.auth` end to end (issue 26): a real RFC 8693 authorization server (the example OpenID
provider of github.com/zitadel/oidc/v3, tests/auth/exchange-server.sh) on 127.0.0.1 issues the
callers' tokens; the runtime trusts that issuer (`spec.auth`) and, for each tool call, exchanges
the caller's token for one made for the upstream (client secret, and private_key_jwt) or asks for
its own (client credentials). The upstream, written here, checks every token it gets against the
server's JWKS (signature, issuer, `aud`) and answers with its `sub`. Checked: per-user results
for alice and bob; the callers' tokens never reach the upstream; one exchange for many calls
(the runtime's `mcp_token_exchanges_total`); carol's refused exchange is a tool error the model
can read, through the official SDK; client credentials work; the JWT bearer grant (RFC 7523 2.1)
gets the key holder's token with an assertion the runtime signs, and a refused assertion is a
tool error too; a projected ServiceAccount token as the client assertion (a file standing in
for the kubelet's), re-read after rotation; resources and templates read as each caller; claim
headers; the act chain in audit records and spans.

Does process and socket I/O on 127.0.0.1 only; every wait is bounded; servers are stopped by PID.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urljoin, urlparse

import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from mcp import Client

from auth_server import issuer_process
from harness import JSON_AND_SSE, MODERN, REPO, Runtime, StartRuntime, initialize_body, key_file, modern_request, rpc_result
from otlp_receiver import OtlpReceiver
from test_sdk_auth import bearer_transport

pytestmark = pytest.mark.anyio

EXCHANGE = REPO / "tests" / "auth"
START_TIMEOUT_S = 30.0
USERS = {"alice": "alice-password", "bob": "bob-password", "carol": "carol-password"}
LOGIN_CLIENT = ("mcp-login", "mcp-login-secret")
REDIRECT = "http://127.0.0.1/callback"
TRACKER = "https://tracker.example.test"  # the audience the exchanged tokens are made for

MANIFEST = """\
apiVersion: kube-mcp.io/v1alpha1
kind: MCPServer
metadata: {name: exchange-demo}
spec:
  auth:
    issuer: ISSUER
    audiences: [mcp-login]
  tools:
    - name: my_issues
      description: The caller's issues, as the tracker sees the caller.
      http:
        url: UPSTREAM/me
        auth:
          tokenExchange:
            tokenUrl: TOKEN_URL
            client: {id: kube-mcp, secretKeyRef: {name: idp-client, key: secret}}
            audience: TRACKER
            scope: "issues:read"
    - name: my_issues_jwt
      description: The same, the client authenticated by private_key_jwt.
      http:
        url: UPSTREAM/me
        auth:
          tokenExchange:
            tokenUrl: TOKEN_URL
            client:
              id: kube-mcp-jwt
              privateKeyJwt: {secretKeyRef: {name: idp-jwt, key: key.pem}, keyId: kube-mcp-key, audience: ISSUER}
            audience: TRACKER
    - name: my_issues_delegated
      description: The caller's issues, the runtime named as the actor (act).
      http:
        url: UPSTREAM/me
        auth:
          tokenExchange:
            tokenUrl: TOKEN_URL
            client: {id: kube-mcp, secretKeyRef: {name: idp-client, key: secret}}
            audience: TRACKER
            actor:
              client: {id: sid1, secretKeyRef: {name: sid1, key: secret}}
    - name: echo_token
      description: An upstream that echoes the Authorization header it got (a leaky one).
      http:
        url: UPSTREAM/echo
        auth:
          tokenExchange:
            tokenUrl: TOKEN_URL
            client: {id: kube-mcp, secretKeyRef: {name: idp-client, key: secret}}
            audience: TRACKER
            scope: "issues:read"
    - name: service_issues
      description: Issues as the service itself sees them.
      http:
        url: UPSTREAM/service
        auth:
          clientCredentials:
            tokenUrl: TOKEN_URL
            client: {id: sid1, secretKeyRef: {name: sid1, key: secret}}
            scope: "issues:read"
    - name: service_issues_for_caller
      description: Issues as the service sees them, told who the caller is.
      http:
        url: UPSTREAM/service
        headers:
          - {name: X-Caller, claim: sub}
        auth:
          clientCredentials:
            tokenUrl: TOKEN_URL
            client: {id: sid1, secretKeyRef: {name: sid1, key: secret}}
    - name: service_issues_by_department
      description: Sends a claim the provider's tokens do not carry.
      http:
        url: UPSTREAM/service
        headers:
          - {name: X-Department, claim: org.department}
        auth:
          clientCredentials:
            tokenUrl: TOKEN_URL
            client: {id: sid1, secretKeyRef: {name: sid1, key: secret}}
    - name: profile_issues
      description: Issues as the holder of a key registered at the provider sees them.
      http:
        url: UPSTREAM/profile
        auth:
          jwtBearer:
            tokenUrl: TOKEN_URL
            assertion:
              secretKeyRef: {name: idp-jwt, key: key.pem}
              keyId: kube-mcp-key
              issuer: kube-mcp-jwt
              audience: ISSUER
            scope: openid
    - name: profile_issues_unknown_key
      description: The same, the assertion naming a key the provider does not know.
      http:
        url: UPSTREAM/profile
        auth:
          jwtBearer:
            tokenUrl: TOKEN_URL
            assertion: {secretKeyRef: {name: idp-jwt, key: key.pem}, keyId: no-such-key, issuer: kube-mcp-jwt, audience: ISSUER}
  resources:
    - name: my_profile
      uri: tracker://me
      description: The caller as the tracker sees them (read as each caller).
      http:
        url: UPSTREAM/me
        auth:
          tokenExchange:
            tokenUrl: TOKEN_URL
            client: {id: kube-mcp, secretKeyRef: {name: idp-client, key: secret}}
            audience: TRACKER
    - name: service_profile
      uri: tracker://service
      description: The service as the tracker sees it (one token for everyone, cached).
      http:
        url: UPSTREAM/service
        cacheTtlMs: 60000
        auth:
          clientCredentials:
            tokenUrl: TOKEN_URL
            client: {id: sid1, secretKeyRef: {name: sid1, key: secret}}
  resourceTemplates:
    - name: my_issue
      uriTemplate: tracker://issues/{id}
      description: One of the caller's issues (read as each caller).
      http:
        url: UPSTREAM/me
        auth:
          tokenExchange:
            tokenUrl: TOKEN_URL
            client: {id: kube-mcp, secretKeyRef: {name: idp-client, key: secret}}
            audience: TRACKER
"""


@pytest.fixture(scope="module")
def provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    """The exchange server: issuer, discovery document, client key path, log."""
    binary = subprocess.run(
        [str(EXCHANGE / "exchange-server.sh"), "path"], capture_output=True, text=True, timeout=600, check=True
    ).stdout.strip().splitlines()[-1]
    work = tmp_path_factory.mktemp("exchange-as")
    key, log = work / "client-key.pem", work / "as.log"
    args = [binary, "-addr", "127.0.0.1:0", "-users", str(EXCHANGE / "exchange" / "users.json"), "-client-key", str(key)]
    with issuer_process(args, log, "exchange server", timeout_s=START_TIMEOUT_S) as issuer:
        meta = httpx2.get(f"{issuer}/.well-known/openid-configuration", timeout=10).json()
        yield {"issuer": issuer, "meta": meta, "key": key, "log": log}


def login(provider: dict, user: str) -> str:
    """The user's access token, by the authorization code flow through the example's login form."""
    meta, issuer = provider["meta"], provider["issuer"]
    http = httpx2.Client(timeout=10, follow_redirects=False)
    r = http.get(meta["authorization_endpoint"], params={
        "client_id": LOGIN_CLIENT[0], "redirect_uri": REDIRECT, "response_type": "code",
        "scope": "openid profile", "state": "s1"})  # fmt: skip
    assert r.status_code == 302, (r.status_code, r.text)
    login_url = urljoin(issuer, r.headers["location"])
    request_id = parse_qs(urlparse(login_url).query)["authRequestID"][0]
    r = http.post(login_url.split("?")[0], data={"id": request_id, "username": user, "password": USERS[user]})
    assert r.status_code == 302, (r.status_code, r.text)
    r = http.get(urljoin(issuer, r.headers["location"]))
    code = parse_qs(urlparse(r.headers["location"]).query)["code"][0]
    r = http.post(meta["token_endpoint"], auth=LOGIN_CLIENT,
                  data={"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT})  # fmt: skip
    assert r.status_code == 200, r.text
    return r.json()["access_token"]


class Upstream(ThreadingHTTPServer):
    """The tracker: trusts only tokens of the provider made for it (`/me`: aud TRACKER, the
    user's; `/service`: the client credentials token of sid1), and records every Authorization
    header it was sent."""

    def __init__(self, provider: dict) -> None:
        super().__init__(("127.0.0.1", 0), UpstreamHandler)
        self.issuer = provider["issuer"]
        self.jwks = jwt.PyJWKSet.from_dict(httpx2.get(provider["meta"]["jwks_uri"], timeout=10).json())
        self.seen: list[str] = []
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def verify(self, token: str, audience: str) -> dict:
        kid = jwt.get_unverified_header(token)["kid"]
        key = next(k for k in self.jwks.keys if k.key_id == kid)
        return jwt.decode(token, key.key, algorithms=["RS256"], issuer=self.issuer, audience=audience)


class UpstreamHandler(BaseHTTPRequestHandler):
    server: Upstream
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        header = self.headers.get("Authorization", "")
        with self.server.lock:
            self.server.seen.append(header)
        if self.path == "/echo":
            token = header.removeprefix("Bearer ")
            self._answer(200, {"authorization": header, "in_text": f"got {token}!", "tail": token[len(token) // 3 :]})
            return
        # The JWT bearer grant's token is made for the assertion's `aud`: the provider itself.
        audience = {"/me": TRACKER, "/service": "sid1", "/profile": self.server.issuer}.get(self.path)
        try:
            assert audience and header.startswith("Bearer ")
            claims = self.server.verify(header.removeprefix("Bearer "), audience)
            status, body = 200, {"sub": claims["sub"], "aud": claims["aud"], "client_id": claims.get("client_id"), "act": claims.get("act"),
                                 "caller": self.headers.get("X-Caller"), "issues": [f"{claims['sub']}-1", f"{claims['sub']}-2"]}  # fmt: skip
        except Exception as err:  # any failure is the upstream's refusal
            status, body = 401, {"error": "invalid_token", "detail": type(err).__name__}
        self._answer(status, body)

    def _answer(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def upstream(provider: dict) -> Iterator[Upstream]:
    server = Upstream(provider)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def serve(start: StartRuntime, tmp_path: Path, provider: dict, upstream: Upstream, flags: tuple[str, ...] = (), name: str | None = None) -> Runtime:
    secrets = tmp_path / "secrets"
    for name, key, value in [("idp-client", "secret", "kube-mcp-secret"), ("sid1", "secret", "verysecret"),
                             ("idp-jwt", "key.pem", provider["key"].read_text())]:  # fmt: skip
        (secrets / name).mkdir(parents=True, exist_ok=True)
        (secrets / name / key).write_text(value)
    manifest = tmp_path / "manifest" / "exchange.yaml"
    manifest.parent.mkdir(exist_ok=True)
    text = (MANIFEST.replace("TOKEN_URL", provider["meta"]["token_endpoint"]).replace("ISSUER", provider["issuer"])
            .replace("UPSTREAM", upstream.url).replace("TRACKER", TRACKER))  # fmt: skip
    manifest.write_text(text)
    return start(manifest, ("--secrets-dir", str(secrets), *flags), name)


@pytest.fixture
def served(start: StartRuntime, tmp_path: Path, provider: dict, upstream: Upstream) -> Runtime:
    return serve(start, tmp_path, provider, upstream)


def call(rt: Runtime, token: str, tool: str, request_id: int = 1) -> dict:
    """A raw 2026-07-28 tools/call with `token`; the JSON-RPC result."""
    headers, body = modern_request(request_id, "tools/list")
    headers["Mcp-Method"], body["method"], headers["Mcp-Name"] = "tools/call", "tools/call", tool
    body["params"] = {"name": tool, "arguments": {}, "_meta": body["params"]["_meta"]}
    headers["Authorization"] = f"Bearer {token}"
    r = httpx2.post(rt.url, headers=headers, json=body, timeout=30)
    assert r.status_code == 200, r.text
    # A call still running after a moment is answered as a stream (the exchange can be slow).
    return rpc_result(r)["result"]


def exchanges(rt: Runtime) -> dict[str, float]:
    return {o: rt.metric("mcp_token_exchanges_total", outcome=o) for o in ("ok", "cached", "refused", "error")}


def test_each_caller_reaches_the_upstream_as_themselves_and_tokens_are_cached(
    served: Runtime, provider: dict, upstream: Upstream
) -> None:
    alice, bob = login(provider, "alice"), login(provider, "bob")
    for user, token in (("alice", alice), ("bob", bob)):
        result = call(served, token, "my_issues")
        assert result.get("isError") is not True, result
        assert result["structuredContent"]["sub"] == user
        assert result["structuredContent"]["aud"] == [TRACKER]
        assert result["structuredContent"]["client_id"] == "kube-mcp"
        assert result["structuredContent"]["issues"] == [f"{user}-1", f"{user}-2"]
    assert exchanges(served) == {"ok": 2, "cached": 0, "refused": 0, "error": 0}
    # N calls, one exchange per caller: the rest come from the cache, never across callers.
    for i in range(5):
        assert call(served, alice, "my_issues", 10 + i)["structuredContent"]["sub"] == "alice"
        assert call(served, bob, "my_issues", 20 + i)["structuredContent"]["sub"] == "bob"
    assert exchanges(served) == {"ok": 2, "cached": 10, "refused": 0, "error": 0}
    # The upstream saw 12 tokens made for it, and never a caller's own.
    assert len(upstream.seen) == 12
    assert all(h.startswith("Bearer ") for h in upstream.seen)
    assert not any(alice in h or bob in h for h in upstream.seen)
    assert len(set(upstream.seen)) == 2, "one exchanged token per caller"


def test_private_key_jwt_and_client_credentials(served: Runtime, provider: dict, upstream: Upstream) -> None:
    alice = login(provider, "alice")
    result = call(served, alice, "my_issues_jwt")
    assert result.get("isError") is not True, result
    assert (result["structuredContent"]["sub"], result["structuredContent"]["client_id"]) == ("alice", "kube-mcp-jwt")
    # Client credentials: the service's own token, the same whoever calls.
    bob = login(provider, "bob")
    for token in (alice, bob):
        result = call(served, token, "service_issues")
        assert result.get("isError") is not True, result
        assert (result["structuredContent"]["sub"], result["structuredContent"]["aud"]) == ("sid1", ["sid1"])
    assert exchanges(served) == {"ok": 2, "cached": 1, "refused": 0, "error": 0}
    assert not any(alice in h or bob in h for h in upstream.seen)


def test_the_exchanged_token_is_scrubbed_from_what_the_upstream_echoes(
    served: Runtime, provider: dict, upstream: Upstream
) -> None:
    alice = login(provider, "alice")
    result = call(served, alice, "echo_token")
    assert result.get("isError") is not True, result
    sent = upstream.seen[-1].removeprefix("Bearer ")
    assert sent and sent != alice
    echoed = result["structuredContent"]
    assert echoed["authorization"] == "Bearer [redacted]", echoed
    assert echoed["in_text"] == "got [redacted]!", echoed
    # A partial echo of at least half the token (here its claims and signature) is caught too.
    assert echoed["tail"] == "[redacted]", echoed
    text = json.dumps(result)
    assert sent not in text and sent[-40:] not in text


@pytest.mark.parametrize("era", ["modern", "legacy", "sse"])
async def test_the_sdk_calls_as_the_caller_in_every_era(served: Runtime, provider: dict, era: str) -> None:
    alice = login(provider, "alice")
    mode = MODERN if era == "modern" else "legacy"
    async with Client(bearer_transport(served, era, alice), mode=mode, cache=None, read_timeout_seconds=30) as client:
        result = await client.call_tool("my_issues", {})
    assert result.is_error is not True, result
    assert result.structured_content["sub"] == "alice"


async def test_a_refused_exchange_is_a_tool_error_the_model_reads(
    served: Runtime, provider: dict, upstream: Upstream
) -> None:
    carol = login(provider, "carol")  # not allowed to be exchanged without an actor token
    async with Client(bearer_transport(served, "modern", carol), mode=MODERN, cache=None, read_timeout_seconds=30) as client:
        result = await client.call_tool("my_issues", {})
    assert result.is_error is True
    text = result.content[0].text
    assert text.startswith("the authorization server refused the token exchange for the caller (500 server_error)"), text
    assert "impersonation" in text, text
    assert carol not in text
    assert upstream.seen == [], "no call without the token, and no fallback"
    assert exchanges(served)["refused"] == 1
    # Refusals are not cached: the next call asks again.
    assert call(served, carol, "my_issues")["isError"] is True
    assert exchanges(served)["refused"] == 2


def test_a_session_request_relayed_by_another_replica_still_exchanges(
    start: StartRuntime, tmp_path: Path, provider: dict, upstream: Upstream
) -> None:
    """Two replicas routing legacy sessions: a call that reaches the replica not holding the
    session is relayed to the owner with the caller's token sealed (encrypted) in the hop token,
    and the owner exchanges it."""
    flags = ("--session-key-file", str(key_file(tmp_path / "shared.key")), "--advertise-address", "127.0.0.1")
    a = serve(start, tmp_path, provider, upstream, flags, "a")
    b = serve(start, tmp_path, provider, upstream, flags, "b")
    alice = login(provider, "alice")
    headers = dict(JSON_AND_SSE, Authorization=f"Bearer {alice}")
    r = httpx2.post(a.url, headers=headers, json=initialize_body(), timeout=10)
    assert r.status_code == 200, r.text
    own = dict(headers, **{"Mcp-Session-Id": r.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-11-25"})
    call_ = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "my_issues", "arguments": {}}}
    r = httpx2.post(b.url, headers=own, json=call_, timeout=30)
    assert r.status_code == 200, r.text
    body = r.json() if r.headers["content-type"].startswith("application/json") else json.loads(
        next(line[5:] for line in r.text.splitlines() if line.startswith("data:"))
    )
    assert body["result"].get("isError") is not True, body
    assert body["result"]["structuredContent"]["sub"] == "alice"
    assert b.metric("mcp_session_forwards_total", outcome="forwarded") == 1
    assert a.metric("mcp_token_exchanges_total", outcome="ok") == 1
    assert not any(alice in h for h in upstream.seen)


def test_audit_records_and_spans_tell_how_the_token_was_obtained(
    start: StartRuntime, tmp_path: Path, provider: dict, upstream: Upstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    receiver = OtlpReceiver().start()
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "200")
    try:
        rt = serve(start, tmp_path, provider, upstream, ("--audit-log", "stdout", "--otlp-endpoint", receiver.base))
        audit_and_spans(rt, provider, upstream, receiver)
    finally:
        receiver.stop()


def audit_and_spans(rt: Runtime, provider: dict, upstream: Upstream, receiver: OtlpReceiver) -> None:
    alice, carol = login(provider, "alice"), login(provider, "carol")
    call(rt, alice, "my_issues", 1)
    call(rt, alice, "my_issues", 2)
    call(rt, carol, "my_issues", 3)
    call(rt, carol, "my_issues_delegated", 4)
    deadline = time.monotonic() + 10
    while len(records := audit_lines(rt)) < 4 and time.monotonic() < deadline:
        time.sleep(0.1)
    calls = [r for r in records if r["audit"] == "tools/call"]
    assert [(r.get("tokenExchange"), r.get("upstreamAudience"), r.get("upstreamAct")) for r in calls] == [
        ("ok", TRACKER, None), ("cached", TRACKER, None), ("refused", TRACKER, None), ("ok", TRACKER, ["sid1"])
    ], calls
    assert [r["principal"]["subject"] for r in calls] == ["alice", "alice", "carol", "carol"], calls
    text = rt.log.read_text(errors="replace")
    for token in (alice, carol, *(h.removeprefix("Bearer ") for h in upstream.seen)):
        assert token.split(".")[1] not in text, "no token (nor its claims part) in the log"
    spans = [s for s in receiver.wait_for(8) if s.kind == "SPAN_KIND_CLIENT"]
    assert [(s.attributes.get("kube_mcp.token_exchange"), s.attributes.get("kube_mcp.upstream.audience"),
             s.attributes.get("kube_mcp.upstream.act")) for s in spans] == [
        ("ok", TRACKER, None), ("cached", TRACKER, None), ("ok", TRACKER, ["sid1"])
    ], spans  # fmt: skip  (carol's refused exchange made no upstream call)


def audit_lines(rt: Runtime) -> list[dict]:
    lines = rt.log.read_text(errors="replace").splitlines()
    return [json.loads(line) for line in lines if line.startswith("{") and '"audit"' in line]


def test_an_actor_token_names_the_runtime_in_act(served: Runtime, provider: dict, upstream: Upstream) -> None:
    """With `actor`, the runtime's own client-credentials token goes along as the actor token:
    the upstream sees the caller as `sub` and the runtime (sid1) in `act`, checked against the
    provider's keys. The provider's policy lets carol be exchanged only so."""
    for user in ("alice", "carol"):
        token = login(provider, user)
        result = call(served, token, "my_issues_delegated")
        assert result.get("isError") is not True, result
        assert result["structuredContent"]["sub"] == user
        assert result["structuredContent"]["act"] == {"sub": "sid1"}
        assert not any(token in h for h in upstream.seen)
    assert call(served, login(provider, "carol"), "my_issues")["isError"] is True


def read(rt: Runtime, token: str, uri: str) -> dict:
    """A raw 2026-07-28 resources/read with `token`; the JSON-RPC response."""
    headers, body = modern_request(1, "resources/list")
    headers["Mcp-Method"], body["method"], headers["Mcp-Name"] = "resources/read", "resources/read", uri
    body["params"] = {"uri": uri, "_meta": body["params"]["_meta"]}
    headers["Authorization"] = f"Bearer {token}"
    r = httpx2.post(rt.url, headers=headers, json=body, timeout=30)
    assert r.status_code == 200, r.text
    return r.json()


def test_resources_and_templates_are_read_as_each_caller(served: Runtime, provider: dict, upstream: Upstream) -> None:
    """`http.auth` on resources and templates: token exchange reads as the caller (never from a
    shared cache), client credentials as the service (cached); a refusal is a readable error."""
    alice, bob, carol = login(provider, "alice"), login(provider, "bob"), login(provider, "carol")
    for user, token in (("alice", alice), ("bob", bob), ("alice", alice)):
        for uri in ("tracker://me", "tracker://issues/7"):
            contents = read(served, token, uri)["result"]["contents"][0]
            assert json.loads(contents["text"])["sub"] == user, contents
    assert exchanges(served) == {"ok": 2, "cached": 4, "refused": 0, "error": 0}
    for _ in range(2):
        contents = read(served, alice, "tracker://service")["result"]["contents"][0]
        assert json.loads(contents["text"])["sub"] == "sid1"
    assert exchanges(served)["ok"] == 3, "the service's read is cached: one token, one upstream call"
    assert sum(h != "" for h in upstream.seen) == len(upstream.seen) == 7
    assert not any(t in h for h in upstream.seen for t in (alice, bob)), "the caller's token never goes upstream"
    refused = read(served, carol, "tracker://me")
    assert "refused the token exchange for the caller" in refused["error"]["message"], refused
    assert len(upstream.seen) == 7, "no read without the token"


def test_a_resource_read_as_each_caller_cannot_be_watched(served: Runtime, provider: dict) -> None:
    headers = dict(JSON_AND_SSE, Authorization=f"Bearer {login(provider, 'alice')}")
    r = httpx2.post(served.url, headers=headers, json=initialize_body(), timeout=10)
    assert r.status_code == 200, r.text
    own = dict(headers, **{"Mcp-Session-Id": r.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-11-25"})
    for uri, refused in (("tracker://me", True), ("tracker://service", False)):
        body = {"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe", "params": {"uri": uri}}
        r = httpx2.post(served.url, headers=own, json=body, timeout=10)
        answer = r.json() if r.headers["content-type"].startswith("application/json") else json.loads(
            next(line[5:] for line in r.text.splitlines() if line.startswith("data:"))
        )
        if refused:
            assert answer["error"]["code"] == -32602 and "read as each caller" in answer["error"]["message"], answer
        else:
            assert answer["result"] == {}, answer


def test_client_credentials_tell_the_upstream_the_caller_only_as_declared(
    served: Runtime, provider: dict, upstream: Upstream
) -> None:
    """The service's own token, and the caller's `sub` in the declared `claim` header; a claim
    the caller's token lacks refuses the call rather than sending it without."""
    for user in ("alice", "bob"):
        result = call(served, login(provider, user), "service_issues_for_caller")
        assert result.get("isError") is not True, result
        assert (result["structuredContent"]["sub"], result["structuredContent"]["caller"]) == ("sid1", user)
    assert call(served, login(provider, "alice"), "service_issues")["structuredContent"]["caller"] is None
    seen = len(upstream.seen)
    refused = call(served, login(provider, "alice"), "service_issues_by_department")
    assert refused["isError"] is True
    assert "no `org.department` claim" in refused["content"][0]["text"], refused
    assert len(upstream.seen) == seen, "not sent without the claim"


async def test_a_jwt_bearer_assertion_gets_the_key_holders_token(
    served: Runtime, provider: dict, upstream: Upstream
) -> None:
    """`jwtBearer`: the runtime signs an assertion (iss = sub = kube-mcp-jwt, kid, aud = the
    issuer) with the key the provider registered for kube-mcp-jwt; the provider's token names
    that subject, one token serves every caller, and an assertion with an unknown key id is
    refused as a tool error the model can read."""
    alice, bob = login(provider, "alice"), login(provider, "bob")
    for i, token in enumerate((alice, bob, alice)):
        result = call(served, token, "profile_issues", i)
        assert result.get("isError") is not True, result
        content = result["structuredContent"]
        assert (content["sub"], content["aud"]) == ("kube-mcp-jwt", [provider["issuer"]]), content
    assert exchanges(served) == {"ok": 1, "cached": 2, "refused": 0, "error": 0}
    assert len(upstream.seen) == 3 and len(set(upstream.seen)) == 1, "one token, not per caller"
    assert not any(alice in h or bob in h for h in upstream.seen)
    async with Client(bearer_transport(served, "modern", alice), mode=MODERN, cache=None, read_timeout_seconds=30) as client:
        result = await client.call_tool("profile_issues_unknown_key", {})
    assert result.is_error is True
    text = result.content[0].text
    assert text.startswith(
        "the authorization server refused the token request (JWT bearer assertion) (400 invalid_request): "
        "the server did not accept the signed assertion"
    ), text
    assert "assertion invalid" in text, text
    assert len(upstream.seen) == 3, "no call without the token, and no fallback"
    assert exchanges(served)["refused"] == 1


SA_AUDIENCE = "https://kube-mcp.example.test/assertion"  # the projected token's audience
SA_MANIFEST = """\
apiVersion: kube-mcp.io/v1alpha1
kind: MCPServer
metadata: {name: exchange-sa}
spec:
  auth:
    issuer: ISSUER
    audiences: [mcp-login]
  tools:
    - name: my_issues_sa
      description: The caller's issues, the client authenticated by the pod's ServiceAccount token.
      http:
        url: UPSTREAM/me
        auth:
          tokenExchange:
            tokenUrl: TOKEN_URL
            client: {id: kube-mcp-jwt, serviceAccountToken: {audience: SA_AUDIENCE}}
            audience: TRACKER
    - name: unmounted_sa
      description: A ServiceAccount token for an audience nothing mounted.
      http:
        url: UPSTREAM/me
        auth:
          tokenExchange:
            tokenUrl: TOKEN_URL
            client: {id: kube-mcp-jwt, serviceAccountToken: {audience: nobody-mounted-this}}
            audience: TRACKER
"""


def token_dir_name(audience: str) -> str:
    """The runtime's and operator's directory of `audience`'s token (`token_dir_name` in
    runtime/declaration/src/service_account_tokens.rs): `aud-` and FNV-1a 64 of it in hex."""
    value = 0xCBF29CE484222325
    for byte in audience.encode():
        value = ((value ^ byte) * 0x100000001B3) % (1 << 64)
    return f"aud-{value:016x}"


def assertion(provider: dict, key_pem: str | bytes | None = None) -> str:
    """A JWT as the provider wants a client assertion of kube-mcp-jwt: iss = sub = the client,
    aud = the issuer, a short life and a fresh jti, signed with the client's registered key
    (or `key_pem`, one it does not know)."""
    now = int(time.time())
    claims = {"iss": "kube-mcp-jwt", "sub": "kube-mcp-jwt", "aud": provider["issuer"], "iat": now, "exp": now + 600,
              "jti": uuid.uuid4().hex}  # fmt: skip
    key = key_pem if key_pem is not None else provider["key"].read_text()
    return jwt.encode(claims, key, algorithm="RS256", headers={"kid": "kube-mcp-key"})


def test_a_projected_service_account_token_is_the_client_assertion_and_is_reread(
    start: StartRuntime, tmp_path: Path, provider: dict, upstream: Upstream
) -> None:
    """`client.serviceAccountToken`: the runtime sends the file the operator would mount for the
    audience (a projected Kubernetes ServiceAccount token, which the kubelet rotates) as the
    RFC 7523 client assertion. There is no kubelet here: the file stands in for the projected
    token, a JWT signed with the key the provider registered for the kube-mcp-jwt client (a real
    projected token is signed by the cluster's ServiceAccount issuer, which the authorization
    server would have to trust instead). Checked: the exchange works; a rewritten file (the
    kubelet's rotation) is read by the next token request that is not a cache hit, while cached
    tokens need no file; a file nothing mounted is a tool error naming it."""
    tokens = tmp_path / "tokens"
    token_file = tokens / token_dir_name(SA_AUDIENCE) / "token"
    token_file.parent.mkdir(parents=True)
    token_file.write_text(assertion(provider) + "\n")  # the kubelet writes none, a person might
    manifest = tmp_path / "sa-manifest" / "exchange-sa.yaml"
    manifest.parent.mkdir()
    manifest.write_text(SA_MANIFEST.replace("TOKEN_URL", provider["meta"]["token_endpoint"])
                        .replace("ISSUER", provider["issuer"]).replace("UPSTREAM", upstream.url)
                        .replace("TRACKER", TRACKER).replace("SA_AUDIENCE", SA_AUDIENCE))  # fmt: skip
    rt = start(manifest, ("--service-account-tokens-dir", str(tokens)), "sa")
    alice, bob = login(provider, "alice"), login(provider, "bob")

    result = call(rt, alice, "my_issues_sa")
    assert result.get("isError") is not True, result
    assert result["structuredContent"]["sub"] == "alice"
    assert exchanges(rt) == {"ok": 1, "cached": 0, "refused": 0, "error": 0}

    # Rotated to a token the provider does not accept: bob's exchange (no cached token) reads
    # it and is refused; alice's cached token needs no file.
    other_key = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    foreign = assertion(provider, other_key)
    token_file.write_text(foreign)
    refused = call(rt, bob, "my_issues_sa", 2)
    assert refused["isError"] is True, refused
    text = refused["content"][0]["text"]
    assert text.startswith("the authorization server refused the token exchange for the caller"), text
    assert foreign not in text and foreign.split(".")[2] not in text, text
    assert call(rt, alice, "my_issues_sa", 3)["structuredContent"]["sub"] == "alice"
    assert exchanges(rt) == {"ok": 1, "cached": 1, "refused": 1, "error": 0}

    # Rotated again, to a token the provider accepts: bob's next exchange works.
    token_file.write_text(assertion(provider))
    result = call(rt, bob, "my_issues_sa", 4)
    assert result.get("isError") is not True, result
    assert result["structuredContent"]["sub"] == "bob"
    assert exchanges(rt)["ok"] == 2

    # An audience nothing mounted: a tool error the model can read, naming the file.
    missing = call(rt, alice, "unmounted_sa", 5)
    assert missing["isError"] is True, missing
    text = missing["content"][0]["text"]
    expected = tokens / token_dir_name("nobody-mounted-this") / "token"
    assert f"the ServiceAccount token file {expected} is missing" in text, text
    assert "projected token" in text, text
    assert exchanges(rt)["error"] == 1
    # No token of either kind reached the upstream in the clear but the exchanged ones.
    assert not any(alice in h or bob in h or foreign in h for h in upstream.seen)
