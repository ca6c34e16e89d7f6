"""A JSON-lines data file read line by line on demand.

A run samples a few questions (30 in the SAC paper, §5.2) from a data file of any size, and
the replay adversary (the SAC paper, App. B.4) reads a few more of its other questions. Parsing
every line into a :class:`~byzllm.tasks.Task` made a run's cost and memory grow with the
file: 100,000 GSM8K lines cost 3x the CPU time and memory of the 20 questions sampled. A
:class:`LineIndex` records once where each non-blank line starts (a few bytes a line, nothing
parsed); a :class:`TaskLines` is the file's questions as a sequence that parses a line the
first time it is read and keeps the task, so the same position is always the same object.

A line is checked (JSON, fields, UTF-8) when it is read, with the same one-line errors as the
eager loaders. Where the lines Python's ``str.splitlines`` would see are not the file's
``\\n``-separated lines (a lone ``\\r``, a form feed, ``U+2028`` ...) or the file is
compressed, :meth:`LineIndex.build` declines and the caller reads the file whole, so positions,
ids and line numbers are always those of the eager loaders.
"""

from __future__ import annotations

import os
import re
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO, overload

from byzllm.errors import InputError

from ._files import json_object, require_file
from ._types import Task, TaskKind

__all__ = ["LineIndex", "TaskLines"]

#: Line breaks ``str.splitlines`` honours besides ``\n`` and ``\r\n`` (UTF-8 encoded), and
#: ``\x1f``, which ``str.strip`` removes from a line that would otherwise look blank: a file
#: holding any is read whole. Searched for as plain bytes (a regular expression alternating
#: them scans 25 times slower).
_ODD_BREAKS = (
    b"\x0b",
    b"\x0c",
    b"\x1c",
    b"\x1d",
    b"\x1e",
    b"\x1f",
    b"\xc2\x85",
    b"\xe2\x80\xa8",
    b"\xe2\x80\xa9",
)
_LONE_CR = re.compile(rb"\r(?!\n)")
_CHUNK = 1 << 20

#: Builds the task of one line: (file, line number, position among the non-blank lines, row).
LineParser = Callable[[Path, int, int, dict[str, Any]], Task]


class LineIndex:
    """Where each non-blank line of a JSON-lines file starts, and its line number."""

    __slots__ = ("linenos", "offsets", "path", "stamp")

    def __init__(
        self, path: Path, offsets: array[int], linenos: array[int], stamp: tuple[int, int]
    ) -> None:
        self.path = path
        self.offsets = offsets
        self.linenos = linenos
        #: Size and modification time when indexed: a line read after a change is refused.
        self.stamp = stamp

    @classmethod
    def build(cls, path: str | Path) -> LineIndex | None:
        """The index of ``path``, or ``None`` when it cannot be read line by line exactly
        (compressed, or with line breaks other than ``\\n``/``\\r\\n``)."""
        file = Path(path)
        require_file(file)
        if file.suffix == ".gz":
            return None
        offsets, linenos = array("q"), array("q")
        try:
            with file.open("rb") as fh:
                stamp = _stamp(fh.fileno())
                if not _plain_breaks(fh):
                    return None
                fh.seek(0)
                offset = 0
                for lineno, line in enumerate(fh, start=1):
                    if not _blank(line):
                        offsets.append(offset)
                        linenos.append(lineno)
                    offset += len(line)
        except OSError as err:
            raise InputError(f"{file}: cannot read ({err.strerror or err})") from None
        return cls(file, offsets, linenos, stamp)

    def __len__(self) -> int:
        return len(self.offsets)

    def read(self, position: int) -> tuple[int, str]:
        """The line number and text of the ``position``-th non-blank line."""
        try:
            with self.path.open("rb") as fh:
                if _stamp(fh.fileno()) != self.stamp:
                    raise InputError(
                        f"{self.path}: changed since this run indexed it; run again to "
                        "read the new version"
                    )
                fh.seek(self.offsets[position])
                raw = fh.readline()
        except OSError as err:
            raise InputError(f"{self.path}: cannot read ({err.strerror or err})") from None
        lineno = self.linenos[position]
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as err:
            raise InputError(f"{self.path}:{lineno}: not UTF-8 text ({err.reason})") from None
        return lineno, text.removesuffix("\n").removesuffix("\r")


def _stamp(fd: int) -> tuple[int, int]:
    info = os.fstat(fd)
    return info.st_size, info.st_mtime_ns


def _plain_breaks(fh: BinaryIO) -> bool:
    """Whether every line break in ``fh`` is ``\n`` or ``\r\n`` (where binary line iteration
    splits), read in chunks that overlap by two bytes (the longest mark is three)."""
    tail = b""
    while chunk := fh.read(_CHUNK):
        window = tail + chunk
        if any(mark in window for mark in _ODD_BREAKS):
            return False
        # A \r as the window's last byte is judged again with the next chunk.
        last = len(window) - 1
        if b"\r" in window and any(m.start() < last for m in _LONE_CR.finditer(window)):
            return False
        tail = window[-2:]
    return not tail.endswith(b"\r")


def _blank(line: bytes) -> bool:
    """Blank as ``str.strip`` sees it (Unicode spaces too), without decoding ASCII lines."""
    stripped = line.strip()
    if not stripped:
        return True
    if stripped.isascii():
        return False
    return not stripped.decode("utf-8", errors="replace").strip()


class TaskLines(Sequence[Task]):
    """The questions of an indexed JSON-lines file, each parsed when first read.

    Every question shares one answer format and data set (``kind``, ``choices``, ``source``,
    ``dataset``), so a consumer can group the file without reading it. ``position_of`` finds
    a question by id without reading; :meth:`excluding` is the same file without some
    positions (a view sharing the parsed questions).
    """

    __slots__ = (
        "_cache",
        "_excluded",
        "_id_position",
        "_index",
        "_parse",
        "choices",
        "dataset",
        "kind",
        "source",
    )

    def __init__(
        self,
        index: LineIndex,
        parse: LineParser,
        id_position: Callable[[str], int | None],
        *,
        kind: TaskKind,
        source: str,
        choices: tuple[str, ...] = (),
        dataset: str | None = None,
        _excluded: tuple[int, ...] = (),
        _cache: dict[int, Task] | None = None,
    ) -> None:
        self._index = index
        self._parse = parse
        self._id_position = id_position
        self._excluded = _excluded
        self._cache: dict[int, Task] = {} if _cache is None else _cache
        #: What every question of the file shares.
        self.kind: TaskKind = kind
        self.choices = choices
        self.source = source
        self.dataset = dataset

    def __len__(self) -> int:
        return len(self._index) - len(self._excluded)

    @overload
    def __getitem__(self, index: int) -> Task: ...

    @overload
    def __getitem__(self, index: slice) -> list[Task]: ...

    def __getitem__(self, index: int | slice) -> Task | list[Task]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        size = len(self)
        if index < 0:
            index += size
        if not 0 <= index < size:
            raise IndexError("TaskLines index out of range")
        return self._task(self._file_position(index))

    def __iter__(self) -> Iterator[Task]:
        return (self[i] for i in range(len(self)))

    def _file_position(self, index: int) -> int:
        position = index
        for skipped in self._excluded:  # sorted: each one at or before shifts the rest
            if skipped > position:
                break
            position += 1
        return position

    def _task(self, position: int) -> Task:
        task = self._cache.get(position)
        if task is None:
            lineno, text = self._index.read(position)
            where = f"{self._index.path}:{lineno}"
            task = self._parse(self._index.path, lineno, position, json_object(text, where))
            self._cache[position] = task
        return task

    def position_of(self, task_id: str) -> int | None:
        """The index of the question ``task_id`` here (``None``: not in this sequence)."""
        position = self._id_position(task_id)
        if position is None or not 0 <= position < len(self._index):
            return None
        at = bisect_left(self._excluded, position)
        if at < len(self._excluded) and self._excluded[at] == position:
            return None
        return position - at

    def excluding(self, indices: Iterable[int]) -> TaskLines:
        """These questions without the ones at ``indices`` (indices into this sequence)."""
        removed = {self._file_position(i) for i in indices}
        return TaskLines(
            self._index,
            self._parse,
            self._id_position,
            kind=self.kind,
            source=self.source,
            choices=self.choices,
            dataset=self.dataset,
            _excluded=tuple(sorted(removed.union(self._excluded))),
            _cache=self._cache,
        )
