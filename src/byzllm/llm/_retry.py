"""Retries of transient model-call failures, in one place (tenacity).

Transient: HTTP 429, 408, 409 and 5xx, timeouts, dropped connections, malformed or truncated
bodies -- raised by providers as :class:`TransientError`. Everything else (400, 401, 403,
404, 422, bad input) propagates at once, and so does a refusal that says it cannot change
whatever its status (:func:`permanent_refusal`: an unsupported parameter, an unknown model,
a prompt longer than the context; llama.cpp answers these with HTTP 500). Waits grow
exponentially with full jitter (so that many clients that failed together do not retry
together) and honour a server's ``Retry-After``; attempts and total time are both bounded
(:class:`RetryPolicy`). The SDK's own retries are off, so the two never stack.
"""

from __future__ import annotations

import email.utils
import logging
import math
import random
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TypeVar

from pydantic import ConfigDict, Field
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    RetryError,
    retry_if_exception_type,
    stop_after_attempt,
    stop_before_delay,
)

from byzllm._strict import StrictNumbers

from ._errors import ModelUnavailableError

__all__ = [
    "RetryPolicy",
    "TransientError",
    "backoff_ceiling",
    "call_with_retries",
    "parse_retry_after",
    "permanent_refusal",
    "retry_after_wait",
]

_log = logging.getLogger("byzllm.llm")

T = TypeVar("T")

#: What a server says when a request can never succeed as sent, by the kind of refusal.
#: Matched against the server's error message (case-insensitive); kept narrow, so that a
#: passing failure ("model is loading", "out of memory") is still retried.
_REFUSALS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "context",
        re.compile(
            r"context (length|window|size)|maximum context|exceeds? the (max|maximum)"
            r"|(prompt|input) is too long|too many (prompt |input )?tokens",
            re.IGNORECASE,
        ),
    ),
    (
        "model",
        re.compile(
            r"unknown model|no such model|model\W+\S+\W+(does not exist|not found)"
            r"|model (does not exist|not found)",
            re.IGNORECASE,
        ),
    ),
    (
        "unsupported",
        re.compile(
            r"\bnot supported\b|\bunsupported\b|does not support|logits_all"
            r"|unrecognized (request )?(argument|parameter)|unknown (argument|parameter)",
            re.IGNORECASE,
        ),
    ),
)


def permanent_refusal(message: str) -> str | None:
    """The kind of refusal a server's error ``message`` states, if retrying cannot change it:
    ``"context"`` (the prompt does not fit), ``"model"`` (no such model) or
    ``"unsupported"`` (a parameter or feature the server lacks); ``None`` otherwise."""
    for kind, pattern in _REFUSALS:
        if pattern.search(message):
            return kind
    return None


class RetryPolicy(StrictNumbers):
    """How hard to retry transient failures.

    ``max_attempts`` counts the first try; ``max_total_s`` is the deadline of the whole
    call, waits and attempts included (no new attempt starts if its wait would cross it,
    and an attempt still running at the deadline is cut there, by
    :class:`~byzllm.llm.Model`). The wait before attempt n+1 is uniform in
    ``[0, min(max_backoff_s, initial_backoff_s * 2**(n-1))]``; when the server sent a
    ``Retry-After``, it is that wait -- never less than half the ceiling above, never more
    than ``max_retry_after_s`` -- plus up to 10% of jitter. A server asking for more than
    ``max_retry_after_s`` gets that much, and the error if the call fails says so.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_attempts: int = Field(default=12, ge=1)
    max_total_s: float = Field(default=300.0, gt=0)
    initial_backoff_s: float = Field(default=0.5, ge=0)
    max_backoff_s: float = Field(default=10.0, ge=0)
    max_retry_after_s: float = Field(default=60.0, ge=0)


class TransientError(Exception):
    """A failure worth retrying; ``retry_after`` is the server's hint in seconds, if any.

    ``kind`` names the failure for the request counts (:mod:`byzllm.llm._tracking`):
    ``"timeout"``, ``"connection"`` (refused, dropped or cut short), ``"bad_response"``
    (malformed or unusable body) or ``"http_<status>"`` (429, 5xx, ...).
    """

    def __init__(
        self, reason: str, *, retry_after: float | None = None, kind: str = "transient"
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after
        self.kind = kind


def _seconds(text: str | None) -> float | None:
    """``text`` as a number, or None. NaN is not one: ``max(nan, 0.0)`` stays NaN, and
    ``asyncio.sleep(nan)`` never returns (the call then hung until its deadline); infinity
    is, and the backoff's cap bounds it."""
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return None if math.isnan(value) else value


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``retry-after`` (seconds or HTTP date);
    None for a value that is neither (garbage, NaN: the usual backoff applies)."""
    lowered = {k.lower(): v for k, v in headers.items()}
    millis = _seconds(lowered.get("retry-after-ms"))
    if millis is not None:
        return max(millis / 1000.0, 0.0)
    value = lowered.get("retry-after")
    if value is None:
        return None
    seconds = _seconds(value)
    if seconds is not None:
        return max(seconds, 0.0)
    parsed = email.utils.parsedate_tz(value)
    if parsed is None:
        return None
    try:
        when = email.utils.mktime_tz(parsed)
    except (ValueError, OverflowError):
        # A date the calendar cannot hold (year 10000 and later) is no HTTP date: it is
        # garbage like any other, not a crash of the call that received it.
        return None
    return max(when - time.time(), 0.0)


#: The largest exponent of the backoff's doubling: 2.0**1024 overflows a float, and any
#: ceiling past this one is cut to ``max_backoff_s`` anyway.
_MAX_DOUBLINGS = 60
#: A wait the server asked for gets up to this share on top, at random: clients told the
#: same ``Retry-After`` do not all come back in the same instant.
_RETRY_AFTER_JITTER = 0.1


def backoff_ceiling(policy: RetryPolicy, attempt: int) -> float:
    """The longest usual wait after failed attempt number ``attempt`` (1-based)."""
    doublings = min(max(attempt - 1, 0), _MAX_DOUBLINGS)
    return min(policy.max_backoff_s, policy.initial_backoff_s * 2.0**doublings)


def retry_after_wait(policy: RetryPolicy, attempt: int, retry_after: float) -> float:
    """The wait after failed attempt ``attempt`` whose server asked for ``retry_after``
    seconds: at least half the attempt's backoff ceiling (the usual wait's mean, so that
    ``Retry-After: 0`` or a date in the past never makes back-to-back retries), at most
    ``policy.max_retry_after_s``, plus up to 10% of jitter."""
    wait = min(max(retry_after, backoff_ceiling(policy, attempt) / 2), policy.max_retry_after_s)
    return wait * (1.0 + random.uniform(0.0, _RETRY_AFTER_JITTER))


class _Wait:
    """Full-jitter exponential backoff, or the server's ``Retry-After`` when it sent one
    (:func:`retry_after_wait`)."""

    def __init__(self, policy: RetryPolicy) -> None:
        self.policy = policy

    def __call__(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome is not None else None
        if isinstance(exc, TransientError) and exc.retry_after is not None:
            return retry_after_wait(self.policy, state.attempt_number, exc.retry_after)
        return random.uniform(0.0, backoff_ceiling(self.policy, state.attempt_number))


def _cut_short(policy: RetryPolicy, failure: BaseException | None) -> str:
    """What an error adds when the server asked for a longer wait than the policy allows."""
    asked = failure.retry_after if isinstance(failure, TransientError) else None
    if asked is None or asked <= policy.max_retry_after_s:
        return ""
    return (
        f" (the server asked to wait {asked:g}s (Retry-After); waits are capped at "
        f"retry.max_retry_after_s={policy.max_retry_after_s:g}s)"
    )


async def call_with_retries(
    attempt: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    *,
    describe: str,
    on_retry: Callable[[TransientError], None] | None = None,
) -> T:
    """Await ``attempt()`` until it succeeds, retrying :class:`TransientError` under ``policy``.

    ``describe`` names the call in messages (e.g. ``"openai/m at http://host/v1"``); it must
    not contain secrets. Raises :class:`ModelUnavailableError` when the budget runs out.
    """
    started = time.monotonic()
    # The first attempt runs bare: nearly every call succeeds at once, and building the
    # retry machinery for each would cost more CPU than the rest of the happy path.
    try:
        return await attempt()
    except TransientError as exc:
        first_failure = exc
    replayed = False

    async def replay_then_attempt() -> T:
        # Tenacity sees the first failure as its attempt 1, so numbering, waits, stop
        # conditions and logging are exactly as if it had run that attempt itself.
        nonlocal replayed
        if not replayed:
            replayed = True
            raise first_failure
        return await attempt()

    def before_sleep(state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome is not None else None
        if isinstance(exc, TransientError):
            if on_retry is not None:
                on_retry(exc)
            wait = state.next_action.sleep if state.next_action is not None else 0.0
            _log.info(
                "%s: attempt %d failed (%s); retrying in %.2fs",
                describe,
                state.attempt_number,
                exc.reason,
                wait,
            )

    remaining_s = policy.max_total_s - (time.monotonic() - started)
    retrying = AsyncRetrying(
        stop=stop_after_attempt(policy.max_attempts) | stop_before_delay(max(remaining_s, 0.0)),
        wait=_Wait(policy),
        retry=retry_if_exception_type(TransientError),
        before_sleep=before_sleep,
        reraise=False,
    )
    try:
        return await retrying(replay_then_attempt)
    except RetryError as exc:
        last = exc.last_attempt
        reason = "unknown"
        kind = None
        if last.failed:
            failure = last.exception()
            reason = failure.reason if isinstance(failure, TransientError) else repr(failure)
            kind = failure.kind if isinstance(failure, TransientError) else None
            reason += _cut_short(policy, failure)
        elapsed = time.monotonic() - started
        raise ModelUnavailableError(
            f"{describe}: gave up after {last.attempt_number} attempt(s) in {elapsed:.1f}s; "
            f"last error: {reason}",
            last_kind=kind,
        ) from None
