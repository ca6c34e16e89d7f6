"""Fixtures shared by the run-engine tests."""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from byzllm.runs import _repair


def _forget_shells() -> None:
    _repair.recover_shell.cache_clear()
    _repair._recover_command.cache_clear()


@pytest.fixture
def shell_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder put first on PATH, for a ``sqlite3`` of the test's making (what repair found
    of the shells before is forgotten, and again after)."""
    folder = tmp_path / "bin"
    folder.mkdir()
    monkeypatch.setenv("PATH", f"{folder}:{Path(sys.executable).parent}")
    _forget_shells()
    yield folder
    _forget_shells()


#: Runs 4 units that each make 4 calls to one endpoint allowing 2 at once (max_concurrency)
#: with the executor given, and returns the run's summary, each call's record (its process and
#: the share of the limit it held) and the most requests the endpoint saw at once.
SharedLimitRun = Callable[[Path, Any], Awaitable[tuple[Any, list[dict[str, Any]], int]]]


@pytest.fixture
def shared_limit_run(monkeypatch: pytest.MonkeyPatch) -> SharedLimitRun:
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().with_name("importable")))

    async def run(run_dir: Path, executor: Any) -> tuple[Any, list[dict[str, Any]], int]:
        import process_work  # type: ignore[import-not-found]

        from byzllm.runs import ModelConfig, Store, make_unit, run_units
        from byzllm.testing import FakeOpenAIServer

        async with FakeOpenAIServer(latency=0.05) as server:
            config = ModelConfig(
                model="openai/fake", base_url=server.base_url, api_key_env=None, max_concurrency=2
            )
            payload = {"base_url": server.base_url, "limit": 2, "calls": 4}
            units = [make_unit({"n": n, **payload}) for n in range(4)]
            summary = await run_units(
                run_dir, units, process_work.call_model, config=config, executor=executor,
                concurrency=4, progress=False,
            )  # fmt: skip
        with Store.open(run_dir) as store:
            rows = store.records("called")
        return summary, rows, server.max_in_flight

    return run
