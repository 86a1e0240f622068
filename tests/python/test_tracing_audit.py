"""Tracing and audit records of the real `mcp-runtime` binary, seen by real receivers.

Does process, socket and file I/O: starts a local upstream (`http_upstream.py`) and an OTLP/HTTP
receiver (`otlp_receiver.py`, decoding with `opentelemetry-proto`) on 127.0.0.1, serves
`manifests/traced.yaml` with `--otlp-endpoint` and `--audit-log stdout`, and calls it with the
official Python SDK (`mcp`), which sends the active trace context in `_meta.traceparent`. After
SIGTERM (which flushes the last spans), checks the span tree, the `traceparent` the upstream
saw, the audit lines, and that no secret or argument value reached either. Every wait is bounded.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re

import httpx2
import pytest
from harness import (
    JSON_AND_SSE,
    LEGACY,
    MANIFESTS,
    MODERN,
    Runtime,
    initialize_body,
    metric_labels,
    modern_request,
    start_runtime,
)
from http_upstream import Upstream
from mcp import Client
from opentelemetry import trace
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags
from otlp_receiver import OtlpReceiver

API_KEY = "k3y-TRACE-5e1c9"
PASSWORD = "pw-HUNTER-0b7d2"
NOTE = "note-PRIVATE-93af1"
ARG_ID = "id-VALUE-61d0e"
NAME = "name-VALUE-c4a2f"
SERVICE = "traced-test"


def _parent() -> SpanContext:
    return SpanContext(
        trace_id=random.getrandbits(128) | 1,
        span_id=random.getrandbits(64) | 1,
        is_remote=True,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
    )


def _hex(sc: SpanContext) -> tuple[str, str]:
    return f"{sc.trace_id:032x}", f"{sc.span_id:016x}"


def _digest(value: object) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """Serves the manifest, makes the calls, stops the runtime; yields what was observed."""
    import anyio

    upstream = Upstream().start()
    receiver = OtlpReceiver().start()
    work = tmp_path_factory.mktemp("traced")
    secrets = work / "secrets" / "traced-api"
    secrets.mkdir(parents=True)
    (secrets / "key").write_text(API_KEY)
    manifest = work / "src" / "traced.yaml"
    manifest.parent.mkdir()
    manifest.write_text((MANIFESTS / "traced.yaml").read_text().replace("@UPSTREAM@", upstream.base))
    saved = {k: os.environ.get(k) for k in ("OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES", "OTEL_BSP_SCHEDULE_DELAY")}
    os.environ.update(
        OTEL_SERVICE_NAME=SERVICE,
        OTEL_RESOURCE_ATTRIBUTES="k8s.namespace.name=tests,deployment.environment.name=ci",
        OTEL_BSP_SCHEDULE_DELAY="200",
    )
    try:
        rt = start_runtime(
            work / "run",
            manifest,
            (
                "--secrets-dir", str(work / "secrets"),
                "--otlp-endpoint", receiver.base,
                "--audit-log", "stdout",
                "--log-level", "debug",
            ),
        )  # fmt: skip
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    parents = {
        key: _parent() for key in ("lookup", "greet", "broken", "unknown", "header", "meta", "ignored", "legacy", "wave")
    }
    results: dict[str, object] = {}

    async def calls() -> None:
        async with Client(rt.url, mode=MODERN, cache=None) as c:
            with trace.use_span(NonRecordingSpan(parents["lookup"])):
                results["lookup"] = await c.call_tool(
                    "lookup", {"id": ARG_ID, "password": PASSWORD, "options": {"note": NOTE, "verbose": True}}
                )
            with trace.use_span(NonRecordingSpan(parents["broken"])):
                results["broken"] = await c.call_tool("broken", {})
            with trace.use_span(NonRecordingSpan(parents["unknown"])):
                try:
                    await c.call_tool("no_such_tool", {"password": PASSWORD})
                except Exception as err:  # the SDK raises the JSON-RPC error
                    results["unknown"] = err
            results["read"] = await c.read_resource("docs://traced/readme")
        async with Client(rt.url, mode="legacy", cache=None) as c:
            with trace.use_span(NonRecordingSpan(parents["greet"])):
                results["greet"] = await c.call_tool("greet", {"name": NAME})
        async with Client(f"{rt.base}/wavers/mcp", mode=MODERN, cache=None) as c:
            with trace.use_span(NonRecordingSpan(parents["wave"])):
                results["wave"] = await c.call_tool("wave", {})

    try:
        anyio.run(calls)
        _header_calls(rt, parents)
        metrics = rt.metrics()
        # Spans leave in batches every 200 ms; SIGTERM exports the rest before exit.
        receiver.wait_for(10, timeout=5)
    finally:
        problem = rt.stop()
        upstream.stop()
        receiver.stop()
    assert problem is None, problem
    yield {
        "rt": rt,
        "receiver": receiver,
        "upstream": upstream,
        "parents": parents,
        "results": results,
        "metrics": metrics,
    }


def _traceparent(sc: SpanContext) -> str:
    trace_id, span_id = _hex(sc)
    return f"00-{trace_id}-{span_id}-01"


def _header_calls(rt: Runtime, parents: dict[str, SpanContext]) -> None:
    """Raw `tools/list` calls whose parent rides in the HTTP `traceparent` header: stateless
    with no `_meta.traceparent`, stateless with both (`_meta` names `meta`), and in a legacy
    session."""
    headers, body = modern_request(1, "tools/list")
    headers["traceparent"] = _traceparent(parents["header"])
    assert httpx2.post(rt.url, headers=headers, json=body, timeout=10).status_code == 200
    body["params"]["_meta"]["traceparent"] = _traceparent(parents["meta"])
    headers["traceparent"] = _traceparent(parents["ignored"])
    assert httpx2.post(rt.url, headers=headers, json=body, timeout=10).status_code == 200
    r = httpx2.post(rt.url, headers=JSON_AND_SSE, json=initialize_body(), timeout=10)
    assert r.status_code == 200, r.text
    session = dict(JSON_AND_SSE, **{"Mcp-Session-Id": r.headers["mcp-session-id"], "MCP-Protocol-Version": LEGACY})
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert httpx2.post(rt.url, headers=session, json=initialized, timeout=10).status_code == 202
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    traced = dict(session, traceparent=_traceparent(parents["legacy"]))
    assert httpx2.post(rt.url, headers=traced, json=listing, timeout=10).status_code == 200


def _one(spans, **match):
    found = [s for s in spans if all(getattr(s, k) == v for k, v in match.items())]
    assert len(found) == 1, f"{match}: {len(found)} spans among {[s.name for s in spans]}"
    return found[0]


def test_request_span_is_the_child_of_the_callers_traceparent(run):
    spans = run["receiver"].spans()
    trace_id, parent_id = _hex(run["parents"]["lookup"])
    request = _one(spans, name="tools/call lookup")
    assert (request.trace_id, request.parent_span_id, request.kind) == (trace_id, parent_id, "SPAN_KIND_SERVER")
    attrs = request.attributes
    assert attrs["mcp.method.name"] == "tools/call"
    assert attrs["gen_ai.tool.name"] == "lookup"
    assert attrs["mcp.protocol.version"] == MODERN
    assert attrs["kube_mcp.era"] == "stateless"
    assert attrs["kube_mcp.outcome"] == "ok"
    assert attrs["mcp.tool.is_error"] is False
    assert request.status != "STATUS_CODE_ERROR"
    assert request.resource["service.name"] == SERVICE
    assert request.resource["k8s.namespace.name"] == "tests"
    assert request.scope == "mcp-runtime"


def test_a_call_through_a_view_names_it_on_its_span(run):
    spans = run["receiver"].spans()
    wave = _one(spans, name="tools/call wave")
    assert wave.trace_id == _hex(run["parents"]["wave"])[0]
    assert wave.attributes["kube_mcp.view"] == "wavers"
    assert "kube_mcp.view" not in _one(spans, name="tools/call lookup").attributes


def test_upstream_span_is_a_child_and_its_context_reaches_the_upstream(run):
    spans = run["receiver"].spans()
    request = _one(spans, name="tools/call lookup")
    upstream_span = _one(spans, parent_span_id=request.span_id)
    assert upstream_span.trace_id == request.trace_id
    assert upstream_span.kind == "SPAN_KIND_CLIENT"
    base = run["upstream"].base
    assert upstream_span.name == f"GET {base}/echo/{{id}}"
    attrs = upstream_span.attributes
    assert attrs["http.request.method"] == "GET"
    assert attrs["http.response.status_code"] == 200
    assert attrs["url.template"] == f"{base}/echo/{{id}}"
    assert attrs["server.address"] == "127.0.0.1"
    seen = [r for r in run["upstream"].state.seen if r["target"].startswith("/echo/")]
    assert len(seen) == 1
    headers = {k.lower(): v for k, v in seen[0]["headers"].items()}
    assert headers["traceparent"] == f"00-{request.trace_id}-{upstream_span.span_id}-01"
    assert headers["x-api-key"] == API_KEY  # the secret still goes where it was declared to go


def test_failures_and_refusals_are_marked(run):
    spans = run["receiver"].spans()
    broken = _one(spans, name="tools/call broken")
    assert broken.attributes["kube_mcp.outcome"] == "failed"
    assert broken.attributes["mcp.tool.is_error"] is True
    assert broken.attributes["error.type"] == "tool_error"
    assert broken.status == "STATUS_CODE_ERROR"
    child = _one(spans, parent_span_id=broken.span_id)
    assert child.attributes["http.response.status_code"] == 503
    assert child.status == "STATUS_CODE_ERROR"
    trace_id, parent_id = _hex(run["parents"]["unknown"])
    refused = _one(spans, trace_id=trace_id)
    # An unknown name is the client's text: the span is named by the method alone.
    assert refused.name == "tools/call"
    assert refused.parent_span_id == parent_id
    assert refused.attributes["kube_mcp.outcome"] == "refused"
    assert refused.attributes["error.type"] == "-32602"
    assert "gen_ai.tool.name" not in refused.attributes


def test_legacy_sessions_are_parented_from_meta_too(run):
    spans = run["receiver"].spans()
    trace_id, parent_id = _hex(run["parents"]["greet"])
    greet = _one(spans, name="tools/call greet")
    assert (greet.trace_id, greet.parent_span_id) == (trace_id, parent_id)
    assert greet.attributes["mcp.protocol.version"] == LEGACY
    assert greet.attributes["kube_mcp.era"] == "session"
    assert len(greet.attributes["kube_mcp.session"]) == 16
    read = _one(spans, name="resources/read")
    assert read.attributes["mcp.resource.uri"] == "docs://traced/readme"
    # initialize and notifications make no request span; every span is one of ours.
    assert {s.scope for s in spans} == {"mcp-runtime"}


def test_the_http_traceparent_header_parents_when_meta_has_none(run):
    spans = run["receiver"].spans()
    for key, era in (("header", "stateless"), ("legacy", "session")):
        trace_id, parent_id = _hex(run["parents"][key])
        span = _one(spans, trace_id=trace_id)
        assert (span.name, span.parent_span_id) == ("tools/list", parent_id)
        assert span.attributes["kube_mcp.era"] == era
    # With both, `_meta.traceparent` wins: the span is in its trace, and none in the header's.
    trace_id, parent_id = _hex(run["parents"]["meta"])
    span = _one(spans, trace_id=trace_id)
    assert (span.name, span.parent_span_id) == ("tools/list", parent_id)
    assert not [s for s in spans if s.trace_id == _hex(run["parents"]["ignored"])[0]]


_EXEMPLAR = re.compile(r'^(\w+)_bucket\{([^}]*)\} \S+ # \{trace_id="([0-9a-f]{32})"\} \S+$')


_LABEL = re.compile(r'(\w+)="([^"]*)"')


def _exemplars(metrics: str) -> list[tuple[str, str, str]]:
    """(histogram, its label other than `le` as `name="value"`, exemplar trace id) of every
    bucket line with an exemplar."""
    found = []
    for line in metrics.splitlines():
        if m := _EXEMPLAR.match(line):
            labels = [f'{k}="{v}"' for k, v in _LABEL.findall(m.group(2)) if k != "le"]
            found.append((m.group(1), ",".join(labels), m.group(3)))
    return found


def test_duration_histograms_carry_the_trace_as_an_exemplar(run):
    exemplars = _exemplars(run["metrics"])
    lookup = _hex(run["parents"]["lookup"])[0]
    # The lookup tool was called once: its buckets' only exemplar is its trace.
    assert {t for h, labels, t in exemplars if labels.startswith('tool="lookup"')} == {lookup}
    assert ("mcp_tool_call_duration_seconds", 'tool="lookup"', lookup) in exemplars
    assert ("mcp_upstream_request_duration_seconds", 'tool="lookup"', lookup) in exemplars
    calls = {_hex(run["parents"][key])[0] for key in ("lookup", "broken", "unknown", "greet", "wave")}
    requests = {t for h, labels, t in exemplars if h == "mcp_request_duration_seconds" and labels == 'method="tools/call"'}
    assert requests and requests <= calls, exemplars
    # Every exemplar links to a trace the collector received.
    assert {t for _, _, t in exemplars} <= {span.trace_id for span in run["receiver"].spans()}


def test_without_tracing_no_histogram_has_exemplars(start):
    rt = start(extra_args=("--audit-log", "stdout"))
    parent = _traceparent(_parent())
    headers, body = modern_request(1, "tools/list")
    headers["traceparent"] = parent
    body["params"]["_meta"]["traceparent"] = parent
    assert httpx2.post(rt.url, headers=headers, json=body, timeout=10).status_code == 200
    metrics = rt.metrics()
    assert 'mcp_request_duration_seconds_count{method="tools/list"} 1' in metrics
    assert not _exemplars(metrics) and " # {" not in metrics


def test_no_secret_or_argument_value_is_exported(run):
    bodies = b"".join(run["receiver"].received.bodies)
    assert bodies, "nothing was exported"
    assert set(run["receiver"].received.content_types) == {"application/x-protobuf"}
    for value in (API_KEY, PASSWORD, NOTE, ARG_ID, NAME):
        assert value.encode() not in bodies, f"{value} reached the collector"


def _audit(rt: Runtime) -> list[dict]:
    records = []
    for line in rt.log.read_text(errors="replace").splitlines():
        if line.startswith("{") and '"audit"' in line:
            records.append(json.loads(line))
    return records


def test_audit_records_allowed_failed_and_refused_calls(run):
    records = _audit(run["rt"])
    by_tool = {r.get("tool") or r.get("uri"): r for r in records}
    assert set(by_tool) == {"lookup", "broken", "no_such_tool", "greet", "wave", "docs://traced/readme"}, records
    # A call through a view names it; the others came through the server's own endpoint.
    assert by_tool["wave"]["view"] == "wavers"
    assert all("view" not in r for r in records if r.get("tool") != "wave")
    lookup = by_tool["lookup"]
    assert lookup["audit"] == "tools/call"
    assert lookup["server"] == "traced"
    assert lookup["outcome"] == "ok"
    assert lookup["upstreamStatus"] == 200
    assert lookup["protocolVersion"] == MODERN
    assert lookup["principal"] is None
    assert lookup["durationMs"] > 0
    assert lookup["traceId"] == _hex(run["parents"]["lookup"])[0]
    # The hash of the declaration that answered, as the runtime reports it.
    assert metric_labels(run["metrics"], "mcp_runtime_declaration_info") == [{"hash": lookup["declaration"]}]
    assert sorted(lookup["redacted"]) == ["/options/note", "/password"]
    redacted = {"id": ARG_ID, "password": "[redacted]", "options": {"note": "[redacted]", "verbose": True}}
    assert lookup["argumentsDigest"] == _digest(redacted)
    broken = by_tool["broken"]
    assert (broken["outcome"], broken["upstreamStatus"]) == ("failed", 503)
    refused = by_tool["no_such_tool"]
    assert (refused["outcome"], refused["errorCode"]) == ("refused", -32602)
    assert "argumentsDigest" not in refused  # no schema says what is sensitive
    greet = by_tool["greet"]
    assert greet["protocolVersion"] == LEGACY and len(greet["session"]) == 16
    assert "upstreamStatus" not in greet
    read = by_tool["docs://traced/readme"]
    assert read["audit"] == "resources/read" and read["outcome"] == "ok"
    assert len({r["declaration"] for r in records}) == 1


def test_audit_and_logs_hold_no_secret(run):
    text = run["rt"].log.read_text(errors="replace")
    for value in (API_KEY, PASSWORD, NOTE):
        assert value not in text, f"{value} reached the runtime's output"
    # Argument values stay out of the audit records (the debug log may name none either).
    audit_text = json.dumps(_audit(run["rt"]))
    for value in (ARG_ID, NAME):
        assert value not in audit_text


def test_the_help_names_the_flags():
    from harness import runtime_bin
    import subprocess

    out = subprocess.run([str(runtime_bin()), "serve", "--help"], capture_output=True, text=True, timeout=10).stdout
    assert "--otlp-endpoint <URL>" in out and "--audit-log <AUDIT_LOG>" in out
    assert "OTEL_EXPORTER_OTLP_ENDPOINT" in out
