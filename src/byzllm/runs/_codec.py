"""How records' JSON is kept in the store: compressed, and batched per unit and kind, so
stores stay small.

A record repeats itself (the agents' descriptions, the trace's field names), and a unit's
records of one kind repeat each other (a consensus question's 49 round records differ in a
few values): compressed one by one, short records gain little, and each is a row of its own
with its keys in two indexes. So the records of one kind that a unit writes together are
kept as ONE row, a *batch*: their JSON texts one per line, zlib-compressed together, behind
a header that says how many there are (``#<n>:``), so counting records reads no more than the
header. A kind a unit writes once is one row, zlib-compressed unless it is short. The
2,000-question demo (12,000 units, 600,000 records): 298 MB with a row per record, 49 MB in
batches, 34 MB once its round records were derived rows (below).

Records that another record of their unit holds already (a consensus question's round
records are its trace, one row per agent and round, with the question's fields beside) are
not stored twice: their row is a *derived* row, ``@<n>:<module>:<source kind>``, which says
how many there are and which record they are rebuilt from when read
(:attr:`byzllm.runs.Record.derived_from`). The 49 round records were half of what a simulated
consensus question stored, and packing them a third of a worker's time.

Reading accepts every form, so stores written before (one row per record, compressed or
plain text; round records stored in full) still open.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic_core import from_json

__all__ = [
    "BATCH_MARK",
    "DERIVED_MARK",
    "DerivedRow",
    "damaged",
    "derived_row",
    "pack_batch",
    "pack_derived",
    "pack_json",
    "parse_record",
    "record_count",
    "unpack_json",
    "unpack_record_bytes",
    "unpack_records",
]

#: Records shorter than this (bytes of JSON) are kept as text.
_PACK_FROM = 256
#: The first byte of a batch (a zlib stream starts with 0x78, a text row is not a BLOB).
BATCH_MARK = b"#"
#: The first byte of a derived row (records rebuilt on read from another record of the unit).
DERIVED_MARK = b"@"


def pack_json(text: str) -> str | bytes:
    """The value stored for a record's JSON ``text``: zlib bytes (a BLOB), or ``text`` itself
    when it is short."""
    raw = text.encode("utf-8")
    if len(raw) < _PACK_FROM:
        return text
    return zlib.compress(raw, 6)


def pack_batch(texts: Sequence[str]) -> bytes:
    """The value stored for several records of one kind and unit: ``#<n>:`` and their JSON
    texts, one per line, zlib-compressed together (a record's JSON has no raw newline)."""
    if any("\n" in text for text in texts):
        raise ValueError("a record's JSON text holds a newline")
    body = zlib.compress("\n".join(texts).encode("utf-8"), 6)
    return BATCH_MARK + str(len(texts)).encode("ascii") + b":" + body


def pack_derived(count: int, module: str, source_kind: str) -> bytes:
    """The value stored for ``count`` records of a unit that are rebuilt, when read, from its
    record of ``source_kind`` by the record class defined in ``module``."""
    return DERIVED_MARK + f"{count}:{module}:{source_kind}".encode()


@dataclass(frozen=True, slots=True)
class DerivedRow:
    """What a derived row says (:func:`pack_derived`)."""

    count: int
    module: str
    source_kind: str


def derived_row(value: str | bytes) -> DerivedRow | None:
    """The header of a derived row, or None for a row that stores its records."""
    if not (isinstance(value, bytes) and value.startswith(DERIVED_MARK)):
        return None
    parts = value[1:].split(b":", 2)
    try:
        count, module, source = (part.decode("ascii") for part in parts)
    except (ValueError, UnicodeDecodeError):
        raise damaged("a row of derived records has no valid header") from None
    if not (count.isdigit() and module and source):
        raise damaged("a row of derived records has no valid header")
    return DerivedRow(int(count), module, source)


def damaged(detail: str) -> json.JSONDecodeError:
    """A stored value that cannot be read: the store's readers name a value that is not JSON
    as damage, and so is this."""
    return json.JSONDecodeError(detail, "", 0)


def unpack_records(value: str | bytes) -> list[str]:
    """The JSON texts of the records one stored value holds (a batch, one compressed record
    or one text)."""
    try:
        return [t if isinstance(t, str) else t.decode("utf-8") for t in unpack_record_bytes(value)]
    except UnicodeDecodeError as err:
        batch = isinstance(value, bytes) and value.startswith(BATCH_MARK)
        what = "a batch of records" if batch else "a compressed record"
        raise damaged(f"{what} does not inflate ({err})") from None


def unpack_record_bytes(value: str | bytes) -> list[str | bytes]:
    """:func:`unpack_records` with the JSON left as the UTF-8 bytes it inflates to (a text
    row as it is), for :func:`parse_record`, which reads bytes as they are: decoding them
    first cost a 10,000-question page 0.2 s. A derived row holds no JSON: the store rebuilds
    its records (:func:`derived_row`)."""
    if derived_row(value) is not None:
        raise ValueError("a derived row holds no records of its own: read it through the store")
    if isinstance(value, bytes) and value.startswith(BATCH_MARK):
        head, colon, body = value[1:].partition(b":")
        if not colon or not head.isdigit():
            raise damaged("a batch of records has no valid header")
        try:
            texts: list[str | bytes] = [*zlib.decompress(body).split(b"\n")]
        except zlib.error as err:
            raise damaged(f"a batch of records does not inflate ({err})") from None
        if len(texts) != int(head):
            raise damaged(f"a batch of {int(head)} records holds {len(texts)}")
        return texts
    if isinstance(value, bytes):
        try:
            return [zlib.decompress(value)]
        except zlib.error as err:
            raise damaged(f"a compressed record does not inflate ({err})") from None
    return [value]


def unpack_json(value: str | bytes) -> str:
    """A record's JSON text from its stored value (a compressed record or a text)."""
    if isinstance(value, bytes):
        try:
            return zlib.decompress(value).decode("utf-8")
        except (zlib.error, UnicodeDecodeError) as err:
            raise damaged(f"a compressed record does not inflate ({err})") from None
    return value


def record_count(value: str | bytes) -> int:
    """How many records a stored value holds, from a batch's or a derived row's header
    alone."""
    if isinstance(value, bytes) and value.startswith(DERIVED_MARK):
        head = value[1:].partition(b":")[0]
        return int(head) if head.isdigit() else 0
    if isinstance(value, bytes) and value.startswith(BATCH_MARK):
        head = value[1:].partition(b":")[0]
        return int(head) if head.isdigit() else 0
    return 1


def parse_record(text: str | bytes) -> Any:
    """A record's JSON ``text`` (or its UTF-8 bytes) as Python values: what ``json.loads``
    gives, from pydantic-core's parser, twice as fast on a consensus question's 12 KB (10,000
    of them: 1.8 -> 0.9 s). Text that parser refuses (a lone surrogate escape, which
    ``json`` accepts) goes through ``json.loads``, which also raises for text that is not
    JSON; bytes that are not UTF-8 are damage too, and so is nesting deeper than Python's
    recursion allows (no record the library writes comes near it)."""
    try:
        return from_json(text)
    except ValueError:
        try:
            decoded = text.decode("utf-8") if isinstance(text, bytes) else text
        except UnicodeDecodeError as err:
            raise damaged(f"a record is not UTF-8 ({err})") from None
        try:
            return json.loads(decoded)
        except RecursionError:
            raise damaged("a record is nested too deeply to read") from None
