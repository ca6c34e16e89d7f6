"""One writer per run folder: a lock that dies with its holder.

Two processes running units into the same folder would both compute every unit (the store
keeps only one copy, so the second one's work is silently wasted). The runner therefore holds
an exclusive ``flock`` on ``<store>.lock`` (``results.sqlite.lock``) from before it registers
its units until the run has been recorded as ended. The operating system releases the lock
when its holder exits however it exits (SIGKILL included), so a crashed run never leaves a
stale lock behind; the file itself stays, holding who took the lock last (pid, host, command,
start time), for the one-line refusal a second writer prints.

Readers (``runs show``, ``report``, ``export``, ``view``) never take the lock: WAL readers do
not disturb the writer, and a read-only archive has no lock to take.
"""

from __future__ import annotations

import asyncio
import errno
import fcntl
import json
import os
import socket
import sys
import time
from collections.abc import Callable, Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any

from byzllm.errors import ByzllmError

__all__ = ["RunBusyError", "WriterLock", "folder_error", "lock_path"]

#: How often a waiting writer (``wait=True``) tries the lock again.
_POLL_S = 0.25


class RunBusyError(ByzllmError):
    """Another process is writing to this run folder (exit code 2); ``holder`` says which
    ("process 123 (byzllm consensus run ...), running since ...")."""

    exit_code = 2
    fatal = True

    def __init__(self, message: str, *, holder: str = "another process") -> None:
        super().__init__(message)
        self.holder = holder


def lock_path(store_path: Path) -> Path:
    """The lock file beside a store: ``<run_dir>/results.sqlite.lock``."""
    return store_path.with_name(store_path.name + ".lock")


def folder_error(path: Path, err: OSError, doing: str) -> ByzllmError:
    """One line for a run folder that cannot be created or written (exit code 2)."""
    from ._store import StoreError

    reason = err.strerror or str(err)
    if err.errno == errno.ENAMETOOLONG:
        longest = max((len(part) for part in path.parts), default=0)
        hint = f"a name in it is {longest} characters; most file systems allow 255"
        return StoreError(f"cannot {doing} run folder {path}: {reason} ({hint})")
    if err.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return StoreError(
            f"cannot {doing} run folder {path}: {reason}; a finished run there can still be "
            "read (runs show, report, export, view), but new runs need a writable folder "
            "(--run-dir)"
        )
    if err.errno in (errno.ENOSPC, errno.EDQUOT):
        return StoreError(
            f"cannot {doing} run folder {path}: the disk is full; free some space and rerun "
            "the same command to resume"
        )
    return StoreError(f"cannot {doing} run folder {path}: {reason}")


def _holder(handle: int) -> dict[str, Any]:
    """Who wrote the lock file last (``{}`` when unreadable)."""
    try:
        data = os.pread(handle, 4096, 0)
        holder = json.loads(data.decode("utf-8"))
    except (OSError, ValueError):
        return {}
    return holder if isinstance(holder, dict) else {}


def _describe(holder: dict[str, Any]) -> str:
    pid = holder.get("pid")
    if not isinstance(pid, int):
        return "another process"
    text = f"process {pid}"
    host = holder.get("host")
    if isinstance(host, str) and host != socket.gethostname():
        text += f" on {host}"
    argv = holder.get("argv")
    if isinstance(argv, list) and argv:
        command = " ".join(str(part) for part in argv)
        if len(command) > 120:
            command = command[:119] + "…"
        text += f" ({command})"
    started = holder.get("started_at")
    if isinstance(started, int | float):
        text += f", running since {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(started))}"
    return text


class WriterLock:
    """The writer lock of one run folder, held between :meth:`acquire` and :meth:`release`
    (or for an ``async with`` block)."""

    def __init__(
        self,
        store_path: Path,
        *,
        wait: bool = False,
        argv: Sequence[str] | None = None,
        on_wait: Callable[[str], None] | None = None,
    ) -> None:
        self.folder = store_path.parent
        self.path = lock_path(store_path)
        self.wait = wait
        self.argv = list(sys.argv if argv is None else argv)
        self.on_wait = on_wait
        self._handle: int | None = None

    def _open(self) -> int:
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            return os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as err:
            raise folder_error(self.folder, err, "write to") from None

    def _try(self, handle: int) -> RunBusyError | None:
        """Take the lock (``None``), or the error saying who holds it."""
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            who = _describe(_holder(handle))
            return RunBusyError(
                f"run folder {self.folder} is in use by {who}; one process writes to a "
                "run folder at a time: wait for it to end (or pass --wait), or choose "
                "another --run-dir",
                holder=who,
            )
        holder = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "argv": self.argv,
            "started_at": time.time(),
        }
        with suppress(OSError):  # the lock holds without its note; the refusal gets vaguer
            os.ftruncate(handle, 0)
            os.pwrite(handle, json.dumps(holder).encode("utf-8"), 0)
        self._handle = handle
        return None

    def acquire(self) -> None:
        """Take the lock now or raise :class:`RunBusyError` (never waits)."""
        handle = self._open()
        refusal = self._try(handle)
        if refusal is not None:
            os.close(handle)
            raise refusal

    async def acquire_async(self) -> None:
        """Take the lock; with ``wait`` wait for the holder to end (the event loop keeps
        running, so Ctrl-C and SIGTERM still stop the wait), else raise at once."""
        handle = self._open()
        announced = False
        try:
            while (refusal := self._try(handle)) is not None:
                if not self.wait:
                    raise refusal
                if not announced and self.on_wait is not None:
                    self.on_wait(str(refusal))
                announced = True
                await asyncio.sleep(_POLL_S)
        except BaseException:
            os.close(handle)
            raise

    def release(self) -> None:
        if self._handle is not None:
            os.close(self._handle)  # closing the file releases the lock
            self._handle = None

    def __enter__(self) -> WriterLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    async def __aenter__(self) -> WriterLock:
        await self.acquire_async()
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.release()
