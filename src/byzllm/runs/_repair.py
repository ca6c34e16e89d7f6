"""Salvage a damaged result store: copy every readable row into a fresh store.

SQLite keeps each table and each index in its own b-tree of pages. When some pages are
damaged (a disk error, a file cut short or overwritten), the rows on them are lost but the
rest of the file still holds good rows, as long as nothing walks into the damage. The
damaged file is only read (a copy, where a tool needs to open it), never written:

* SQLite reads what its b-trees still reach: each table is walked in key order until the walk
  fails, from the end backwards, and across the damage by look-ups of the keys the table's
  indexes (separate b-trees) still name; integer keys (``runs.id``, ``records.rowid``) are
  also probed one by one;
* the pages those walks can no longer reach -- below a damaged interior page, or in the lost
  part of a truncated file -- are read by SQLite's own ``.recover`` (the ``sqlite3`` shell),
  which scans every page of the file and its ``-wal``, when a shell whose ``.recover`` works
  is installed. Our page reader (:mod:`byzllm.runs._pages`) reads them otherwise: measured on
  every damage of the corruption tests (a torn middle, a lost ``units`` leaf, truncations,
  30 random overwrites, zeroings and truncations, a damaged file with commits still in its
  ``-wal``), it salvages exactly the rows ``.recover`` does and none that ``.recover`` cannot,
  so it is kept only for machines without a working ``.recover``: Debian 12's ``sqlite3``
  links a library built without the ``sqlite_dbpage`` table, and its ``.recover`` fails on
  every database (:func:`recover_shell` tries it once);
* both leave out the pages on the file's free list: they hold only deleted rows, such as the
  units and records a rebind (``--force``) removed, which must not come back;
* every row is checked before it is kept: stored JSON must parse, statuses must be known,
  and a unit's id must be the hash of its payload (when the store's ids are payload hashes;
  the payload's transport fields left out, as the id leaves them out);
* a unit stays ``done`` only if all of its records survived: the record indexes name each
  unit's records, its record numbers must run 0..n-1 without a gap, and -- since a unit's
  records are written in one transaction with consecutive rowids -- the next row after its
  last record must be another unit's (or the table's end, as SQLite reads it). Rows a rebind
  deleted leave gaps in the rowids: a gap counts as a loss only where something names a row
  in it or a look-up into it met damage. A done unit
  that lost a record goes back to ``pending`` (its surviving records are dropped), so the
  next run of the same command runs it again; a unit whose row is lost is simply not in the
  fresh store, and the next run registers and runs it as new. Failed units stay failed.

The fresh store replaces ``results.sqlite``; the damaged file is kept beside it as
``results.damaged-<UTC time>.sqlite`` (with its ``-wal``), never deleted. Records of a unit
that survived are copied unchanged, so a report over the repaired and resumed store is the
report the undamaged store would have given (for deterministic work). SQLite keeps no
checksums: bytes changed inside a stored value that leave it valid text and JSON cannot be
told from the real value.

:func:`repair_store` is ``byzllm runs repair RUN_DIR``.
"""

from __future__ import annotations

import bisect
import contextlib
import datetime as dt
import functools
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from byzllm._process import without_secrets
from byzllm.errors import InputError

from ._codec import derived_row, record_count, unpack_records
from ._lock import RunBusyError, WriterLock
from ._pages import RawCell, read_cells
from ._store import (
    _SCHEMA_VERSION,
    STORE_TABLES,
    StoreError,
    _create_store_file,
    _pid_alive,
    connect_read_only,
    identify_store_file,
    is_damage,
    resolve_store_path,
)
from ._units import _transport_fields, unit_id

__all__ = ["RepairReport", "repair_store"]

_UNIT_STATUSES = frozenset({"pending", "done", "failed"})
#: Most keys probed one by one in a row without finding a row (a damaged page holds far
#: fewer rows; the bound keeps a garbled key from meaning billions of look-ups).
_MAX_PROBES = 100_000
#: Rows read cleanly in a row, by look-ups, before a walk in key order is tried again.
_CLEAN_STREAK = 32
#: More invocations than this in one store means the number read is garbage.
_MAX_PLAUSIBLE_RUNS = 1_000_000

Row = tuple[Any, ...]


@dataclass(slots=True)
class RepairReport:
    """What :func:`repair_store` found and did.

    ``repaired`` is False when the store passed the integrity check and was left as it was.
    Counts of what was lost are lower bounds: a row is counted when something still names
    it (an index entry, a record of the unit); rows nothing names any more are gone without
    a trace.
    """

    run_dir: Path
    store: Path
    repaired: bool
    problems: list[str] = field(default_factory=list)
    damaged_copy: Path | None = None
    #: Units kept in the fresh store, by status (``pending`` includes ``units_rerun``).
    units: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(("done", "failed", "pending"), 0)
    )
    #: Units whose row was unreadable or invalid: not in the fresh store, they run again.
    units_lost: int = 0
    #: Units stored ``done`` whose records did not all survive: now ``pending``, they rerun.
    units_rerun: int = 0
    #: Records kept (a batch row counts its records).
    records: int = 0
    #: Record rows (a record, or a unit's batch of one kind) unreadable, invalid, or dropped
    #: with a unit that lost its row or a record.
    records_lost: int = 0
    runs: int = 0
    #: Invocation rows (provenance: config, commit, counts) that were unreadable.
    runs_lost: int = 0
    #: Tables of which not a single row could be read (``units``: every unit runs again).
    unreadable_tables: list[str] = field(default_factory=list)
    #: Rows (units, records, invocations) found only on pages SQLite's walks could not reach
    #: (by ``.recover``, or by the page reader where no working ``.recover`` is installed).
    recovered_from_pages: int = 0
    seconds: float = 0.0

    @property
    def lost_anything(self) -> bool:
        """Whether any row was unreadable or invalid (or a whole table)."""
        return bool(
            self.units_lost
            or self.units_rerun
            or self.records_lost
            or self.runs_lost
            or self.unreadable_tables
        )

    @property
    def units_to_run(self) -> int:
        """Units the next run of the same command runs again (lost or incomplete)."""
        return self.units_lost + self.units_rerun

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (``byzllm runs repair --json``)."""
        return {
            "run_dir": str(self.run_dir),
            "store": str(self.store),
            "repaired": self.repaired,
            "problems": list(self.problems),
            "damaged_copy": None if self.damaged_copy is None else str(self.damaged_copy),
            "units": {"total": sum(self.units.values()), **self.units},
            "units_lost": self.units_lost,
            "units_rerun": self.units_rerun,
            "units_to_run": self.units_to_run,
            "records": self.records,
            "records_lost": self.records_lost,
            "runs": self.runs,
            "runs_lost": self.runs_lost,
            "unreadable_tables": list(self.unreadable_tables),
            "recovered_from_pages": self.recovered_from_pages,
            "seconds": round(self.seconds, 3),
        }


# --- reading around damage -------------------------------------------------------------------


def _scan(
    conn: sqlite3.Connection, sql: str, params: tuple[Any, ...], sink: Callable[[Row], None]
) -> tuple[Row | None, bool]:
    """Feed rows of ``sql`` to ``sink`` until the walk ends (True) or hits damage (False);
    also returns the last row read."""
    last: Row | None = None
    try:
        for row in conn.execute(sql, params):
            sink(row)
            last = row
    except sqlite3.DatabaseError:
        return last, False
    return last, True


def _int_candidates(after: int | None, known: list[Any], upper: int | None) -> Iterator[Any]:
    """Integer keys after ``after`` in order: every integer up to ``upper``, then the known
    keys beyond it."""
    start = 1 if after is None else after + 1
    stop = upper if upper is not None else start - 1
    yield from range(start, stop + 1)
    yield from known[bisect.bisect_right(known, max(stop, start - 1)) :]


def _after(key: Any, position: Any) -> bool:
    try:
        return bool(key > position)
    except TypeError:  # a garbled key of another type
        return False


def _text_candidates(after: Any, known: list[Any]) -> Iterator[Any]:
    index = 0 if after is None else bisect.bisect_right(known, after)
    yield from known[index:]


@dataclass(slots=True)
class _TableRead:
    rows: dict[Any, Row]
    unreadable: set[Any]
    #: Not one row readable, from either end (a damaged root page, or all of it).
    nothing_readable: bool = False
    #: Some walk met damage.
    damaged: bool = False
    #: The largest key, when the walk down the right edge of the tree could read it.
    last_key: Any = None
    #: Keys whose look-up met damage (a row may have been there), known or not.
    failed: set[Any] = field(default_factory=set)


def _read_table(
    conn: sqlite3.Connection,
    table: str,
    key: str,
    columns: list[str],
    *,
    known: set[Any],
    integer_keys: bool,
    upper: int | None = None,
) -> _TableRead:
    """Every readable row of ``table`` by its key ``key`` (``rowid`` or the primary key).

    ``known`` are keys that something else (an index) says exist: they are looked up one by
    one where the walk in key order cannot pass; a look-up that fails counts as unreadable.
    """
    selected = ", ".join([key, *columns])
    rows: dict[Any, Row] = {}
    unreadable: set[Any] = set()
    failed: set[Any] = set()

    def keep(row: Row) -> None:
        rows[row[0]] = row[1:]

    # From the end backwards first: whatever lies after the damage.
    ends: list[Any] = []

    def keep_from_end(row: Row) -> None:
        if not ends:
            ends.append(row[0])
        keep(row)

    _, backwards_ok = _scan(
        conn, f"SELECT {selected} FROM {table} ORDER BY {key} DESC", (), keep_from_end
    )
    first_walk_ok: bool | None = None
    jumped = False
    key_type = int if integer_keys else str  # (a garbled row may carry a key of any type)
    candidates: list[Any] = sorted(k for k in known | set(rows) if type(k) is key_type)
    position: Any = None
    while True:
        where = "" if position is None else f" WHERE {key} > ?"
        params = () if position is None else (position,)
        last, complete = _scan(
            conn, f"SELECT {selected} FROM {table}{where} ORDER BY {key}", params, keep
        )
        if first_walk_ok is None:
            first_walk_ok = complete or last is not None
        if complete:
            break
        if (
            last is not None
            and type(last[0]) is key_type
            and (position is None or _after(last[0], position))
        ):
            position = last[0]  # (a garbled page can yield keys out of order: never go back)
        # Damage right after `position`: look keys up one by one (a look-up costs a few
        # microseconds, a walk that fails at once far more) until a stretch of rows reads
        # cleanly again, then walk on from there; give up after _MAX_PROBES keys in a row
        # without a row.
        jumped = True
        resume = None
        streak = misses = 0
        upper_bound = upper if upper is not None else (candidates[-1] if candidates else None)
        probes = (
            _int_candidates(position, candidates, upper_bound)
            if integer_keys
            else _text_candidates(position, candidates)
        )
        for candidate in probes:
            try:
                row = conn.execute(
                    f"SELECT {selected} FROM {table} WHERE {key} = ?", (candidate,)
                ).fetchone()
            except sqlite3.DatabaseError:
                failed.add(candidate)
                if candidate in known:
                    unreadable.add(candidate)
                streak = 0
                row = None
            if row is None:  # unreadable, or no such key (a gap, a garbled index entry)
                misses += 1
                if misses > _MAX_PROBES:
                    break
                continue
            keep(row)
            misses = 0
            streak += 1
            if streak >= _CLEAN_STREAK:
                resume = candidate
                break
        if resume is None:
            break
        position = resume
    unreadable -= set(rows)
    nothing = not rows and not backwards_ok and not first_walk_ok
    damaged = not backwards_ok or jumped or nothing
    return _TableRead(
        rows,
        unreadable,
        nothing_readable=nothing,
        damaged=damaged,
        last_key=ends[0] if ends else None,
        failed=failed - set(rows),
    )


def _read_index(
    conn: sqlite3.Connection, table: str, index: str, order: list[str], selected: list[str]
) -> tuple[set[Row], bool]:
    """``selected`` columns of every readable entry of one index, walked in the index's own
    order (``order``: its columns) from both ends; and whether the walks met no damage."""
    entries: set[Row] = set()
    complete = True
    for direction in ("", " DESC"):
        by = ", ".join(f"{column}{direction}" for column in order)
        _, ok = _scan(
            conn,
            f"SELECT {', '.join(selected)} FROM {table} INDEXED BY {_quote(index)} ORDER BY {by}",
            (),
            entries.add,
        )
        complete &= ok
    return entries, complete


def _index_columns(conn: sqlite3.Connection, index: str) -> list[str]:
    try:
        rows = conn.execute(f"PRAGMA index_info({_quote(index)})").fetchall()
    except sqlite3.DatabaseError:
        return []
    return [str(row[2]) for row in rows if row[2] is not None]


def _table_columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [str(row[1]) for row in conn.execute(f"PRAGMA table_info({_quote(table)})")]


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _try_int(conn: sqlite3.Connection, sql: str) -> int | None:
    try:
        row = conn.execute(sql).fetchone()
    except sqlite3.DatabaseError:
        return None
    return int(row[0]) if row is not None and isinstance(row[0], int) else None


# --- checking rows ---------------------------------------------------------------------------


def _json_or_none(value: Any) -> bool:
    if value is None:
        return True
    if not isinstance(value, str):
        return False
    try:
        json.loads(value)
    except ValueError:
        return False
    return True


def _number_or_none(value: Any) -> bool:
    return value is None or (isinstance(value, int | float) and not isinstance(value, bool))


def _valid_record(row: dict[str, Any]) -> bool:
    if not (isinstance(row.get("unit_id"), str) and isinstance(row.get("kind"), str)):
        return False
    if not (isinstance(row.get("seq"), int) and row["seq"] >= 0):
        return False
    value = row.get("json")
    if not isinstance(value, str | bytes):
        return False
    try:
        if derived_row(value) is not None:  # (a count: its records are another row's)
            return True
        return all(isinstance(json.loads(text), dict) for text in unpack_records(value))
    except ValueError:
        return False


def _valid_unit(row: dict[str, Any]) -> bool:
    if not isinstance(row.get("id"), str) or not row["id"]:
        return False
    if not isinstance(row.get("label"), str) or not isinstance(row.get("ordinal"), int):
        return False
    if row.get("status") not in _UNIT_STATUSES or not isinstance(row.get("attempts"), int):
        return False
    if not isinstance(row.get("payload"), str) or not _json_or_none(row["payload"]):
        return False
    if not all(_number_or_none(row.get(k)) for k in ("started_at", "finished_at", "seconds")):
        return False
    return (row.get("error") is None or isinstance(row["error"], str)) and (
        row.get("run_id") is None or isinstance(row["run_id"], int)
    )


def _payload_hash_matches(unit: str, payload: str) -> bool:
    """Whether ``unit`` is the id of the stored ``payload``.

    A stored payload keeps the transport fields of its models (``base_url``, ``cache``, ...:
    the work needs them) that its id leaves out (:func:`~byzllm.runs.make_unit`); as plain
    JSON they are no longer told apart from other keys, so the payload is hashed both as
    stored and without keys of those names.
    """
    try:
        value = json.loads(payload)
        if not isinstance(value, dict):
            return False
        if unit_id(value) == unit:
            return True
        reduced = _without_keys(value, _transport_names())
        return reduced != value and unit_id(reduced) == unit
    except Exception:  # anything a garbled payload raises: not a match
        return False


@functools.cache
def _transport_names() -> frozenset[str]:
    """Names of the transport fields: those of :class:`~byzllm.llm.ModelSettings`, which
    every model section of a config inherits."""
    from byzllm.llm import ModelSettings

    return frozenset(_transport_fields(ModelSettings()) or ())


def _without_keys(value: Any, names: frozenset[str]) -> Any:
    if isinstance(value, dict):
        return {k: _without_keys(v, names) for k, v in value.items() if k not in names}
    if isinstance(value, list):
        return [_without_keys(item, names) for item in value]
    return value


def _valid_run(row: dict[str, Any]) -> bool:
    return (
        isinstance(row.get("status"), str)
        and _number_or_none(row.get("started_at"))
        and row.get("started_at") is not None
        and _json_or_none(row.get("config"))
        and _json_or_none(row.get("argv"))
    )


# --- the repair ------------------------------------------------------------------------------


def _integrity_problems(conn: sqlite3.Connection) -> list[str]:
    try:
        rows = conn.execute("PRAGMA quick_check(10)").fetchall()
    except sqlite3.DatabaseError as err:
        return [str(err)]
    return [str(row[0]) for row in rows if str(row[0]) != "ok"]


def _unreadable(path: Path, why: str) -> StoreError:
    return StoreError(
        f"cannot salvage results store {path}: {why}; nothing can be copied from it, move it "
        "away (or delete it) to start the run afresh"
    )


@dataclass(slots=True)
class _Salvage:
    columns: dict[str, list[str]]
    runs: list[dict[str, Any]]
    units: list[dict[str, Any]]
    records: list[dict[str, Any]]


def repair_store(location: str | Path, *, force: bool = False) -> RepairReport:
    """Salvage the readable part of a damaged store into a fresh one (``runs repair``).

    ``location`` is a run directory or a ``.sqlite`` path. A store that passes SQLite's
    integrity check is left alone (``repaired`` False) unless ``force``. Refuses (a
    :class:`~byzllm.runs.StoreError`) a file with nothing to salvage (empty, not
    SQLite, its schema page unreadable) and a store a live process is still writing to
    (``force`` overrides the latter). See the module docstring for what is kept.
    """
    started = time.monotonic()
    path = resolve_store_path(location)
    if not path.is_file():
        raise InputError(f"no results store at {path} (is this a run directory?)")
    identify_store_file(path)
    try:
        conn = connect_read_only(path)
    except sqlite3.DatabaseError as err:
        raise _unreadable(path, str(err)) from None
    try:
        # Read what SQLite would refuse outright: a file shorter than its header says
        # (truncated), cells that overrun their page. Nothing is written: read-only.
        conn.execute("PRAGMA writable_schema = ON")
        conn.execute("PRAGMA cell_size_check = ON")
        try:
            tables = {
                str(name)
                for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
            }
        except sqlite3.DatabaseError as err:
            if not is_damage(err):
                raise StoreError(f"cannot read results store {path}: {err}") from None
            raise _unreadable(path, f"its schema is unreadable ({err})") from None
        if "units" not in tables:
            raise InputError(f"{path} is not a byzllm results store (no units table)")
        report = RepairReport(
            run_dir=path.parent, store=path, repaired=False, problems=_integrity_problems(conn)
        )
        salvage = _salvage(conn, path, tables, report)
    finally:
        conn.close()
    if not report.problems and not report.lost_anything and not force:
        report.seconds = time.monotonic() - started
        return report  # healthy: left exactly as it was
    # A run holding the folder's writer lock would go on writing into the store moved aside
    # (and report "finished" over a store that lost its later units): never, --force or not.
    lock = WriterLock(path, argv=["byzllm", "runs", "repair", str(path.parent)])
    try:
        lock.acquire()
    except RunBusyError as busy:
        raise RunBusyError(
            f"run folder {path.parent} is in use by {busy.holder}: stop it first; repair "
            "never rewrites a folder a run is writing to",
            holder=busy.holder,
        ) from None
    try:
        if not force:
            _refuse_live_writer(path, salvage.runs)
        fresh = path.with_name(f".{path.name}.repair-{os.getpid()}.tmp")
        try:
            _write_fresh(fresh, salvage)
            report.damaged_copy = _swap(path, fresh)
        finally:
            for suffix in ("", "-wal", "-shm"):
                Path(f"{fresh}{suffix}").unlink(missing_ok=True)
    finally:
        lock.release()
    report.repaired = True
    report.seconds = time.monotonic() - started
    return report


@dataclass(slots=True)
class _Layout:
    """Where things are in the damaged store: column names (table order) per table, the
    order a ``WITHOUT ROWID`` units row is stored in, and the record indexes."""

    columns: dict[str, list[str]]
    unit_order: list[str]
    record_indexes: dict[str, list[str]]  # index name -> its columns
    unit_indexes: dict[str, list[str]]


def _layout(conn: sqlite3.Connection, tables: set[str], report: RepairReport) -> _Layout:
    columns: dict[str, list[str]] = {}
    unit_order: list[str] = []
    for table in STORE_TABLES:
        try:
            info = conn.execute(f"PRAGMA table_info({_quote(table)})").fetchall()
        except sqlite3.DatabaseError:
            info = []
        if table not in tables:
            info = []
        columns[table] = [str(row[1]) for row in info]
        if table == "units":  # a WITHOUT ROWID row: primary key columns first
            keys = sorted((row for row in info if row[5]), key=lambda row: row[5])
            unit_order = [str(row[1]) for row in keys]
            unit_order += [str(row[1]) for row in info if not row[5]]
        if not columns[table] and table != "meta":
            report.unreadable_tables.append(table)
    record_indexes: dict[str, list[str]] = {}
    unit_indexes: dict[str, list[str]] = {}
    try:
        entries = conn.execute(
            "SELECT name, tbl_name FROM sqlite_master WHERE type='index'"
        ).fetchall()
    except sqlite3.DatabaseError:
        entries = []
    for name, table in entries:
        index_columns = _index_columns(conn, str(name))
        if table == "records" and "unit_id" in index_columns:
            record_indexes[str(name)] = index_columns
        elif table == "units" and index_columns:  # (each entry holds the key, id, too)
            unit_indexes[str(name)] = index_columns
    return _Layout(columns, unit_order, record_indexes, unit_indexes)


#: The value type each stored column must have (None allowed where the schema allows it).
_RECORD_TYPES: dict[str, type | tuple[type, ...]] = {"unit_id": str, "seq": int, "kind": str}


@dataclass(slots=True)
class _Found:
    """Everything read from the damaged store, before it is checked and merged."""

    record_unit: dict[int, str] = field(default_factory=dict)  # record rowid -> unit (indexes)
    known_units: set[str] = field(default_factory=set)  # unit ids something names
    records: dict[int, dict[str, Any]] = field(default_factory=dict)  # by rowid
    units: dict[str, dict[str, Any]] = field(default_factory=dict)
    runs: dict[int, dict[str, Any]] = field(default_factory=dict)
    lost_rowids: set[int] = field(default_factory=set)  # records named but unreadable
    #: Record rowids whose look-up met damage: a record nothing names may have been there.
    damaged_rowids: set[int] = field(default_factory=set)
    last_record: int | None = None  # the largest record rowid, read down the tree's edge
    unreadable_units: set[str] = field(default_factory=set)
    seen_unit_rows: set[Any] = field(default_factory=set)  # keys of rows read, valid or not
    largest_run: int = 0  # the largest invocation id SQLite still states
    from_pages: int = 0  # rows only the page scan found
    damaged: bool = False  # some walk through a b-tree met damage
    unreachable: list[str] = field(default_factory=list)  # tables no walk read a row of


def _read_tree(conn: sqlite3.Connection, layout: _Layout, found: _Found) -> None:
    """What SQLite can still reach by walking the b-trees."""
    for index, order in layout.record_indexes.items():
        entries, complete = _read_index(conn, "records", index, order, ["unit_id", "rowid"])
        found.damaged |= not complete
        for unit, rowid in entries:
            if isinstance(rowid, int) and isinstance(unit, str):
                found.record_unit[rowid] = unit
                found.known_units.add(unit)
    for index, order in layout.unit_indexes.items():
        entries, complete = _read_index(conn, "units", index, order, ["id"])
        found.damaged |= not complete
        found.known_units |= {unit for (unit,) in entries if isinstance(unit, str)}

    record_columns = [c for c in layout.columns["records"] if c in _RECORD_COLUMNS]
    if len(record_columns) == len(_RECORD_COLUMNS):
        upper = max([*found.record_unit, _try_int(conn, "SELECT max(rowid) FROM records") or 0])
        read = _read_table(
            conn,
            "records",
            "rowid",
            record_columns,
            known=set(found.record_unit),
            integer_keys=True,
            upper=upper or None,
        )
        found.damaged |= read.damaged
        found.lost_rowids |= read.unreadable
        found.damaged_rowids |= {r for r in read.failed if isinstance(r, int)}
        found.last_record = read.last_key if isinstance(read.last_key, int) else None
        if read.nothing_readable:
            found.unreachable.append("records")
        for rowid, values in read.rows.items():
            found.records[rowid] = dict(zip(record_columns, values, strict=True))

    unit_columns = layout.columns["units"]
    if "id" in unit_columns:
        others = [c for c in unit_columns if c != "id"]
        known = found.known_units | {r["unit_id"] for r in found.records.values() if _is_str(r)}
        read = _read_table(conn, "units", "id", others, known=known, integer_keys=False)
        found.damaged |= read.damaged
        if read.nothing_readable:
            found.unreachable.append("units")
        found.unreadable_units |= {u for u in read.unreadable if isinstance(u, str)}
        for unit, values in read.rows.items():
            found.seen_unit_rows.add(unit)
            found.units[unit] = {**dict(zip(others, values, strict=True)), "id": unit}

    run_columns = [c for c in layout.columns["runs"] if c != "id"]
    if "id" in layout.columns["runs"]:
        upper = max(
            _try_int(conn, "SELECT max(id) FROM runs") or 0,
            _try_int(conn, "SELECT seq FROM sqlite_sequence WHERE name='runs'") or 0,
        )
        if upper > _MAX_PLAUSIBLE_RUNS:
            upper = 0  # a garbled number: probe nothing beyond what the walks find
        read = _read_table(
            conn, "runs", "id", run_columns, known=set(), integer_keys=True, upper=upper or None
        )
        found.damaged |= read.damaged
        if read.nothing_readable:
            found.unreachable.append("runs")
        for run, values in read.rows.items():
            found.runs[run] = {**dict(zip(run_columns, values, strict=True)), "id": run}
        found.largest_run = upper


_RECORD_COLUMNS = ("unit_id", "seq", "kind", "json")
_STATUS_RANK = {"done": 2, "failed": 1, "pending": 0}


def _is_str(row: dict[str, Any]) -> bool:
    return isinstance(row.get("unit_id"), str)


def _read_pages(cells: Iterable[RawCell], layout: _Layout, found: _Found) -> None:
    """What only the pages themselves still hold (rows below a damaged interior page, or on
    pages of a truncated file that SQLite no longer reaches), as ``cells`` from
    :func:`_recovered_cells` or :func:`~byzllm.runs._pages.read_cells`: fills in the gaps of
    :func:`_read_tree`, never overrides what it read."""
    record_columns = layout.columns["records"]
    run_columns = layout.columns["runs"]
    unit_order = layout.unit_order
    index_shapes = [
        ([*columns, "rowid"], columns.index("unit_id"))
        for columns in layout.record_indexes.values()
    ]
    # Rows the walks read and that pass the checks; the pages may hold a better copy of the
    # others (a stale but intact copy left on a page no b-tree links to).
    tree_records = {k for k, row in found.records.items() if _valid_record(row)}
    tree_units = {k for k, row in found.units.items() if _valid_unit(row)}
    tree_runs = {k for k, row in found.runs.items() if _valid_run(row)}
    for cell in cells:
        values = cell.values
        if cell.table_leaf and cell.rowid is not None:
            if (
                len(values) == len(record_columns)
                and set(_RECORD_COLUMNS) <= set(record_columns)
                and cell.rowid not in tree_records
            ):
                row = dict(zip(record_columns, values, strict=True))
                if _valid_record(row) and (
                    cell.rowid not in found.records or not _valid_record(found.records[cell.rowid])
                ):
                    found.records[cell.rowid] = row
            elif (
                len(values) == len(run_columns)
                and "id" in run_columns
                and values[run_columns.index("id")] is None  # the rowid alias is stored NULL
                and cell.rowid not in tree_runs
            ):
                row = {**dict(zip(run_columns, values, strict=True)), "id": cell.rowid}
                if _valid_run(row):
                    best = found.runs.get(cell.rowid)
                    if (
                        best is None
                        or not _valid_run(best)
                        or (best.get("finished_at") is None and row.get("finished_at"))
                    ):
                        found.runs[cell.rowid] = row
            continue
        if len(values) == len(unit_order) and "id" in unit_order:
            row = dict(zip(unit_order, values, strict=True))
            unit = row["id"]
            if isinstance(unit, str) and unit not in tree_units and _valid_unit(row):
                best = found.units.get(unit)
                if (
                    best is None
                    or not _valid_unit(best)
                    or _STATUS_RANK[row["status"]] > _STATUS_RANK[best["status"]]
                ):
                    found.units[unit] = row
            continue
        for shape, unit_position in index_shapes:
            if len(values) != len(shape) or not isinstance(values[-1], int):
                continue
            if all(
                isinstance(value, _RECORD_TYPES.get(column, object))
                for column, value in zip(shape, values, strict=True)
            ):
                unit = values[unit_position]
                found.record_unit.setdefault(values[-1], unit)
                found.known_units.add(unit)
                break
        else:
            if len(values) == 2 and values[0] in _UNIT_STATUSES and isinstance(values[1], str):
                found.known_units.add(values[1])  # a units_by_status entry
    found.from_pages = (
        len(set(found.records) - tree_records)
        + len(set(found.units) - tree_units)
        + len(set(found.runs) - tree_runs)
    )


# --- the pages SQLite's b-tree walks no longer reach -----------------------------------------

#: How long ``sqlite3 .recover`` may take (it reads every page once: seconds for a large store).
_RECOVER_TIMEOUT_S = 600


@functools.cache
def recover_shell() -> str | None:
    """The ``sqlite3`` command-line shell, when its ``.recover`` works here; else None.

    ``.recover`` needs a library built with the ``sqlite_dbpage`` table: a shell linked
    against one without it (Debian 12's ``sqlite3`` package, for one) fails on every
    database, so it is tried once on a small database first.
    """
    shell = shutil.which("sqlite3")
    if shell is None:
        return None
    return shell if _recovers(shell, ".recover") else None


def _recovers(shell: str, command: str) -> bool:
    """Whether ``shell`` ``command`` gives back the row of a small database."""
    with tempfile.TemporaryDirectory(prefix="byzllm-recover-") as folder:
        probe = Path(folder) / "probe.sqlite"
        with contextlib.closing(sqlite3.connect(probe)) as conn:
            conn.execute("CREATE TABLE t (x)")
            conn.execute("INSERT INTO t VALUES ('byzllm-probe')")
            conn.commit()
        try:
            done = subprocess.run(
                [shell, str(probe), command],
                capture_output=True,
                stdin=subprocess.DEVNULL,
                text=True,
                timeout=30,
                env=without_secrets(os.environ),
            )
        except (OSError, subprocess.SubprocessError):
            return False
    return done.returncode == 0 and "'byzllm-probe'" in done.stdout


@functools.cache
def _recover_command(shell: str) -> str:
    """``.recover``, told to leave out the pages on the free list where the shell needs
    telling: they hold only deleted rows (units a rebind removed must not come back). Shells
    since SQLite 3.40 read them unless given ``--ignore-freelist``; older ones never read
    them and know no such option."""
    ignoring = ".recover --ignore-freelist"
    return ignoring if _recovers(shell, ignoring) else ".recover"


def _recovered_cells(path: Path, layout: _Layout, shell: str) -> Iterator[RawCell]:
    """The rows SQLite's own ``.recover`` finds, as cells of the shapes :func:`_read_pages`
    matches: it reads every page of a copy of the store (and its ``-wal``), puts each row it
    can place back in its table and the rest in ``lost_and_found``; the shell loads its
    output into a scratch database (as bytes: a garbled value may not be valid UTF-8)."""
    with tempfile.TemporaryDirectory(prefix="byzllm-recover-") as folder:
        copy, scratch_path = Path(folder) / path.name, Path(folder) / "recovered.sqlite"
        for suffix in ("", "-wal"):
            if Path(f"{path}{suffix}").is_file():
                shutil.copyfile(f"{path}{suffix}", f"{copy}{suffix}")
        try:
            clean = without_secrets(os.environ)
            sql = subprocess.run(
                [shell, str(copy), _recover_command(shell)],
                capture_output=True,
                timeout=_RECOVER_TIMEOUT_S,
                env=clean,
            ).stdout
            subprocess.run(
                [shell, str(scratch_path)],
                input=sql,
                capture_output=True,
                timeout=_RECOVER_TIMEOUT_S,
                env=clean,
            )
        except (OSError, subprocess.SubprocessError):
            return
        if not scratch_path.is_file():
            return
        scratch = sqlite3.connect(scratch_path)
        scratch.text_factory = _text
        try:
            for cell in _cells_of(scratch, layout):
                if not any(isinstance(value, _Garbled) for value in cell.values):
                    yield cell  # (the page reader drops an undecodable row the same way)
        except sqlite3.DatabaseError:
            return
        finally:
            scratch.close()


class _Garbled(bytes):
    """Text that is not UTF-8: a damaged value."""


def _text(value: bytes) -> str | _Garbled:
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return _Garbled(value)


def _cells_of(scratch: sqlite3.Connection, layout: _Layout) -> Iterator[RawCell]:
    """The recovered rows, in the raw shape a page holds them in (see :class:`RawCell`)."""
    tables = {name for (name,) in scratch.execute("SELECT name FROM sqlite_master")}
    records, runs, units = layout.columns["records"], layout.columns["runs"], layout.unit_order
    if "records" in tables and records:
        select = f"SELECT rowid, {', '.join(map(_quote, records))} FROM records"
        for rowid, *values in scratch.execute(select):
            yield RawCell(table_leaf=True, rowid=rowid, values=tuple(values), page=0)
    if "runs" in tables and "id" in runs:
        select = f"SELECT {', '.join(map(_quote, runs))} FROM runs"
        for row in scratch.execute(select):
            rowid, at = row[runs.index("id")], runs.index("id")
            values = (*row[:at], None, *row[at + 1 :])  # the rowid alias is stored as NULL
            yield RawCell(table_leaf=True, rowid=rowid, values=values, page=0)
    if "units" in tables and units:
        for row in scratch.execute(f"SELECT {', '.join(map(_quote, units))} FROM units"):
            yield RawCell(table_leaf=False, rowid=None, values=tuple(row), page=0)
    if "lost_and_found" in tables:
        for _, page, width, rowid, *values in scratch.execute("SELECT * FROM lost_and_found"):
            cell = tuple(values[:width])
            yield RawCell(table_leaf=rowid is not None, rowid=rowid, values=cell, page=page)


def _page_cells(path: Path, layout: _Layout) -> Iterator[RawCell]:
    """The rows of the pages the walks could not reach: SQLite's ``.recover`` where a working
    shell is installed (:func:`recover_shell`), else our own page reader."""
    shell = recover_shell()
    if shell is None:
        yield from read_cells(path)
    else:
        yield from _recovered_cells(path, layout, shell)


def _salvage(
    conn: sqlite3.Connection, path: Path, tables: set[str], report: RepairReport
) -> _Salvage:
    layout = _layout(conn, tables, report)
    found = _Found()
    _read_tree(conn, layout, found)
    if found.damaged or report.problems:
        _read_pages(_page_cells(path, layout), layout, found)
    report.recovered_from_pages = found.from_pages

    # Records: checked, then per unit by record number (the newest copy of a number wins).
    records_by_unit: dict[str, dict[int, dict[str, Any]]] = {}
    valid_rowids: set[int] = set()
    for rowid, row in found.records.items():
        if not _valid_record(row):
            # SQLite numbers rows from 1: a rowid 0 with no values is the zeros it reads past
            # a truncated file's end, no row of the store (counted lost, it made the rows
            # lost and kept outnumber the rows the store held).
            if rowid >= 1:
                found.lost_rowids.add(rowid)
            continue
        valid_rowids.add(rowid)
        by_seq = records_by_unit.setdefault(row["unit_id"], {})
        previous = by_seq.get(row["seq"])
        if previous is None or previous["rowid"] < rowid:
            by_seq[row["seq"]] = {**row, "rowid": rowid}
        found.known_units.add(row["unit_id"])
    found.lost_rowids -= valid_rowids  # (what the walks could not reach, the pages held)
    damaged_units = {found.record_unit[r] for r in found.lost_rowids if r in found.record_unit}
    for rowid, unit in found.record_unit.items():
        if rowid not in valid_rowids:
            damaged_units.add(unit)  # an index names a record of this unit that is gone

    # Units: checked; in a damaged store, since ids are payload hashes in every store
    # make_unit built, a mismatch where most match is damage too (a store SQLite finds
    # healthy is never second-guessed: ids may have been made otherwise).
    damaged = found.damaged or bool(report.problems)
    rows = [row for row in found.units.values() if _valid_unit(row)]
    matching = [row for row in rows if _payload_hash_matches(row["id"], row["payload"])]
    if damaged and 2 * len(matching) >= len(rows):
        rows = matching
    records_damaged = damaged
    # Every rowid known to hold, or to have held, a record: a unit's last record is followed
    # by the next of these, not by last + 1 (a rebind's deletions leave gaps).
    existing = (
        sorted(valid_rowids | set(found.record_unit) | found.lost_rowids | found.damaged_rowids)
        if records_damaged
        else []
    )
    units: list[dict[str, Any]] = []
    for row in sorted(rows, key=lambda r: (r["ordinal"], r["id"])):
        survived = [
            records_by_unit.get(row["id"], {})[s]
            for s in sorted(records_by_unit.get(row["id"], {}))
        ]
        complete = (
            row["id"] not in damaged_units
            and [r["seq"] for r in survived] == list(range(len(survived)))
            and (not records_damaged or _ends_cleanly(survived, found, valid_rowids, existing))
        )
        if row["status"] == "done" and not complete:
            row.update(status="pending", finished_at=None, seconds=None, error=None)
            report.units_rerun += 1
        units.append(row)
    kept_units = {row["id"] for row in units}
    seen = found.known_units | found.seen_unit_rows | found.unreadable_units | set(found.units)
    report.units_lost = len({u for u in seen if isinstance(u, str)} - kept_units)

    # Records of units kept as done only.
    done = {row["id"] for row in units if row["status"] == "done"}
    records = [record for unit in done for record in records_by_unit.get(unit, {}).values()]
    records.sort(key=lambda r: r["rowid"])
    kept_rowids = {record["rowid"] for record in records}
    named = set(found.record_unit) | found.lost_rowids | valid_rowids
    report.records_lost = len(named - kept_rowids)

    # Invocations: ids are never reused nor deleted, so each one missing below the largest
    # is lost.
    runs = [row for _, row in sorted(found.runs.items()) if _valid_run(row)]
    largest = max([found.largest_run, *found.runs])
    if largest <= _MAX_PLAUSIBLE_RUNS:
        kept_runs = {row["id"] for row in runs}
        report.runs_lost = sum(1 for run in range(1, largest + 1) if run not in kept_runs)

    report.units = {status: 0 for status in ("done", "failed", "pending")}
    for row in units:
        report.units[row["status"]] += 1
    report.records = sum(record_count(record["json"]) for record in records)
    report.runs = len(runs)
    salvaged = {"records": report.records, "units": len(units), "runs": report.runs}
    report.unreadable_tables += [t for t in found.unreachable if not salvaged.get(t)]
    return _Salvage(columns=layout.columns, runs=runs, units=units, records=records)


def _ends_cleanly(
    survived: list[dict[str, Any]], found: _Found, valid_rowids: set[int], existing: list[int]
) -> bool:
    """Whether nothing can be missing after a unit's last surviving record.

    A unit's records are written in one transaction, in order, so their rowids are
    consecutive and the next row starts the next unit. So the last record is proven last
    when the next row that exists (``existing``: sorted rowids read, named by an index, or
    whose look-up met damage) survived and belongs to another unit, or when it is the
    largest rowid of the table as SQLite read it down the tree's right edge. Rowids nothing
    knows of are skipped: rows deleted on purpose (a rebind drops another config's units
    with their records) leave such gaps in an intact table. Anything else (the next row
    unreadable, or the tree's end out of reach, as in a truncated file) may hide the unit's
    own lost records; and a unit without a surviving record cannot be vouched for at all.
    """
    if not survived:
        return False
    unit = survived[0]["unit_id"]
    last = max(record["rowid"] for record in survived)
    position = bisect.bisect_right(existing, last)
    if position < len(existing):
        following = existing[position]
        return following in valid_rowids and found.records[following]["unit_id"] != unit
    return found.last_record is not None and last == found.last_record


def _refuse_live_writer(path: Path, runs: list[dict[str, Any]]) -> None:
    host = socket.gethostname()
    for run in runs:
        pid = run.get("pid")
        if (
            run.get("status") == "running"
            and run.get("host") == host
            and isinstance(pid, int)
            and pid != os.getpid()
            and _pid_alive(pid)
        ):
            raise StoreError(
                f"a run (process {pid}) may still be writing to {path}: stop it first "
                "(or pass --force if that process is not byzllm)"
            )


def _write_fresh(fresh: Path, salvage: _Salvage) -> None:
    """A new store at ``fresh`` holding the salvaged rows (written in one transaction)."""
    _create_store_file(fresh)
    conn = sqlite3.connect(fresh, isolation_level=None)
    try:
        wanted = {table: _table_columns(conn, table) for table in STORE_TABLES}
        conn.execute("BEGIN IMMEDIATE")
        for table, rows in (
            ("runs", salvage.runs),
            ("units", salvage.units),
            ("records", salvage.records),
        ):
            names = [c for c in wanted[table] if c in salvage.columns[table]]
            if not rows or not names:
                continue
            conn.executemany(
                f"INSERT INTO {table} ({', '.join(names)})"
                f" VALUES ({', '.join('?' for _ in names)})",
                ([row.get(name) for name in names] for row in rows),
            )
        version = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        assert version is not None and str(version[0]) == str(_SCHEMA_VERSION)
        conn.execute("COMMIT")
        problems = _integrity_problems(conn)
        if problems:  # never replace a damaged store with another damaged one
            raise StoreError(f"the repaired store {fresh} fails its integrity check: {problems}")
    finally:
        conn.close()


def _damaged_name(path: Path) -> Path:
    stamp = dt.datetime.now(tz=dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    stem = path.stem  # results
    for attempt in range(1000):
        suffix = "" if attempt == 0 else f"-{attempt}"
        candidate = path.with_name(f"{stem}.damaged-{stamp}{suffix}{path.suffix}")
        if not any(Path(f"{candidate}{s}").exists() for s in ("", "-wal", "-shm")):
            return candidate
    raise StoreError(f"cannot find a free name to keep the damaged store {path} under")


def _swap(path: Path, fresh: Path) -> Path:
    """Keep the damaged store under a new name and put the fresh one in its place.

    ``path`` always exists: the damaged file is first hard-linked (or copied) to its new
    name, its ``-wal``/``-shm`` side files move with it (a stale WAL must never meet the new
    file), then the fresh store replaces ``path`` in one rename.
    """
    kept = _damaged_name(path)
    try:
        os.link(path, kept)
    except OSError:
        shutil.copy2(path, kept)
    for suffix in ("-wal", "-shm"):
        side = Path(f"{path}{suffix}")
        if side.exists():
            os.replace(side, Path(f"{kept}{suffix}"))
    os.replace(fresh, path)
    return kept
