"""Damaged stores: refused in one line without being written to, and salvaged by repair.

The repair's promise is checked as an invariant over many kinds of damage: every unit the
repaired store keeps as ``done`` has exactly the records it had before the damage, every
other unit runs again on resume, and the damaged file is kept untouched beside it.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import random
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, ClassVar

import pytest

from byzllm.errors import InputError
from byzllm.runs import Record, Store, StoreError, UnitResult, make_unit, repair_store, run_units
from byzllm.runs._pages import read_cells

PAGE = 4096
N_UNITS = 120


class Answer(Record):
    kind: ClassVar[str] = "answer"
    q: int
    step: int
    text: str


def _units() -> list[Any]:
    return [make_unit({"q": q}, label=f"q{q}") for q in range(N_UNITS)]


def answer(payload: dict[str, Any]) -> list[Record]:
    """Deterministic work: 1-6 records per unit, some far larger than a page (overflow) even
    compressed as the store keeps them (random hex text)."""
    q = payload["q"]
    size = 36_000 if q % 17 == 0 else 600
    return [
        Answer(q=q, step=step, text=random.Random(q * 7 + step).randbytes(size // 2).hex())
        for step in range(1 + q % 6)
    ]


def _build(run_dir: Path) -> Path:
    """A finished run of N_UNITS units (q=5 failed), as the runner writes it."""

    def work(payload: dict[str, Any]) -> list[Record]:
        if payload["q"] == 5:
            raise ValueError("question 5 is unanswerable")
        return answer(payload)

    summary = asyncio.run(run_units(run_dir, _units(), work, progress=False))
    assert summary.done == N_UNITS - 1 and summary.failed == 1
    return run_dir / "results.sqlite"


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _build(tmp_path_factory.mktemp("pristine") / "run")


@pytest.fixture
def store_copy(pristine: Path, tmp_path: Path) -> Path:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    shutil.copy(pristine, run_dir / "results.sqlite")
    return run_dir / "results.sqlite"


def _contents(path: Path) -> tuple[dict[str, tuple[str, str | None]], dict[str, list[Any]]]:
    """(unit id -> (status, error), unit id -> its records in order) of a store."""
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        units = {u: (s, e) for u, s, e in conn.execute("SELECT id, status, error FROM units")}
        records: dict[str, list[Any]] = {}
        for row in conn.execute("SELECT unit_id, seq, kind, json FROM records ORDER BY rowid"):
            records.setdefault(row[0], []).append(row[1:])
    finally:
        conn.close()
    return units, records


def _fingerprint(path: Path) -> tuple[str, int]:
    return hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns


def _overwrite(path: Path, first_page: int, pages: int, fill: bytes = b"\xa5") -> None:
    with path.open("r+b") as handle:
        handle.seek(first_page * PAGE)
        handle.write(fill * (pages * PAGE))


# --- opening -------------------------------------------------------------------------------


def test_open_is_read_only_verified_and_never_writes(store_copy: Path) -> None:
    before = _fingerprint(store_copy)
    with Store.open(store_copy.parent) as store:
        assert store.read_only
        assert store.counts() == {"pending": 0, "done": N_UNITS - 1, "failed": 1}
        with pytest.raises(StoreError, match="read-only"):
            store.begin_run(config=None, config_class=None, byzllm_version="x", git_commit=None)
    assert _fingerprint(store_copy) == before


@pytest.mark.parametrize("create", [False, True])
def test_empty_file_is_refused_and_stays_empty(tmp_path: Path, create: bool) -> None:
    path = tmp_path / "results.sqlite"
    path.touch()
    with pytest.raises(StoreError, match=r"empty \(0 bytes\)") as caught:
        Store(tmp_path, create=create) if create else Store.open(tmp_path)
    assert caught.value.exit_code == 2 and caught.value.fatal
    assert path.stat().st_size == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.sqlite"]


def test_foreign_database_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE notes (body TEXT)")  # rollback journal mode, not WAL
    conn.commit()
    conn.close()
    before = _fingerprint(path)
    for opener in (lambda: Store.open(tmp_path), lambda: Store(tmp_path, create=True)):
        with pytest.raises(InputError, match=r"not a byzllm results store .*notes"):
            opener()
    assert _fingerprint(path) == before  # not even switched to WAL


def test_damaged_pages_are_found_on_open_and_every_read_is_a_store_error(
    store_copy: Path,
) -> None:
    size = store_copy.stat().st_size
    _overwrite(store_copy, size // PAGE // 2, 3)
    before = _fingerprint(store_copy)
    with pytest.raises(StoreError, match=r"is damaged .*byzllm runs repair") as caught:
        Store.open(store_copy.parent)
    assert caught.value.exit_code == 2
    with pytest.raises(StoreError, match="is damaged"):
        Store(store_copy.parent, create=True, verify=True)  # a resume
    with Store.open(store_copy.parent, verify=False) as store:
        assert store.problems()
        with pytest.raises(StoreError, match="is damaged"):
            store.records("answer")  # never a raw sqlite3.DatabaseError
    assert _fingerprint(store_copy) == before


def test_a_resume_on_a_damaged_store_fails_before_any_unit_runs(store_copy: Path) -> None:
    _overwrite(store_copy, store_copy.stat().st_size // PAGE // 2, 3)
    ran: list[int] = []

    def work(payload: dict[str, Any]) -> None:
        ran.append(payload["q"])

    with pytest.raises(StoreError, match="damaged"):
        asyncio.run(run_units(store_copy.parent, _units(), work, progress=False))
    assert ran == []


# --- repair --------------------------------------------------------------------------------


def test_repair_leaves_a_healthy_store_alone(store_copy: Path) -> None:
    before = _fingerprint(store_copy)
    report = repair_store(store_copy.parent)
    assert not report.repaired and not report.problems and not report.lost_anything
    assert report.damaged_copy is None
    assert _fingerprint(store_copy) == before
    assert sorted(p.name for p in store_copy.parent.iterdir() if "damaged" in p.name) == []


def _check_invariant(original: Path, repaired: Path) -> dict[str, int]:
    """Kept-done units have exactly their records; nothing is invented; returns counts."""
    units_before, records_before = _contents(original)
    units_after, records_after = _contents(repaired)
    assert set(units_after) <= set(units_before)
    done = 0
    for unit, (status, error) in units_after.items():
        if status == "done":
            done += 1
            assert units_before[unit][0] == "done"
            assert records_after.get(unit, []) == records_before.get(unit, []), unit
        elif status == "failed":
            assert units_before[unit] == (status, error)
        else:
            assert unit not in records_after  # a unit to rerun keeps no partial records
    assert set(records_after) <= {u for u, (s, _) in units_after.items() if s == "done"}
    with sqlite3.connect(repaired) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    return {"done": done}


def _resume_completes(run_dir: Path, expected_reruns: int) -> None:
    ran: list[int] = []

    def work(payload: dict[str, Any]) -> list[Record]:
        ran.append(payload["q"])
        if payload["q"] == 5:
            raise ValueError("question 5 is unanswerable")
        return answer(payload)

    summary = asyncio.run(run_units(run_dir, _units(), work, progress=False, retry_failed=True))
    assert summary.done + summary.failed == len(ran) and len(ran) == expected_reruns
    assert summary.skipped + summary.done + summary.failed == N_UNITS
    assert summary.failed == 1  # q=5 again, and nothing else


def test_repair_salvages_around_damaged_record_pages(pristine: Path, store_copy: Path) -> None:
    size_pages = store_copy.stat().st_size // PAGE
    _overwrite(store_copy, size_pages // 2, 4)
    damaged_bytes_before = store_copy.read_bytes()
    report = repair_store(store_copy.parent)
    assert report.repaired and report.problems
    assert report.units_rerun >= 1 and report.records_lost >= 1
    assert report.damaged_copy is not None
    assert report.damaged_copy.read_bytes() == damaged_bytes_before
    counts = _check_invariant(pristine, store_copy)
    assert counts["done"] == report.units["done"] >= N_UNITS // 2
    assert report.units["failed"] == 1
    done_or_failed = report.units["done"] + report.units["failed"]
    _resume_completes(store_copy.parent, N_UNITS - report.units["done"])
    assert done_or_failed < N_UNITS


def test_units_whose_rows_are_lost_run_again(pristine: Path, store_copy: Path) -> None:
    # Find a leaf page of the units table (a WITHOUT ROWID table: an index b-tree whose cells
    # hold whole unit rows) and destroy it.
    pages = {cell.page for cell in read_cells(store_copy) if len(cell.values) == 11}
    assert pages
    _overwrite(store_copy, min(pages) - 1, 1)
    report = repair_store(store_copy.parent)
    assert report.repaired and report.units_lost >= 1
    _check_invariant(pristine, store_copy)
    _resume_completes(store_copy.parent, N_UNITS - report.units["done"])


def test_truncated_store_salvages_rows_beyond_the_reach_of_sqlite(
    pristine: Path, store_copy: Path
) -> None:
    with store_copy.open("r+b") as handle:
        handle.truncate(store_copy.stat().st_size * 6 // 10)
    report = repair_store(store_copy.parent)
    assert report.repaired
    counts = _check_invariant(pristine, store_copy)
    assert counts["done"] >= N_UNITS // 4
    _resume_completes(store_copy.parent, N_UNITS - report.units["done"])


def test_a_truncated_store_counts_no_record_row_it_never_held(
    pristine: Path, tmp_path: Path
) -> None:
    """Past a file's end SQLite reads zeros, which walk as a row of rowid 0 and no values:
    it was counted as a lost record row, more rows lost and kept than the store held."""
    with sqlite3.connect(pristine) as conn:
        (held,) = conn.execute("SELECT count(*) FROM records").fetchone()
    for pages in range(16, pristine.stat().st_size // PAGE, 16):
        run_dir = tmp_path / f"cut{pages}"
        run_dir.mkdir()
        store = run_dir / "results.sqlite"
        shutil.copy(pristine, store)
        with store.open("r+b") as handle:
            handle.truncate(pages * PAGE + 100)  # mid-page: its tail reads as zeros
        report = repair_store(run_dir)
        with sqlite3.connect(store) as conn:
            (kept,) = conn.execute("SELECT count(*) FROM records").fetchone()
        assert report.records_lost >= 1
        assert kept + report.records_lost <= held, pages


@pytest.mark.parametrize("seed", range(30))
def test_no_done_unit_ever_keeps_a_lost_or_garbled_record(
    pristine: Path, store_copy: Path, seed: int
) -> None:
    """Whatever pages are destroyed or cut off, kept-done units are exactly as before."""
    rng = random.Random(seed)
    pages = store_copy.stat().st_size // PAGE
    mode = ("pages", "zeros", "truncate")[seed % 3]
    with store_copy.open("r+b") as handle:
        if mode == "truncate":
            handle.truncate(rng.randrange(2 * PAGE, pages * PAGE))
        else:
            for _ in range(rng.randint(1, 4)):
                first = rng.randrange(1, pages - 1)
                count = rng.randint(1, 6)
                handle.seek(first * PAGE)
                if mode == "zeros":
                    handle.write(b"\x00" * PAGE * count)
                else:
                    handle.write(rng.randbytes(PAGE * count))
    try:
        report = repair_store(store_copy.parent)
    except StoreError as err:
        assert "cannot salvage" in str(err)  # the schema page itself was destroyed
        return
    if not report.repaired:
        return  # the damage only hit free space
    _check_invariant(pristine, store_copy)
    _resume_completes(store_copy.parent, N_UNITS - report.units["done"])


def test_repair_reads_commits_still_in_the_wal(tmp_path: Path) -> None:
    source = tmp_path / "live"
    _build(source)
    writer = Store(source)  # keeps the WAL alive while we copy
    try:
        writer._conn.execute("PRAGMA wal_autocheckpoint = 0")
        units = [make_unit({"extra": i}, label=f"e{i}") for i in range(30)]
        writer.register_units(units)
        now = time.time()
        writer.write_results(
            [
                UnitResult(u.id, "done", now, now, records=[Answer(q=i, step=0, text="w" * 50)])
                for i, u in enumerate(units)
            ]
        )
        copy = tmp_path / "copy"
        copy.mkdir()
        for suffix in ("", "-wal"):
            shutil.copy(f"{source}/results.sqlite{suffix}", f"{copy}/results.sqlite{suffix}")
    finally:
        writer.close()
    wal = copy / "results.sqlite-wal"
    assert wal.stat().st_size > 0
    # Damage the main file's second half; the WAL's newer pages must still be used.
    store = copy / "results.sqlite"
    _overwrite(store, store.stat().st_size // PAGE // 2, 2)
    report = repair_store(copy)
    assert report.repaired
    kept_extra = _contents(store)[0]
    extra_ids = {u.id for u in units}
    assert sum(1 for u in extra_ids if kept_extra.get(u, ("", None))[0] == "done") >= 25
    assert Path(f"{report.damaged_copy}-wal").read_bytes()  # the WAL moved with the copy


def test_repair_refuses_a_store_a_live_process_is_writing(store_copy: Path) -> None:
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        with sqlite3.connect(store_copy) as conn:
            conn.execute(
                "INSERT INTO runs (started_at, status, host, pid) VALUES (?, 'running', ?, ?)",
                (time.time(), socket.gethostname(), sleeper.pid),
            )
        conn.close()
        _overwrite(store_copy, store_copy.stat().st_size // PAGE // 2, 2)
        before = _fingerprint(store_copy)
        with pytest.raises(StoreError, match=f"process {sleeper.pid}"):
            repair_store(store_copy.parent)
        assert _fingerprint(store_copy) == before
        assert repair_store(store_copy.parent, force=True).repaired
    finally:
        sleeper.kill()
        sleeper.wait()


def test_repair_never_rewrites_a_folder_whose_writer_lock_is_held(store_copy: Path) -> None:
    """With --force, repair skipped its only check (the runs table's pid) and moved the
    store aside under a live run, whose later commits then went into the damaged copy while
    it reported "finished". The writer lock is the proof of a live writer: held, repair is
    refused, --force or not, and the store is untouched."""
    from byzllm.runs._lock import RunBusyError, WriterLock

    _overwrite(store_copy, store_copy.stat().st_size // PAGE // 2, 2)
    before = _fingerprint(store_copy)
    with WriterLock(store_copy):
        for force in (False, True):
            with pytest.raises(RunBusyError, match="repair never rewrites a folder a run is"):
                repair_store(store_copy.parent, force=force)
    assert _fingerprint(store_copy) == before
    assert repair_store(store_copy.parent).repaired  # the lock released: repaired


def test_nothing_to_salvage_is_one_clear_error(store_copy: Path, tmp_path: Path) -> None:
    _overwrite(store_copy, 0, 1)  # page 1: the header and the schema
    with pytest.raises(StoreError, match="not an SQLite database"):
        repair_store(store_copy.parent)
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "results.sqlite").touch()
    with pytest.raises(StoreError, match="empty"):
        repair_store(empty)
    with pytest.raises(InputError, match="no results store"):
        repair_store(tmp_path / "absent")


def test_schema_page_destroyed_but_header_intact(store_copy: Path) -> None:
    with store_copy.open("r+b") as handle:
        handle.seek(100)
        handle.write(b"\xff" * (PAGE - 100))
    with pytest.raises(StoreError, match=r"cannot salvage .*schema"):
        repair_store(store_copy.parent)


# --- reading pages -------------------------------------------------------------------------


def test_page_reader_finds_every_row_of_a_healthy_store(pristine: Path) -> None:
    conn = sqlite3.connect(f"{pristine.resolve().as_uri()}?mode=ro", uri=True)
    records = {
        rowid: (unit, seq, kind, text)
        for rowid, unit, seq, kind, text in conn.execute(
            "SELECT rowid, unit_id, seq, kind, json FROM records"
        )
    }
    units = {row[0]: row for row in conn.execute("SELECT * FROM units")}
    conn.close()
    found_records = {
        cell.rowid: cell.values
        for cell in read_cells(pristine)
        if cell.table_leaf and len(cell.values) == 4
    }
    assert found_records == records  # overflowing records included
    assert any(len(text) > 3 * PAGE for _, _, _, text in records.values())
    found_units = {c.values[0]: c.values for c in read_cells(pristine) if len(c.values) == 11}
    assert found_units == units


def test_page_reader_ignores_what_is_not_sqlite(tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("hello " * 1000)
    assert list(read_cells(text)) == []
    empty = tmp_path / "empty.sqlite"
    empty.touch()
    assert list(read_cells(empty)) == []
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"SQLite format 3\x00" + os.urandom(PAGE * 8))
    list(read_cells(garbage))  # never raises


def _nothing(payload: dict[str, Any]) -> None:
    return None


def test_repair_never_second_guesses_a_healthy_store(tmp_path: Path) -> None:
    """Ids that are not payload hashes and units without records are fine when SQLite
    finds nothing wrong: only damage makes them suspect."""
    from byzllm.runs import Unit

    units = [Unit(id=f"custom-{i}", label=f"u{i}", payload={"i": i}) for i in range(5)]
    asyncio.run(run_units(tmp_path, units, _nothing, progress=False))
    store = tmp_path / "results.sqlite"
    before = _fingerprint(store)
    report = repair_store(tmp_path)
    assert not report.repaired and not report.lost_anything
    assert _fingerprint(store) == before
