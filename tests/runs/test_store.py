"""The result store: atomic unit results, queries, exports, concurrent processes."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import ClassVar

import pandas as pd
import pytest
from pydantic import Field

from byzllm.errors import InputError
from byzllm.runs import Record, Store, StoreError, UnitResult, make_unit


class Point(Record):
    kind: ClassVar[str] = "point"
    x: int
    tags: list[str] = Field(default_factory=list)
    extra: dict[str, float] = Field(default_factory=dict)


class Note(Record):
    text: str


WRITER = Path(__file__).with_name("store_writer.py")


def _store_with_points(tmp_path: Path) -> Store:
    store = Store(tmp_path)
    units = [make_unit({"x": x}, label=f"x{x}") for x in range(4)]
    store.register_units(units)
    now = time.time()
    store.write_results(
        [
            UnitResult(
                units[x].id,
                "done",
                now,
                now + 0.5,
                records=[Point(x=x, tags=["a", "b|c"], extra={"v": x / 2}), Note(text='n,"q"')],
            )
            for x in (2, 0, 1)
        ]
        + [UnitResult(units[3].id, "failed", now, now + 1, error="ValueError: bad")]
    )
    return store


def test_records_come_back_in_grid_order_with_units(tmp_path: Path) -> None:
    with _store_with_points(tmp_path) as store:
        assert store.counts() == {"pending": 0, "done": 3, "failed": 1}
        assert store.kinds() == {"note": 3, "point": 3}
        assert [r["x"] for r in store.records("point")] == [0, 1, 2]
        rows = store.records("point", with_unit=True)
        assert [r["unit_label"] for r in rows] == ["x0", "x1", "x2"]
        assert [p.x for p in store.typed_records(Point)] == [0, 1, 2]
        frame = store.records_frame("point")
        assert list(frame.columns) == ["x", "tags", "extra"]
        [failed] = store.failures()
        assert (failed["label"], failed["error"], failed["seconds"]) == ("x3", "ValueError: bad", 1)
        assert store.records("nothing") == []
        with_payload = store.records_frame("point", with_payload=True)
        assert list(with_payload["payload.x"]) == [0, 1, 2]
        assert store.records("note", with_payload=True)[0]["payload"] == {"x": 0}


def test_a_grown_grid_puts_every_unit_in_its_place(tmp_path: Path) -> None:
    """Units stored by a smaller grid took their old places in a larger one: run x = 0, 2, 4,
    then x = 0..4, and records came back 0, 1, 2, 4, 3. Units the grid lacks follow it."""
    points = {x: make_unit({"x": x}, label=f"x{x}") for x in range(6)}
    now = time.time()

    def done(store: Store, xs: list[int]) -> None:
        store.write_results(
            [UnitResult(points[x].id, "done", now, now, records=[Point(x=x)]) for x in xs]
        )

    with Store(tmp_path) as store:
        store.register_units([points[x] for x in (0, 2, 4, 5)])
        done(store, [0, 2, 4, 5])
        statuses = store.register_units([points[x] for x in range(5)])
        assert [statuses[points[x].id] for x in range(5)] == [
            "done", "pending", "done", "pending", "done"
        ]  # fmt: skip
        done(store, [1, 3])
        assert [r["x"] for r in store.records("point")] == [0, 1, 2, 3, 4, 5]
        assert [u["label"] for u in store.units()] == ["x0", "x1", "x2", "x3", "x4", "x5"]
        # A repeated unit keeps its first place.
        store.register_units([points[x] for x in (5, 4, 5, 3)])
        assert [u["label"] for u in store.units()][:3] == ["x5", "x4", "x3"]


def test_iter_records_reads_one_record_at_a_time(tmp_path: Path) -> None:
    """The same records as records(), handed out as the reader asks: the first arrives
    before the rest are read, and a damaged value still fails as a store error."""
    with _store_with_points(tmp_path) as store:
        assert list(store.iter_records("point", with_unit=True)) == store.records(
            "point", with_unit=True
        )
        stream = store.iter_records("point")
        assert next(stream)["x"] == 0  # the rest not yet read
        assert [r["x"] for r in stream] == [1, 2]
        assert list(store.iter_records("nothing")) == []
        store._conn.execute("UPDATE records SET json = '{broken' WHERE kind = 'note'")
        with pytest.raises(StoreError, match="not valid JSON"):
            list(store.iter_records("note"))


def test_iter_records_of_some_units_leaves_the_others_unread(tmp_path: Path) -> None:
    """``units``: the records of those units alone, the others skipped before they are read
    (a report split over two processes reads each record in one of them): a damaged record
    of another unit fails nobody."""
    with _store_with_points(tmp_path) as store:
        ids = {r["x"]: r["unit_id"] for r in store.records("point", with_unit=True)}
        assert [r["x"] for r in store.iter_records("point", units={ids[2], ids[0]})] == [0, 2]
        assert list(store.iter_records("point", units=set())) == []
        store._conn.execute(
            "UPDATE records SET json = '{broken' WHERE kind = 'point' AND unit_id = ?", (ids[1],)
        )
        assert [r["x"] for r in store.iter_records("point", units=[ids[0], ids[2]])] == [0, 2]
        with pytest.raises(StoreError, match="not valid JSON"):
            list(store.iter_records("point", units={ids[1]}))


def test_done_units_are_never_overwritten(tmp_path: Path) -> None:
    with _store_with_points(tmp_path) as store:
        unit = make_unit({"x": 0})
        now = time.time()
        written = store.write_results([UnitResult(unit.id, "done", now, now, [Point(x=99)])])
        assert written == 0
        assert [r["x"] for r in store.records("point")] == [0, 1, 2]
        written = store.write_results([UnitResult(unit.id, "failed", now, now, error="late")])
        assert written == 0 and store.counts()["failed"] == 1


def test_a_failed_write_leaves_no_partial_unit(tmp_path: Path) -> None:
    class Broken(Record):
        kind: ClassVar[str] = "broken"

        def model_dump_json(self, **kwargs: object) -> str:
            raise RuntimeError("serialization exploded")

    store = Store(tmp_path)
    units = [make_unit({"i": i}) for i in range(2)]
    store.register_units(units)
    now = time.time()
    with pytest.raises(RuntimeError):
        store.write_results(
            [
                UnitResult(units[0].id, "done", now, now, [Point(x=1)]),
                UnitResult(units[1].id, "done", now, now, [Point(x=2), Broken()]),
            ]
        )
    assert store.counts() == {"pending": 2, "done": 0, "failed": 0}
    assert store.kinds() == {}
    store.close()


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_export_round_trips(tmp_path: Path, fmt: str) -> None:
    with _store_with_points(tmp_path / "run") as store:
        files = store.export(fmt, tmp_path / "out")  # type: ignore[arg-type]
    assert sorted(p.name for p in files) == sorted(f"{n}.{fmt}" for n in ("units", "note", "point"))
    out = tmp_path / "out" / f"point.{fmt}"
    if fmt == "csv":
        frame = pd.read_csv(out)
        assert list(frame["x"]) == [0, 1, 2]
        assert json.loads(frame["tags"][0]) == ["a", "b|c"]
        assert list(pd.read_csv(tmp_path / "out" / "note.csv")["text"]) == ['n,"q"'] * 3
    elif fmt == "jsonl":
        rows = [json.loads(line) for line in out.read_text().splitlines()]
        assert [r["x"] for r in rows] == [0, 1, 2] and rows[0]["tags"] == ["a", "b|c"]
    else:
        frame = pd.read_parquet(out)
        assert list(frame["x"]) == [0, 1, 2]
        assert list(frame["tags"][1]) == ["a", "b|c"]
        assert list(frame["unit_label"]) == ["x0", "x1", "x2"]


def test_export_rejects_unknown_kinds_and_formats(tmp_path: Path) -> None:
    with _store_with_points(tmp_path) as store:
        with pytest.raises(InputError, match="no records of kind nope"):
            store.export("csv", tmp_path / "o", ["nope"])
        with pytest.raises(InputError, match="unknown export format"):
            store.export("xlsx", tmp_path / "o")  # type: ignore[arg-type]


def test_open_refuses_missing_or_foreign_files(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no results store"):
        Store.open(tmp_path / "absent")
    foreign = tmp_path / "other.sqlite"
    with sqlite3.connect(foreign) as conn:
        conn.execute("CREATE TABLE notes (body TEXT)")
    conn.close()
    with pytest.raises(InputError, match="not a byzllm results store"):
        Store.open(foreign)
    empty = tmp_path / "empty.sqlite"
    sqlite3.connect(empty).close()  # a 0-byte file
    with pytest.raises(StoreError, match="empty"):
        Store.open(empty)
    garbage = tmp_path / "garbage" / "results.sqlite"
    garbage.parent.mkdir()
    garbage.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError, match="cannot open results store"):
        Store.open(garbage.parent)


def test_runs_are_recorded_and_dead_runs_show_as_killed(tmp_path: Path) -> None:
    with Store(tmp_path) as store:
        run_id = store.begin_run(
            config={"a": 1}, config_class="X", byzllm_version="1", git_commit=None
        )
        store.finish_run(run_id, status="finished", total=3, skipped=0, done=3, failed=0)
        store.begin_run(config={"a": 2}, config_class="X", byzllm_version="1", git_commit=None)
        store._conn.execute("UPDATE runs SET pid = 2147483646 WHERE id = 2")
        runs = store.runs()
        assert [r["status"] for r in runs] == ["finished", "killed"]
        assert store.latest_config() == {"a": 2}


@pytest.mark.slow
def test_two_processes_writing_one_store_never_corrupt_it(tmp_path: Path) -> None:
    n = 300
    procs = [
        subprocess.Popen([sys.executable, str(WRITER), str(tmp_path), name, str(n), order])
        for name, order in (("first", "forward"), ("second", "reverse"))
    ]
    deadline = time.monotonic() + 60
    while not all((tmp_path / f"ready-{name}").exists() for name in ("first", "second")):
        assert time.monotonic() < deadline and all(p.poll() is None for p in procs)
        time.sleep(0.01)
    (tmp_path / "go").touch()
    for proc in procs:
        assert proc.wait(timeout=60) == 0
    with Store.open(tmp_path) as store:
        assert store.counts() == {"pending": 0, "done": n, "failed": 0}
        rows = store.records("written", with_unit=True)
        # Each unit is stored by exactly one writer, with its 3 records: never both.
        assert len(rows) == 3 * n
        by_unit: dict[str, set[str]] = {}
        for row in rows:
            by_unit.setdefault(row["unit_id"], set()).add(row["writer"])
        assert all(len(writers) == 1 for writers in by_unit.values())
        # Both processes really wrote (they raced, each from one end of the grid).
        assert set().union(*by_unit.values()) == {"first", "second"}
        assert store._conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


@pytest.mark.parametrize("enabled", [True, False])
def test_collector_paused_restores_the_collector(enabled: bool) -> None:
    import gc

    from byzllm.runs import collector_paused

    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        with collector_paused():
            assert not gc.isenabled()
        assert gc.isenabled() is enabled
        with pytest.raises(ValueError), collector_paused():
            raise ValueError("a failing block")
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()
