"""A real OTLP/HTTP trace receiver for the tracing tests: decodes what exporters POST to
/v1/traces with the official protobuf definitions (`opentelemetry-proto`).

Does socket I/O: a threaded stdlib HTTP server on 127.0.0.1 with a free port, stopped by the
test. Keeps every raw body (so tests can search them for secrets) and every span, flattened to
plain values. Bodies are bounded; gzip is refused (the runtime does not compress).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

MAX_BODY = 8 * 1024 * 1024


def _value(v: AnyValue) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [_value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in v.kvlist_value.values}
    return getattr(v, kind) if kind else None


@dataclass
class ReceivedSpan:
    name: str
    trace_id: str
    span_id: str
    parent_span_id: str
    kind: str
    attributes: dict[str, Any]
    status: str
    status_message: str
    resource: dict[str, Any]
    scope: str


@dataclass
class Received:
    lock: threading.Lock = field(default_factory=threading.Lock)
    bodies: list[bytes] = field(default_factory=list)
    spans: list[ReceivedSpan] = field(default_factory=list)
    content_types: list[str] = field(default_factory=list)


class _Handler(BaseHTTPRequestHandler):
    server: "OtlpReceiver"
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:  # quiet
        pass

    def _answer(self, status: int, body: bytes, ctype: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if self.path != "/v1/traces":
            self._answer(404, b"", "text/plain")
            return
        if length > MAX_BODY or self.headers.get("Content-Encoding"):
            self._answer(413 if length > MAX_BODY else 415, b"", "text/plain")
            return
        body = self.rfile.read(length)
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        spans = []
        for rs in request.resource_spans:
            resource = {kv.key: _value(kv.value) for kv in rs.resource.attributes}
            for ss in rs.scope_spans:
                for s in ss.spans:
                    spans.append(
                        ReceivedSpan(
                            name=s.name,
                            trace_id=s.trace_id.hex(),
                            span_id=s.span_id.hex(),
                            parent_span_id=s.parent_span_id.hex(),
                            kind=Span.SpanKind.Name(s.kind),
                            attributes={kv.key: _value(kv.value) for kv in s.attributes},
                            status=Status.StatusCode.Name(s.status.code),
                            status_message=s.status.message,
                            resource=resource,
                            scope=ss.scope.name,
                        )
                    )
        received = self.server.received
        with received.lock:
            received.bodies.append(body)
            received.spans.extend(spans)
            received.content_types.append(self.headers.get("Content-Type", ""))
        self._answer(200, ExportTraceServiceResponse().SerializeToString(), "application/x-protobuf")


class OtlpReceiver(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.received = Received()
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def start(self) -> "OtlpReceiver":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()

    def spans(self) -> list[ReceivedSpan]:
        with self.received.lock:
            return list(self.received.spans)

    def wait_for(self, count: int, timeout: float = 10.0) -> list[ReceivedSpan]:
        """The spans received, once there are at least `count` (or the timeout passed)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and len(self.spans()) < count:
            time.sleep(0.05)
        return self.spans()
