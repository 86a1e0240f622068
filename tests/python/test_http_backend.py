"""The HTTP backend through the official Python client (`mcp`), in both protocol eras.

Does process, socket and file I/O: starts httpbin (a real third-party HTTP service) and a small
local upstream (`http_upstream.py`, for slow, huge, malformed and redirecting answers) on
127.0.0.1, writes a secrets directory, and serves `manifests/http-backend.yaml` with the real
`mcp-runtime` binary (debug log kept, checked for secrets at the end). Every wait is bounded.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
import httpx2
import pytest
from harness import REPO, Runtime, free_port, reloads, start_runtime
from http_upstream import Upstream
from mcp import Client

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "manifests" / "http-backend.yaml"
TOKEN = "s3cr3t-T0KEN-8d41f"
API_KEY = "k3y-QQQ-77a9c"
ROTATED = "r0tated-T0KEN-51c0e"
HOSTILE = "a/b c?&#"
MODES = ["2026-07-28", "legacy"]
READY_S = 15.0


def _wait_http(url: str, proc: subprocess.Popen, what: str) -> None:
    deadline = time.monotonic() + READY_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"{what} exited with {proc.returncode}", pytrace=False)
        try:
            if httpx2.get(url, timeout=1).status_code < 500:
                return
        except httpx2.TransportError:
            pass
        time.sleep(0.05)
    pytest.fail(f"{what} did not answer at {url} within {READY_S}s", pytrace=False)


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


@pytest.fixture(scope="module")
def httpbin():
    port = free_port()
    code = "import httpbin, sys; httpbin.app.run(host='127.0.0.1', port=int(sys.argv[1]), threaded=True)"
    proc = subprocess.Popen([sys.executable, "-c", code, str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_http(f"{base}/get", proc, "httpbin")
        yield base
    finally:
        _stop(proc)


@pytest.fixture(scope="module")
def upstream():
    server = Upstream().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def served(tmp_path_factory, httpbin, upstream):
    """The test manifest, served with a secrets directory and debug logging."""
    work = tmp_path_factory.mktemp("http-backend")
    secrets = work / "secrets"
    (secrets / "tracker-api").mkdir(parents=True)
    (secrets / "tracker-api" / "token").write_text(TOKEN + "\n")
    (secrets / "search-api").mkdir()
    (secrets / "search-api" / "key").write_text(API_KEY)
    manifest = work / "src" / "http-backend.yaml"
    manifest.parent.mkdir()
    manifest.write_text(MANIFEST.read_text().replace("@HTTPBIN@", httpbin).replace("@UPSTREAM@", upstream.base))
    rt = start_runtime(work / "run", manifest, ("--secrets-dir", str(secrets), "--log-level", "debug"))
    try:
        yield rt
    finally:
        rt.stop()
        text = rt.log.read_text(errors="replace")
        for secret in (TOKEN, API_KEY, ROTATED):
            assert secret not in text, "a secret reached the runtime's log"


def client(rt: Runtime, mode: str, **kwargs) -> Client:
    return Client(rt.url, mode=mode, cache=None, **kwargs)


def text_of(result) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


def assert_no_secret(result) -> None:
    dumped = json.dumps(result.model_dump(mode="json"))
    assert TOKEN not in dumped and API_KEY not in dumped and ROTATED not in dumped, dumped


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_hostile_values_are_encoded_in_path_and_query(served, upstream, mode):
    async with client(served, mode) as c:
        result = await c.call_tool("echo_path", {"id": HOSTILE, "q": HOSTILE})
    assert not result.is_error, text_of(result)
    target = json.loads(text_of(result))["target"]
    assert target == "/echo/a%2Fb%20c%3F%26%23?q=a%2Fb%20c%3F%26%23&extra=a%2Fb+c%3F%26%23", target


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_hostile_query_round_trips_through_httpbin(served, mode):
    async with client(served, mode) as c:
        result = await c.call_tool("httpbin_query", {"q": HOSTILE, "word": HOSTILE})
    assert not result.is_error, text_of(result)
    assert result.structured_content["args"] == {"q": HOSTILE}
    assert result.structured_content["path"].endswith("/anything/a/b%20c%3F&%23")


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_json_body_keeps_nested_references_and_types(served, mode):
    args = {"title": 'x", "admin": true, "y": "', "labels": ["bug", "p1"], "meta": {"priority": 3}}
    async with client(served, mode) as c:
        result = await c.call_tool("create_issue", args)
    assert not result.is_error, text_of(result)
    sent = result.structured_content
    assert sent["json"] == {
        "issue": {"title": args["title"], "labels": ["bug", "p1"], "priority": 3, "source": "kube-mcp"},
        "summary": f"{args['title']} [2 labels]",
        "watchers": [],
    }
    assert sent["contentType"] == "application/json"


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_header_from_a_secret_is_sent_and_redacted(served, mode):
    async with client(served, mode) as c:
        result = await c.call_tool("whoami", {})
        query = await c.call_tool("search", {"q": "kube"})
    assert not result.is_error, text_of(result)
    assert result.structured_content == {"authenticated": True, "token": "[redacted]"}
    assert not query.is_error, text_of(query)
    assert query.structured_content["args"] == {"api_key": "[redacted]", "q": "kube"}
    assert_no_secret(result)
    assert_no_secret(query)


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_status_mapping(served, mode):
    async with client(served, mode) as c:
        ok = await c.call_tool("httpbin_status", {"code": 204})
        missing = await c.call_tool("httpbin_status", {"code": 404})
        teapot = await c.call_tool("httpbin_status", {"code": 418})
        server_error = await c.call_tool("httpbin_status", {"code": 500})
    assert not ok.is_error and text_of(ok) == "done (204)"
    assert missing.is_error and text_of(missing) == "No such thing (404)"
    assert teapot.is_error
    assert text_of(teapot).startswith("upstream answered 418 I'm a teapot: "), text_of(teapot)
    assert len(text_of(teapot)) < 700
    assert server_error.is_error and text_of(server_error) == "upstream failed with 500; try later"


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_jq_extraction_and_output_schema(served, mode):
    async with client(served, mode) as c:
        good = await c.call_tool("slides", {})
        bad = await c.call_tool("slides_wrong_schema", {})
    assert not good.is_error, text_of(good)
    assert good.structured_content == {"author": "Yours Truly", "titles": ["Wake up to WonderWidgets!", "Overview"]}
    assert json.loads(text_of(good)) == good.structured_content  # mirrored for older clients
    assert bad.is_error
    assert "does not match its outputSchema" in text_of(bad) and "/author" in text_of(bad), text_of(bad)


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_malformed_json_is_a_tool_error(served, mode):
    async with client(served, mode) as c:
        result = await c.call_tool("malformed", {})
    assert result.is_error and "not JSON" in text_of(result), text_of(result)


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_timeout(served, upstream, mode):
    started = time.monotonic()
    async with client(served, mode) as c:
        result = await c.call_tool("slow", {"key": f"timeout-{mode}", "seconds": 5})
    assert result.is_error and text_of(result) == "the upstream did not answer within 500 ms"
    assert time.monotonic() - started < 4
    outcome = await anyio.to_thread.run_sync(upstream.wait_slow, f"timeout-{mode}", "aborted")
    assert outcome == "aborted"


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("chunked", [0, 1])
async def test_size_cap(served, mode, chunked):
    async with client(served, mode) as c:
        small = await c.call_tool("huge", {"bytes": 1000, "chunked": chunked})
        big = await c.call_tool("huge", {"bytes": 5_000_000, "chunked": chunked})
    assert not small.is_error and len(text_of(small)) == 1000
    assert big.is_error and text_of(big) == "the upstream response exceeds the limit of 100000 bytes"


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_retry_only_when_idempotent(served, upstream, mode):
    async with client(served, mode) as c:
        read = await c.call_tool("flaky_read", {"key": f"read-{mode}", "fail": 2})
        write = await c.call_tool("flaky_write", {"key": f"write-{mode}", "fail": 2})
    assert not read.is_error and read.structured_content == {"attempts": 3}
    assert write.is_error and text_of(write).startswith("upstream answered 503")
    assert upstream.state.attempts[f"write-{mode}"] == 1


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_redirects_stay_on_the_declared_host(served, upstream, mode):
    async with client(served, mode) as c:
        away = await c.call_tool("redirect_away", {})
        same = await c.call_tool("redirect_same", {})
    assert away.is_error and "redirect to another host, which is refused" in text_of(away)
    assert not any(r["target"] == "/echo/stolen" for r in upstream.state.seen)
    assert not same.is_error and same.structured_content["target"] == "/echo/followed"


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_cancellation_aborts_the_upstream_call(served, upstream, mode):
    key = f"cancel-{mode}"
    async with client(served, mode) as c:
        with anyio.move_on_after(1.0) as scope:
            await c.call_tool("slow_cancel", {"key": key, "seconds": 20})
        assert scope.cancelled_caught
        # Wait off the event loop: the client's cancel work runs on it.
        outcome = await anyio.to_thread.run_sync(upstream.wait_slow, key, "aborted", 8.0)
        assert outcome == "aborted"


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_resources_read_upstream(served, upstream, mode):
    async with client(served, mode) as c:
        fixed = await c.read_resource("tracker://counter")
        word = await c.read_resource("httpbin://anything/a%20b")
    assert json.loads(fixed.contents[0].text) == {"value": upstream.state.counter}
    assert fixed.contents[0].mime_type == "application/json"
    assert word.contents[0].text == '"/anything/a%20b"'


@pytest.mark.anyio
async def test_subscription_notifies_when_the_polled_resource_changes(served, upstream):
    uri = "tracker://counter"
    seen = anyio.Event()

    async def on_message(message) -> None:
        params = getattr(getattr(message, "params", None), "uri", None)
        if getattr(message, "method", "") == "notifications/resources/updated" and str(params) == uri:
            seen.set()

    async with client(served, "legacy", message_handler=on_message) as c:
        await c.subscribe_resource(uri)
        await anyio.sleep(1.5)  # the first poll sets the baseline
        httpx2.post(f"{upstream.base}/bump", timeout=5)
        with anyio.fail_after(6):
            await seen.wait()

    from mcp.client.subscriptions import ResourceUpdated

    async with client(served, "2026-07-28") as c:
        async with c.listen(resource_subscriptions=[uri]) as sub:
            await anyio.sleep(1.5)
            httpx2.post(f"{upstream.base}/bump", timeout=5)
            with anyio.fail_after(6):
                event = await sub.__anext__()
            assert isinstance(event, ResourceUpdated) and str(event.uri) == uri


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_cached_resource_is_reused_within_its_ttl(served, upstream, mode):
    async with client(served, mode) as c:
        first = await c.read_resource("tracker://counter-cached")
        httpx2.post(f"{upstream.base}/bump", timeout=5)
        again = await c.read_resource("tracker://counter-cached")
        fresh = await c.read_resource("tracker://counter")
    assert again.contents[0].text == first.contents[0].text
    assert json.loads(fresh.contents[0].text)["value"] > json.loads(first.contents[0].text)["value"]


@pytest.mark.anyio
async def test_a_rotated_secret_is_picked_up(served):
    token_file = served.log.parent.parent / "secrets" / "tracker-api" / "token"
    before = served.metric("mcp_reloads_total", outcome="success")
    token_file.write_text(ROTATED)
    await reloads(served, "success", before + 1)
    async with client(served, "2026-07-28") as c:
        result = await c.call_tool("whoami", {})
    # httpbin echoes the token it got; only the current secret is redacted, so this proves the
    # rotated value was sent.
    assert result.structured_content == {"authenticated": True, "token": "[redacted]"}
    assert_no_secret(result)


@pytest.mark.anyio
async def test_metrics_count_upstream_calls_without_secrets(served):
    # Its own calls first, so that the test passes alone (and in any order).
    async with client(served, "2026-07-28") as c:
        await c.call_tool("httpbin_status", {"code": 404})
        await c.call_tool("slow", {"key": "metrics", "seconds": 5})
        await c.call_tool("whoami", {})
        await c.read_resource("tracker://counter")
    text = served.metrics()
    assert 'mcp_upstream_requests_total{tool="httpbin_status",code="404"}' in text
    assert 'mcp_upstream_requests_total{tool="slow",code="timeout"}' in text
    assert 'mcp_upstream_request_duration_seconds_count{tool="whoami"}' in text
    assert 'mcp_upstream_requests_total{tool="resource:counter",code="200"}' in text
    log = served.log.read_text(errors="replace")
    assert "upstream request" in log  # one debug line per call
    for secret in (TOKEN, API_KEY, ROTATED):
        assert secret not in text and secret not in log


@pytest.fixture(scope="module")
def issue_tracker(tmp_path_factory):
    """examples/issue-tracker as the docs walk through it, on free ports."""
    work = tmp_path_factory.mktemp("issue-tracker")
    token_file = work / "secrets" / "issue-tracker-api" / "token"
    token_file.parent.mkdir(parents=True)
    token_file.write_text("demo-token-4f2a\n")
    api_port = free_port()
    example = REPO / "examples" / "issue-tracker"
    api = subprocess.Popen(
        [sys.executable, str(example / "upstream.py"), "--port", str(api_port), "--token-file", str(token_file)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    manifest = work / "src" / "issue-tracker.yaml"
    manifest.parent.mkdir()
    manifest.write_text((example / "issue-tracker.yaml").read_text().replace("127.0.0.1:8700", f"127.0.0.1:{api_port}"))
    try:
        _wait_http(f"http://127.0.0.1:{api_port}/stats", api, "the example upstream")
        rt = start_runtime(work / "run", manifest, ("--secrets-dir", str(work / "secrets")))
        yield rt
        rt.stop()
    finally:
        _stop(api)


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_example_issue_tracker_end_to_end(issue_tracker, mode):
    async with client(issue_tracker, mode) as c:
        found = await c.call_tool("search_issues", {"state": "open"})
        created = await c.call_tool("create_issue", {"title": f'Crash on "save" & exit ({mode})', "labels": ["bug"]})
        number = created.structured_content["number"]
        closed = await c.call_tool("set_issue_state", {"number": number, "state": "closed"})
        missing = await c.call_tool("get_issue", {"number": 9999})
        refused = await c.call_tool("create_issue", {"title": " "})
        page = await c.read_resource(f"tracker://issues/{number}")
    assert not found.is_error and found.structured_content["total"] >= 2
    assert text_of(created) == f'Created issue #{number}: Crash on "save" & exit ({mode})'
    assert text_of(closed) == f"Issue #{number} is now closed."
    assert missing.is_error and text_of(missing) == "There is no issue #9999."
    assert refused.is_error and text_of(refused) == "The tracker refused the issue: title is required"
    assert page.contents[0].text.startswith(f'# #{number} Crash on "save" & exit ({mode}) (closed)')


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_example_confirms_a_delete_and_summarises_with_sampling(issue_tracker, mode):
    from mcp import types

    answers = [types.ElicitResult(action="decline"), types.ElicitResult(action="accept", content={"confirm": True})]
    asked: list[str] = []

    async def confirm(context, params):
        asked.append(params.message)
        return answers.pop(0)

    async def model(context, params):
        assert params.system_prompt == "You summarise bug reports for busy engineers."
        return types.CreateMessageResult(
            role="assistant", model="m", content=types.TextContent(type="text", text=f"{len(params.messages)} message")
        )

    async with client(issue_tracker, mode, elicitation_callback=confirm, sampling_callback=model) as c:
        made = await c.call_tool("create_issue", {"title": f"Doomed ({mode})"})
        number = made.structured_content["number"]
        kept = await c.call_tool("delete_issue", {"number": number})
        still = await c.call_tool("get_issue", {"number": number})
        deleted = await c.call_tool("delete_issue", {"number": number})
        gone = await c.call_tool("get_issue", {"number": number})
        summary = await c.call_tool("summarise_text", {"text": "Login times out after 30 s."})
    assert asked == [f"Delete issue #{number} for good? This cannot be undone."] * 2
    # Declined: nothing reached the tracker, the issue is still there.
    assert kept.is_error and text_of(kept) == "The user did not confirm; nothing was done."
    assert not still.is_error
    assert text_of(deleted) == f"Deleted issue #{number}: Doomed ({mode})"
    assert gone.is_error and text_of(gone) == f"There is no issue #{number}."
    assert text_of(summary) == "1 message"
