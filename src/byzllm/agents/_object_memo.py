"""Values worked out from an object, remembered by the object's identity.

For objects that are frozen but costly to hash (pydantic models: a hash walks every field),
asked about again and again by simulated sweeps (a task's wrong answers, a profile's dump).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["ObjectMemo"]

_V = TypeVar("_V")


class ObjectMemo(Generic[_V]):
    """``make()``'s value per object, by identity, at most ``limit`` objects (emptied when
    full: a sweep's old questions are not asked about again). Each entry keeps its object,
    so that the object's id is not reused while its value is remembered."""

    __slots__ = ("_limit", "_values")

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._values: dict[int, tuple[object, _V]] = {}

    def get(self, obj: object, make: Callable[[], _V]) -> _V:
        known = self._values.get(id(obj))
        if known is not None and known[0] is obj:
            return known[1]
        if len(self._values) >= self._limit:
            self._values.clear()
        value = make()
        self._values[id(obj)] = (obj, value)
        return value
