"""Files written whole or not at all: a write that fails (a full disk, Ctrl-C) leaves no cut-off
file under the final name that looks complete, and no stray partial file beside it; and what
stands at a path a reader was given (:func:`path_kind`), for its error to name."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path

__all__ = ["atomic_path", "path_kind", "refuse_pipe", "write_text_atomic"]


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """A path beside ``path`` to write; renamed onto ``path`` when the block ends without an
    error, removed otherwise (the rename is atomic on one file system). A folder (``.``, an
    existing directory) is :class:`IsADirectoryError` naming it, before anything is written.

    A missing parent folder is created, as every other writer of the command line does
    (``sim fit -o profiles/p.yaml``); an error on the hidden partial file names ``path``,
    the file the caller asked for (``graph build -o graphs/g.json`` failed with "No such
    file or directory: graphs/.g.json.4711.partial")."""
    final = Path(path)
    if not final.name or final.is_dir():
        raise IsADirectoryError(errno.EISDIR, "Is a directory, not a file name", str(path))
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
    except FileExistsError:  # a file where the folder should be
        raise NotADirectoryError(errno.ENOTDIR, "Not a directory", str(final.parent)) from None
    partial = final.with_name(f".{final.name}.{os.getpid()}.partial")
    try:
        yield partial
        os.replace(partial, final)
    except OSError as err:
        if err.filename == str(partial):
            err.filename = str(path)
        raise
    finally:
        # Not there, or its folder is a file: nothing to remove, and the error that ended
        # the block is the one to report.
        with contextlib.suppress(FileNotFoundError, NotADirectoryError):
            partial.unlink()


def write_text_atomic(path: str | os.PathLike[str], text: str) -> Path:
    """``Path(path).write_text(text)`` in UTF-8, whole or not at all; returns the path."""
    with atomic_path(path) as partial:
        partial.write_text(text, encoding="utf-8")
    return Path(path)


#: What :func:`path_kind` calls whatever is neither a file nor a folder.
_SPECIAL = "a pipe, socket or device"


def path_kind(path: str | os.PathLike[str]) -> str | None:
    """What stands at ``path`` (links followed): ``"a file"``, ``"a folder"``, ``"a pipe,
    socket or device"``, or ``None`` when nothing does. For a reader's error: a folder or a
    named pipe where a file is wanted was reported as "not found", though it is there."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):  # missing, a broken link, a name the system refuses
        return None
    if stat.S_ISREG(mode):
        return "a file"
    if stat.S_ISDIR(mode):
        return "a folder"
    return _SPECIAL


def refuse_pipe(path: str | os.PathLike[str]) -> None:
    """An :class:`OSError` naming ``path`` when it is a named pipe, a socket or a device, for
    a reader to call before it reads a file whole: a pipe no program writes to blocked the
    read forever (``mkfifo g.json; byzllm graph check g.json``), and ``/dev/zero`` never
    ends. A missing file or a folder is left to the read, whose error says so."""
    found = path_kind(path)
    if found == _SPECIAL:
        raise OSError(errno.EINVAL, f"{found}, not a file", os.fspath(path))
