"""How a record's JSON is kept in the store: zlib-compressed, so stores stay small.

A record of a real run repeats itself (the agents' descriptions, prompts, the trace's field
names), and zlib shrinks such JSON about tenfold; a 2,000-question demo went from 620 MB to a
few tens of megabytes. Short records stay plain text, where compression saves nothing. Reading
accepts both forms, so stores written before compression (every value text) still open.
"""

from __future__ import annotations

import json
import zlib

__all__ = ["pack_json", "unpack_json"]

#: Records shorter than this (bytes of JSON) are kept as text.
_PACK_FROM = 256


def pack_json(text: str) -> str | bytes:
    """The value stored for a record's JSON ``text``: zlib bytes (a BLOB), or ``text`` itself
    when it is short."""
    raw = text.encode("utf-8")
    if len(raw) < _PACK_FROM:
        return text
    return zlib.compress(raw, 6)


def unpack_json(value: str | bytes) -> str:
    """A record's JSON text from its stored value (either form :func:`pack_json` writes)."""
    if isinstance(value, bytes):
        try:
            return zlib.decompress(value).decode("utf-8")
        except (zlib.error, UnicodeDecodeError) as err:
            # The store's readers name a value that is not JSON as damage: so is this.
            raise json.JSONDecodeError(
                f"a compressed record does not inflate ({err})", "", 0
            ) from None
    return value
