"""Work functions importable by plain module name (for ProcessExecutor tests)."""

from __future__ import annotations

import asyncio
import os
from typing import Any, ClassVar

from byzllm.runs import Record


class Computed(Record):
    kind: ClassVar[str] = "computed"
    n: int
    square: int
    pid: int


def square(payload: dict[str, Any]) -> Computed:
    if payload["n"] < 0:
        raise ValueError("negative input")
    return Computed(n=payload["n"], square=payload["n"] ** 2, pid=os.getpid())


async def async_square(payload: dict[str, Any]) -> list[Record]:
    await asyncio.sleep(0)
    return [square(payload)]
