"""Work functions importable by plain module name (for ProcessExecutor tests)."""

from __future__ import annotations

import asyncio
import os
import time
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


def slow_square(payload: dict[str, Any]) -> Computed:
    """:func:`square`, after ``payload["s"]`` seconds."""
    time.sleep(payload["s"])
    return square(payload)


def marked_slow_square(payload: dict[str, Any]) -> Computed:
    """:func:`slow_square`, touching the file ``payload["started"]`` names (if any) first."""
    if "started" in payload:
        with open(payload["started"], "w"):
            pass
    return slow_square(payload)


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


class Called(Record):
    kind: ClassVar[str] = "called"
    n: int
    limit: int  # the endpoint's request limit in force where the unit ran
    pid: int


async def call_model(payload: dict[str, Any]) -> Called:
    """``payload["calls"]`` concurrent requests to the model at ``payload["base_url"]``, whose
    config allows ``payload["limit"]`` requests at once."""
    from byzllm.llm import ModelSpec, get_shared_model
    from byzllm.llm._concurrency import endpoint_limiter

    spec = ModelSpec(
        name="openai/fake",
        base_url=payload["base_url"],
        api_key_env=None,
        max_concurrency=payload["limit"],
    )
    model = get_shared_model(spec)
    asked = [{"role": "user", "content": f"{payload['n']}.{i}"} for i in range(payload["calls"])]
    await asyncio.gather(*(model.generate([message]) for message in asked))
    limiter = endpoint_limiter(model.endpoint, spec.max_concurrency)
    return Called(n=payload["n"], limit=limiter.limit, pid=os.getpid())
