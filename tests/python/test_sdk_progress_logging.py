"""Declared progress and log messages of a tool call, as the official Python SDK receives them:
progress through `progress_callback` in every era; logs through `logging_callback` after
`logging/setLevel` (handshake eras) or with a per-request `log_level` (2026-07-28)."""

from __future__ import annotations

from typing import Any

import pytest

from harness import ERAS, Inbox, Runtime, connect

pytestmark = pytest.mark.anyio

AUDIT_LOGS = [
    ("debug", "audit: cache lookup"),
    ("info", "audit: started"),
    ("warning", "audit: stale station data"),
    ("error", "audit: station 42 unreachable"),
]


class Recorder:
    def __init__(self) -> None:
        self.progress: list[tuple[float, float | None, str | None]] = []
        self.logs: list[Any] = []

    async def on_progress(self, progress: float, total: float | None, message: str | None) -> None:
        self.progress.append((progress, total, message))

    async def on_log(self, params: Any) -> None:
        self.logs.append(params)

    def log_lines(self) -> list[tuple[str, str]]:
        assert all(p.logger == "weather.audit" for p in self.logs), self.logs
        return [(p.level, p.data) for p in self.logs]


@pytest.mark.parametrize("era", ERAS)
async def test_progress_callback_receives_declared_steps(shared_runtime: Runtime, era: str) -> None:
    rec = Recorder()
    async with connect(shared_runtime, era) as c:
        result = await c.call_tool("build_report", {"region": "Nordics"}, progress_callback=rec.on_progress)
    assert [b.text for b in result.content] == ["Report for Nordics is ready."]
    assert rec.progress == [
        (1, 3, "Fetching Nordics"),
        (2, 3, "Aggregating Nordics"),
        (3, 3, "Rendering Nordics"),
    ]


@pytest.mark.parametrize("era", ["legacy", "sse"])
async def test_no_progress_without_a_progress_token(shared_runtime: Runtime, era: str) -> None:
    inbox = Inbox()
    async with connect(shared_runtime, era, message_handler=inbox.handler) as c:
        result = await c.call_tool("build_report", {"region": "Alps"})
    assert result.content[0].text == "Report for Alps is ready."
    assert inbox.of("notifications/progress") == []


@pytest.mark.parametrize("era", ["legacy", "sse"])
async def test_handshake_eras_log_at_the_level_set(shared_runtime: Runtime, era: str) -> None:
    rec = Recorder()
    async with connect(shared_runtime, era, logging_callback=rec.on_log) as c:
        await c.set_logging_level("warning")
        await c.call_tool("audit", {})
        assert rec.log_lines() == AUDIT_LOGS[2:]
        rec.logs.clear()
        await c.set_logging_level("debug")
        result = await c.call_tool("audit", {})
        assert rec.log_lines() == AUDIT_LOGS
    assert result.content[0].text == "Audit finished."


@pytest.mark.parametrize("era", ["modern", "auto"])
async def test_2026_logs_only_at_the_requested_level(shared_runtime: Runtime, era: str) -> None:
    rec = Recorder()
    async with connect(shared_runtime, era, logging_callback=rec.on_log, log_level="warning") as c:
        assert c.protocol_version == "2026-07-28"
        await c.call_tool("audit", {})
    assert rec.log_lines() == AUDIT_LOGS[2:]

    rec.logs.clear()
    async with connect(shared_runtime, era, logging_callback=rec.on_log, log_level="info") as c:
        await c.call_tool("audit", {})
    assert rec.log_lines() == AUDIT_LOGS[1:]


async def test_2026_sends_no_logs_without_opt_in(shared_runtime: Runtime) -> None:
    rec = Recorder()
    async with connect(shared_runtime, "modern", logging_callback=rec.on_log) as c:
        result = await c.call_tool("audit", {})
    assert result.content[0].text == "Audit finished."
    assert rec.logs == []
