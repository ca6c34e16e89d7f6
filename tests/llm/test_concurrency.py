"""The per-endpoint limiter: a limit changed while requests hold slots."""

from __future__ import annotations

import asyncio

from byzllm.llm._concurrency import EndpointLimiter


async def test_a_lower_limit_binds_while_the_endpoint_stays_busy() -> None:
    """A model with a smaller limit created under a steady load was applied only once the
    endpoint was idle (never, under that load). Lowered in place, it admits nobody until
    the slots in use fall below it; raised, it admits waiters at once."""
    limiter = EndpointLimiter(4)
    for _ in range(4):
        await limiter.acquire()
    limiter.set_limit(2)
    waiting = [asyncio.ensure_future(limiter.acquire()) for _ in range(3)]
    await asyncio.sleep(0)
    limiter.release()
    limiter.release()  # 2 held: at the new limit, nobody is admitted yet
    await asyncio.sleep(0)
    assert not any(w.done() for w in waiting)
    limiter.release()  # 1 held: one waiter gets the slot
    await asyncio.sleep(0)
    assert sum(w.done() for w in waiting) == 1
    limiter.set_limit(3)  # raised: one more at once
    await asyncio.sleep(0)
    assert sum(w.done() for w in waiting) == 2
    for _ in range(3):
        limiter.release()
    await asyncio.gather(*waiting)
    limiter.release()
    assert limiter.in_use == 0
