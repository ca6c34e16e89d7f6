"""Files written whole or not at all: a write that fails (a full disk, Ctrl-C) leaves no cut-off
file under the final name that looks complete, and no stray partial file beside it."""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator
from pathlib import Path

__all__ = ["atomic_path", "write_text_atomic"]


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """A path beside ``path`` to write; renamed onto ``path`` when the block ends without an
    error, removed otherwise (the rename is atomic on one file system). A folder (``.``, an
    existing directory) is :class:`IsADirectoryError` naming it, before anything is written."""
    final = Path(path)
    if not final.name or final.is_dir():
        raise IsADirectoryError(errno.EISDIR, "Is a directory, not a file name", str(path))
    partial = final.with_name(f".{final.name}.{os.getpid()}.partial")
    try:
        yield partial
        os.replace(partial, final)
    finally:
        partial.unlink(missing_ok=True)


def write_text_atomic(path: str | os.PathLike[str], text: str) -> Path:
    """``Path(path).write_text(text)`` in UTF-8, whole or not at all; returns the path."""
    with atomic_path(path) as partial:
        partial.write_text(text, encoding="utf-8")
    return Path(path)
