"""Whether an output stream encodes all of Unicode (imported at start-up: stays tiny)."""

from __future__ import annotations

import codecs
from typing import TextIO

__all__ = ["speaks_utf8"]


def speaks_utf8(stream: TextIO) -> bool:
    """Whether ``stream`` writes UTF-8 (``utf-8``, ``UTF8``, ``utf_8`` ...): a Latin-1 or
    ASCII terminal cannot show the tables' arrows and Greek letters."""
    encoding = getattr(stream, "encoding", None)
    if not isinstance(encoding, str) or not encoding:
        return False
    try:
        return codecs.lookup(encoding).name == "utf-8"
    except LookupError:
        return False
