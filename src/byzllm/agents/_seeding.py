"""Order-independent seeding: one random draw per (seed, agent, task, round, call).

Concurrent calls finish in any order; deriving every random draw from the *identity* of the
call (never from a shared generator) makes simulated results reproducible and independent of
scheduling. Draws come straight from a keyed BLAKE2b digest (cheap: no generator to seed).
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Sequence
from typing import TypeVar

__all__ = ["KeyPrefix", "choice", "choice_index", "gauss", "stream", "uniform"]

_T = TypeVar("_T")
_SCALE = float(2**64)
_blake2b = hashlib.blake2b


def _digest(keys: tuple[object, ...]) -> bytes:
    # map: no generator frame per draw (simulated sweeps)
    return _digest_text("\x1f".join(map(repr, keys)))


def _digest_text(text: str) -> bytes:
    return _blake2b(text.encode("utf-8", "replace"), digest_size=16).digest()


def _gauss_of(sd: float, digest: bytes) -> float:
    u1 = (int.from_bytes(digest[:8], "big") + 1) / (_SCALE + 1)  # in (0, 1]
    u2 = int.from_bytes(digest[8:], "big") / _SCALE
    return sd * math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)


def uniform(*keys: object) -> float:
    """One uniform draw in [0, 1) identified by ``keys``."""
    return int.from_bytes(_digest(keys)[:8], "big") / _SCALE


def gauss(sd: float, *keys: object) -> float:
    """One N(0, sd²) draw identified by ``keys`` (Box-Muller on two digest halves)."""
    return _gauss_of(sd, _digest(keys))


def choice(options: Sequence[_T], *keys: object) -> _T:
    """One element of ``options`` (non-empty) identified by ``keys``."""
    return options[choice_index(len(options), *keys)]


def choice_index(n: int, *keys: object) -> int:
    """The index :func:`choice` picks among ``n`` options (n > 0) for ``keys``."""
    return int.from_bytes(_digest(keys)[:8], "big") % n


def stream(*keys: object) -> random.Random:
    """A ``random.Random`` seeded by a stable hash of ``keys``, for many draws at once."""
    return random.Random(int.from_bytes(_digest(keys)[:8], "big"))


class KeyPrefix:
    """Draws whose keys all start with the same ``keys`` (an agent's seed and name): the same
    draws as :func:`uniform` and :func:`gauss` with the prefix's keys first, with the prefix
    written out once instead of on every draw (a simulated question makes ~150 of them)."""

    __slots__ = ("_text",)

    def __init__(self, *keys: object) -> None:
        self._text = "\x1f".join(map(repr, keys)) + "\x1f" if keys else ""

    def _digest(self, keys: tuple[object, ...]) -> bytes:
        return _digest_text(self._text + "\x1f".join(map(repr, keys)) if keys else self._text[:-1])

    def uniform(self, *keys: object) -> float:
        """``uniform(*prefix, *keys)``."""
        return int.from_bytes(self._digest(keys)[:8], "big") / _SCALE

    def gauss(self, sd: float, *keys: object) -> float:
        """``gauss(sd, *prefix, *keys)``."""
        return _gauss_of(sd, self._digest(keys))
