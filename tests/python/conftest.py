"""pytest fixtures: runtimes started per test or once per session (see harness.py). Does process I/O."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness import WEATHER, Runtime, StartRuntime, start_runtime


@pytest.fixture
def start(tmp_path: Path) -> Iterator[StartRuntime]:
    """Starts runtimes for one test (each in its own directory) and stops them all afterwards."""
    started: list[Runtime] = []

    def _start(manifest: Path = WEATHER, extra_args: tuple[str, ...] = (), name: str | None = None) -> Runtime:
        rt = start_runtime(tmp_path / (name or f"rt{len(started)}"), manifest, extra_args)
        started.append(rt)
        return rt

    yield _start
    # Every runtime must drain and exit 0 on SIGTERM, whatever the test left open.
    unclean = [f"{rt}: {problem}" for rt in started if (problem := rt.stop())]
    if unclean:
        pytest.fail("unclean runtime shutdown: " + "\n".join(unclean), pytrace=False)


@pytest.fixture
def runtime(start: StartRuntime) -> Runtime:
    """A runtime of its own, for tests that edit the manifest or count metrics."""
    return start()


@pytest.fixture(scope="session")
def shared_runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    """One runtime for the read-only tests, serving the unmodified weather manifest."""
    rt = start_runtime(tmp_path_factory.mktemp("shared"))
    yield rt
    if problem := rt.stop():
        pytest.fail(f"unclean runtime shutdown: {rt}: {problem}", pytrace=False)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
