"""The result store: one SQLite database (WAL mode) per run directory.

Tables:

* ``runs``    one row per invocation: resolved config, byzllm version, git commit, counts;
* ``units``   one row per unit: id, label, payload, status (pending/done/failed), attempts,
              timings, error;
* ``records`` the typed records each finished unit produced: (unit_id, kind, seq, json);
  the records of one kind that a unit wrote together share one row, a zlib-compressed
  *batch* (``seq``: the first one's), and a kind written once is one row, compressed unless
  short (see ``_codec``; stores written with a row per record still open).

A unit's records and its ``done`` status are written in ONE transaction, so a crash at any
moment leaves either the whole result or nothing. Every write opens with ``BEGIN IMMEDIATE``
(the write lock is taken up front, so two writers queue instead of dead-locking) and every
connection waits up to ``busy_timeout_s`` for the lock: two processes on one store never
corrupt it.

A damaged file is contained: opening checks that the file is a byzllm store before SQLite
writes anything to it, :meth:`Store.open` opens it read-only and runs SQLite's
``quick_check`` over every page, and every SQLite error becomes a one-line
:class:`StoreError` (exit code 2) that names the file and, for damaged pages, the way out
(``byzllm runs repair``, :func:`byzllm.runs.repair_store`).
"""

from __future__ import annotations

import functools
import gc
import json
import os
import socket
import sqlite3
import threading
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Concatenate, Literal, ParamSpec, TypeVar

from pydantic import BaseModel, ValidationError

from byzllm.errors import ByzllmError, InputError

from ._codec import (
    DerivedRow,
    damaged,
    derived_row,
    parse_record,
    unpack_record_bytes,
)
from ._records import PackedRecords, Record, derived_record_class, pack_records
from ._units import Unit

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "STORE_FILENAME",
    "ExportFormat",
    "Store",
    "StoreError",
    "UnitResult",
    "UnitStatus",
]

#: File name of the store inside a run directory.
STORE_FILENAME = "results.sqlite"
_SCHEMA_VERSION = 1

UnitStatus = Literal["pending", "done", "failed"]
ExportFormat = Literal["csv", "jsonl", "parquet"]
RecordT = TypeVar("RecordT", bound=Record)
_P = ParamSpec("_P")
_R = TypeVar("_R")

#: The first 16 bytes of every SQLite database file.
SQLITE_MAGIC = b"SQLite format 3\x00"
#: The tables of a store (``units`` tells a byzllm store from any other SQLite database).
STORE_TABLES = ("meta", "runs", "units", "records")
#: How many problems ``quick_check`` reports at most (the first few say enough).
_MAX_PROBLEMS = 10
# Primary SQLite result codes (the low byte of an extended code).
_SQLITE_BUSY, _SQLITE_LOCKED, _SQLITE_READONLY = 5, 6, 8
_SQLITE_IOERR, _SQLITE_CORRUPT, _SQLITE_FULL, _SQLITE_CANTOPEN, _SQLITE_NOTADB = 10, 11, 13, 14, 26

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    started_at REAL NOT NULL,
    finished_at REAL,
    status TEXT NOT NULL,
    config TEXT,
    config_class TEXT,
    byzllm_version TEXT,
    git_commit TEXT,
    host TEXT,
    pid INTEGER,
    argv TEXT,
    units_total INTEGER,
    units_skipped INTEGER,
    units_done INTEGER,
    units_failed INTEGER
);
CREATE TABLE IF NOT EXISTS units (
    id TEXT PRIMARY KEY,
    ordinal INTEGER NOT NULL,
    label TEXT NOT NULL,
    payload TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending',
    attempts INTEGER NOT NULL DEFAULT 0,
    started_at REAL,
    finished_at REAL,
    seconds REAL,
    error TEXT,
    run_id INTEGER
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS units_by_status ON units (status);
CREATE TABLE IF NOT EXISTS records (
    unit_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    kind TEXT NOT NULL,
    json TEXT NOT NULL,
    PRIMARY KEY (unit_id, seq)
);
CREATE INDEX IF NOT EXISTS records_by_kind ON records (kind, unit_id);
"""


class StoreError(ByzllmError):
    """The result store cannot be opened, read or written (locked too long, corrupt, full).

    Exit code 2, and fatal: no unit of a run can succeed without its store, so a run stops
    at once (one line naming the file and the fix) instead of failing unit after unit.
    """

    exit_code = 2
    fatal = True


def sqlite_error_code(err: sqlite3.Error) -> int | None:
    """The primary SQLite result code of ``err`` (``None`` when SQLite did not give one)."""
    code = getattr(err, "sqlite_errorcode", None)
    return None if code is None else int(code) & 0xFF


def is_damage(err: sqlite3.Error) -> bool:
    """True when ``err`` says the file's pages are damaged or it is not a database."""
    return sqlite_error_code(err) in (_SQLITE_CORRUPT, _SQLITE_NOTADB)


def _repair_hint(path: Path) -> str:
    return f"salvage what is readable with `byzllm runs repair {path.parent}`"


def damaged_error(path: Path, detail: str) -> StoreError:
    """The one-line error for a store whose pages are damaged."""
    return StoreError(f"results store {path} is damaged ({detail}); {_repair_hint(path)}")


def _short(err: BaseException, limit: int = 200) -> str:
    text = " ".join(str(err).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _as_store_error(path: Path, err: sqlite3.Error) -> StoreError:
    """One line for an SQLite error on the store at ``path``."""
    code = sqlite_error_code(err)
    detail = _short(err)
    if code in (_SQLITE_CORRUPT, _SQLITE_NOTADB) or "decode to UTF-8" in detail:
        # (a stored text that is not UTF-8 any more: its bytes were overwritten)
        return damaged_error(path, detail)
    if code in (_SQLITE_BUSY, _SQLITE_LOCKED):
        return StoreError(f"results store {path} is busy: {detail}")
    if code == _SQLITE_READONLY:
        return StoreError(
            f"results store {path} is read-only here ({detail}); Store.open() opens stores "
            "for reading, Store(path) for writing"
        )
    if code == _SQLITE_FULL:
        return StoreError(
            f"results store {path}: the disk is full ({detail}); every unit stored so far is "
            "kept: free some space and rerun the same command to resume"
        )
    if code == _SQLITE_IOERR:
        return StoreError(f"cannot read or write results store {path}: {detail}")
    return StoreError(f"results store {path}: {detail}")


def _guarded(method: Callable[Concatenate[Store, _P], _R]) -> Callable[Concatenate[Store, _P], _R]:
    """Turn SQLite errors (and undecodable stored JSON) in a store method into one-line
    store errors."""

    @functools.wraps(method)
    def wrapper(self: Store, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return method(self, *args, **kwargs)
        except (sqlite3.DatabaseError, json.JSONDecodeError) as err:
            raise _store_failure(self.path, err) from None

    return wrapper


def _store_failure(path: Path, err: sqlite3.DatabaseError | json.JSONDecodeError) -> Exception:
    """The one-line store error :func:`_guarded` raises for ``err``."""
    if isinstance(err, sqlite3.ProgrammingError):
        return err  # a bug (a closed store, a bad statement), not the file's fault
    if isinstance(err, json.JSONDecodeError):
        return damaged_error(path, f"a stored value is not valid JSON: {_short(err)}")
    return _as_store_error(path, err)


def identify_store_file(path: Path) -> None:
    """Refuse a file that cannot be a store (empty, too short, not SQLite) before SQLite
    opens it: SQLite would otherwise take an empty file for a new database and write to it.
    """
    try:
        size = path.stat().st_size
        with path.open("rb") as handle:
            head = handle.read(100)
    except OSError as err:
        raise StoreError(f"cannot read results store {path}: {err.strerror or err}") from None
    if size == 0:
        raise StoreError(
            f"results store {path} is empty (0 bytes), not a byzllm results store; "
            "delete it to start the run afresh"
        )
    if len(head) < 100 or not head.startswith(SQLITE_MAGIC):
        raise StoreError(
            f"cannot open results store {path}: not an SQLite database ({size} bytes), so not "
            "a byzllm results store; move it away to start the run afresh"
        )


def connect_read_only(
    path: Path, *, timeout: float = 60.0, check_same_thread: bool = True
) -> sqlite3.Connection:
    """A connection that can never write to the database file at ``path``.

    (SQLite may still create the ``-wal`` and ``-shm`` side files a WAL reader needs.) Where
    it cannot (a read-only disk or mount, an archive), a store with no unfinished writes in
    its ``-wal`` file, which is what every finished run leaves, is opened as an immutable
    file instead: SQLite then reads it with no side files and no locks.
    """
    uri = path.resolve().as_uri()

    def connect(query: str) -> sqlite3.Connection:
        return sqlite3.connect(
            f"{uri}?{query}",
            uri=True,
            timeout=timeout,
            isolation_level=None,
            check_same_thread=check_same_thread,
        )

    conn = connect("mode=ro")
    try:
        conn.execute("PRAGMA schema_version").fetchone()  # opens the WAL, if it can
    except sqlite3.DatabaseError as err:
        if sqlite_error_code(err) not in (_SQLITE_CANTOPEN, _SQLITE_READONLY):
            return conn  # damage and the like: the caller meets (and names) it
        wal = Path(f"{path}-wal")
        if wal.exists() and wal.stat().st_size > 0:
            conn.close()
            raise StoreError(
                f"cannot read results store {path} here: its latest writes are still in "
                f"{wal.name}, which SQLite cannot open in this read-only folder; copy the run "
                "folder to a writable disk to read it"
            ) from None
        conn.close()
        # Nothing outside the main file: read it as it is, without side files or locks.
        conn = connect("mode=ro&immutable=1")
    return conn


def _describe_problems(problems: Sequence[str]) -> str:
    first = " ".join(problems[0].split())
    if len(first) > 200:
        first = first[:199] + "…"
    more = f" and {len(problems) - 1} more" if len(problems) > 1 else ""
    return f"integrity check: {first}{more}"


#: Error texts longer than this are cut (a 1 MB exception message must not bloat the store).
_MAX_ERROR_CHARS = 2000


def format_error(err: BaseException) -> str:
    """``ExceptionType: message`` on one line, cut to a bounded length (no traceback): the
    error a failed unit is stored with."""
    message = " ".join(str(err).split())
    text = f"{type(err).__name__}: {message}" if message else type(err).__name__
    if len(text) > _MAX_ERROR_CHARS:
        text = text[: _MAX_ERROR_CHARS - 1] + "…"
    return text


@dataclass(slots=True)
class UnitResult:
    """The outcome of one unit, as the runner hands it to the store."""

    unit_id: str
    status: Literal["done", "failed"]
    started_at: float
    finished_at: float
    #: Packed where the work ran when an executor did that (:class:`PackedRecords`).
    records: Sequence[Record] | PackedRecords = field(default_factory=list)
    error: str | None = None

    @property
    def seconds(self) -> float:
        return self.finished_at - self.started_at


def run_store_path(run_dir: str | Path) -> Path:
    """The store file of the run directory ``run_dir``, whatever the folder's name (a run
    into ``sweep.db`` is the folder ``sweep.db`` holding ``results.sqlite``)."""
    return Path(run_dir).expanduser() / STORE_FILENAME


def resolve_store_path(location: str | Path) -> Path:
    """The store file of ``location``: a run directory's ``results.sqlite``, or ``location``
    itself when it names a store file (``.sqlite``, ``.db``, ``.sqlite3``).

    An existing directory is a run directory whatever its name: a run folder called
    ``sweep.db`` holds ``sweep.db/results.sqlite``, which its name alone took for the store.
    """
    path = Path(location).expanduser()
    if path.suffix in {".sqlite", ".db", ".sqlite3"} and not path.is_dir():
        return path
    return path / STORE_FILENAME


def _create_store_file(path: Path) -> None:
    """Create an empty store with its schema, atomically.

    The database is built under a temporary name and hard-linked into place, which fails if
    the file appeared meanwhile: a reader never sees a store without its tables, and two
    processes creating the same store at once end up sharing one.

    A ``-wal`` or ``-shm`` file beside a store that does not exist is left from a deleted one
    (a run killed, then its ``results.sqlite`` deleted to start afresh): SQLite would read
    that ``-wal`` as the new file's, which then failed its integrity check as damaged or held
    the deleted store's units. Such files are removed before the new store takes the name.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        conn = sqlite3.connect(temporary, isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("BEGIN IMMEDIATE")
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute(
                "INSERT INTO meta (key, value) VALUES ('schema_version', ?)",
                (str(_SCHEMA_VERSION),),
            )
            conn.execute("COMMIT")
        finally:
            conn.close()  # checkpoints the WAL into the main file and removes it
        if not path.exists():
            for suffix in ("-wal", "-shm"):
                Path(f"{path}{suffix}").unlink(missing_ok=True)
        try:
            os.link(temporary, path)
        except FileExistsError:
            pass  # another process created it first: use theirs
        except OSError:
            # A file system without hard links: rename (a narrow race instead of none).
            if not path.exists():
                os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return True


def record_problem(model: type[BaseModel], text: str | bytes, row: Any) -> ValidationError | None:
    """What is wrong with one stored record (its JSON ``text``, read as ``row``) for
    ``model``; None when it validates (:meth:`Store.iter_records`).

    Strict, on the JSON as stored: a record byzllm wrote always passes, and a text where a
    number belongs ("12" included) does not, as pydantic's lax mode would let it.
    """
    validator = model.__pydantic_validator__
    try:
        try:
            validator.validate_json(text, strict=True)
        except ValidationError as err:
            if not any(item["type"] == "json_invalid" for item in err.errors()):
                raise
            # JSON that only the fallback parser reads (a lone surrogate escape): check the
            # values it read, in lax mode, which takes its lists for tuples.
            validator.validate_python(row)
    except ValidationError as err:
        return err
    return None


def _record_rows_of(
    unit_id: str, records: Sequence[Record] | PackedRecords
) -> list[tuple[str, int, str, Any]]:
    """The ``records`` rows of one unit's records (:func:`pack_records`, unless an executor
    packed them already). A row's ``seq`` numbers the unit's rows (0, 1, ...), as repair
    expects of a whole unit."""
    packed = records if isinstance(records, PackedRecords) else pack_records(records)
    return [(unit_id, seq, kind, value) for seq, (kind, value) in enumerate(packed.rows)]


#: How many records a ``records`` row holds: a batch's count from its ``#<n>:`` header (a
#: derived row's from its ``@<n>:``), 1 else.
_RECORDS_IN_ROW = (
    "CASE WHEN typeof(json) = 'blob' AND substr(json, 1, 1) IN (X'23', X'40')"
    " THEN CAST(CAST(substr(json, 2, instr(json, X'3A') - 2) AS TEXT) AS INTEGER) ELSE 1 END"
)


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector paused for a block that builds many acyclic containers
    (records read back, summaries over them): its passes over them took 40% of reading the
    default attack matrix's 2,700 question records (1.9 -> 1.1 s CPU)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class Store:
    """A run's result store (``<run_dir>/results.sqlite``).

    Open an existing one with :meth:`open` (read it, export it); the runner creates it.
    Reading while a run is writing is safe (WAL readers never block the writer).

    Example::

        store = Store.open("runs/sweep")
        store.counts()                      # {"done": 380, "failed": 2, "pending": 18}
        store.records("answer")             # list of dicts
        store.records_frame("answer")       # pandas DataFrame
        store.export("csv", "runs/sweep/export")
    """

    def __init__(
        self,
        location: str | Path,
        *,
        create: bool = True,
        read_only: bool = False,
        verify: bool = False,
        busy_timeout_s: float = 60.0,
        synchronous: Literal["OFF", "NORMAL", "FULL"] = "NORMAL",
        check_same_thread: bool = True,
    ) -> None:
        """Open (or with ``create``, create) a store.

        ``read_only`` opens the file so that nothing can write to it; ``verify`` runs
        SQLite's ``quick_check`` over every page first and refuses a damaged store
        (:class:`StoreError`). An existing file must be a byzllm store (empty, foreign and
        non-SQLite files are refused before anything is written to them).
        """
        self.path = resolve_store_path(location)
        self.read_only = read_only
        if (read_only or not create) and not self.path.is_file():
            raise InputError(f"no results store at {self.path} (is this a run directory?)")
        try:
            if create and not read_only and not self.path.exists():
                _create_store_file(self.path)
            else:
                identify_store_file(self.path)
            if read_only:
                self._conn = connect_read_only(
                    self.path, timeout=busy_timeout_s, check_same_thread=check_same_thread
                )
            else:
                self._conn = sqlite3.connect(
                    self.path,
                    timeout=busy_timeout_s,
                    isolation_level=None,  # we issue BEGIN IMMEDIATE / COMMIT ourselves
                    check_same_thread=check_same_thread,
                )
        except sqlite3.DatabaseError as err:
            if sqlite_error_code(err) == _SQLITE_FULL:  # nothing is stored yet: nothing kept
                raise StoreError(
                    f"cannot create results store {self.path}: the disk is full "
                    f"({_short(err)}); free some space and rerun the same command"
                ) from None
            raise StoreError(f"cannot open results store {self.path}: {err}") from None
        except OSError as err:
            from ._lock import folder_error

            raise folder_error(self.path.parent, err, "write to") from None
        try:
            self._conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
            # What the file is, before anything is written to it.
            self._check_schema()
            if verify:
                problems = self.problems()
                if problems:
                    raise damaged_error(self.path, _describe_problems(problems))
            if not read_only:
                mode = self._conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                if str(mode).lower() != "wal":
                    raise StoreError(f"cannot switch {self.path} to WAL mode (got {mode!r})")
                self._conn.execute(f"PRAGMA synchronous = {synchronous}")
        except sqlite3.DatabaseError as err:
            self._conn.close()
            raise _as_store_error(self.path, err) from None
        except BaseException:
            self._conn.close()
            raise

    # -- lifecycle ------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        location: str | Path,
        *,
        create: bool = False,
        read_only: bool | None = None,
        verify: bool = True,
    ) -> Store:
        """Open the store of a run directory (or a ``.sqlite`` path) to read it.

        Refuses a missing store (unless ``create``), and an empty, foreign or damaged one
        (``verify``: SQLite's ``quick_check`` over every page, a fraction of a second for a
        100 MB store). Read-only unless ``create`` (or ``read_only=False``): nothing written
        through it, and nothing a reader does changes the file.
        """
        if read_only is None:
            read_only = not create
        return cls(location, create=create, read_only=read_only, verify=verify)

    @property
    def run_dir(self) -> Path:
        return self.path.parent

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Store({str(self.path)!r})"

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, the lock taken up front (BEGIN IMMEDIATE)."""
        conn = self._conn
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.DatabaseError as err:
            raise _as_store_error(self.path, err) from None
        try:
            yield conn
        except BaseException:
            with suppress(sqlite3.Error):  # a damaged file may refuse even the rollback
                conn.execute("ROLLBACK")
            raise
        else:
            conn.execute("COMMIT")

    @contextmanager
    def _snapshot(self) -> Iterator[None]:
        """One read transaction: every read in the block sees the store as it was at the
        block's first read, whatever a run commits meanwhile (outside it, each statement
        reads the latest commit). Within a transaction already open, that one serves."""
        conn = self._conn
        if conn.in_transaction:
            yield
            return
        try:
            conn.execute("BEGIN")
        except sqlite3.DatabaseError as err:
            raise _as_store_error(self.path, err) from None
        try:
            yield
        finally:
            with suppress(sqlite3.Error):  # ends the read: nothing was written
                conn.execute("COMMIT")

    def _check_schema(self) -> None:
        tables = {
            str(name)
            for (name,) in self._conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
        }
        if "units" not in tables:
            names = ", ".join(sorted(tables)) or "none"
            raise InputError(f"{self.path} is not a byzllm results store (its tables: {names})")
        missing = [table for table in STORE_TABLES if table not in tables]
        if missing:
            raise damaged_error(self.path, f"table {', '.join(missing)} missing")
        row = self._conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        if row is None or str(row[0]) != str(_SCHEMA_VERSION):
            found = None if row is None else row[0]
            raise StoreError(
                f"{self.path} has store schema {found}; this byzllm reads schema {_SCHEMA_VERSION}"
            )

    @_guarded
    def problems(self, max_problems: int = _MAX_PROBLEMS) -> list[str]:
        """What SQLite's ``quick_check`` finds wrong with the file's pages (``[]``: none).

        Reads every page once; a damage that stops the check itself is one problem.
        """
        try:
            rows = self._conn.execute(f"PRAGMA quick_check({int(max_problems)})").fetchall()
        except sqlite3.DatabaseError as err:
            if is_damage(err):
                return [str(err)]
            raise
        return [str(row[0]) for row in rows if str(row[0]) != "ok"]

    # -- runs -----------------------------------------------------------------------------

    @_guarded
    def begin_run(
        self,
        *,
        config: dict[str, Any] | None,
        config_class: str | None,
        byzllm_version: str,
        git_commit: str | None,
        argv: Sequence[str] | None = None,
    ) -> int:
        """Record the start of an invocation; returns its run id."""
        with self._write() as conn:
            cursor = conn.execute(
                "INSERT INTO runs (started_at, status, config, config_class, byzllm_version,"
                " git_commit, host, pid, argv) VALUES (?, 'running', ?, ?, ?, ?, ?, ?, ?)",
                (
                    time.time(),
                    None if config is None else json.dumps(config, sort_keys=True),
                    config_class,
                    byzllm_version,
                    git_commit,
                    socket.gethostname(),
                    os.getpid(),
                    None if argv is None else json.dumps(list(argv)),
                ),
            )
            run_id = cursor.lastrowid
        assert run_id is not None
        return run_id

    @_guarded
    def finish_run(
        self, run_id: int, *, status: str, total: int, skipped: int, done: int, failed: int
    ) -> None:
        """Record how an invocation ended (``finished``, ``stopped``, ``interrupted``...)."""
        with self._write() as conn:
            conn.execute(
                "UPDATE runs SET finished_at=?, status=?, units_total=?, units_skipped=?,"
                " units_done=?, units_failed=? WHERE id=?",
                (time.time(), status, total, skipped, done, failed, run_id),
            )

    @_guarded
    def runs(self) -> list[dict[str, Any]]:
        """Every invocation, oldest first. A run still marked ``running`` whose process is
        gone (same host) is reported as ``killed``."""
        cursor = self._conn.execute("SELECT * FROM runs ORDER BY id")
        names = [column[0] for column in cursor.description]
        host = socket.gethostname()
        rows = []
        for values in cursor.fetchall():
            row = dict(zip(names, values, strict=True))
            for key in ("config", "argv"):
                if row[key] is not None:
                    row[key] = json.loads(row[key])
            if row["status"] == "running" and row["host"] == host and not _pid_alive(row["pid"]):
                row["status"] = "killed"
            rows.append(row)
        return rows

    @_guarded
    def latest_config(self) -> dict[str, Any] | None:
        """The resolved config of the most recent invocation (``None`` if none recorded)."""
        row = self._conn.execute(
            "SELECT config FROM runs WHERE config IS NOT NULL ORDER BY id DESC LIMIT 1"
        ).fetchone()
        return None if row is None else dict(json.loads(row[0]))

    # -- units ----------------------------------------------------------------------------

    @_guarded
    def register_units(self, units: Sequence[Unit]) -> dict[str, str]:
        """Add units not yet known (as ``pending``); return the status of every given unit.

        ``units`` is the invocation's whole grid, and its order becomes the store's: units
        already stored take their place in it, and units the store keeps that this grid lacks
        follow it, in their former order. Keeping old places instead made a grown grid's
        records come out of :meth:`records` and the exports out of order (q = 0, 2, 4 run
        first, then q = 0..4: 0, 1, 2, 4, 3).
        """
        grid: dict[str, Unit] = {}
        for unit in units:
            grid.setdefault(unit.id, unit)  # a repeated unit keeps its first place
        with self._write() as conn:
            conn.executemany(
                "INSERT INTO units (id, ordinal, label, payload) VALUES (?, ?, ?, ?)"
                " ON CONFLICT(id) DO UPDATE SET ordinal = excluded.ordinal",
                (
                    (unit.id, ordinal, unit.label, json.dumps(unit.payload, sort_keys=True))
                    for ordinal, unit in enumerate(grid.values())
                ),
            )
            stored = conn.execute("SELECT id, status FROM units ORDER BY ordinal, id").fetchall()
            others = [unit_id for unit_id, _ in stored if unit_id not in grid]
            conn.executemany(
                "UPDATE units SET ordinal = ? WHERE id = ?",
                ((len(grid) + k, unit_id) for k, unit_id in enumerate(others)),
            )
        statuses = dict(stored)
        return {unit.id: statuses[unit.id] for unit in units}

    @_guarded
    def drop_units_except(self, keep: Collection[str]) -> int:
        """Remove every unit not in ``keep`` with its records, in one transaction (a folder
        rebound to another config keeps only the units the new grid shares); returns how
        many were removed.

        The removed rows are overwritten on their pages (``secure_delete``, off in SQLite's
        default build): left in place, ``runs repair`` -- which reads pages directly -- could
        find the other config's units there and pool them with this one's.
        """
        (previous,) = self._conn.execute("PRAGMA secure_delete").fetchone()
        self._conn.execute("PRAGMA secure_delete = ON")
        try:
            with self._write() as conn:
                conn.execute("CREATE TEMP TABLE IF NOT EXISTS keep_units (id TEXT PRIMARY KEY)")
                conn.execute("DELETE FROM keep_units")
                conn.executemany(
                    "INSERT OR IGNORE INTO keep_units VALUES (?)", ((i,) for i in keep)
                )
                conn.execute("DELETE FROM records WHERE unit_id NOT IN (SELECT id FROM keep_units)")
                removed = conn.execute(
                    "DELETE FROM units WHERE id NOT IN (SELECT id FROM keep_units)"
                ).rowcount
                conn.execute("DELETE FROM keep_units")
        finally:
            self._conn.execute(f"PRAGMA secure_delete = {int(previous)}")
        return int(removed)

    @_guarded
    def adopt_units(self, source: Store, ids: Collection[str]) -> list[str]:
        """Copy the units of ``ids`` that ``source`` has done, with their records as stored,
        into this store, where they are registered and not yet done; returns their ids.

        A unit id is the hash of its payload (:func:`~byzllm.runs.make_unit`), so a unit done
        in another run folder is the same work with the same result: copying it saves
        rerunning it (``byzllm reproduce`` tables that share runs). Units already done here
        are left untouched; the copied ones keep their timing and attempts, with no run of
        this store (``run_id`` empty).
        """
        wanted = [
            unit
            for (unit,) in self._conn.execute("SELECT id FROM units WHERE status != 'done'")
            if unit in ids
        ]
        adopted: list[str] = []
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            marks = ",".join("?" * len(chunk))
            try:
                units = source._conn.execute(
                    "SELECT id, attempts, started_at, finished_at, seconds FROM units"
                    f" WHERE status = 'done' AND id IN ({marks})",
                    chunk,
                ).fetchall()
                done = [row[0] for row in units]
                records = source._conn.execute(
                    "SELECT unit_id, seq, kind, json FROM records"
                    f" WHERE unit_id IN ({','.join('?' * len(done))})",
                    done,
                ).fetchall()
            except sqlite3.DatabaseError:
                break  # a source that cannot be read (further) is passed over
            if not units:
                continue
            with self._write() as conn:
                copied = set()
                for unit, attempts, started_at, finished_at, seconds in units:
                    cursor = conn.execute(
                        "UPDATE units SET status='done', attempts=?, started_at=?,"
                        " finished_at=?, seconds=?, error=NULL, run_id=NULL"
                        " WHERE id=? AND status != 'done'",
                        (attempts, started_at, finished_at, seconds, unit),
                    )
                    if cursor.rowcount:
                        copied.add(unit)
                conn.executemany(
                    "INSERT OR REPLACE INTO records (unit_id, seq, kind, json) VALUES (?, ?, ?, ?)",
                    (row for row in records if row[0] in copied),
                )
            adopted += [unit for unit in done if unit in copied]
        return adopted

    @_guarded
    def write_results(self, results: Iterable[UnitResult], run_id: int | None = None) -> int:
        """Store finished units, each with its records, all in one transaction.

        A unit already ``done`` is left untouched (another process finished it first), so
        no unit's records are ever stored twice. Returns the number of units written. A
        done unit whose records cannot be written as JSON (bytes that are not UTF-8, an
        object pydantic cannot serialize) is stored failed with that error instead, and its
        ``result`` says so: the other units of the transaction are written as ever.
        """
        written = 0
        with self._write() as conn:
            for result in results:
                rows = None
                if result.status == "done" and result.records:
                    try:
                        rows = _record_rows_of(result.unit_id, result.records)
                    except (ValueError, TypeError) as err:  # (pydantic's serialization error)
                        result.status, result.records = "failed", []
                        result.error = f"records not serializable: {format_error(err)}"
                cursor = conn.execute(
                    "UPDATE units SET status=?, attempts=attempts+1, started_at=?,"
                    " finished_at=?, seconds=?, error=?, run_id=? WHERE id=? AND status!='done'",
                    (
                        result.status,
                        result.started_at,
                        result.finished_at,
                        result.finished_at - result.started_at,
                        result.error,
                        run_id,
                        result.unit_id,
                    ),
                )
                if cursor.rowcount == 0:
                    continue
                written += 1
                if rows:
                    conn.executemany(
                        "INSERT OR REPLACE INTO records (unit_id, seq, kind, json)"
                        " VALUES (?, ?, ?, ?)",
                        rows,
                    )
        return written

    @_guarded
    def counts(self) -> dict[str, int]:
        """Units per status: ``{"pending": .., "done": .., "failed": ..}`` (all three keys)."""
        counts = {"pending": 0, "done": 0, "failed": 0}
        for status, count in self._conn.execute(
            "SELECT status, COUNT(*) FROM units GROUP BY status"
        ):
            counts[str(status)] = int(count)
        return counts

    @_guarded
    def units(self, status: UnitStatus | None = None) -> list[dict[str, Any]]:
        """Unit rows (payload decoded), in grid order; optionally only one status."""
        query = (
            "SELECT id, ordinal, label, payload, status, attempts, started_at, finished_at,"
            " seconds, error, run_id FROM units"
        )
        params: tuple[str, ...] = ()
        if status is not None:
            query += " WHERE status=?"
            params = (status,)
        cursor = self._conn.execute(query + " ORDER BY ordinal, id", params)
        names = [column[0] for column in cursor.description]
        rows = []
        for values in cursor.fetchall():
            row = dict(zip(names, values, strict=True))
            row["payload"] = json.loads(row["payload"])
            rows.append(row)
        return rows

    def failures(self) -> list[dict[str, Any]]:
        """Failed units with their error (``type: message``), in grid order."""
        return self.units("failed")

    # -- records --------------------------------------------------------------------------

    @_guarded
    def kinds(self) -> dict[str, int]:
        """Record kinds in the store, with how many records of each."""
        return {
            str(kind): int(count)
            for kind, count in self._conn.execute(
                f"SELECT kind, SUM({_RECORDS_IN_ROW}) FROM records GROUP BY kind ORDER BY kind"
            )
        }

    def _record_rows(
        self, kind: str, *, units: Collection[str] | None = None
    ) -> Iterator[tuple[str, str, str, str | bytes | None, dict[str, Any] | None]]:
        """(unit id, label, payload, JSON, values) of every record of ``kind`` (of ``units``
        only, when given): the JSON as the UTF-8 bytes it was stored as, for
        :func:`parse_record`, and no values; or, for a record rebuilt from another (a derived
        row), its values and no JSON."""
        rows = self._conn.execute(
            "SELECT r.unit_id, u.label, u.payload, r.json FROM records r"
            " JOIN units u ON u.id = r.unit_id"
            " WHERE r.kind = ? AND u.status = 'done' ORDER BY u.ordinal, r.unit_id, r.seq",
            (kind,),
        )
        # A row holds one record (compressed or text), a batch of a unit's records, or says
        # how many records the unit's record of another kind restates (a derived row).
        for unit, label, payload, value in rows:
            if units is not None and unit not in units:
                continue  # skipped before it is inflated: that, and parsing, is the cost
            derived = derived_row(value)
            if derived is None:
                for text in unpack_record_bytes(value):
                    yield unit, label, payload, text, None
            else:
                for values in self._derived(kind, unit, derived):
                    yield unit, label, payload, None, values

    def _derived(self, kind: str, unit: str, row: DerivedRow) -> list[dict[str, Any]]:
        """The ``kind`` records a derived row of ``unit`` counts, rebuilt from the unit's
        record they restate (:attr:`Record.derived_from`)."""
        cls = derived_record_class(kind, row.module)
        found = self._conn.execute(
            "SELECT json FROM records WHERE unit_id = ? AND kind = ?", (unit, row.source_kind)
        ).fetchall()
        if len(found) != 1:
            raise damaged(
                f"unit {unit}'s {kind} records are rebuilt from its {row.source_kind} record, "
                f"and it has {len(found)}"
            )
        (source,) = unpack_record_bytes(found[0][0])
        records = cls.derive(parse_record(source))
        if len(records) != row.count:
            raise damaged(
                f"unit {unit}'s {row.source_kind} record restates {len(records)} {kind} "
                f"records, and its row counts {row.count}"
            )
        return records

    @_guarded
    def records(
        self,
        kind: str | type[Record],
        *,
        with_unit: bool = False,
        with_payload: bool = False,
        check: type[BaseModel] | None = None,
    ) -> list[dict[str, Any]]:
        """Every record of ``kind`` as a dict, in grid order.

        ``kind`` is a kind's name, or its :class:`Record` class: each record is then checked
        against that class before it is returned, as a report needs (``check``:
        :meth:`iter_records`). ``with_unit=True`` adds ``unit_id`` and ``unit_label`` keys
        (for grouping by unit); ``with_payload=True`` adds the unit's payload under
        ``payload`` (what defined it: protocol, seed, ...), so reports can group by it.
        """
        with collector_paused():
            rows = self.iter_records(
                kind, with_unit=with_unit, with_payload=with_payload, check=check
            )
            return list(rows)

    def iter_records(
        self,
        kind: str | type[Record],
        *,
        with_unit: bool = False,
        with_payload: bool = False,
        check: type[BaseModel] | None = None,
        units: Collection[str] | None = None,
    ) -> Iterator[dict[str, Any]]:
        """:meth:`records` one at a time, read as they are asked for: a summary that adds up
        as it reads holds one record, not the run (a 12,000-question demo's records took
        1.2 GB as a list). The store stays open until the iteration ends.

        ``units``: the records of these unit ids only, the others skipped unread (a reader
        split over processes reads each record in one of them).

        Given a :class:`Record` class as ``kind`` (or a model of the fields a caller reads as
        ``check``), every record is validated against it, as strictly as the store wrote it,
        before it is returned: the store is a file a user can edit, and a ``null`` or a text
        where a number belongs made a report fail deep in a sum. A record that does not
        validate is an :class:`InputError` naming the file, the unit, the record and the
        field.
        """
        name = kind.kind if isinstance(kind, type) else kind
        model = check or (kind if isinstance(kind, type) else None)
        unit_before, position = None, 0
        row: dict[str, Any]
        try:
            for unit, label, payload, text, values in self._record_rows(name, units=units):
                if values is not None:
                    row = values
                else:
                    assert text is not None  # (a stored record's JSON)
                    row = parse_record(text)
                if model is not None:
                    if text is None:  # rebuilt: checked as the JSON it would be stored as
                        text = json.dumps(row, ensure_ascii=False).encode("utf-8")
                    # Which of the unit's records of this kind (a unit may write several).
                    position = position + 1 if unit == unit_before else 0
                    unit_before = unit
                    problem = record_problem(model, text, row)
                    if problem is not None:
                        from ._config import format_validation_error

                        where = f"{name} record {position + 1} of unit {label!r} ({unit})"
                        raise InputError(
                            format_validation_error(
                                problem, model, f"{where} in {self.path}", what="value in"
                            )
                            + " (the record was edited by hand or damaged)"
                        )
                if with_unit:
                    row["unit_id"] = unit
                    row["unit_label"] = label
                if with_payload:
                    row["payload"] = json.loads(payload)
                yield row
        except (sqlite3.DatabaseError, json.JSONDecodeError) as err:
            raise _store_failure(self.path, err) from None

    @_guarded
    def typed_records(self, model: type[RecordT]) -> list[RecordT]:
        """Every record of ``model.kind``, validated back into ``model`` instances.

        Each is checked as :meth:`iter_records` checks it first, so an edited or damaged record
        is the same :class:`InputError` naming the file, the unit, the record and the field,
        not pydantic's error without them.
        """
        with collector_paused():
            return [model.model_validate(row) for row in self.iter_records(model)]

    def records_frame(
        self, kind: str, *, with_unit: bool = False, with_payload: bool = False
    ) -> pd.DataFrame:
        """Every record of ``kind`` as a pandas DataFrame (one column per top-level field).

        With ``with_payload=True`` the payload's top-level keys become ``payload.<key>``
        columns.
        """
        import pandas as pd

        rows = self.records(kind, with_unit=with_unit, with_payload=with_payload)
        if with_payload:
            for row in rows:
                for key, value in row.pop("payload").items():
                    row[f"payload.{key}"] = value
        return pd.DataFrame.from_records(rows)

    @_guarded
    def export(
        self,
        fmt: ExportFormat,
        out_dir: str | Path,
        kinds: Sequence[str] | None = None,
        *,
        include_units: bool = True,
    ) -> list[Path]:
        """Write ``<kind>.<fmt>`` for each record kind (and ``units.<fmt>``) into ``out_dir``.

        CSV and Parquet get one column per top-level field; nested values (lists, dicts) are
        JSON text in CSV; in Parquet a column keeps its native nested type when it reads back
        as the same values, and is JSON text otherwise (empty dicts, keys that vary by row).
        """
        from ._export import write_table

        if fmt not in ("csv", "jsonl", "parquet"):
            raise InputError(f"unknown export format {fmt!r} (choose csv, jsonl or parquet)")
        out = Path(out_dir)
        # Every file from one snapshot: read table by table, an export of a run in progress
        # listed units as pending in units.<fmt> whose records the record files held, and a
        # unit's records of one kind without those of another.
        with self._snapshot():
            available = self.kinds()
            # A kind asked for twice is one file, written and listed once.
            chosen = list(available) if kinds is None else list(dict.fromkeys(kinds))
            unknown = [kind for kind in chosen if kind not in available]
            if unknown:
                raise InputError(
                    f"no records of kind {', '.join(unknown)} "
                    f"(available: {', '.join(available) or 'none'})"
                )
            # Only now: a refused export left an empty folder behind.
            out.mkdir(parents=True, exist_ok=True)
            written = []
            if include_units:
                unit_rows = self.units()
                written.append(write_table(unit_rows, out / f"units.{fmt}", fmt))
            for kind in chosen:
                written.append(
                    write_table(self.records(kind, with_unit=True), out / f"{kind}.{fmt}", fmt)
                )
            return written
