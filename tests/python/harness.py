"""Runs the real `mcp-runtime` binary for the third-party client tests, and connects clients to it.

Does process, file and socket I/O: each runtime gets free 127.0.0.1 ports, a private copy of
its manifest in a temporary directory (so live-reload tests can edit it), and its stderr in a
log file whose tail is shown when something goes wrong. Every wait is bounded.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.auth import TokenStorage
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
MANIFESTS = HERE / "manifests"
WEATHER = MANIFESTS / "weather.yaml"

READY_TIMEOUT_S = 15.0
STOP_TIMEOUT_S = 5.0
# Flags every test runtime gets unless the test passes its own value.
DEFAULT_FLAGS = {
    # Short enough that live-reload tests stay fast, long enough not to spin on a 2-core machine.
    "--reload-interval": "200ms",
    # Below STOP_TIMEOUT_S, so a runtime that drains as it should is never killed.
    "--shutdown-timeout": "2s",
}


def runtime_bin() -> Path:
    """The binary under test: $MCP_RUNTIME_BIN, else the debug build of this checkout."""
    configured = os.environ.get("MCP_RUNTIME_BIN")
    path = Path(configured) if configured else REPO / "target" / "debug" / "mcp-runtime"
    if not path.is_absolute():
        path = REPO / path
    if not path.is_file():
        pytest.fail(
            f"mcp-runtime binary not found at {path}: run `cargo build -p mcp-runtime` or set MCP_RUNTIME_BIN",
            pytrace=False,
        )
    return path


def free_port() -> int:
    """A port that was free a moment ago (start-up retries on the rare race)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_SAMPLE = re.compile(r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>[^}]*)\})?\s+(?P<value>\S+)")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def parse_metric(text: str, name: str, **labels: str) -> float:
    """Sum of the samples of `name` whose labels include `labels` (0 when none exist)."""
    total = 0.0
    for line in text.splitlines():
        m = _SAMPLE.match(line)
        if not m or m.group("name") != name:
            continue
        have = dict(_LABEL.findall(m.group("labels") or ""))
        if all(have.get(k) == v for k, v in labels.items()):
            total += float(m.group("value"))
    return total



def metric_labels(text: str, name: str) -> list[dict[str, str]]:
    """The label sets of the samples of `name`, in exposition order."""
    found = []
    for line in text.splitlines():
        m = _SAMPLE.match(line)
        if m and m.group("name") == name:
            found.append(dict(_LABEL.findall(m.group("labels") or "")))
    return found

@dataclass
class Runtime:
    """One running `mcp-runtime serve` process."""

    proc: subprocess.Popen[bytes] = field(repr=False)
    port: int
    admin_port: int
    manifest: Path = field(repr=False)
    log: Path = field(repr=False)
    args: list[str] = field(default_factory=list, repr=False)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        """The Streamable HTTP endpoint (both eras)."""
        return f"{self.base}/mcp"

    @property
    def sse_url(self) -> str:
        """The HTTP+SSE (2024-11-05) stream endpoint."""
        return f"{self.base}/sse"

    @property
    def admin(self) -> str:
        return f"http://127.0.0.1:{self.admin_port}"

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = _ANSI.sub("", self.log.read_text(errors="replace"))
        except OSError:
            return "<no log>"
        return "\n".join(text.splitlines()[-lines:])

    def metrics(self) -> str:
        r = httpx2.get(f"{self.admin}/metrics", timeout=5)
        assert r.status_code == 200, r.text
        return r.text

    def metric(self, name: str, **labels: str) -> float:
        return parse_metric(self.metrics(), name, **labels)

    def write_manifest(self, text: str) -> None:
        """Replaces the served manifest atomically (as a ConfigMap volume swap would)."""
        tmp = self.manifest.with_name(self.manifest.name + ".tmp")
        tmp.write_text(text)
        os.replace(tmp, self.manifest)

    def edit_manifest(self, old: str, new: str) -> None:
        text = self.manifest.read_text()
        assert old in text, f"{old!r} is not in the manifest"
        self.write_manifest(text.replace(old, new, 1))

    def stop(self) -> str | None:
        """SIGTERM, then SIGKILL after a bound; only this process, by its PID. Returns why the
        stop was not clean (killed, or a non-zero exit), or None."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=STOP_TIMEOUT_S)
                return f"still running {STOP_TIMEOUT_S}s after SIGTERM; killed\n{self.log_tail()}"
        if self.proc.returncode != 0:
            return f"exit code {self.proc.returncode}\n{self.log_tail()}"
        return None


def start_runtime(
    workdir: Path,
    manifest: Path = WEATHER,
    extra_args: tuple[str, ...] = (),
    attempts: int = 3,
) -> Runtime:
    """Copies `manifest` (and its sibling data files) into `workdir` and serves it until ready."""
    workdir.mkdir(parents=True, exist_ok=True)
    for sibling in manifest.parent.iterdir():
        if sibling.is_file():
            shutil.copy(sibling, workdir / sibling.name)
    served = workdir / manifest.name
    binary = runtime_bin()
    last_error = ""
    for attempt in range(attempts):
        port, admin_port = free_port(), free_port()
        log = workdir / f"runtime-{port}.log"
        args = [
            str(binary), "serve",
            "--manifest", str(served),
            "--listen", f"127.0.0.1:{port}",
            "--admin-listen", f"127.0.0.1:{admin_port}",
        ]  # fmt: skip
        for flag, value in DEFAULT_FLAGS.items():
            if flag not in extra_args:
                args += [flag, value]
        args += extra_args
        with log.open("wb") as sink:
            proc = subprocess.Popen(args, stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        rt = Runtime(proc, port, admin_port, served, log, args)
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                break
            try:
                if httpx2.get(f"{rt.admin}/readyz", timeout=1).status_code == 200:
                    return rt
            except httpx2.TransportError:
                pass
            time.sleep(0.05)
        rt.stop()
        last_error = f"attempt {attempt + 1}: exit code {proc.returncode}\n{rt.log_tail()}"
        if "in use" not in last_error.lower():
            break
    pytest.fail(f"mcp-runtime did not become ready within {READY_TIMEOUT_S}s\n{last_error}", pytrace=False)


StartRuntime = Callable[..., Runtime]
"""The `start` fixture: `start(manifest=WEATHER, extra_args=(), name=None) -> Runtime`."""


# --- clients -------------------------------------------------------------------------------

MODERN = "2026-07-28"
LEGACY = "2025-11-25"  # what mcp==2.3.0 asks for in `initialize`

ERAS = ("modern", "legacy", "auto", "sse")
"""How a client reaches the runtime: pinned 2026-07-28 (stateless), legacy Streamable HTTP
session (`initialize`), auto (probe `server/discover`, fall back to `initialize`), and the
2024-11-05 HTTP+SSE transport."""

NEGOTIATED = {"modern": MODERN, "legacy": LEGACY, "auto": MODERN, "sse": LEGACY}
"""The version each way must end up speaking with this runtime (it supports both eras, so
auto must pick the modern one, and a server supporting the requested legacy version must
answer with that same version)."""

CLIENT_TIMEOUT_S = 10.0
NOTIFY_TIMEOUT_S = 5.0


@asynccontextmanager
async def connect(
    rt: Runtime, era: str, *, stream_open: anyio.Event | None = None, **kwargs: Any
) -> AsyncIterator[Client]:
    """An entered official-SDK client for `era`. Caching is off by default so every call
    reaches the server (the reload tests depend on that).

    `stream_open` is set once the client's server-to-client stream is open, so a test can
    change the manifest knowing a notification has somewhere to go: the legacy session's GET
    stream (seen through an HTTP response hook), the HTTP+SSE stream (open before initialize
    completes); 2026-07-28 has no such stream (`listen()` waits for its own acknowledgment).
    """
    kwargs.setdefault("cache", None)
    kwargs.setdefault("read_timeout_seconds", CLIENT_TIMEOUT_S)
    async with AsyncExitStack() as stack:
        server: Any
        mode = "legacy"
        if era in ("modern", "auto"):
            server, mode = rt.url, (MODERN if era == "modern" else "auto")
        elif era == "legacy" and stream_open is None:
            server = rt.url
        elif era == "legacy":

            async def on_response(response: httpx2.Response) -> None:
                if response.request.method == "GET" and response.status_code == 200:
                    stream_open.set()

            http = await stack.enter_async_context(
                httpx2.AsyncClient(
                    timeout=httpx2.Timeout(CLIENT_TIMEOUT_S, read=60),
                    event_hooks={"response": [on_response]},
                )
            )
            server = streamable_http_client(rt.url, http_client=http)
        elif era == "sse":
            server = sse_client(rt.sse_url, timeout=CLIENT_TIMEOUT_S, sse_read_timeout=60)
        else:
            raise ValueError(f"unknown era {era!r}")
        client = await stack.enter_async_context(Client(server, mode=mode, **kwargs))
        if era == "sse" and stream_open is not None:
            stream_open.set()
        yield client


class Inbox:
    """Collects what a client's `message_handler` receives; waits for a method, bounded."""

    def __init__(self) -> None:
        self.messages: list[Any] = []
        self.errors: list[Exception] = []
        self._arrived = anyio.Event()

    async def handler(self, message: Any) -> None:
        if isinstance(message, Exception):
            self.errors.append(message)
            return
        self.messages.append(message)
        arrived, self._arrived = self._arrived, anyio.Event()
        arrived.set()

    def methods(self) -> list[str]:
        return [getattr(m, "method", type(m).__name__) for m in self.messages]

    def of(self, method: str) -> list[Any]:
        return [m for m in self.messages if getattr(m, "method", None) == method]

    async def wait_for(self, method: str, timeout: float = NOTIFY_TIMEOUT_S, count: int = 1) -> list[Any]:
        """The first `count` notifications named `method`; fails after `timeout` seconds."""
        with anyio.move_on_after(timeout):
            while len(self.of(method)) < count:
                await self._arrived.wait()
            return self.of(method)[:count]
        pytest.fail(f"no {method} within {timeout}s; received {self.methods()}, errors {self.errors}")


async def reloads(rt: Runtime, outcome: str, at_least: float, timeout: float = 10.0) -> None:
    """Waits (without blocking the event loop) until the runtime counted `at_least` reloads."""
    with anyio.move_on_after(timeout):
        while rt.metric("mcp_reloads_total", outcome=outcome) < at_least:
            await anyio.sleep(0.05)
        return
    pytest.fail(f"mcp_reloads_total{{outcome={outcome!r}}} < {at_least} after {timeout}s\n{rt.log_tail()}")


# --- raw Streamable HTTP (legacy sessions) -------------------------------------------------

JSON_AND_SSE = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def rpc_result(response: httpx2.Response) -> dict:
    """The JSON-RPC message of a POST answer, whether sent as JSON or as an SSE stream."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        messages = [
            json.loads(line[len("data:") :])
            for line in response.text.splitlines()
            if line.startswith("data:") and line[len("data:") :].strip()
        ]
        answers = [m for m in messages if "id" in m and ("result" in m or "error" in m)]
        assert len(answers) == 1, f"expected one response on the stream, got {messages}"
        return answers[0]
    return response.json()


def key_file(path: Path) -> Path:
    """A fresh 32-byte session key at `path`, for runtimes that share sessions."""
    path.write_bytes(os.urandom(32))
    path.chmod(0o600)
    return path


def session_headers(session_id: str) -> dict[str, str]:
    """Headers of a raw request within a legacy (Streamable HTTP) session."""
    return dict(JSON_AND_SSE, **{"Mcp-Session-Id": session_id, "MCP-Protocol-Version": LEGACY})


def initialize_body(request_id: int = 1, capabilities: dict | None = None) -> dict:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {
            "protocolVersion": LEGACY,
            "capabilities": capabilities or {},
            "clientInfo": {"name": "kube-mcp-pytest", "version": "0"},
        },
    }


def modern_request(request_id: int | str, method: str, params: dict | None = None) -> tuple[dict, dict]:
    """Headers and body of a raw 2026-07-28 request (stateless: everything rides on each one)."""
    body_params = dict(params or {})
    body_params["_meta"] = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "kube-mcp-pytest", "version": "0"},
    }
    headers = dict(JSON_AND_SSE, **{"MCP-Protocol-Version": MODERN, "Mcp-Method": method})
    assert method not in ("tools/call", "prompts/get", "resources/read"), "add the Mcp-Name header"
    return headers, {"jsonrpc": "2.0", "id": request_id, "method": method, "params": body_params}


class TokenMemory(TokenStorage):
    """An OAuth client's tokens and registration, kept in memory for one test."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info
