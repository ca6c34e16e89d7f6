"""The retry policy: what is retried, how long it waits, when it stops."""

from __future__ import annotations

import asyncio
import email.utils
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from byzllm.llm import ModelUnavailableError, RetryPolicy, TransientError
from byzllm.llm._retry import call_with_retries, parse_retry_after


def test_parse_retry_after_forms() -> None:
    assert parse_retry_after({"Retry-After": "2"}) == 2.0
    assert parse_retry_after({"retry-after": "0.5"}) == 0.5
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert parse_retry_after({"Retry-After": "-3"}) == 0.0
    assert parse_retry_after({}) is None
    assert parse_retry_after({"Retry-After": "soon"}) is None
    # NaN is garbage: asyncio.sleep(nan) never returns, and the call hung to its deadline.
    assert parse_retry_after({"Retry-After": "nan"}) is None
    assert parse_retry_after({"retry-after-ms": "NaN", "retry-after": "3"}) == 3.0
    assert parse_retry_after({"Retry-After": "inf"}) == float("inf")  # the cap bounds it
    date = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 <= (parse_retry_after({"Retry-After": date}) or 0) <= 31


def test_a_date_past_the_calendars_end_is_garbage_not_a_crash() -> None:
    # mktime_tz raised ValueError ("year 10000 is out of range") out of the model call.
    assert parse_retry_after({"Retry-After": "Wed, 21 Oct 10000 07:28:00 GMT"}) is None
    assert parse_retry_after({"Retry-After": "Wed, 21 Oct 99999999 07:28:00 GMT"}) is None


_DATES = st.builds(
    "{}, {} {} {} {:02}:{:02}:{:02} {}".format,
    st.sampled_from(["Wed", "Sun", "Xyz"]),
    st.integers(-5, 99),
    st.sampled_from(["Jan", "Oct", "Dec", "Foo"]),
    st.integers(-10, 10**9),
    st.integers(0, 99),
    st.integers(0, 99),
    st.integers(0, 99),
    st.sampled_from(["GMT", "+0000", "-2400", "+9999", "EST", ""]),
)


@given(value=st.one_of(st.text(max_size=40), _DATES))
def test_parse_retry_after_never_raises_and_never_returns_a_negative_wait(value: str) -> None:
    for headers in ({"Retry-After": value}, {"retry-after-ms": value}):
        seconds = parse_retry_after(headers)
        assert seconds is None or seconds >= 0.0  # (NaN fails this too)


async def test_transient_errors_are_retried_until_success() -> None:
    attempts: list[int] = []
    retried: list[str] = []

    async def flaky() -> str:
        attempts.append(1)
        if len(attempts) < 3:
            raise TransientError("HTTP 503", retry_after=0.0)
        return "ok"

    policy = RetryPolicy(max_attempts=5, initial_backoff_s=0.0)
    result = await call_with_retries(
        flaky, policy, describe="m", on_retry=lambda e: retried.append(e.reason)
    )
    assert result == "ok" and len(attempts) == 3 and retried == ["HTTP 503", "HTTP 503"]


async def test_other_errors_propagate_at_once() -> None:
    attempts: list[int] = []

    async def broken() -> str:
        attempts.append(1)
        raise ValueError("bad input")

    with pytest.raises(ValueError, match="bad input"):
        await call_with_retries(broken, RetryPolicy(), describe="m")
    assert len(attempts) == 1


async def test_attempts_are_bounded() -> None:
    attempts: list[int] = []

    async def down() -> str:
        attempts.append(1)
        raise TransientError("timed out")

    policy = RetryPolicy(max_attempts=4, initial_backoff_s=0.0)
    with pytest.raises(ModelUnavailableError, match=r"endpoint X: gave up after 4 .*timed out"):
        await call_with_retries(down, policy, describe="endpoint X")
    assert len(attempts) == 4


async def test_total_time_is_bounded() -> None:
    attempts: list[int] = []

    async def down() -> str:
        attempts.append(1)
        raise TransientError("busy", retry_after=0.2)

    policy = RetryPolicy(max_attempts=100, max_total_s=0.5, max_backoff_s=1.0)
    started = time.monotonic()
    with pytest.raises(ModelUnavailableError):
        await call_with_retries(down, policy, describe="m")
    # Waits of 0.2 s in a 0.5 s budget: attempts at ~0, ~0.2, ~0.4; no wait crossing 0.5 starts.
    assert 2 <= len(attempts) <= 3
    assert time.monotonic() - started < 5.0  # generous: a 100-attempt run would take ~20 s


async def test_retry_after_is_capped_by_max_retry_after() -> None:
    async def slow_hint() -> str:
        raise TransientError("429", retry_after=3600)

    policy = RetryPolicy(max_attempts=2, max_backoff_s=0.01, max_retry_after_s=0.01)
    started = time.monotonic()
    with pytest.raises(ModelUnavailableError, match="asked to wait 3600s"):
        await call_with_retries(slow_hint, policy, describe="m")
    assert time.monotonic() - started < 30.0  # an uncapped hint would wait an hour


async def test_first_attempt_counts_against_the_budget() -> None:
    attempts: list[int] = []

    async def slow_failure() -> str:
        attempts.append(1)
        await asyncio.sleep(0.3)
        raise TransientError("timed out")

    policy = RetryPolicy(max_attempts=10, max_total_s=0.2, initial_backoff_s=0.0)
    with pytest.raises(ModelUnavailableError, match=r"after 1 attempt\(s\)"):
        await call_with_retries(slow_failure, policy, describe="m")
    assert len(attempts) == 1


async def test_single_attempt_policy() -> None:
    attempts: list[int] = []

    async def down() -> str:
        attempts.append(1)
        raise TransientError("HTTP 500")

    with pytest.raises(ModelUnavailableError, match=r"after 1 attempt\(s\).*HTTP 500"):
        await call_with_retries(down, RetryPolicy(max_attempts=1), describe="m")
    assert len(attempts) == 1
