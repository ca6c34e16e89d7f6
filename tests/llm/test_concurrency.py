"""The per-endpoint limiter: a limit changed while requests hold slots; a limit split among
the processes of one run (seats)."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given
from hypothesis import strategies as st

from byzllm.llm import limit_share, limits_shared
from byzllm.llm._concurrency import (
    EndpointLimiter,
    endpoint_limit,
    endpoint_limiter,
    register_endpoint,
)


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


@given(limit=st.integers(1, 500), seats=st.integers(1, 500))
def test_the_shares_of_a_limit_add_up_to_it(limit: int, seats: int) -> None:
    shares = [limit_share(limit, seat, seats) for seat in range(seats)]
    assert min(shares) >= 1  # a seat with no share could send nothing
    if seats <= limit:
        assert sum(shares) == limit
        assert max(shares) - min(shares) <= 1
    else:
        assert shares == [1] * seats


def test_shares_by_hand() -> None:
    assert [limit_share(8, seat, 3) for seat in range(3)] == [3, 3, 2]
    assert [limit_share(3, seat, 2) for seat in range(2)] == [2, 1]
    assert limit_share(5, 0, 1) == 5
    with pytest.raises(ValueError, match="seat 2 of 2"):
        limit_share(4, 2, 2)


class _Owner:
    """Stands for a model holding a registration (registrations are weak)."""


async def test_a_seat_holds_its_share_of_every_endpoint_limit() -> None:
    """A worker process of a run whose units run in several processes at once: inside the
    seat its limiters hold the seat's share (an existing limiter is lowered in place), and the
    whole limit again after."""
    owner, endpoint = _Owner(), "http://seats.test/v1"
    register_endpoint(owner, endpoint, 8)
    limiter = endpoint_limiter(endpoint, 8)
    assert limiter.limit == 8
    with limits_shared(2, 3):
        assert endpoint_limit(endpoint) == 2
        assert endpoint_limiter(endpoint, 8).limit == 2
        assert endpoint_limiter("http://unregistered.test/v1", 8).limit == 2  # the default
    with limits_shared(0, 3):
        assert endpoint_limiter(endpoint, 8).limit == 3
    assert endpoint_limiter(endpoint, 8) is limiter and limiter.limit == 8
    assert endpoint_limit(endpoint) == 8
    with pytest.raises(ValueError), limits_shared(3, 3):
        pass
