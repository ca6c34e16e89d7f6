"""Work functions for the Ray executor tests, importable by plain module name.

Ray's workers import them by name: the tests start their Ray instance with this folder on
PYTHONPATH (workers inherit it), and put it on the test process's ``sys.path`` too.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any, ClassVar

from byzllm.runs import Record


class UnitBrokeError(Exception):
    """An exception type of the work's own module (it must reach the store unwrapped)."""


class Squared(Record):
    kind: ClassVar[str] = "ray_squared"
    n: int
    square: int
    pid: int


def square_or_break(payload: dict[str, Any]) -> Squared:
    """A sync work function that fails for negative inputs."""
    n = int(payload["n"])
    if n < 0:
        raise UnitBrokeError(f"unit n={n} broke: negative input")
    return Squared(n=n, square=n * n, pid=os.getpid())


class Marker(Record):
    kind: ClassVar[str] = "marker"
    index: int
    part: int


async def logged_markers(payload: dict[str, Any]) -> list[Record]:
    """Sleeps a little, appends the unit's index to ``job-<Ray job id>.log`` in the payload's
    ``log_dir`` (when it computes, before its result is stored: one file per driver), and
    returns two marker records."""
    import ray

    await asyncio.sleep(float(payload["sleep_s"]))
    job = ray.get_runtime_context().get_job_id()
    with open(Path(payload["log_dir"]) / f"job-{job}.log", "a", encoding="utf-8") as log:
        log.write(f"{payload['index']}\n")
    return [Marker(index=payload["index"], part=0), Marker(index=payload["index"], part=1)]


def hold(payload: dict[str, Any]) -> list[Record]:
    """Writes ``started-<index>`` (holding its pid) to the payload's ``log_dir``, sleeps
    ``sleep_s``, then writes ``finished-<index>``: a unit that can be caught in flight."""
    log_dir, index = Path(payload["log_dir"]), payload["index"]
    (log_dir / f"started-{index}").write_text(str(os.getpid()), encoding="utf-8")
    time.sleep(float(payload["sleep_s"]))
    (log_dir / f"finished-{index}").write_text("", encoding="utf-8")
    return [Marker(index=index, part=0)]
