"""What one model on one endpoint has learned about it: whether it answers at all, and how
fast it usually answers.

Two policies of :class:`~byzllm.llm.Model` live here, per (event loop, provider, endpoint,
model, API key):

* **The first request goes alone.** Until one request has succeeded, at most one request
  is sent at a time; the others wait for its outcome. A fatal answer (HTTP 401: the key is
  rejected; 404: no such model) is remembered, and every request waiting or made later
  fails at once with the same error, *without being sent*: a sweep with a bad key sends
  exactly one request, however many units start together. A transient failure lets the
  next request try; the first success opens the endpoint to full concurrency, and so does a
  timeout. A request waits at most :data:`PROBE_WAIT_S` for the one before it, then goes on
  its own: a first request the server never answers must not hold up the rest (a rejected
  key is answered within that time).
* **Adaptive timeout.** ``timeout_s`` is the hard cap of one attempt. Once the endpoint has
  answered :data:`ADAPTIVE_MIN_SAMPLES` requests, an attempt also gives up after
  :data:`ADAPTIVE_FACTOR` times the slowest of those answers -- from
  :data:`_QUANTILE_FROM` answers on, the 95th percentile of the latest 256 -- and never
  before :data:`ADAPTIVE_FLOOR_S`; so a request the server silently dropped costs seconds,
  not the cap. Each timeout of the same call doubles its next attempt's bound (up to the
  cap), so a reply that is genuinely slow still comes back. Attempts in flight follow the
  bound as it is learned (:meth:`EndpointGuard.watch`): a request sent before the endpoint
  had answered enough others is cut once they show it is overdue.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import weakref
from collections import deque
from dataclasses import dataclass

from ._errors import ModelRequestError

__all__ = [
    "ADAPTIVE_FACTOR",
    "ADAPTIVE_FLOOR_S",
    "ADAPTIVE_MIN_SAMPLES",
    "PROBE_WAIT_S",
    "EndpointGuard",
    "endpoint_guard",
]

#: The longest a request waits for the endpoint's first request before going on its own.
PROBE_WAIT_S = 2.0

#: Answers an endpoint must have given before its timeout adapts.
ADAPTIVE_MIN_SAMPLES = 5
#: The adaptive bound is this many times the slowest answer (the 95th percentile) ...
ADAPTIVE_FACTOR = 8.0
#: ... and never less than this many seconds.
ADAPTIVE_FLOOR_S = 2.0
_WINDOW = 256
_QUANTILE = 0.95
#: With fewer answers than this the slowest one stands for the tail.
_QUANTILE_FROM = 20
_REFRESH_EVERY = 16


@dataclass(eq=False, slots=True)
class _Watch:
    """An attempt in flight whose deadline follows the adaptive bound."""

    deadline: asyncio.Timeout
    started: float  # loop time
    cap_s: float
    timeouts: int


class EndpointGuard:
    """The first-request gate and the latency window of one endpoint (see the module)."""

    __slots__ = ("_bound", "_fresh", "_latencies", "_watched", "fatal", "open", "probe")

    def __init__(self) -> None:
        #: Set once a request has succeeded: requests no longer wait for each other.
        self.open = False
        #: The fatal error the endpoint answered with, if any.
        self.fatal: ModelRequestError | None = None
        #: Held by the one request allowed out while the endpoint is not open.
        self.probe = asyncio.Lock()
        self._latencies: deque[float] = deque(maxlen=_WINDOW)
        self._bound: float | None = None
        self._fresh = 0
        self._watched: set[_Watch] = set()

    def record(self, latency_s: float) -> None:
        """A successful attempt took ``latency_s`` seconds."""
        self._latencies.append(latency_s)
        self._fresh += 1
        if len(self._latencies) <= 2 * _QUANTILE_FROM or self._fresh >= _REFRESH_EVERY:
            self._refresh()

    def _refresh(self) -> None:
        self._fresh = 0
        before = self._bound
        if len(self._latencies) < ADAPTIVE_MIN_SAMPLES:
            self._bound = None
        else:
            ordered = sorted(self._latencies)
            n = len(ordered)
            tail = ordered[-1] if n < _QUANTILE_FROM else ordered[math.ceil(_QUANTILE * n) - 1]
            self._bound = max(ADAPTIVE_FLOOR_S, ADAPTIVE_FACTOR * tail)
        if self._bound != before:
            for watch in list(self._watched):
                self._schedule(watch)

    def watch(self, deadline: asyncio.Timeout, cap_s: float, timeouts_so_far: int) -> _Watch:
        """Keep ``deadline`` (entered, for an attempt starting now) at the attempt's adaptive
        bound -- now and whenever the bound changes -- until :meth:`unwatch`."""
        watch = _Watch(deadline, asyncio.get_running_loop().time(), cap_s, timeouts_so_far)
        self._watched.add(watch)
        self._schedule(watch)
        return watch

    def unwatch(self, watch: _Watch) -> None:
        """The attempt is over."""
        self._watched.discard(watch)

    def _schedule(self, watch: _Watch) -> None:
        if watch.deadline.expired():
            return
        bound = self.attempt_timeout(watch.cap_s, watch.timeouts)
        with contextlib.suppress(RuntimeError):  # already left or expiring
            watch.deadline.reschedule(None if bound is None else watch.started + bound)

    @property
    def adaptive_bound_s(self) -> float | None:
        """The current adaptive bound of a first attempt (``None`` until enough answers)."""
        return self._bound

    def attempt_timeout(self, cap_s: float, timeouts_so_far: int) -> float | None:
        """The bound of the next attempt, or ``None`` when only the cap applies."""
        if self._bound is None:
            return None
        bound = self._bound * 2.0**timeouts_so_far
        return bound if bound < cap_s else None

    def replay_fatal(self) -> ModelRequestError:
        """A fresh copy of the fatal error (raised by each request that was not sent)."""
        err = self.fatal
        assert err is not None
        return type(err)(str(err), status=err.status, endpoint=err.endpoint)


_GUARDS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, EndpointGuard]] = (
    weakref.WeakKeyDictionary()
)


def endpoint_guard(key: str) -> EndpointGuard:
    """The running loop's guard for ``key`` (created on first use)."""
    loop = asyncio.get_running_loop()
    per_loop = _GUARDS.get(loop)
    if per_loop is None:
        per_loop = _GUARDS[loop] = {}
    guard = per_loop.get(key)
    if guard is None:
        guard = per_loop[key] = EndpointGuard()
    return guard
