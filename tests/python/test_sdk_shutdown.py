"""SIGTERM while official-SDK clients hold long-lived streams in every era: the runtime closes
them and exits 0 promptly instead of waiting out --shutdown-timeout, and a 2026 listen stream
ends gracefully (the client sees an orderly end, not a lost subscription)."""

from __future__ import annotations

import signal
import time

import anyio
import pytest

from harness import NOTIFY_TIMEOUT_S, StartRuntime, connect

pytestmark = pytest.mark.anyio


async def test_sigterm_closes_open_streams_and_exits(start: StartRuntime) -> None:
    rt = start(extra_args=("--shutdown-timeout", "8s"))
    legacy_open, sse_open = anyio.Event(), anyio.Event()
    async with (
        connect(rt, "legacy", stream_open=legacy_open),
        connect(rt, "sse", stream_open=sse_open),
        connect(rt, "modern") as modern,
        modern.listen(tools_list_changed=True) as sub,
    ):
        with anyio.fail_after(NOTIFY_TIMEOUT_S):
            await legacy_open.wait()
            await sse_open.wait()
        assert rt.metric("mcp_sessions_active") == 2

        sent = time.monotonic()
        rt.proc.send_signal(signal.SIGTERM)
        with anyio.fail_after(3):  # well under the 8 s drain deadline
            while rt.proc.poll() is None:
                await anyio.sleep(0.05)
        assert rt.proc.returncode == 0, rt.log_tail()
        assert time.monotonic() - sent < 3

        with anyio.fail_after(NOTIFY_TIMEOUT_S):
            remaining = [event async for event in sub]  # ends without SubscriptionLost
        assert remaining == []
