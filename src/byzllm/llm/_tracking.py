"""Request counts per unit of work and per run: requests, retries, timeouts, errors by kind.

A model's :attr:`~byzllm.llm.Model.usage` totals everything that model did; an experiment
wants the counts of *one unit* (a question, a game) and of *one run*, whichever shared
models served them. :func:`track_requests` opens such a tally for the code running inside
it -- tasks it spawns included, since they inherit the context -- and every
:class:`~byzllm.llm.Model` reports each attempt to every tally open where ``generate`` was
called::

    with track_requests() as counts:
        await play_one_game(...)          # any number of models, any concurrency
    record.requests = counts.to_dict()    # {"requests": 14, "retries": 2, "errors": {...}}

Tallies nest (a run's tally sees everything its units' tallies see). Counting is
thread-safe, and it costs nothing when no tally is open.
"""

from __future__ import annotations

import contextvars
import itertools
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from ._errors import LogprobsUnavailableError, ModelRequestError, ModelResponseError
from ._retry import TransientError

__all__ = ["RequestCounts", "error_kind", "track_requests"]

_ACTIVE: contextvars.ContextVar[tuple[RequestCounts, ...]] = contextvars.ContextVar(
    "byzllm_request_counts", default=()
)
_tokens = itertools.count(1)


def error_kind(exc: BaseException) -> str:
    """The short name a failure is counted under (``"timeout"``, ``"http_503"`` ...)."""
    if isinstance(exc, TransientError):
        return exc.kind
    if isinstance(exc, ModelRequestError) and exc.status is not None:
        return f"http_{exc.status}"
    if isinstance(exc, LogprobsUnavailableError):
        return "no_logprobs"
    if isinstance(exc, ModelResponseError):
        return "bad_response"
    return type(exc).__name__


class RequestCounts:
    """One tally (see the module docstring).

    * ``requests`` -- attempts sent to a server (retries included; cache hits are not);
    * ``cached`` -- calls answered by the response cache or an identical call in flight;
    * ``retries`` -- attempts made again after a transient failure;
    * ``failures`` -- calls that ended in an error (after their retries);
    * ``errors`` -- failed attempts by kind: ``timeout``, ``connection``, ``bad_response``,
      ``http_429``, ``http_503``, ``http_401`` ...; ``timeouts`` is ``errors["timeout"]``;
    * live: ``in_flight`` (attempts sent and not yet answered), ``last_error`` (the kind of
      the latest failed attempt) and :meth:`oldest_in_flight_s`.
    """

    __slots__ = (
        "_lock",
        "_started",
        "cached",
        "errors",
        "failures",
        "last_error",
        "requests",
        "retries",
    )

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._started: dict[int, float] = {}
        self.requests = 0
        self.cached = 0
        self.retries = 0
        self.failures = 0
        self.errors: dict[str, int] = {}
        self.last_error: str | None = None

    @property
    def timeouts(self) -> int:
        """Attempts that got no answer in time."""
        return self.errors.get("timeout", 0)

    @property
    def in_flight(self) -> int:
        """Attempts sent and not yet answered."""
        return len(self._started)

    def oldest_in_flight_s(self, now: float | None = None) -> float | None:
        """Seconds the oldest attempt still in flight has waited (``None``: none in flight)."""
        with self._lock:
            if not self._started:
                return None
            first = min(self._started.values())
        return (time.monotonic() if now is None else now) - first

    def to_dict(self) -> dict[str, Any]:
        """What a unit stores: requests, cached, retries, timeouts, failures, errors."""
        with self._lock:
            return {
                "requests": self.requests,
                "cached": self.cached,
                "retries": self.retries,
                "timeouts": self.errors.get("timeout", 0),
                "failures": self.failures,
                "errors": dict(sorted(self.errors.items())),
            }

    def merge(self, counts: Mapping[str, Any]) -> None:
        """Add a stored :meth:`to_dict` (e.g. to total a run's units)."""
        with self._lock:
            self.requests += int(counts.get("requests", 0) or 0)
            self.cached += int(counts.get("cached", 0) or 0)
            self.retries += int(counts.get("retries", 0) or 0)
            self.failures += int(counts.get("failures", 0) or 0)
            errors = counts.get("errors")
            if isinstance(errors, Mapping):
                for kind, n in errors.items():
                    self.errors[str(kind)] = self.errors.get(str(kind), 0) + int(n)

    def __repr__(self) -> str:
        return f"RequestCounts({self.to_dict()}, in_flight={self.in_flight})"


@contextmanager
def track_requests() -> Iterator[RequestCounts]:
    """Count the model requests made inside the block (see the module docstring)."""
    counts = RequestCounts()
    token = _ACTIVE.set((*_ACTIVE.get(), counts))
    try:
        yield counts
    finally:
        _ACTIVE.reset(token)


# --- what Model reports (no-ops without an open tally) -------------------------------------


def note_sent() -> tuple[tuple[RequestCounts, ...], int]:
    """An attempt leaves for the server; pass the result to :func:`note_answered`."""
    active = _ACTIVE.get()
    token = next(_tokens)
    if active:
        now = time.monotonic()
        for counts in active:
            with counts._lock:
                counts.requests += 1
                counts._started[token] = now
    return active, token


def note_answered(sent: tuple[tuple[RequestCounts, ...], int]) -> None:
    """The attempt :func:`note_sent` announced is over (answered, failed or cancelled)."""
    active, token = sent
    for counts in active:
        with counts._lock:
            counts._started.pop(token, None)


def note_error(kind: str) -> None:
    """An attempt failed with ``kind``."""
    for counts in _ACTIVE.get():
        with counts._lock:
            counts.errors[kind] = counts.errors.get(kind, 0) + 1
            counts.last_error = kind


def note_retry() -> None:
    """A failed attempt is about to be made again."""
    for counts in _ACTIVE.get():
        with counts._lock:
            counts.retries += 1


def note_failure() -> None:
    """A call ended in an error."""
    for counts in _ACTIVE.get():
        with counts._lock:
            counts.failures += 1


def note_cached() -> None:
    """A call was answered without a server request."""
    for counts in _ACTIVE.get():
        with counts._lock:
            counts.cached += 1
