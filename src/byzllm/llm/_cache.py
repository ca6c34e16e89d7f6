"""A content-addressed response cache in SQLite, safe to share across processes.

The key is the SHA-256 of the canonical JSON of everything that determines the answer --
provider, base URL (or, in its place, what names the model served there: a local file's
SHA-256, byzllm's own server's file, ``cache_endpoint``), model, messages, generation
settings and an explicit ``cache_salt`` (seed / epoch: change it to draw fresh samples) --
and of nothing that does not: timeouts, concurrency, retry settings and the API key stay
out, so the same experiment hits the same entries whatever the transport. Values are
completions as JSON (no credentials in them).

The database runs in WAL mode so readers never block the one writer, and several worker
processes can share a cache file; each process keeps two connections per file (one reads,
one writes), used from threads of their own so that a write waiting for another process's
lock holds up neither reads nor the event loop.

Modes (``cache_mode``): ``"on"`` reads and writes; ``"read-only"`` reads, never writes (the
file is opened with SQLite's ``mode=ro``);
``"refresh"`` never reads, overwrites; ``"off"`` neither (no file is opened).

A damaged cache file (pages SQLite reports as corrupt, a file that is not SQLite, another
program's database) is refused with :class:`CacheError` (exit code 2, fatal to a run), naming
the file and the two ways out: delete it, or run with ``cache_mode: off``.
:func:`check_cache` checks a file without opening it for writing (the experiment runner
checks every cache a config names before the first unit starts).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Literal

from byzllm.errors import ConfigError, InputError

from ._types import ChatMessage, Completion, GenerateConfig, JsonSchema

__all__ = ["CacheError", "CacheMode", "ResponseCache", "cache_key", "check_cache", "open_cache"]

#: How a model uses its cache.
CacheMode = Literal["on", "off", "read-only", "refresh"]

_log = logging.getLogger("byzllm.llm")

# Bump when the key recipe changes, so old entries are simply never hit again.
_KEY_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS completions (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL,
    created_at REAL NOT NULL
)
"""


_SQLITE_MAGIC = b"SQLite format 3\x00"
# Primary SQLite result codes of a damaged file: SQLITE_CORRUPT, SQLITE_NOTADB.
_DAMAGE_CODES = (11, 26)


class CacheError(ConfigError):
    """The response cache file is damaged or is not a response cache (exit code 2).

    Fatal: every request of a run would meet the same file, so a run stops before it starts
    (or at the first request that meets the damage) instead of failing unit after unit.
    """

    exit_code = 2
    fatal = True


def _damaged(path: Path, detail: str) -> CacheError:
    return CacheError(
        f"response cache {path} is damaged ({detail}); delete it (and its -wal/-shm files) "
        "to start an empty cache, or run without it (cache_mode: off)"
    )


def _is_damage(err: sqlite3.Error) -> bool:
    code = getattr(err, "sqlite_errorcode", None)
    return code is not None and int(code) & 0xFF in _DAMAGE_CODES


def _check_header(path: Path) -> bool:
    """Refuse a file that is not SQLite; False when the file is missing or empty (a new,
    empty cache is made there)."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return False
    except OSError as err:
        raise CacheError(f"cannot read the response cache {path}: {err.strerror or err}") from None
    if size == 0:
        return False
    try:
        with path.open("rb") as handle:
            head = handle.read(100)
    except OSError as err:
        raise CacheError(f"cannot read the response cache {path}: {err.strerror or err}") from None
    if len(head) < 100 or not head.startswith(_SQLITE_MAGIC):
        raise _damaged(path, f"not an SQLite database, {size} bytes")
    return True


def _check_tables(path: Path, conn: sqlite3.Connection) -> None:
    tables = {str(row[0]) for row in conn.execute("SELECT name FROM sqlite_master")}
    if tables and "completions" not in tables:
        raise CacheError(
            f"{path} is not a response cache (it holds {', '.join(sorted(tables))}); "
            "point cache at another file"
        )


def check_cache(path: str | os.PathLike[str]) -> None:
    """Raise :class:`CacheError` if the cache file at ``path`` is damaged or foreign.

    Reads the whole file once (SQLite's ``quick_check``: a fraction of a second per 100 MB)
    without ever writing to it. A missing or empty file passes: a new cache is made there.
    """
    file = Path(path).expanduser()
    if not _check_header(file):
        return
    try:
        conn = sqlite3.connect(
            f"{file.resolve().as_uri()}?mode=ro", uri=True, timeout=60.0, isolation_level=None
        )
    except sqlite3.Error as err:
        raise CacheError(f"cannot open the response cache {file}: {err}") from None
    try:
        _check_tables(file, conn)
        rows = conn.execute("PRAGMA quick_check(5)").fetchall()
        problems = [str(row[0]) for row in rows if str(row[0]) != "ok"]
    except sqlite3.DatabaseError as err:
        if _is_damage(err):
            raise _damaged(file, str(err)) from None
        raise CacheError(f"cannot read the response cache {file}: {err}") from None
    finally:
        conn.close()
    if problems:
        first = " ".join(problems[0].split())[:200]
        more = f" and {len(problems) - 1} more" if len(problems) > 1 else ""
        raise _damaged(file, f"integrity check: {first}{more}")


def cache_key(
    *,
    provider: str,
    base_url: str,
    model: str,
    messages: Sequence[ChatMessage],
    config: GenerateConfig,
    salt: str = "",
) -> str:
    """SHA-256 hex digest of the canonical request (see the module docstring)."""
    # None fields are left out, so adding an optional setting keeps old keys valid.
    settings = config.model_dump(mode="json", exclude_none=True)
    if isinstance(config.response_format, JsonSchema):
        # The canonical JSON below sorts keys, but a schema's property order is part of what
        # it asks for (properties are generated in that order): its own text goes in.
        schema = config.response_format
        settings["response_format"] = {
            "name": schema.name,
            "schema": schema.schema_text(),
            "strict": schema.strict,
        }
    payload = {
        "v": _KEY_VERSION,
        "provider": provider,
        "base_url": base_url.rstrip("/"),
        "model": model,
        "messages": list(messages),
        "config": settings,
        "salt": salt,
    }
    try:
        canonical = json.dumps(
            payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False
        )
    except (TypeError, ValueError) as exc:
        raise InputError(f"messages are not JSON-serializable: {exc}") from None
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


class ResponseCache:
    """Completions by request key in one SQLite file (thread-safe; process-safe via WAL).

    Reads and writes go through two connections, so that a write waiting for another
    process's write lock (up to SQLite's 60 s busy timeout) never holds up a read: WAL
    readers do not wait for writers. :meth:`aget` and :meth:`aput` run them in threads of
    their own, so that neither blocks an event loop. ``read_only=True`` opens the file
    with SQLite's ``mode=ro`` (it must exist; nothing is ever written to it, not even the
    switch to WAL mode).
    """

    def __init__(self, path: str | os.PathLike[str], *, read_only: bool = False) -> None:
        self.path = Path(path)
        self.read_only = read_only
        # Before SQLite writes anything: not SQLite at all is refused here.
        _check_header(self.path)
        if read_only and not self.path.exists():
            raise ConfigError(f"the read-only response cache {self.path} does not exist")
        self._writer: sqlite3.Connection | None = None
        try:
            if not read_only:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._writer = self._connect()
            self._reader = self._connect(read_only=read_only)
        except (OSError, sqlite3.Error) as exc:
            self._close_connections()
            raise ConfigError(f"cannot open the response cache {self.path}: {exc}") from None
        try:
            _check_tables(self.path, self._reader)
            if self._writer is not None:
                self._writer.execute("PRAGMA journal_mode=WAL")
                self._writer.execute("PRAGMA synchronous=NORMAL")
                self._writer.execute(_SCHEMA)
        except sqlite3.Error as exc:
            self._close_connections()
            if _is_damage(exc):
                raise _damaged(self.path, str(exc)) from None
            raise ConfigError(f"cannot open the response cache {self.path}: {exc}") from None
        except BaseException:
            self._close_connections()
            raise
        self._read_lock = threading.Lock()
        self._write_lock = threading.Lock()
        # One thread each: their connection serializes the work anyway, and a write stuck
        # in a busy wait must not take threads other work (reads, other models) needs.
        self._read_pool = ThreadPoolExecutor(1, thread_name_prefix="byzllm-cache-read")
        self._write_pool = ThreadPoolExecutor(1, thread_name_prefix="byzllm-cache-write")

    def _connect(self, *, read_only: bool = False) -> sqlite3.Connection:
        # A URI opens the file with mode=ro; a plain path opens it read-write.
        target = f"{self.path.resolve().as_uri()}?mode=ro" if read_only else self.path
        return sqlite3.connect(
            target, uri=read_only, timeout=60.0, check_same_thread=False, isolation_level=None
        )

    def _close_connections(self) -> None:
        for conn in (self._writer, getattr(self, "_reader", None)):
            if conn is not None:
                conn.close()

    def get(self, key: str) -> Completion | None:
        """The cached completion for ``key``, or ``None`` (also for an unreadable entry).

        A passing database error (locked beyond the timeout; in a read-only cache, a file
        without entries yet) is logged and treated as a miss. Damaged pages raise
        :class:`CacheError` (fatal: the run stops, naming the file), since every later
        request would meet them too. Blocks while SQLite waits: see :meth:`aget`.
        """
        try:
            with self._read_lock:
                row = self._reader.execute(
                    "SELECT value FROM completions WHERE key = ?", (key,)
                ).fetchone()
        except sqlite3.Error as exc:
            if _is_damage(exc):
                raise _damaged(self.path, str(exc)) from None
            _log.warning("response cache %s unreadable (%s); treating as a miss", self.path, exc)
            return None
        if row is None:
            return None
        try:
            return Completion.model_validate_json(row[0])
        except ValueError:
            return None  # written by an incompatible version: treat as a miss

    def put(self, key: str, completion: Completion) -> None:
        """Store ``completion`` under ``key`` (replacing any previous entry); a read-only
        cache stores nothing. Blocks while SQLite waits: see :meth:`aput`."""
        if self._writer is None:
            return
        value = completion.model_dump_json(exclude={"cached", "latency_s"})
        try:
            with self._write_lock:
                self._writer.execute(
                    "INSERT OR REPLACE INTO completions (key, value, created_at) VALUES (?, ?, ?)",
                    (key, value, time.time()),
                )
        except sqlite3.Error as exc:
            if _is_damage(exc):
                raise _damaged(self.path, str(exc)) from None
            _log.warning("response cache %s not written (%s)", self.path, exc)

    async def aget(self, key: str) -> Completion | None:
        """:meth:`get` in the cache's reading thread: the event loop runs on meanwhile."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._read_pool, self.get, key)

    async def aput(self, key: str, completion: Completion) -> None:
        """:meth:`put` in the cache's writing thread: the event loop runs on meanwhile."""
        if self._writer is None:
            return
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._write_pool, self.put, key, completion)

    def __len__(self) -> int:
        try:
            with self._read_lock:
                row = self._reader.execute("SELECT COUNT(*) FROM completions").fetchone()
        except sqlite3.OperationalError:
            if self._writer is not None:
                raise
            return 0  # a read-only file without the table: no entries
        return int(row[0])

    def close(self) -> None:
        """Close the connections (the file stays)."""
        self._read_pool.shutdown(wait=False)
        self._write_pool.shutdown(wait=False)
        with self._read_lock, self._write_lock:
            self._close_connections()

    def __repr__(self) -> str:
        mode = ", read_only=True" if self.read_only else ""
        return f"ResponseCache({str(self.path)!r}{mode})"


_open_lock = threading.Lock()
_open: dict[tuple[str, bool], ResponseCache] = {}


def open_cache(path: str | os.PathLike[str], *, read_only: bool = False) -> ResponseCache:
    """The process's shared :class:`ResponseCache` for ``path`` (opened on first use; a
    read-only one apart from the one that writes)."""
    key = (str(Path(path).expanduser().resolve()), read_only)
    with _open_lock:
        cache = _open.get(key)
        if cache is None:
            cache = _open[key] = ResponseCache(key[0], read_only=read_only)
        return cache


def _reset_open_caches() -> None:
    """Close every shared cache (tests use it between temporary directories)."""
    with _open_lock:
        for cache in _open.values():
            cache.close()
        _open.clear()
