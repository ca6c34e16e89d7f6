"""`runs repair` of a store whose folder was rebound to another config (``--force``), and of
stores whose unit payloads carry transport fields (real-model runs).

A rebind deletes the other config's units and records: the repair must neither bring them
back from the pages they were deleted from, nor take the gaps they leave in the records
table for lost records of the units that stayed.
"""

from __future__ import annotations

import json
import random
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any, ClassVar

import pytest

from byzllm.llm import ModelSettings
from byzllm.runs import Record, Store, UnitResult, _repair, make_unit, repair_store
from byzllm.runs._pages import read_cells

PAGE = 4096
#: In every payload of the config a rebind drops, so its bytes can be looked for in the file.
DROPPED = "dropped-config-marker"


class Answer(Record):
    kind: ClassVar[str] = "answer"
    n: int
    text: str


class Check(Record):
    kind: ClassVar[str] = "check"
    n: int
    text: str


class Agent(ModelSettings):
    model: str = "openai/none"


def _text(n: int, size: int) -> str:
    return random.Random(n).randbytes(size // 2).hex()


def _store(run_dir: Path, payloads: list[dict[str, Any]], records: Any) -> list[Any]:
    """A store of ``payloads``' units, all done with ``records(n)``; returns the units."""
    units = [make_unit(payload) for payload in payloads]
    with Store(run_dir) as store:
        store.register_units(units)
        now = time.time()
        store.write_results(
            [UnitResult(u.id, "done", now, now + 1, records(n)) for n, u in enumerate(units)]
        )
    return units


def _checkpoint(path: Path) -> None:
    """Every committed page into the main file (the ``-wal`` emptied), as after a clean exit."""
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert Path(f"{path}-wal").stat().st_size == 0


def _overwrite_page(path: Path, page: int) -> None:
    with path.open("r+b") as handle:
        handle.seek((page - 1) * PAGE)
        handle.write(b"\xa5" * PAGE)


def _index_pages(path: Path) -> set[int]:
    """Pages holding entries of the records indexes (by kind, by unit: three values, the
    record's rowid last)."""
    return {
        cell.page
        for cell in read_cells(path)
        if not cell.table_leaf
        and len(cell.values) == 3
        and isinstance(cell.values[0], str)
        and isinstance(cell.values[2], int)
    }


def _contents(run_dir: Path) -> tuple[dict[str, str], dict[str, int]]:
    """(unit id -> status, unit id -> its record rows) of a healthy store."""
    with Store.open(run_dir) as store:
        units = {unit["id"]: unit["status"] for unit in store.units()}
    with sqlite3.connect(f"{(run_dir / 'results.sqlite').as_uri()}?mode=ro", uri=True) as conn:
        rows = dict(conn.execute("SELECT unit_id, count(*) FROM records GROUP BY unit_id"))
    return units, rows


# --- F2: units a rebind removed stay removed -------------------------------------------------


def test_a_rebind_overwrites_what_it_removes_whatever_sqlite_s_default(tmp_path: Path) -> None:
    """SQLite's default build leaves deleted rows readable in the file (``secure_delete``
    off; some Linux builds turn it on): the drop overwrites them either way, and gives the
    connection its setting back."""
    payloads = [{"q": q, "config": DROPPED if q >= 20 else "kept"} for q in range(200)]
    units = _store(tmp_path, payloads, lambda n: [Answer(n=n, text=_text(n, 400))])
    keep = [u.id for u in units[:20]]
    path = tmp_path / "results.sqlite"
    with Store(tmp_path) as store:
        store._conn.execute("PRAGMA secure_delete = OFF")
        assert store.drop_units_except(keep) == 180
        assert store._conn.execute("PRAGMA secure_delete").fetchone()[0] == 0
    _checkpoint(path)
    data = path.read_bytes()
    assert DROPPED.encode() not in data
    assert not any(u.id.encode() in data for u in units[20:])
    assert _contents(tmp_path)[0] == dict.fromkeys(keep, "done")


def _drop_without_overwriting(path: Path, keep: list[str]) -> None:
    """What a rebind did before it overwrote what it removes (and does on any SQLite that
    leaves deleted rows in place)."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA secure_delete = OFF")
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("CREATE TEMP TABLE keep_units (id TEXT PRIMARY KEY)")
        conn.executemany("INSERT INTO keep_units VALUES (?)", ((unit,) for unit in keep))
        conn.execute("DELETE FROM records WHERE unit_id NOT IN (SELECT id FROM keep_units)")
        conn.execute("DELETE FROM units WHERE id NOT IN (SELECT id FROM keep_units)")
        conn.execute("COMMIT")
        assert conn.execute("PRAGMA freelist_count").fetchone()[0] > 0
    finally:
        conn.close()


def test_repair_never_brings_back_units_deleted_before_the_damage(tmp_path: Path) -> None:
    """Deleted rows left on the free list's pages (a store rebound before the drop overwrote
    them) are not read back: the page reader leaves free pages out, as it must, since a
    damaged records page sends the repair to the pages."""
    payloads = [{"q": q, "config": DROPPED if q >= 100 else "kept"} for q in range(600)]
    units = _store(tmp_path, payloads, lambda n: [Answer(n=n, text=_text(n, 600))])
    keep = [u.id for u in units[:100]]
    path = tmp_path / "results.sqlite"
    _drop_without_overwriting(path, keep)
    _checkpoint(path)
    assert DROPPED.encode() in path.read_bytes()  # the deleted rows are still in the file
    dropped = {u.id for u in units[100:]}
    assert not any(cell.values and cell.values[0] in dropped for cell in read_cells(path))
    record_pages = sorted(
        {c.page for c in read_cells(path) if c.table_leaf and c.rowid and c.values[0] in keep}
    )
    _overwrite_page(path, record_pages[len(record_pages) // 2])

    report = repair_store(tmp_path)

    assert report.repaired
    units_after, rows_after = _contents(tmp_path)
    assert set(units_after) <= set(keep) and set(rows_after) <= set(keep)
    assert report.units_lost == 0  # the deleted units were never this config's to lose
    done = {unit for unit, status in units_after.items() if status == "done"}
    assert done == set(rows_after)  # every unit kept done has its record


#: A stand-in sqlite3 shell: ``DB .recover[ OPTIONS]`` prints the database as SQL and logs the
#: command; options it does not know fail as a real shell's do.
_SHELL = """
import sqlite3, sys
from pathlib import Path
known = {KNOWN!r}
command = sys.argv[2:]
if command and command[0].startswith(".recover"):
    with open(Path(__file__).with_name("log"), "a") as log:
        print(command[0], file=log)
    if command[0] not in known:
        print("unexpected option", file=sys.stderr)
        sys.exit(1)
    for line in sqlite3.connect(sys.argv[1]).iterdump():
        print(line)
else:
    conn = sqlite3.connect(sys.argv[1])
    conn.executescript(sys.stdin.read())
    conn.commit()
"""


@pytest.mark.parametrize(
    ("known", "used"),
    [
        ((".recover", ".recover --ignore-freelist"), ".recover --ignore-freelist"),
        ((".recover",), ".recover"),  # before SQLite 3.40: free pages are never read
    ],
)
def test_recover_is_told_to_leave_free_pages_out(
    shell_on_path: Path, tmp_path: Path, known: tuple[str, ...], used: str
) -> None:
    """SQLite's ``.recover`` reads the free list's pages too (since 3.40) unless told not to."""
    shell = shell_on_path / "sqlite3"
    shell.write_text(f"#!{sys.executable}\n{_SHELL.replace('{KNOWN!r}', repr(known))}")
    shell.chmod(0o755)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    _store(run_dir, [{"q": q} for q in range(5)], lambda n: [Answer(n=n, text="x")])
    path = run_dir / "results.sqlite"
    with sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True) as conn:
        tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master")}
        layout = _repair._layout(conn, tables, _repair.RepairReport(run_dir, path, False))
    assert _repair.recover_shell() == str(shell)
    (shell_on_path / "log").unlink()

    cells = list(_repair._recovered_cells(path, layout, str(shell)))

    assert len(cells) == 5 + 5  # units and records
    assert (shell_on_path / "log").read_text().splitlines()[-1] == used


# --- F4: the gaps a rebind leaves are not lost records ---------------------------------------


def _rebound(run_dir: Path, records: Any) -> tuple[list[Any], list[str]]:
    """300 questions x seeds {0, 1}, all done; then rebound to seed 0 only (every other
    unit's records deleted from the middle of the records table)."""
    units = _store(run_dir, [{"q": q, "seed": s} for q in range(300) for s in (0, 1)], records)
    keep = [u.id for u in units if u.payload["seed"] == 0]
    with Store(run_dir) as store:
        assert store.drop_units_except(keep) == 300
    _checkpoint(run_dir / "results.sqlite")
    return units, keep


def test_after_a_rebind_a_damaged_index_sends_no_complete_unit_back(tmp_path: Path) -> None:
    """The row after a unit's last record is the next row that exists, not rowid + 1."""
    _, keep = _rebound(tmp_path, lambda n: [Answer(n=n, text="x" * 50), Answer(n=-n, text="y")])
    path = tmp_path / "results.sqlite"
    by_kind = {
        cell.page
        for cell in read_cells(path)
        if not cell.table_leaf and len(cell.values) == 3 and cell.values[0] == "answer"
    }
    _overwrite_page(path, max(by_kind))  # an index page: no record is lost

    report = repair_store(tmp_path)

    assert report.repaired
    assert report.units == {"done": 300, "failed": 0, "pending": 0}
    assert (report.units_rerun, report.units_lost, report.records_lost) == (0, 0, 0)
    assert report.records == 600
    assert _contents(tmp_path) == (dict.fromkeys(keep, "done"), dict.fromkeys(keep, 1))


def test_after_a_rebind_a_unit_that_lost_its_last_records_still_runs_again(
    tmp_path: Path,
) -> None:
    """The gaps are skipped only where nothing says a row was there: a records page lost
    with every index entry naming its rows still sends the units it held back to pending
    (its rowids' look-ups meet the damage)."""
    _rebound(
        tmp_path,
        lambda n: [Answer(n=n, text=_text(n, 500)), Check(n=n, text=_text(-n - 1, 500))],
    )
    before_units, before_rows = _contents(tmp_path)
    path = tmp_path / "results.sqlite"
    unit_of: dict[int, str] = {}
    first_on_page: dict[int, int] = {}
    for cell in read_cells(path):
        if cell.table_leaf and cell.rowid is not None and len(cell.values) == 4:
            unit_of[cell.rowid] = cell.values[0]
            first_on_page[cell.page] = min(first_on_page.get(cell.page, cell.rowid), cell.rowid)
    # A page whose first row is a unit's last: that unit's other record lies on the page
    # before, so a page lost with its index entries leaves no trace of the unit's tail.
    straddled = [
        page
        for page, first in sorted(first_on_page.items())
        if unit_of.get(first - 1) == unit_of[first]
    ]
    assert straddled
    for page in {straddled[0], *_index_pages(path)}:
        _overwrite_page(path, page)

    report = repair_store(tmp_path)

    assert report.repaired and report.units_rerun > 0
    after_units, after_rows = _contents(tmp_path)
    assert set(after_units) <= set(before_units)
    for unit, status in after_units.items():
        if status == "done":  # every unit kept done has all its records
            assert after_rows.get(unit) == before_rows[unit], unit
        else:
            assert unit not in after_rows


# --- F5: a unit's id is checked against its payload in real-model stores too -----------------


def _agent_payloads(n: int) -> list[dict[str, Any]]:
    agent = Agent(model="openai/qwen0.5b", base_url="http://127.0.0.1:8000/v1", api_key_env=None)
    return [{"agent": agent, "q": 1_000_000 + q} for q in range(n)]


def test_the_id_check_leaves_out_the_transport_fields_the_id_leaves_out() -> None:
    units = [make_unit(payload) for payload in _agent_payloads(3)]
    for unit in units:
        stored = json.dumps(unit.payload, sort_keys=True)  # as the store keeps it
        assert "base_url" in stored and "api_key_env" in stored
        assert _repair._payload_hash_matches(unit.id, stored)
        other = json.dumps({**unit.payload, "q": 7}, sort_keys=True)
        assert not _repair._payload_hash_matches(unit.id, other)
    plain = make_unit({"q": 1, "cache": "kept in the id: not a model's field"})
    assert _repair._payload_hash_matches(plain.id, json.dumps(plain.payload, sort_keys=True))


def test_repair_drops_a_real_model_unit_whose_payload_no_longer_matches_its_id(
    tmp_path: Path,
) -> None:
    units = _store(tmp_path, _agent_payloads(40), lambda n: [Answer(n=n, text="x" * 50)])
    path = tmp_path / "results.sqlite"
    _checkpoint(path)
    data = path.read_bytes()
    assert data.count(b'"q": 1000003') == 1
    path.write_bytes(data.replace(b'"q": 1000003', b'"q": 1000999'))  # still valid JSON
    _overwrite_page(path, max(_index_pages(path)))  # damage elsewhere: the store needs repairing

    report = repair_store(tmp_path)

    after_units, _ = _contents(tmp_path)
    assert set(after_units) == {u.id for u in units} - {units[3].id}
    assert report.units_lost == 1
    assert set(after_units.values()) == {"done"}
