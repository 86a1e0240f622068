"""`mcp-runtime import openapi` against a real service, end to end.

A FastAPI app (openapi_upstream.py) runs under uvicorn on 127.0.0.1 and publishes its OpenAPI
3.1 document; the real `mcp-runtime import openapi` turns it into a manifest, `mcp-runtime
check` accepts it, and `mcp-runtime serve` serves it. Through the official Python SDK, every
imported tool must make the same upstream request as a direct call with the same values (method,
path, query, headers, JSON or form body), and answers and errors must map as declared. Does
process, socket and file I/O; every wait is bounded.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx2
import pytest
from harness import Runtime, free_port, runtime_bin, start_runtime
from mcp import Client
from openapi_upstream import API_KEY

HERE = Path(__file__).resolve().parent
READY_S = 15.0
MODES = ["2026-07-28", "legacy"]


@pytest.fixture(scope="module")
def upstream():
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "openapi_upstream:app", "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"],
        cwd=HERE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + READY_S
        while True:
            if proc.poll() is not None:
                pytest.fail(f"uvicorn exited with {proc.returncode}", pytrace=False)
            try:
                if httpx2.get(f"{base}/openapi.json", timeout=1).status_code == 200:
                    break
            except httpx2.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("uvicorn did not start", pytrace=False)
            time.sleep(0.05)
        yield base
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)


def run(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([str(runtime_bin()), *args], input=stdin, capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def imported(upstream, tmp_path_factory):
    """The spec as the service publishes it, and the manifest imported from it."""
    work = tmp_path_factory.mktemp("openapi-import")
    spec = work / "openapi.json"
    spec.write_bytes(httpx2.get(f"{upstream}/openapi.json", timeout=5).content)
    assert json.loads(spec.read_text())["openapi"].startswith("3.1")
    done = run("import", "openapi", str(spec), "--base-url", upstream, "--secret", "APIKeyHeader=items-api/key", "--methods", "all")
    assert done.returncode == 0, done.stderr.decode()
    manifest = work / "items.yaml"
    manifest.write_bytes(done.stdout)
    return spec, manifest, done.stderr.decode()


@pytest.fixture(scope="module")
def served(imported, tmp_path_factory):
    _, manifest, _ = imported
    work = tmp_path_factory.mktemp("openapi-serve")
    secrets = work / "secrets" / "items-api"
    secrets.mkdir(parents=True)
    (secrets / "key").write_text(API_KEY)
    rt = start_runtime(work / "run", manifest, ("--secrets-dir", str(work / "secrets"), "--log-level", "debug"))
    try:
        yield rt
    finally:
        rt.stop()
        assert API_KEY not in rt.log.read_text(errors="replace"), "the API key reached the runtime's log"


def test_the_summary_accounts_for_every_operation(imported):
    spec, manifest, stderr = imported
    operations = sum(
        1 for item in json.loads(spec.read_text())["paths"].values() for method in item if method in {"get", "post", "put", "delete", "patch"}
    )  # fmt: skip
    assert stderr.strip() == f"{operations} operations: {operations - 1} tools, 1 skipped: multipart body"
    text = manifest.read_text()
    assert text.startswith("# Imported by mcp-runtime import openapi.\n")
    assert "#   skipped POST /upload (upload): multipart body" in text
    assert "secrets:\n  - items-api\n" in text
    check = run("check", str(manifest))
    assert check.returncode == 0, check.stdout.decode()
    assert "ok (9 tools" in check.stdout.decode()


def test_strict_refuses_and_check_reports_with_paths(imported, tmp_path):
    spec, manifest, _ = imported
    strict = run("import", "openapi", str(spec), "--base-url", "http://127.0.0.1:1", "--strict", "--methods", "all")
    assert strict.returncode == 1
    assert b"--strict" in strict.stderr and b"multipart body" in strict.stderr
    no_base = run("import", "openapi", str(spec))
    assert no_base.returncode == 1 and b"pass --base-url" in no_base.stderr, no_base.stderr
    broken = tmp_path / "broken.yaml"
    broken.write_text(manifest.read_text().replace("url: http://127.0.0.1", "url: http://{host}", 1))
    check = run("check", "--json", str(manifest), str(broken))
    assert check.returncode == 1
    verdicts = json.loads(check.stdout)
    assert [v["ok"] for v in verdicts] == [True, False]
    assert verdicts[1]["errors"][0]["path"] == "spec.tools[0].http.url", verdicts[1]


def tool_names(manifest: bytes) -> list[str]:
    """The tools of an imported manifest, in order (the importer writes each at this indent)."""
    return re.findall(r"^  - name: (\S+)$", manifest.decode(), re.MULTILINE)


def test_a_first_import_is_read_only_and_the_selection_is_checked(imported):
    spec, _, _ = imported
    paths = json.loads(spec.read_text())["paths"]
    methods = [m for item in paths.values() for m in item if m in {"get", "post", "put", "delete", "patch"}]
    reads = methods.count("get")
    base = ("import", "openapi", str(spec), "--base-url", "http://127.0.0.1:1", "--secret", "APIKeyHeader=items-api/key")
    first = run(*base)
    assert first.returncode == 0, first.stderr.decode()
    writes = len(methods) - reads
    assert first.stderr.decode().strip() == (
        f"{len(methods)} operations: {reads} tools, {writes} left out by filters, {writes} of them writes "
        "(read-only by default: --methods all imports them)"
    )
    assert tool_names(first.stdout) == ["list_items", "get_item", "whoami", "admin_stats", "flaky"]
    assert first.stdout.count(b"readOnlyHint: true") == reads
    # Naming operations imports them, writes included; comma lists and repeats add up.
    chosen = run(*base, "--operation", "create_item,get_item", "--operation", "login")
    assert chosen.returncode == 0, chosen.stderr.decode()
    assert tool_names(chosen.stdout) == ["create_item", "get_item", "login"]
    writes_only = run(*base, "--methods", "post,PUT", "--exclude-path", "/upload,/login")
    assert tool_names(writes_only.stdout) == ["create_item", "replace_item"]
    for args, message in [
        (("--methods", "GET,FETCH"), "`FETCH` is not a method the importer imports"),
        (("--operation", "create_itm"), "--operation `create_itm`: no operation has this operationId"),
        (("--include-tag", "items"), "--include-tag `items`: no operation has this tag"),
        (("--include-path", "/item"), "--include-path `/item`: matches no path of the spec"),
        (("--operation", "create_item", "--methods", "GET"), "--operation `create_item` is a POST request, which --methods leaves out"),
        (("--include-path", "/upload"), "the selection keeps none of the spec's 10 operations: only GET and HEAD"),
    ]:
        refused = run(*base, *args)
        assert refused.returncode != 0 and message in refused.stderr.decode(), (args, refused.stderr.decode())
        assert refused.stdout == b"", args


def tool_client(rt: Runtime, mode: str) -> Client:
    return Client(rt.url, mode=mode, cache=None)


def text_of(result) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


def seen(upstream: str) -> list[dict]:
    return httpx2.get(f"{upstream}/_seen", timeout=5).json()


def clear(upstream: str) -> None:
    httpx2.delete(f"{upstream}/_seen", timeout=5)


def comparable(request: dict) -> dict:
    """A recorded request without what legitimately differs between two HTTP clients."""
    body = request["body"]
    if request["headers"].get("content-type", "").startswith("application/json") and body:
        body = json.loads(body)
    return {**request, "body": body, "query": sorted(map(tuple, request["query"]))}


# (tool, arguments, the same call made directly: method, path, httpx keyword arguments)
CASES = [
    ("list_items", {"q": "ham", "limit": 5, "tags": ["tools", "x y"]}, ("GET", "/items", {"params": {"q": "ham", "limit": 5, "tags": ["tools", "x y"]}})),
    ("list_items", {}, ("GET", "/items", {})),
    ("get_item", {"item_id": 1, "x_request_id": "req-7"}, ("GET", "/items/1", {"headers": {"x-request-id": "req-7"}})),
    (
        "create_item",
        {"name": 'a "quoted", name', "price": 2.5, "tags": ["t"], "dry_run": True},
        ("POST", "/items", {"params": {"dry_run": "true"}, "json": {"name": 'a "quoted", name', "price": 2.5, "tags": ["t"]}}),
    ),
    ("replace_item", {"item_id": 1, "name": "hammer", "price": 9.5, "tags": ["tools"], "note": None}, ("PUT", "/items/1", {"json": {"name": "hammer", "price": 9.5, "tags": ["tools"], "note": None}})),
    ("login", {"username": "ann & bob", "remember": True}, ("POST", "/login", {"data": {"username": "ann & bob", "remember": "true"}})),
    ("whoami", {"session": "s 1;x"}, ("GET", "/whoami", {"headers": {"cookie": "session=s%201%3Bx"}})),
    ("admin_stats", {}, ("GET", "/admin/stats", {"headers": {"x-api-key": API_KEY}})),
]  # fmt: skip


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
async def test_each_tool_sends_what_a_direct_call_sends(served, upstream, mode, case):
    tool, args, (method, path, direct) = case
    clear(upstream)
    expected = httpx2.request(method, f"{upstream}{path}", timeout=5, **direct)
    [direct_request] = seen(upstream)
    clear(upstream)
    async with tool_client(served, mode) as c:
        result = await c.call_tool(tool, args)
    [tool_request] = seen(upstream)
    assert comparable(tool_request) == comparable(direct_request)
    assert not result.is_error, text_of(result)
    answer = expected.json()
    if isinstance(answer, list):
        assert result.structured_content == {"result": answer}
    else:
        assert result.structured_content == answer
    assert API_KEY not in json.dumps(result.model_dump(mode="json"))


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_errors_carry_the_status_and_the_problem_detail(served, upstream, mode):
    async with tool_client(served, mode) as c:
        missing = await c.call_tool("get_item", {"item_id": 404})
        refused = await c.call_tool("create_item", {"name": "x", "price": -1})
        down = await c.call_tool("flaky", {})
        invalid = await c.call_tool("get_item", {"item_id": "one"})
    assert missing.is_error
    prefix = "The API refused the call with HTTP 404: "
    assert text_of(missing).startswith(prefix), text_of(missing)
    assert json.loads(text_of(missing).removeprefix(prefix)) == {"detail": "Item 404 not found"}
    assert refused.is_error and "HTTP 422" in text_of(refused) and "price must not be negative" in text_of(refused)
    assert down.is_error
    prefix = "The API failed with HTTP 503: "
    assert text_of(down).startswith(prefix), text_of(down)
    assert json.loads(text_of(down).removeprefix(prefix)) == {"detail": "database unavailable"}
    # Arguments are checked against the imported inputSchema before the API is called.
    assert invalid.is_error and "invalid arguments" in text_of(invalid), text_of(invalid)


@pytest.mark.anyio
async def test_annotations_and_names_follow_the_methods(served):
    async with tool_client(served, "2026-07-28") as c:
        tools = {t.name: t for t in (await c.list_tools()).tools}
    # FastAPI's generated operationId `delete_item_items__item_id__delete`, within MCP's rules.
    assert set(tools) == {"list_items", "get_item", "create_item", "replace_item", "delete_item_items_item_id_delete", "login", "whoami", "admin_stats", "flaky"}
    assert tools["get_item"].annotations.read_only_hint is True
    assert tools["replace_item"].annotations.idempotent_hint is True
    delete = tools["delete_item_items_item_id_delete"]
    assert delete.annotations.destructive_hint is True and delete.annotations.idempotent_hint is True
    assert tools["create_item"].input_schema["required"] == ["name", "price"]
    # `Item` is written once in the manifest (spec.schemas) and reaches the client inside the
    # tool's own schema, as $defs: self-contained, nothing to resolve elsewhere.
    items = tools["list_items"].output_schema
    assert items["properties"]["result"]["items"] == {"$ref": "#/$defs/Item"}
    assert items["$defs"]["Item"]["properties"]["name"]["type"] == "string"
    assert tools["list_items"].title == "List items"
