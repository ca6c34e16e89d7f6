"""One concurrency limiter per endpoint, shared by every model that talks to it.

asyncio primitives belong to the event loop they are used on, and a process may run several
loops over its life (each ``asyncio.run``, each test). So limits are recorded process-wide
per endpoint, and the semaphore enforcing them is created lazily per (loop, endpoint):
within one loop every model on the endpoint shares it, however many tasks call ``generate``.

When live models on one endpoint ask for different limits, the smallest wins (the limit
protects the server, so the most cautious caller is right). Registrations are weak: a model
that is garbage-collected stops constraining its endpoint.

A limit holds within one process. Where a run's units run in several worker processes at once,
each unit is given a *seat* (:func:`limits_shared`), and its process then holds only that
seat's share of every endpoint's limit (:func:`limit_share`): the shares of all seats add up
to the limit, so the endpoint never sees more requests at once than its configured limit.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import weakref
from collections import deque
from collections.abc import Iterator

__all__ = [
    "EndpointLimiter",
    "endpoint_limit",
    "endpoint_limiter",
    "limit_share",
    "limits_shared",
    "register_endpoint",
]

_lock = threading.Lock()
_registrations: dict[str, weakref.WeakKeyDictionary[object, int]] = {}
_limiters: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, EndpointLimiter]] = (
    weakref.WeakKeyDictionary()
)
#: This process's seat among the processes that split every endpoint's limit, as ``(seat,
#: seats)`` (:func:`limits_shared`); ``None``: the whole limit is this process's.
_seat: tuple[int, int] | None = None


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
    """The limit in force for ``endpoint``: the smallest among its live models (this seat's
    share of it, inside :func:`limits_shared`)."""
    with _lock:
        return _limit_locked(endpoint)


def _limit_locked(endpoint: str) -> int | None:
    owners = _registrations.get(endpoint)
    values = list(owners.values()) if owners is not None else []
    return _shared(min(values)) if values else None


def _shared(limit: int) -> int:
    """``limit`` as this process holds it: all of it, or its seat's share."""
    return limit if _seat is None else limit_share(limit, *_seat)


def limit_share(limit: int, seat: int, seats: int) -> int:
    """Seat ``seat``'s part (counting from 0) of an endpoint's ``limit`` split among ``seats``:
    ``limit // seats``, one more for each of the first ``limit % seats`` seats, and at least 1
    (a seat with no share could send nothing). The shares of all seats add up to ``limit``
    whenever ``seats <= limit``; beyond that every seat still gets 1, which is why the run
    engine gives model-calling units no more seats than the smallest limit."""
    if seats < 1 or not 0 <= seat < seats:
        raise ValueError(f"seat {seat} of {seats}: a seat counts from 0 up to seats - 1")
    share = limit // seats + (1 if seat < limit % seats else 0)
    return max(1, share)


@contextlib.contextmanager
def limits_shared(seat: int, seats: int) -> Iterator[None]:
    """Within the block, this process holds seat ``seat``'s share of every endpoint's limit
    (:func:`limit_share`), on each of its event loops.

    For a worker process that runs one unit at a time, of a run whose units run in ``seats``
    processes at once: each process, building its own models and limiters, would otherwise
    allow the whole limit, and the endpoint would see it multiplied by the processes.
    Process-wide (not per task or thread), since the process serves one seat at a time.
    """
    global _seat
    limit_share(1, seat, seats)  # a seat that does not exist raises here
    with _lock:
        before, _seat = _seat, (seat, seats)
    try:
        yield
    finally:
        with _lock:
            _seat = before


def endpoint_limiter(endpoint: str, default: int) -> EndpointLimiter:
    """The running loop's limiter for ``endpoint`` (created on first use).

    A limiter whose limit no longer matches the registrations takes the new one at once
    (:meth:`EndpointLimiter.set_limit`): a model with a smaller limit created while the
    endpoint is busy bounds it from then on (it was applied only once the endpoint was idle,
    never under a steady load).
    """
    loop = asyncio.get_running_loop()
    with _lock:
        limit = _limit_locked(endpoint) or _shared(default)
        per_loop = _limiters.get(loop)
        if per_loop is None:
            per_loop = _limiters[loop] = {}
        limiter = per_loop.get(endpoint)
        if limiter is None:
            limiter = per_loop[endpoint] = EndpointLimiter(limit)
        elif limiter.limit != limit:
            limiter.set_limit(limit)
        return limiter
