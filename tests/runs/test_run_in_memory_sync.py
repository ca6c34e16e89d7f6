"""run_in_memory takes the work functions run_units takes: sync or async, any record shape."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, ClassVar

from byzllm.runs import Record, make_unit, run_in_memory


class Answer(Record):
    kind: ClassVar[str] = "in_memory_answer"
    q: int


class Note(Record):
    kind: ClassVar[str] = "in_memory_note"
    text: str


def sync_list(payload: dict[str, Any]) -> list[Record]:
    return [Answer(q=payload["q"]), Note(text=f"q{payload['q']}")]


async def async_list(payload: dict[str, Any]) -> list[Record]:
    await asyncio.sleep(0)
    return sync_list(payload)


def sync_one(payload: dict[str, Any]) -> Record | None:
    return Answer(q=payload["q"]) if payload["q"] % 2 == 0 else None


def sync_returning_a_coroutine(payload: dict[str, Any]) -> Coroutine[Any, Any, list[Record]]:
    return async_list(payload)


UNITS = [make_unit({"q": i}) for i in range(4)]
EXPECTED = [
    row
    for i in range(4)
    for row in ({"kind": "in_memory_answer", "q": i}, {"kind": "in_memory_note", "text": f"q{i}"})
]


def test_sync_work_gives_what_async_work_gives() -> None:
    assert asyncio.run(run_in_memory(UNITS, async_list)) == EXPECTED
    assert asyncio.run(run_in_memory(UNITS, sync_list)) == EXPECTED
    assert asyncio.run(run_in_memory(UNITS, sync_returning_a_coroutine, batch=3)) == EXPECTED


def test_one_record_or_none_as_run_units_accepts() -> None:
    rows = asyncio.run(run_in_memory(UNITS, sync_one))
    assert rows == [{"kind": "in_memory_answer", "q": 0}, {"kind": "in_memory_answer", "q": 2}]


def test_kinds_filter_sync_work() -> None:
    rows = asyncio.run(run_in_memory(UNITS, sync_list, kinds={"in_memory_note"}))
    assert [r["text"] for r in rows] == ["q0", "q1", "q2", "q3"]
