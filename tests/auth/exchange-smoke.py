"""Smoke check of the token-exchange authorization server (tests/auth/exchange-server.sh).

Proves against the running server, with plain HTTP and nothing of kube-mcp: a user logs in
(authorization code) and gets a JWT access token; the runtime's client exchanges it (RFC 8693),
authenticated by client secret (Basic and form post) and by private_key_jwt (RFC 7523 2.2); the
exchanged token verifies with the server's JWKS and carries the requested `aud`, the user's `sub`
and, with an actor token, `act`; client_credentials works; refusals are what the server says.
It also records what the server does not do (printed as `unsupported:` lines).

Run: tests/auth/exchange-server.sh smoke   (starts the server, runs this with the project venv,
stops it), or with a running server:  PYTHON tests/auth/exchange-smoke.py ISSUER CLIENT_KEY_PEM
Does HTTP I/O on 127.0.0.1 only, every request with a timeout. Exit 1 if a check fails.
"""

from __future__ import annotations

import json
import sys
import time
import uuid
from urllib.parse import parse_qs, urljoin, urlparse

import httpx2
import jwt
from cryptography.hazmat.primitives.serialization import load_pem_private_key

# The fixtures of tests/auth/exchange/main.go and users.json.
LOGIN_CLIENT = ("mcp-login", "mcp-login-secret")
SECRET_CLIENT = ("kube-mcp", "kube-mcp-secret")
JWT_CLIENT, JWT_KID = "kube-mcp-jwt", "kube-mcp-key"
SERVICE_USER = ("sid1", "verysecret")  # the example storage's built-in client_credentials user
REDIRECT = "http://127.0.0.1/callback"
USERS = {"alice": "alice-password", "bob": "bob-password", "carol": "carol-password"}

TE = "urn:ietf:params:oauth:grant-type:token-exchange"
AT = "urn:ietf:params:oauth:token-type:access_token"
UPSTREAM = "http://127.0.0.1:9/tracker"  # an audience; nothing needs to listen there

passed = failed = 0


def check(name: str, ok: bool, detail: object = "") -> None:
    global passed, failed
    if ok:
        passed += 1
        print(f"ok    {name}")
    else:
        failed += 1
        print(f"FAIL  {name}: {detail}")


def note(kind: str, text: str) -> None:
    print(f"{kind}: {text}")


def main(issuer: str, key_pem: str) -> int:
    http = httpx2.Client(timeout=10, follow_redirects=False)
    meta = http.get(f"{issuer}/.well-known/openid-configuration").json()
    token_url = meta["token_endpoint"]
    jwks = jwt.PyJWKSet.from_dict(http.get(meta["jwks_uri"]).json())
    key = load_pem_private_key(open(key_pem, "rb").read(), password=None)
    check("discovery lists the token-exchange grant", TE in meta["grant_types_supported"], meta["grant_types_supported"])
    check("discovery lists private_key_jwt", "private_key_jwt" in meta["token_endpoint_auth_methods_supported"])

    def verify(token: str, audience: str | None = None) -> dict:
        """Signature by the server's JWKS, issuer, expiry; and `aud` if given."""
        kid = jwt.get_unverified_header(token)["kid"]
        signing = next(k for k in jwks.keys if k.key_id == kid)
        return jwt.decode(
            token,
            signing.key,
            algorithms=["RS256"],
            issuer=issuer,
            audience=audience,
            options={"verify_aud": audience is not None},
        )

    def login(user: str) -> str:
        """Authorization code flow through the example's login form; returns the access token."""
        r = http.get(
            meta["authorization_endpoint"],
            params={"client_id": LOGIN_CLIENT[0], "redirect_uri": REDIRECT, "response_type": "code",
                    "scope": "openid profile", "state": "s1"},
        )
        assert r.status_code == 302, (r.status_code, r.text)
        login_url = urljoin(issuer, r.headers["location"])
        request_id = parse_qs(urlparse(login_url).query)["authRequestID"][0]
        r = http.post(login_url.split("?")[0], data={"id": request_id, "username": user, "password": USERS[user]})
        assert r.status_code == 302, (r.status_code, r.text)
        r = http.get(urljoin(issuer, r.headers["location"]))  # the OP's callback -> redirect_uri
        assert r.status_code == 302 and r.headers["location"].startswith(REDIRECT), (r.status_code, r.headers)
        code = parse_qs(urlparse(r.headers["location"]).query)["code"][0]
        r = http.post(token_url, auth=LOGIN_CLIENT,
                      data={"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT})
        assert r.status_code == 200, r.text
        return r.json()["access_token"]

    def assertion(aud: str | list[str]) -> str:
        now = int(time.time())
        return jwt.encode(
            {"iss": JWT_CLIENT, "sub": JWT_CLIENT, "aud": aud, "iat": now, "exp": now + 60, "jti": str(uuid.uuid4())},
            key, algorithm="RS256", headers={"kid": JWT_KID},
        )

    def exchange(subject: str, auth: str = "basic", **extra: str) -> httpx2.Response:
        form = {"grant_type": TE, "subject_token": subject, "subject_token_type": AT,
                "requested_token_type": AT, "audience": UPSTREAM, "scope": "issues:read", **extra}
        if auth == "basic":
            return http.post(token_url, auth=SECRET_CLIENT, data=form)
        if auth == "post":
            return http.post(token_url, data={**form, "client_id": SECRET_CLIENT[0], "client_secret": SECRET_CLIENT[1]})
        aud = {"jwt": issuer, "jwt-token-url": token_url, "jwt-both": [issuer, token_url]}[auth]
        return http.post(token_url, data={
            **form, "client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
            "client_assertion": assertion(aud)})

    # --- the user's (inbound) tokens -------------------------------------------------------------
    alice, bob, carol = login("alice"), login("bob"), login("carol")
    claims = verify(alice)
    check("alice's login token is a JWT of this issuer with sub=alice", claims["sub"] == "alice", claims)
    note("info", f"login token claims: {json.dumps(claims, sort_keys=True)}")

    # --- token exchange, three client authentications ----------------------------------------------
    for auth in ("basic", "post", "jwt"):
        r = exchange(alice, auth)
        check(f"exchange by {auth}: 200", r.status_code == 200, r.text)
        if r.status_code != 200:
            continue
        body = r.json()
        c = verify(body["access_token"], audience=UPSTREAM)
        client = JWT_CLIENT if auth == "jwt" else SECRET_CLIENT[0]
        check(f"exchange by {auth}: aud=[upstream], sub=alice, client_id={client}",
              c["aud"] == [UPSTREAM] and c["sub"] == "alice" and c["client_id"] == client, c)
        check(f"exchange by {auth}: issued_token_type access_token, Bearer, expires_in",
              body.get("issued_token_type") == AT and body.get("token_type") == "Bearer" and body.get("expires_in", 0) > 0, body)
        if auth == "basic":
            note("info", f"exchange response: {json.dumps({k: v for k, v in body.items() if k != 'access_token'})}")
            note("info", f"exchanged token claims: {json.dumps(c, sort_keys=True)}")

    r = exchange(bob)
    check("per user: bob's exchange gives sub=bob", r.status_code == 200 and verify(r.json()["access_token"], UPSTREAM)["sub"] == "bob", r.text)

    r = exchange(alice, "jwt-token-url")
    if r.status_code == 200:
        note("info", "a client assertion whose aud is only the token endpoint URL is accepted")
    else:
        note("unsupported", f"client assertion with aud = token endpoint URL only: {r.status_code} {r.text.strip()} "
             "(the library requires the issuer in aud)")

    r = exchange(alice, "jwt-both")
    check("client assertion with aud = [issuer, token endpoint URL]: 200", r.status_code == 200, r.text)

    # --- client_credentials ------------------------------------------------------------------------
    r = http.post(token_url, auth=SERVICE_USER, data={"grant_type": "client_credentials", "scope": "issues:read"})
    check("client_credentials (sid1, secret): 200", r.status_code == 200, r.text)
    service = r.json().get("access_token", "") if r.status_code == 200 else ""
    if service:
        c = verify(service)
        check("client_credentials token: JWT, sub=sid1", c["sub"] == SERVICE_USER[0], c)
        note("info", f"client_credentials token claims: {json.dumps(c, sort_keys=True)}")
    r = http.post(token_url, data={"grant_type": "client_credentials", "audience": UPSTREAM,
                                   "client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
                                   "client_assertion": assertion(issuer)})
    note("unsupported" if r.status_code != 200 else "info",
         f"client_credentials with private_key_jwt: {r.status_code} {r.text.strip()[:200]}")

    # --- delegation: actor token -> act ------------------------------------------------------------
    if service:
        r = exchange(alice, actor_token=service, actor_token_type=AT)
        check("exchange with actor_token: 200", r.status_code == 200, r.text)
        if r.status_code == 200:
            c = verify(r.json()["access_token"], UPSTREAM)
            check("exchange with actor_token: sub=alice, act={sub: sid1}", c["sub"] == "alice" and c.get("act") == {"sub": "sid1"}, c)
        r = exchange(carol, actor_token=service, actor_token_type=AT)
        check("carol (not an admin) with an actor token: 200", r.status_code == 200, r.text)

    # --- refusals ----------------------------------------------------------------------------------
    r = exchange("not-a-token")
    check("invalid subject token: refused 400", r.status_code == 400, r.text)
    note("info", f"invalid subject token -> {r.status_code} {r.text.strip()}")
    tampered = alice[:-4] + ("AAAA" if not alice.endswith("AAAA") else "BBBB")
    r = exchange(tampered)
    check("tampered subject token: refused 400", r.status_code == 400, r.text)
    r = exchange(carol)
    check("carol (not an admin) without an actor token: refused", r.status_code >= 400, r.text)
    note("info", f"carol without actor -> {r.status_code} {r.text.strip()}")
    r = http.post(token_url, auth=(SECRET_CLIENT[0], "wrong"), data={"grant_type": TE, "subject_token": alice, "subject_token_type": AT})
    check("wrong client secret: invalid_client", r.status_code in (400, 401) and r.json().get("error") == "invalid_client", r.text)
    note("info", f"wrong client secret -> {r.status_code} {r.text.strip()}")
    r = http.post(token_url, data={"grant_type": TE, "subject_token": alice, "subject_token_type": AT,
                                   "client_id": JWT_CLIENT, "client_secret": ""})
    check("private_key_jwt client without an assertion: refused", r.status_code in (400, 401), r.text)

    # --- what else the server does or not ----------------------------------------------------------
    r = exchange(alice, audience="", resource=UPSTREAM)
    if r.status_code == 200:
        c = verify(r.json()["access_token"])
        note("unsupported" if c["aud"] != [UPSTREAM] else "info",
             f"`resource` without `audience`: aud={c['aud']} (resource is accepted but not put in aud)")
    r = exchange(alice, requested_token_type="")
    if r.status_code == 200:
        note("info", f"requested_token_type omitted -> issued_token_type={r.json().get('issued_token_type')}, "
             f"refresh_token {'present' if r.json().get('refresh_token') else 'absent'}")
    r = http.post(token_url, data={"grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer",
                                   "assertion": assertion(issuer), "scope": "openid"})
    if r.status_code == 200:
        tok = r.json()["access_token"]
        note("info", f"jwt-bearer grant (RFC 7523 2.1) with iss=sub={JWT_CLIENT}: 200, token "
             f"{'JWT' if tok.count('.') == 2 else 'opaque'}, scope={r.json().get('scope')}")
    else:
        note("unsupported", f"jwt-bearer grant: {r.status_code} {r.text.strip()}")
    user_assertion = jwt.encode({"iss": JWT_CLIENT, "sub": "alice", "aud": issuer, "iat": int(time.time()),
                                 "exp": int(time.time()) + 60}, key, algorithm="RS256", headers={"kid": JWT_KID})
    r = http.post(token_url, data={"grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer", "assertion": user_assertion})
    note("unsupported" if r.status_code != 200 else "info",
         f"jwt-bearer with sub (alice) != iss: {r.status_code} {r.text.strip()[:200]}")

    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2]))
