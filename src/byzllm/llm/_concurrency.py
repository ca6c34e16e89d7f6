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
import threading
import weakref
from types import TracebackType

__all__ = ["EndpointLimiter", "endpoint_limit", "endpoint_limiter", "register_endpoint"]

_lock = threading.Lock()
_registrations: dict[str, weakref.WeakKeyDictionary[object, int]] = {}
_limiters: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, EndpointLimiter]] = (
    weakref.WeakKeyDictionary()
)


class EndpointLimiter:
    """An ``async with`` slot counter for one endpoint on one loop."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        #: Requests holding or waiting for a slot (so 0 means nobody depends on this one).
        self.in_use = 0
        self._semaphore = asyncio.Semaphore(limit)

    async def __aenter__(self) -> None:
        self.in_use += 1
        try:
            await self._semaphore.acquire()
        except BaseException:
            self.in_use -= 1
            raise

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.in_use -= 1
        self._semaphore.release()


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

    A limiter whose limit no longer matches the registrations is replaced only while idle,
    so the bound holds for every request already admitted.
    """
    loop = asyncio.get_running_loop()
    with _lock:
        limit = _limit_locked(endpoint) or default
        per_loop = _limiters.get(loop)
        if per_loop is None:
            per_loop = _limiters[loop] = {}
        limiter = per_loop.get(endpoint)
        if limiter is None or (limiter.limit != limit and limiter.in_use == 0):
            limiter = per_loop[endpoint] = EndpointLimiter(limit)
        return limiter
