"""Shared work across run folders: a unit done in one folder is copied, not rerun, into
another (the same unit id is the same work)."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any, ClassVar

from byzllm.runs import Record, Store, make_unit, reuse_units, run_units, sibling_runs

CALLS: list[int] = []


class _Square(Record):
    kind: ClassVar[str] = "square"
    index: int
    value: int


async def _work(payload: dict[str, Any]) -> list[Record]:
    CALLS.append(payload["index"])
    i = payload["index"]
    return [_Square(index=i, value=i * i), _Square(index=i, value=-i)]


def _units(indices: range) -> list[Any]:
    return [make_unit({"index": i, "grid": "reuse"}) for i in indices]


def _run(run_dir: Path, units: list[Any]) -> Any:
    return asyncio.run(run_units(run_dir, units, _work, progress=False))


def test_a_second_folder_runs_only_the_units_the_first_lacks(tmp_path: Path) -> None:
    first, second = tmp_path / "table1", tmp_path / "table2"
    _run(first, _units(range(6)))
    CALLS.clear()
    grid = _units(range(3, 9))  # 3..5 are done in table1, 6..8 are new
    reused = reuse_units(second, grid, sibling_runs(second))
    assert reused.total == 3 and reused.sources == {first: 3}
    assert reused.describe() == f"3 units reused from {first}"
    summary = _run(second, grid)
    assert sorted(CALLS) == [6, 7, 8] and summary.skipped == 3 and summary.complete
    with Store.open(second) as store:
        rows = store.records("square")
    assert sorted((r["index"], r["value"]) for r in rows) == sorted(
        [(i, i * i) for i in range(3, 9)] + [(i, -i) for i in range(3, 9)]
    )
    # Nothing is left to copy or to run the second time.
    CALLS.clear()
    assert reuse_units(second, grid, sibling_runs(second)).total == 0
    assert _run(second, grid).skipped == 6 and CALLS == []


def test_only_done_units_are_copied_and_sources_are_left_as_they_are(tmp_path: Path) -> None:
    source, target = tmp_path / "a", tmp_path / "b"
    grid = _units(range(4))
    _run(source, grid[:2])
    with Store(source) as store:  # a unit registered but never run: not copied
        store.register_units(grid[2:3])
    before = (source / "results.sqlite").read_bytes()
    reused = reuse_units(target, grid, [source])
    assert reused.total == 2
    assert (source / "results.sqlite").read_bytes() == before
    with Store.open(target) as store:
        assert store.counts() == {"pending": 2, "done": 2, "failed": 0}
        assert [u["id"] for u in store.units()] == [u.id for u in grid]  # grid order


def test_unreadable_and_missing_sources_are_passed_over(tmp_path: Path) -> None:
    good, bad = tmp_path / "good", tmp_path / "bad"
    _run(good, _units(range(2)))
    bad.mkdir()
    (bad / "results.sqlite").write_bytes(b"not a database at all" * 10)
    reused = reuse_units(tmp_path / "new", _units(range(2)), [bad, tmp_path / "gone", good])
    assert reused.sources == {good: 2}
    assert sibling_runs(tmp_path / "new") == [bad, good]  # folders with a store, by name


def test_no_source_creates_nothing(tmp_path: Path) -> None:
    assert reuse_units(tmp_path / "new", _units(range(2)), []).total == 0
    assert not (tmp_path / "new").exists()
    assert sibling_runs(tmp_path / "nowhere" / "x") == []


def test_copied_records_are_byte_for_byte_the_source_rows(tmp_path: Path) -> None:
    source, target = tmp_path / "a", tmp_path / "b"
    grid = _units(range(3))
    _run(source, grid)
    reuse_units(target, grid, [source])

    def rows(folder: Path) -> list[tuple[Any, ...]]:
        with sqlite3.connect(folder / "results.sqlite") as conn:
            return conn.execute("SELECT * FROM records ORDER BY unit_id, seq").fetchall()

    assert rows(target) == rows(source)
