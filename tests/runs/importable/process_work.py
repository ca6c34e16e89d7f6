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


class Seen(Record):
    kind: ClassVar[str] = "seen"
    key: str | None


def seen_key(payload: dict[str, Any]) -> Seen:
    """What a worker sees of the environment's API key (and, for the test, of /proc)."""
    with open(f"/proc/{os.getpid()}/environ", "rb") as handle:
        block = handle.read()
    held = os.environ.get("OPENAI_API_KEY") or ("in /proc" if b"sk-canary" in block else None)
    return Seen(key=held)


def seen_in_proc(payload: dict[str, Any]) -> Seen:
    """Whether the environment's API key is in this worker's /proc environ (the block fixed
    when the process started, which another process of the same user can read)."""
    with open(f"/proc/{os.getpid()}/environ", "rb") as handle:
        block = handle.read()
    return Seen(key="in /proc" if b"sk-canary" in block else None)
