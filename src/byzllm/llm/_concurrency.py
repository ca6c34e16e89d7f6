"""One concurrency limiter per endpoint, shared by every model that talks to it.

asyncio primitives belong to the event loop they are used on, and a process may run several
loops over its life (each ``asyncio.run``, each test). So limits are recorded process-wide
per endpoint, and the semaphore enforcing them is created lazily per (loop, endpoint):
within one loop every model on the endpoint shares it, however many tasks call ``generate``.

When live models on one endpoint ask for different limits, the smallest wins (the limit
protects the server, so the most cautious caller is right). Registrations are weak: a model
that is garbage-collected stops constraining its endpoint.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import weakref
from collections import deque

__all__ = ["EndpointLimiter", "endpoint_limit", "endpoint_limiter", "register_endpoint"]

_lock = threading.Lock()
_registrations: dict[str, weakref.WeakKeyDictionary[object, int]] = {}
_limiters: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, EndpointLimiter]] = (
    weakref.WeakKeyDictionary()
)


class EndpointLimiter:
    """An ``async with`` slot counter for one endpoint on one loop.

    Slots go to waiters first come, first served -- except that a *retry*
    (``acquire(retry=True)``) is served before every first attempt: it has already
    waited its turn once, and sending it to the back of a long queue would make each
    transient failure cost a whole second wait in line.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        #: Requests holding or waiting for a slot (so 0 means nobody depends on this one).
        self.in_use = 0
        self._held = 0
        self._first: deque[asyncio.Future[None]] = deque()
        self._retries: deque[asyncio.Future[None]] = deque()

    async def acquire(self, *, retry: bool = False) -> None:
        """Wait for a slot (retries ahead of first attempts)."""
        self.in_use += 1
        if self._held < self.limit and not self._first and not self._retries:
            self._held += 1
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        queue = self._retries if retry else self._first
        queue.append(waiter)
        try:
            await waiter
        except BaseException:
            self.in_use -= 1
            if waiter.done() and not waiter.cancelled():
                self._pass_on()  # handed a slot while being cancelled: give it on
            else:
                with contextlib.suppress(ValueError):
                    queue.remove(waiter)
            raise

    def release(self) -> None:
        """Give a slot back (to the next waiter, if any)."""
        self.in_use -= 1
        self._pass_on()

    def set_limit(self, limit: int) -> None:
        """Change the limit while requests hold slots: a lower one admits nobody until the
        slots in use fall below it; a higher one admits waiters at once."""
        self.limit = limit
        while self._held < self.limit and (self._first or self._retries):
            self._held += 1
            self._pass_on()

    def _pass_on(self) -> None:
        if self._held > self.limit:  # the limit was lowered: this slot is gone
            self._held -= 1
            return
        for queue in (self._retries, self._first):
            while queue:
                waiter = queue.popleft()
                if not waiter.done():
                    waiter.set_result(None)  # the slot changes hands; _held stays
                    return
        self._held -= 1

    async def __aenter__(self) -> None:
        await self.acquire()

    async def __aexit__(self, *exc: object) -> None:
        self.release()


def register_endpoint(owner: object, endpoint: str, max_concurrency: int) -> None:
    """Record ``owner``'s (a model's) limit for ``endpoint`` for as long as it lives."""
    with _lock:
        _registrations.setdefault(endpoint, weakref.WeakKeyDictionary())[owner] = max_concurrency


def endpoint_limit(endpoint: str) -> int | None:
    """The limit in force for ``endpoint``: the smallest among its live models."""
    with _lock:
        return _limit_locked(endpoint)


def _limit_locked(endpoint: str) -> int | None:
    owners = _registrations.get(endpoint)
    values = list(owners.values()) if owners is not None else []
    return min(values) if values else None


def endpoint_limiter(endpoint: str, default: int) -> EndpointLimiter:
    """The running loop's limiter for ``endpoint`` (created on first use).

    A limiter whose limit no longer matches the registrations takes the new one at once
    (:meth:`EndpointLimiter.set_limit`): a model with a smaller limit created while the
    endpoint is busy bounds it from then on (it was applied only once the endpoint was idle,
    never under a steady load).
    """
    loop = asyncio.get_running_loop()
    with _lock:
        limit = _limit_locked(endpoint) or default
        per_loop = _limiters.get(loop)
        if per_loop is None:
            per_loop = _limiters[loop] = {}
        limiter = per_loop.get(endpoint)
        if limiter is None:
            limiter = per_loop[endpoint] = EndpointLimiter(limit)
        elif limiter.limit != limit:
            limiter.set_limit(limit)
        return limiter
