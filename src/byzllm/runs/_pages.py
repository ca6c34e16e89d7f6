"""Rows read straight from the pages of an SQLite file, without SQLite (for ``runs repair``).

SQLite finds a row by walking a b-tree from its root page. When an interior page of that
tree is damaged or lies beyond the end of a truncated file, every row below it is out of
SQLite's reach although the leaf pages that hold the rows are intact. This module reads
those leaf pages directly, as the ``sqlite3`` shell's ``.recover`` does: every page of the
file (the newest committed copy of a page in the ``-wal`` file wins) is parsed as a b-tree
leaf, and every cell that decodes cleanly -- overflow chain included -- is returned with
its values. Nothing says which table a cell belongs to: the caller matches cells to tables
by their shape and checks every value (see :mod:`byzllm.runs._repair`).

Pages on the file's free list are left out (the repair has ``.recover`` leave them out too):
they hold only deleted rows (SQLite's default build leaves a deleted row's bytes in place),
and a row deleted on purpose -- a unit removed with its records -- must not come back.

Format reference: https://www.sqlite.org/fileformat2.html. The parsing is defensive: any
inconsistency (an offset out of range, a looping overflow chain, text that is not UTF-8)
drops that cell, never raises.
"""

from __future__ import annotations

import mmap
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["RawCell", "read_cells"]

_HEADER = b"SQLite format 3\x00"
_TABLE_LEAF, _INDEX_LEAF, _INDEX_INTERIOR = 0x0D, 0x0A, 0x02
_WAL_MAGICS = (0x377F0682, 0x377F0683)
#: A payload larger than this is garbage (SQLite's own default limit is 1e9 bytes).
_MAX_PAYLOAD = 1_000_000_000


@dataclass(frozen=True, slots=True)
class RawCell:
    """One row (a table leaf cell) or index entry (an index cell: leaf or interior, which
    in an index b-tree, and so in a ``WITHOUT ROWID`` table, holds whole keys too)."""

    table_leaf: bool
    rowid: int | None  # table leaves only
    values: tuple[Any, ...]
    page: int


class _Pages:
    """Page images by number: the main file, overlaid by committed ``-wal`` frames."""

    def __init__(self, main: bytes | mmap.mmap, page_size: int, wal: dict[int, bytes]) -> None:
        self._main = main
        self.page_size = page_size
        self._wal = wal
        self.count = max(len(main) // page_size, max(wal, default=0))

    def get(self, number: int) -> bytes | None:
        if number < 1 or number > self.count:
            return None
        image = self._wal.get(number)
        if image is not None:
            return image
        start = (number - 1) * self.page_size
        image = bytes(self._main[start : start + self.page_size])
        return image if len(image) == self.page_size else None


def _varint(data: bytes, offset: int) -> tuple[int, int]:
    """SQLite varint at ``offset``: (value, offset after it). IndexError past the end."""
    value = 0
    for i in range(8):
        byte = data[offset + i]
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value, offset + i + 1
    return (value << 8) | data[offset + 8], offset + 9


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _serial_size(serial: int) -> int:
    if serial < 12:
        return (0, 1, 2, 3, 4, 6, 8, 8, 0, 0, -1, -1)[serial]
    return (serial - 12) // 2 if serial % 2 == 0 else (serial - 13) // 2


def _decode_record(payload: bytes) -> tuple[Any, ...] | None:
    """The values of one record (SQLite's record format), or None if it does not decode."""
    try:
        header_size, position = _varint(payload, 0)
        if header_size < 1 or header_size > len(payload):
            return None
        serials = []
        while position < header_size:
            serial, position = _varint(payload, position)
            serials.append(serial)
        if position != header_size:
            return None
        values: list[Any] = []
        body = header_size
        for serial in serials:
            size = _serial_size(serial)
            if size < 0 or body + size > len(payload):
                return None
            chunk = payload[body : body + size]
            body += size
            if serial == 0:
                values.append(None)
            elif serial in (8, 9):
                values.append(serial - 8)
            elif serial <= 6:
                values.append(int.from_bytes(chunk, "big", signed=True))
            elif serial == 7:
                values.append(struct.unpack(">d", chunk)[0])
            elif serial % 2 == 0:
                values.append(bytes(chunk))
            else:
                values.append(chunk.decode("utf-8"))
        if body != len(payload):
            return None
        return tuple(values)
    except (IndexError, UnicodeDecodeError, struct.error):
        return None


def _local_size(payload: int, usable: int, table_leaf: bool) -> int:
    """How many payload bytes a cell keeps on its own page (the rest overflows)."""
    most = usable - 35 if table_leaf else ((usable - 12) * 64 // 255) - 23
    if payload <= most:
        return payload
    least = ((usable - 12) * 32 // 255) - 23
    keep = least + (payload - least) % (usable - 4)
    return keep if keep <= most else least


def _payload(
    page: bytes, start: int, size: int, usable: int, table_leaf: bool, pages: _Pages
) -> bytes | None:
    local = _local_size(size, usable, table_leaf)
    if start + local > usable:
        return None
    parts = [page[start : start + local]]
    remaining = size - local
    if remaining == 0:
        return parts[0]
    if start + local + 4 > usable:
        return None
    next_page = int.from_bytes(page[start + local : start + local + 4], "big")
    seen: set[int] = set()
    while remaining > 0:
        if next_page in seen:
            return None  # a loop
        seen.add(next_page)
        overflow = pages.get(next_page)
        if overflow is None:
            return None
        take = min(remaining, usable - 4)
        parts.append(overflow[4 : 4 + take])
        remaining -= take
        next_page = int.from_bytes(overflow[:4], "big")
    return b"".join(parts)


def _cells(number: int, page: bytes, usable: int, pages: _Pages) -> Iterator[RawCell]:
    header = 100 if number == 1 else 0
    kind = page[header]
    if kind not in (_TABLE_LEAF, _INDEX_LEAF, _INDEX_INTERIOR):
        return
    table_leaf = kind == _TABLE_LEAF
    count = int.from_bytes(page[header + 3 : header + 5], "big")
    pointers = header + (12 if kind == _INDEX_INTERIOR else 8)
    if count == 0 or pointers + 2 * count > usable:
        return
    for index in range(count):
        cell = int.from_bytes(page[pointers + 2 * index : pointers + 2 * index + 2], "big")
        if cell < pointers + 2 * count or cell >= usable:
            continue
        if kind == _INDEX_INTERIOR:
            cell += 4  # the left child's page number comes first
        try:
            size, position = _varint(page, cell)
            rowid = None
            if table_leaf:
                raw_rowid, position = _varint(page, position)
                rowid = _signed(raw_rowid)
        except IndexError:
            continue
        if size > _MAX_PAYLOAD:
            continue
        payload = _payload(page, position, size, usable, table_leaf, pages)
        if payload is None or len(payload) != size:
            continue
        values = _decode_record(payload)
        if values is not None:
            yield RawCell(table_leaf, rowid, values, number)


def _wal_pages(path: Path, page_size: int) -> dict[int, bytes]:
    """The newest committed image of each page in ``<path>-wal`` (empty when none)."""
    wal_path = Path(f"{path}-wal")
    try:
        data = wal_path.read_bytes()
    except OSError:
        return {}
    if len(data) < 32:
        return {}
    magic, _, size, _, salt1, salt2 = struct.unpack(">IIIIII", data[:24])
    if magic not in _WAL_MAGICS or size != page_size:
        return {}
    committed: dict[int, bytes] = {}
    pending: dict[int, bytes] = {}
    frame = 32
    while frame + 24 + page_size <= len(data):
        number, db_size, frame_salt1, frame_salt2 = struct.unpack(">IIII", data[frame : frame + 16])
        if (frame_salt1, frame_salt2) != (salt1, salt2):
            break  # frames of an older generation: not part of the current log
        pending[number] = data[frame + 24 : frame + 24 + page_size]
        if db_size:  # a commit frame: everything up to here is committed
            committed.update(pending)
            pending.clear()
        frame += 24 + page_size
    return committed


def _free_pages(pages: _Pages, usable: int) -> set[int]:
    """The pages on the free list (trunk pages and the leaf pages they list).

    The list is followed from page 1's header as far as it is plausible: a "trunk" listing
    more leaves than a page holds, or page 0 or 1, is damage, and the walk stops there, so a
    garbled header never hides live pages beyond the one it names. Pages past the end of a
    truncated file are simply not there to skip.
    """
    first = pages.get(1)
    if first is None:
        return set()
    most_leaves = usable // 4 - 2
    free: set[int] = set()
    trunk = int.from_bytes(first[32:36], "big")
    while 1 < trunk <= pages.count and trunk not in free:
        page = pages.get(trunk)
        if page is None:
            break
        count = int.from_bytes(page[4:8], "big")
        if count > most_leaves:
            break  # not a trunk page
        leaves = [int.from_bytes(page[8 + 4 * i : 12 + 4 * i], "big") for i in range(count)]
        if any(leaf < 2 for leaf in leaves):
            break
        free.add(trunk)
        free.update(leaves)
        trunk = int.from_bytes(page[:4], "big")
    return free


def read_cells(path: Path) -> Iterator[RawCell]:
    """Every cleanly decodable cell of the table-leaf and index pages of the database at
    ``path`` (interior table pages hold no rows), pages on its free list left out.

    Reads the file (memory-mapped) and its ``-wal``; never opens it with SQLite, never
    writes. A file without a valid SQLite header yields nothing.
    """
    with path.open("rb") as handle:
        try:
            main: bytes | mmap.mmap = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        except (ValueError, OSError):  # an empty file cannot be mapped
            main = handle.read()
        try:
            if len(main) < 100 or bytes(main[:16]) != _HEADER:
                return
            page_size = int.from_bytes(main[16:18], "big")
            page_size = 65536 if page_size == 1 else page_size
            if page_size < 512 or page_size & (page_size - 1):
                return
            usable = page_size - main[20]
            if usable < 480:
                return
            pages = _Pages(main, page_size, _wal_pages(path, page_size))
            free = _free_pages(pages, usable)
            for number in range(1, pages.count + 1):
                if number in free:
                    continue
                page = pages.get(number)
                if page is not None:
                    yield from _cells(number, page, usable, pages)
        finally:
            if isinstance(main, mmap.mmap):
                main.close()
