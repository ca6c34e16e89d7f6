"""A model endpoint's ``max_concurrency`` bounds the whole run, whatever the executor.

Worker processes each built their own models, and so their own per-endpoint limiter: each
allowed the whole limit, and the endpoint saw it multiplied by the workers. Now the runner
tells the executor the config's limit, no more units run at once in other processes than it
allows, and each holds a seat with its share of it (the shares adding up to the limit). How
many workers run is said once on stderr when it is fewer than asked for.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from byzllm.runs import (
    AUTO_PROCESS_MIN_UNITS,
    LocalExecutor,
    ModelConfig,
    ProcessExecutor,
    Store,
    _executor,
    executor_by_name,
    make_unit,
    run_units,
)
from byzllm.testing import FakeOpenAIServer

pytestmark = pytest.mark.timeout(120)

IMPORTABLE = Path(__file__).with_name("importable")


def _called(run_dir: Path) -> list[dict[str, Any]]:
    with Store.open(run_dir) as store:
        return store.records("called")


async def test_worker_processes_share_the_limit_the_config_sets(
    tmp_path: Path, shared_limit_run: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    summary, rows, max_in_flight = await shared_limit_run(tmp_path, ProcessExecutor(3))
    assert (summary.done, summary.failed) == (4, 0), summary.failures
    # Two workers, not three (each needs a request of its own), one request at once each: the
    # endpoint's 2 for the whole run, not 2 per worker.
    assert sorted(row["limit"] for row in rows) == [1, 1, 1, 1]
    assert len({row["pid"] for row in rows}) <= 2
    assert max_in_flight <= 2
    err = capsys.readouterr().err
    assert err.count("note:") == 1
    assert "units run 2 at a time, not 3 as asked for (max_workers)" in err
    assert "takes 2 requests at once (max_concurrency)" in err


class _Told(LocalExecutor):
    """Records what the runner tells it."""

    def __init__(self) -> None:
        super().__init__()
        self.told: list[int] = []

    def limit_requests(self, limit: int) -> None:
        self.told.append(limit)


async def _nothing(payload: dict[str, Any]) -> None:
    return None


async def test_the_runner_tells_the_executor_the_configs_limit(tmp_path: Path) -> None:
    async with FakeOpenAIServer() as server:
        calls = _Told()
        config = ModelConfig(
            model="openai/fake", base_url=server.base_url, api_key_env=None, max_concurrency=5
        )
        await run_units(
            tmp_path / "llm", [make_unit({})], _nothing, config=config, executor=calls,
            progress=False,
        )  # fmt: skip
    assert calls.told == [5]
    no_model = _Told()
    await run_units(
        tmp_path / "none", [make_unit({})], _nothing, config=ModelConfig(), executor=no_model,
        progress=False,
    )  # fmt: skip
    assert no_model.told == []


#: A note's words: fewer units at once than asked for (-j), and why.
_LIMIT = ("units run 3 at a time, not 4 as asked for (max_workers)", "takes 3 requests at once")


@pytest.mark.parametrize(
    ("made", "concurrency", "cores", "told", "workers", "seats", "note"),
    [
        ({}, 8, 2, None, 2, None, ()),  # -j 8 on 2 cores: 2 workers (the default; not said)
        ({}, 8, 2, 1, 1, 1, ("units run 1 at a time, not 8 as asked for", "takes 1 requests")),
        ({"quiet": True}, 8, 2, None, 2, None, ()),  # auto's choice: nobody asked
        ({}, 2, 4, None, 2, None, ()),  # as many as asked
        # A model endpoint allowing 3 at once, told by the runner or given: 3 workers, 3 seats.
        ({"max_workers": 4}, 8, 2, 3, 3, 3, _LIMIT),
        ({"max_workers": 4, "request_limit": 3}, 8, 2, None, 3, 3, _LIMIT),
        ({"request_limit": 16}, 8, 8, None, 8, 8, ()),  # room for every unit asked
        ({"max_workers": 4}, 2, 2, 16, 4, 2, ()),  # no more seats than units at once
    ],
)
async def test_how_many_workers_and_seats(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    made: dict[str, Any],
    concurrency: int,
    cores: int,
    told: int | None,
    workers: int,
    seats: int | None,
    note: tuple[str, ...],
) -> None:
    monkeypatch.setattr(_executor, "usable_cores", lambda: cores)
    executor = ProcessExecutor(**made)
    for _ in range(2):  # the note comes once, however many runs
        if told is not None:
            executor.limit_requests(told)
        await executor.start(concurrency)
        try:
            assert executor._workers == workers
            assert (None if executor._seats is None else executor._seats.seats) == seats
        finally:
            await executor.aclose()
    err = capsys.readouterr().err
    if not note:
        assert err == ""
    else:
        assert err.count("note:") == 1 and all(words in err for words in note), err


def test_only_a_named_process_executor_says_it_runs_fewer_units(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_executor, "usable_cores", lambda: 2)
    auto = executor_by_name("auto", cpu_bound=True, units=AUTO_PROCESS_MIN_UNITS)
    named = executor_by_name("process", cpu_bound=True)
    assert isinstance(auto, ProcessExecutor) and isinstance(named, ProcessExecutor)
    assert auto.quiet and not named.quiet


async def test_seats_taken_at_once_are_different_seats() -> None:
    seats = _executor._Seats(2)
    async with seats.taken() as first, seats.taken() as second:
        assert {first, second} == {(0, 2), (1, 2)}
        third = asyncio.ensure_future(_take(seats))
        await asyncio.sleep(0.01)
        assert not third.done()  # waits for a seat to come back
    assert await third in {(0, 2), (1, 2)}


async def _take(seats: Any) -> Any:
    async with seats.taken() as seat:
        return seat
