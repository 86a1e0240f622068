"""Approval gates (`tools[].approval`) of a local `serve --approvals-dir`, driven by the official
Python SDK against the real binary, with the approver's side done by the real CLI
(`mcp-runtime approvals list --json`, `approve`, `deny`). The guarded tools call a loopback
upstream that records what it received, so "the call ran once, with exactly the arguments
approved" is checked where it happens.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import pytest
from harness import MANIFESTS, Runtime, runtime_bin, start_runtime
from http_upstream import Upstream
from mcp import Client

MODES = ["2026-07-28", "legacy"]
META = "kube-mcp.io/authorization"
CLI_TIMEOUT_S = 10.0

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def upstream():
    server = Upstream().start()
    yield server
    server.stop()


@pytest.fixture
def served(tmp_path: Path, upstream: Upstream):
    manifest = tmp_path / "src" / "approvals.yaml"
    manifest.parent.mkdir()
    manifest.write_text((MANIFESTS / "approvals.yaml").read_text().replace("@UPSTREAM@", upstream.base))
    approvals = tmp_path / "approvals"
    rt = start_runtime(tmp_path / "run", manifest, ("--approvals-dir", str(approvals)))
    try:
        yield rt, approvals
    finally:
        problem = rt.stop()
        assert problem is None, problem


def cli(*args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(runtime_bin()), *args], capture_output=True, text=True, timeout=CLI_TIMEOUT_S, stdin=subprocess.DEVNULL
    )
    assert (done.returncode == 0) == ok, f"{args}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


def listed(approvals: Path) -> list[dict]:
    return json.loads(cli("approvals", "list", "--approvals-dir", str(approvals), "--json").stdout)


def text_of(result) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


def denial(result) -> dict:
    """The structured denial in the result's `_meta`, and the id its text names."""
    assert result.is_error, text_of(result)
    meta = result.model_dump(mode="json", by_alias=True).get("_meta") or {}
    assert META in meta, meta
    found = meta[META]
    assert found["reason"] == "insufficient_authorization"
    assert found["authorizationContextId"] in text_of(result)
    return found


def seen(upstream: Upstream, prefix: str) -> list[dict]:
    with upstream.state.lock:
        return [r for r in upstream.state.seen if r["target"].startswith(prefix)]


async def call(rt: Runtime, mode: str, tool: str, args: dict):
    async with Client(rt.url, mode=mode, cache=None) as client:
        return await client.call_tool(tool, args)


@pytest.mark.parametrize("mode", MODES)
async def test_an_approved_call_runs_once_with_the_approved_arguments(served, upstream, mode):
    rt, approvals = served
    target = f"/echo/namespaces/prod-{mode}"
    args = {"name": f"prod-{mode}", "force": True}
    first = denial(await call(rt, mode, "delete_namespace", args))
    approval_id = first["authorizationContextId"]
    hint = first["remediationHints"][0]
    assert hint["state"] == "pending" and hint["approvers"] == {"group": "oncall"}
    assert hint["approve"] == f"mcp-runtime approve {approval_id} --approvals-dir {approvals}"
    # Asking again before anyone decided reuses the pending approval.
    assert denial(await call(rt, mode, "delete_namespace", args))["authorizationContextId"] == approval_id
    [row] = listed(approvals)
    assert row["id"] == approval_id and row["tool"] == "delete_namespace"
    assert row["principal"] == "anonymous" and row["state"] == "pending"
    assert row["message"] == f"Delete namespace prod-{mode}?"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", row["expires"]), row
    assert seen(upstream, target) == [], "nothing runs before the approval"

    decided = cli("approve", approval_id, "--approvals-dir", str(approvals))
    assert f"approved {approval_id}" in decided.stdout

    ran = await call(rt, mode, "delete_namespace", args)
    assert not ran.is_error, text_of(ran)
    [received] = seen(upstream, target)
    assert received["method"] == "POST"
    assert json.loads(received["body"]) == args
    [row] = listed(approvals)
    assert row["state"] == "used" and row["decidedBy"]

    # The approval is spent: the same call asks again, and nothing more reaches the upstream.
    again = denial(await call(rt, mode, "delete_namespace", args))
    assert again["authorizationContextId"] != approval_id
    assert again["remediationHints"][0]["state"] == "pending"
    assert len(seen(upstream, target)) == 1


async def test_other_arguments_are_another_call(served, upstream):
    rt, approvals = served
    mode = MODES[0]
    approved = denial(await call(rt, mode, "delete_namespace", {"name": "alpha"}))["authorizationContextId"]
    cli("approve", approved, "--approvals-dir", str(approvals))
    for changed in ({"name": "beta"}, {"name": "alpha", "force": False}):
        other = denial(await call(rt, mode, "delete_namespace", changed))
        assert other["authorizationContextId"] != approved, changed
    assert seen(upstream, "/echo/namespaces/beta") == []
    assert seen(upstream, "/echo/namespaces/alpha") == []
    # The approved call itself still runs, once.
    ran = await call(rt, mode, "delete_namespace", {"name": "alpha"})
    assert not ran.is_error, text_of(ran)
    assert len(seen(upstream, "/echo/namespaces/alpha")) == 1


async def test_a_denied_call_is_refused(served, upstream):
    rt, approvals = served
    mode = "legacy"
    asked = denial(await call(rt, mode, "delete_namespace", {"name": "gamma"}))["authorizationContextId"]
    cli("deny", asked, "--approvals-dir", str(approvals))
    refused = await call(rt, mode, "delete_namespace", {"name": "gamma"})
    found = denial(refused)
    assert found["remediationHints"][0]["state"] == "denied"
    assert "denied this call" in text_of(refused)
    assert seen(upstream, "/echo/namespaces/gamma") == []
    # A decision is final: approving a denied approval is refused, with who denied it.
    late = cli("approve", asked, "--approvals-dir", str(approvals), ok=False)
    assert "already denied by" in late.stderr


async def test_an_expired_approval_refuses(served, upstream):
    rt, approvals = served
    mode = MODES[0]
    asked = denial(await call(rt, mode, "quick_delete", {"name": "delta"}))["authorizationContextId"]
    cli("approve", asked, "--approvals-dir", str(approvals))
    time.sleep(2.5)  # the tool's ttlMs is 2000
    late = await call(rt, mode, "quick_delete", {"name": "delta"})
    found = denial(late)
    assert found["remediationHints"][0]["state"] == "expired"
    assert f"approval {asked} expired" in text_of(late)
    assert seen(upstream, "/echo/quick/delta") == []
    # Nobody may approve after the expiry either.
    time.sleep(2.5)
    fresh = found["authorizationContextId"]
    refused = cli("approve", fresh, "--approvals-dir", str(approvals), ok=False)
    assert "expired at" in refused.stderr


def test_the_cli_refuses_unknown_ids_and_missing_directories(tmp_path: Path):
    assert "--approvals-dir" in cli("approve", "--help").stdout
    empty = tmp_path / "approvals"
    empty.mkdir()
    unknown = cli("approve", "apr-0000000000000000", "--approvals-dir", str(empty), ok=False)
    assert "no approval `apr-0000000000000000`" in unknown.stderr
    bad = cli("deny", "../etc/passwd", "--approvals-dir", str(empty), ok=False)
    assert "is not an approval id" in bad.stderr
    missing = cli("approvals", "list", "--approvals-dir", str(tmp_path / "nowhere"), ok=False)
    assert "nowhere" in missing.stderr


def test_a_manifest_with_approvals_needs_a_store(tmp_path: Path, upstream):
    manifest = tmp_path / "approvals.yaml"
    manifest.write_text((MANIFESTS / "approvals.yaml").read_text().replace("@UPSTREAM@", upstream.base))
    done = subprocess.run(
        [str(runtime_bin()), "serve", "--manifest", str(manifest), "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0"],
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode != 0
    assert "no approval store is configured" in done.stderr
