"""A content-addressed response cache in SQLite, safe to share across processes.

The key is the SHA-256 of the canonical JSON of everything that determines the answer --
provider, base URL, model, messages, generation settings and an explicit ``cache_salt``
(seed / epoch: change it to draw fresh samples) -- and of nothing that does not: timeouts,
concurrency, retry settings and the API key stay out, so the same experiment hits the same
entries whatever the transport. Values are completions as JSON (no credentials in them).

The database runs in WAL mode so readers never block the one writer, and several worker
processes can share a cache file; each process keeps one connection per file.

Modes (``cache_mode``): ``"on"`` reads and writes; ``"read-only"`` reads, never writes;
``"refresh"`` never reads, overwrites; ``"off"`` neither (no file is opened).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from byzllm.errors import ConfigError, InputError

from ._types import ChatMessage, Completion, GenerateConfig

__all__ = ["CacheMode", "ResponseCache", "cache_key", "open_cache"]

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
    payload = {
        "v": _KEY_VERSION,
        "provider": provider,
        "base_url": base_url.rstrip("/"),
        "model": model,
        "messages": list(messages),
        # None fields are left out, so adding an optional setting keeps old keys valid.
        "config": config.model_dump(mode="json", exclude_none=True),
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
    """Completions by request key in one SQLite file (thread-safe; process-safe via WAL)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(
                self.path, timeout=60.0, check_same_thread=False, isolation_level=None
            )
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute(_SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise ConfigError(f"cannot open the response cache {self.path}: {exc}") from None
        self._lock = threading.Lock()

    def get(self, key: str) -> Completion | None:
        """The cached completion for ``key``, or ``None`` (also for an unreadable entry).

        A database error (locked beyond the timeout, a damaged file) is logged and treated
        as a miss: the cache only ever saves calls, it never fails one.
        """
        try:
            with self._lock:
                row = self._conn.execute(
                    "SELECT value FROM completions WHERE key = ?", (key,)
                ).fetchone()
        except sqlite3.Error as exc:
            _log.warning("response cache %s unreadable (%s); treating as a miss", self.path, exc)
            return None
        if row is None:
            return None
        try:
            return Completion.model_validate_json(row[0])
        except ValueError:
            return None  # written by an incompatible version: treat as a miss

    def put(self, key: str, completion: Completion) -> None:
        """Store ``completion`` under ``key`` (replacing any previous entry)."""
        value = completion.model_dump_json(exclude={"cached", "latency_s"})
        try:
            with self._lock:
                self._conn.execute(
                    "INSERT OR REPLACE INTO completions (key, value, created_at) VALUES (?, ?, ?)",
                    (key, value, time.time()),
                )
        except sqlite3.Error as exc:
            _log.warning("response cache %s not written (%s)", self.path, exc)

    def __len__(self) -> int:
        with self._lock:
            row = self._conn.execute("SELECT COUNT(*) FROM completions").fetchone()
        return int(row[0])

    def close(self) -> None:
        """Close the connection (the file stays)."""
        with self._lock:
            self._conn.close()

    def __repr__(self) -> str:
        return f"ResponseCache({str(self.path)!r})"


_open_lock = threading.Lock()
_open: dict[str, ResponseCache] = {}


def open_cache(path: str | os.PathLike[str]) -> ResponseCache:
    """The process's shared :class:`ResponseCache` for ``path`` (opened on first use)."""
    resolved = str(Path(path).expanduser().resolve())
    with _open_lock:
        cache = _open.get(resolved)
        if cache is None:
            cache = _open[resolved] = ResponseCache(resolved)
        return cache


def _reset_open_caches() -> None:
    """Close every shared cache (tests use it between temporary directories)."""
    with _open_lock:
        for cache in _open.values():
            cache.close()
        _open.clear()
