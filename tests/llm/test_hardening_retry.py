"""Waits between retries: Retry-After bounded on both sides and jittered; no overflow."""

from __future__ import annotations

import pytest
from tenacity import RetryCallState

from byzllm.llm import ModelUnavailableError, RetryPolicy, TransientError
from byzllm.llm._retry import _Wait, call_with_retries

POLICY = RetryPolicy(initial_backoff_s=0.5, max_backoff_s=10.0)


def _wait_after(policy: RetryPolicy, attempt: int, exc: BaseException) -> float:
    """The wait ``policy`` chooses after failed attempt number ``attempt`` raised ``exc``."""
    state = RetryCallState(retry_object=None, fn=None, args=(), kwargs={})  # type: ignore[arg-type]
    state.attempt_number = attempt
    state.set_exception((type(exc), exc, None))
    return _Wait(policy)(state)


@pytest.mark.parametrize("retry_after", [0.0, 0.01])
def test_a_short_retry_after_never_makes_back_to_back_retries(retry_after: float) -> None:
    # Retry-After: 0, or an HTTP date already past (parsed as 0): at least half the
    # attempt's backoff ceiling, which doubles per attempt as the usual waits do.
    for attempt, floor in ((1, 0.25), (2, 0.5), (3, 1.0), (6, 5.0), (9, 5.0)):
        waits = [_wait_after(POLICY, attempt, TransientError("429", retry_after=retry_after))]
        assert all(floor <= w <= floor * 1.1 for w in waits)


def test_a_long_retry_after_is_honoured_beyond_max_backoff_with_jitter() -> None:
    waits = {_wait_after(POLICY, 1, TransientError("429", retry_after=30.0)) for _ in range(50)}
    assert all(30.0 <= w <= 33.0 for w in waits)
    assert len(waits) > 1  # jittered: clients told the same wait do not return together


def test_a_retry_after_above_the_maximum_waits_the_maximum() -> None:
    policy = RetryPolicy(max_retry_after_s=60.0)
    for asked in (600.0, float("inf")):
        wait = _wait_after(policy, 1, TransientError("429", retry_after=asked))
        assert 60.0 <= wait <= 66.0


async def test_the_error_says_when_the_server_asked_for_more_than_the_maximum() -> None:
    async def limited() -> str:
        raise TransientError("HTTP 429 from x: slow down", retry_after=120.0, kind="http_429")

    policy = RetryPolicy(max_attempts=1, max_retry_after_s=0.0)
    with pytest.raises(ModelUnavailableError) as caught:
        await call_with_retries(limited, policy, describe="m")
    assert "asked to wait 120s (Retry-After)" in str(caught.value)
    assert "max_retry_after_s=0s" in str(caught.value)


def test_huge_attempt_numbers_do_not_overflow_the_backoff() -> None:
    policy = RetryPolicy(max_attempts=10**9, initial_backoff_s=0.001, max_backoff_s=0.002)
    for attempt in (1025, 5000, 10**6):
        assert 0.0 <= _wait_after(policy, attempt, TransientError("503")) <= 0.002
        retry_after = TransientError("429", retry_after=0.0)
        assert 0.001 <= _wait_after(policy, attempt, retry_after) <= 0.0011
