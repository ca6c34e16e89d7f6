"""The one abstract interface every model implements, and the model that wraps backends.

:class:`ChatModel` is what agents, protocols and environments depend on. :class:`Model` is
the implementation :func:`get_model` returns: it puts everything cross-cutting around a
provider backend (:class:`~byzllm.llm._provider.ModelAPI`) in one place -- input checks,
the response cache with single-flight, the per-endpoint concurrency limit, the first-request
gate and adaptive timeout (:mod:`byzllm.llm._guard`), retries, log-probability checks, usage
accounting and the request counts of :func:`~byzllm.llm.track_requests`.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
import weakref
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, Self

from byzllm.errors import InputError

from . import _tracking
from ._cache import CacheMode, ResponseCache, cache_key
from ._concurrency import endpoint_limiter, register_endpoint
from ._errors import (
    LogprobsUnavailableError,
    ModelError,
    ModelRequestError,
    ModelUnavailableError,
)
from ._guard import PROBE_WAIT_S, endpoint_guard
from ._provider import ModelAPI
from ._retry import RetryPolicy, TransientError, call_with_retries
from ._types import ChatMessage, Completion, GenerateConfig
from ._usage import ModelUsage

__all__ = ["ChatModel", "Model"]

_log = logging.getLogger("byzllm.llm")


class ChatModel(ABC):
    """An async chat model: ``await model.generate(messages, config) -> Completion``.

    Agents, protocols and environments depend only on this interface, so a simulated
    population, a hosted API and a local server are interchangeable behind it.
    """

    #: ``provider/model`` name, e.g. ``"openai/gpt-4o-mini"``.
    name: str

    @abstractmethod
    async def generate(
        self, messages: Sequence[ChatMessage], config: GenerateConfig | None = None
    ) -> Completion:
        """Return one completion for ``messages`` under ``config``."""


class _LeaderCancelled(Exception):
    """The request that others were waiting on was cancelled: they must try themselves."""


# Identical requests in flight at once, per event loop: cache key -> the leader's result.
_flights: weakref.WeakKeyDictionary[
    asyncio.AbstractEventLoop, dict[str, asyncio.Future[Completion]]
] = weakref.WeakKeyDictionary()


def _loop_flights() -> dict[str, asyncio.Future[Completion]]:
    loop = asyncio.get_running_loop()
    flights = _flights.get(loop)
    if flights is None:
        flights = _flights[loop] = {}
    return flights


class Model(ChatModel):
    """A chat model backed by a provider, with caching, limits, retries and accounting.

    Build it with :func:`byzllm.llm.get_model`. ``generate`` is safe to call from any number
    of concurrent tasks; at most the endpoint's ``max_concurrency`` requests are in flight.
    """

    def __init__(
        self,
        api: ModelAPI,
        *,
        max_concurrency: int = 16,
        cache: ResponseCache | None = None,
        cache_mode: CacheMode = "on",
        cache_salt: str = "",
        cache_endpoint: str | None = None,
        max_top_logprobs: int = 20,
        require_logprobs: bool = True,
        retry: RetryPolicy | None = None,
        input_price_per_mtok: float | None = None,
        output_price_per_mtok: float | None = None,
        adaptive_timeout: bool = True,
    ) -> None:
        if max_concurrency < 1:
            raise InputError(f"max_concurrency must be >= 1, got {max_concurrency}")
        if max_top_logprobs < 0:
            raise InputError(f"max_top_logprobs must be >= 0, got {max_top_logprobs}")
        self.api = api
        self.name = f"{api.provider}/{api.model}"
        self.max_concurrency = max_concurrency
        self.cache = cache if cache_mode != "off" else None
        self.cache_mode: CacheMode = cache_mode
        self.cache_salt = cache_salt
        self.cache_endpoint = cache_endpoint
        self.max_top_logprobs = max_top_logprobs
        self.require_logprobs = require_logprobs
        self.retry = retry or RetryPolicy()
        self.input_price_per_mtok = input_price_per_mtok
        self.output_price_per_mtok = output_price_per_mtok
        self.usage = ModelUsage()
        # Cancelling an attempt must free the request (an HTTP connection is closed; a
        # local model computing in a thread would go on, so it keeps only the cap).
        self.adaptive_timeout = adaptive_timeout and api.cancellable
        self._warned_no_logprobs = False
        # What the server said it serves (ModelAPI.served_identity), once it has answered;
        # the question in flight per event loop until then.
        self._served: str | None = None
        self._served_known = False
        self._served_asks: dict[asyncio.AbstractEventLoop, asyncio.Future[str | None]] = {}
        self._warned_unidentified = False
        # Who the first-request gate and the latency window belong to; the key enters
        # only as a digest (a rejected key must not block a corrected one).
        secrets = "\0".join(api.secrets()).encode("utf-8", "surrogatepass")
        self._guard_key = "\0".join(
            (api.provider, api.endpoint, api.model, hashlib.sha256(secrets).hexdigest()[:16])
        )
        register_endpoint(self, api.endpoint, max_concurrency)

    @property
    def endpoint(self) -> str:
        """Where requests go (the unit of concurrency limiting)."""
        return self.api.endpoint

    def __repr__(self) -> str:
        cache = f", cache={str(self.cache.path)!r}" if self.cache is not None else ""
        return (
            f"Model({self.name!r}, endpoint={self.endpoint!r}, "
            f"max_concurrency={self.max_concurrency}{cache}, cache_mode={self.cache_mode!r})"
        )

    # ---------------------------------------------------------------- generate

    async def generate(
        self, messages: Sequence[ChatMessage], config: GenerateConfig | None = None
    ) -> Completion:
        """One completion for ``messages`` (see :class:`ChatModel`).

        Raises :class:`InputError` for bad messages or ``top_logprobs`` above the cap, and a
        :class:`~byzllm.llm.ModelError` when the call fails (after retries for transient
        failures) or log-probabilities were required but not returned.
        """
        config = config or GenerateConfig()
        messages = _check_messages(messages)
        self._check_config(config)
        if self.cache is None:
            return await self._fresh(messages, config)
        identity, storable = await self._cache_identity()
        key = cache_key(
            provider=self.api.provider,
            base_url=identity,
            model=self.api.model,
            messages=messages,
            config=config,
            salt=self.cache_salt,
        )
        if self.cache_mode in ("on", "read-only"):
            hit = await self.cache.aget(key)
            if hit is not None:
                self.usage.add_cached()
                _tracking.note_cached()
                hit.cached, hit.latency_s = True, 0.0  # freshly decoded: ours to set
                # A lax model may have cached it: a strict one still needs its log-probabilities.
                return self._checked(hit, config)
        return await self._single_flight(key, messages, config, store=storable)

    async def _cache_identity(self) -> tuple[str, bool]:
        """What the cache keys this model's requests by in place of the base URL, and whether
        a fresh reply may be stored under it.

        ``cache_endpoint`` when set; else what the server says it serves (byzllm's own server
        names its GGUF file's SHA-256: two files served under one name at one address are two
        models), asked once, before the first lookup; else the backend's
        :attr:`~byzllm.llm._provider.ModelAPI.cache_identity` (the base URL). When the server
        cannot be asked (it is down) the base URL is looked up -- a server that names no
        model could always be replayed from the cache with the server stopped -- with a
        warning, and nothing is stored under it: the reply may come from a server that
        names its model once it is up. The next call asks again.
        """
        if self.cache_endpoint:
            return self.cache_endpoint, True
        if not self._served_known:
            try:
                self._served = await self._ask_served()
            except TransientError as exc:
                if not self._warned_unidentified:
                    self._warned_unidentified = True
                    _log.warning(
                        "%s: could not ask %s which model it serves (%s); the response cache "
                        "serves only replies stored for a server that names none, and "
                        "stores no reply until it is asked",
                        self.name,
                        self.endpoint,
                        exc,
                    )
                return self.api.cache_identity, False
            self._served_known = True
        return self._served or self.api.cache_identity, True

    async def _ask_served(self) -> str | None:
        """:meth:`ModelAPI.served_identity`, one question at a time per event loop: the calls
        that arrive meanwhile share its answer (or its failure)."""
        loop = asyncio.get_running_loop()
        ask = self._served_asks.get(loop)
        if ask is None:
            ask = self._served_asks[loop] = asyncio.ensure_future(self.api.served_identity())

            def done(future: asyncio.Future[str | None]) -> None:
                self._served_asks.pop(loop, None)
                _retrieve(future)  # also when every caller was cancelled meanwhile

            ask.add_done_callback(done)
        return await asyncio.shield(ask)

    async def _single_flight(
        self,
        key: str,
        messages: list[ChatMessage],
        config: GenerateConfig,
        *,
        store: bool = True,
    ) -> Completion:
        flights = _loop_flights()
        while True:
            leader = flights.get(key)
            if leader is None:
                break
            try:
                result = await asyncio.shield(leader)
            except _LeaderCancelled:
                continue  # the leader gave up; one of the waiters takes over
            except ModelError:
                # This call failed too: each caller counts its own failed call (its
                # attempts and their errors were counted once, by the leader).
                self.usage.add_failure()
                _tracking.note_failure()
                raise
            self.usage.add_cached()
            _tracking.note_cached()
            return self._checked(result.model_copy(update={"cached": True}), config)
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Completion] = loop.create_future()
        flights[key] = future
        deadline = loop.time() + self.retry.max_total_s
        try:
            completion = await self._fresh(messages, config)
            if store and self.cache is not None and self.cache_mode in ("on", "refresh"):
                await self._store(self.cache, key, completion, deadline)
        except asyncio.CancelledError:
            future.set_exception(_LeaderCancelled())
            raise
        except BaseException as exc:
            future.set_exception(exc)
            raise
        else:
            future.set_result(completion)
            return completion
        finally:
            flights.pop(key, None)
            if future.done() and not future.cancelled():
                future.exception()  # mark retrieved: no "never retrieved" warning

    async def _store(
        self, cache: ResponseCache, key: str, completion: Completion, deadline: float
    ) -> None:
        """Write ``completion`` to the cache, waiting for the write at most until the call's
        ``deadline`` (loop time). Another process holding the file's write lock makes SQLite
        wait up to 60 s: that delays the write, not the answer past ``retry.max_total_s``
        (a call with a 5 s deadline returned after 60 s). A write still waiting then finishes
        on its own in the cache's thread; its failure is logged by :meth:`ResponseCache.put`
        (a damaged file: by the next read or write that meets it)."""
        write = asyncio.ensure_future(cache.aput(key, completion))
        write.add_done_callback(_retrieve)  # also when this call is cancelled meanwhile
        remaining = deadline - asyncio.get_running_loop().time()
        done, _ = await asyncio.wait((write,), timeout=max(remaining, 0.0))
        if write in done:
            write.result()  # a damaged cache file raises here, fatal as before

    async def _fresh(self, messages: list[ChatMessage], config: GenerateConfig) -> Completion:
        """Ask the server (within the endpoint's limit, retrying transient failures)."""
        limiter = endpoint_limiter(self.endpoint, self.max_concurrency)
        guard = endpoint_guard(self._guard_key)
        cap_s = self.api.settings.timeout_s
        timeouts = 0  # of this call: each doubles the next attempt's adaptive bound
        attempts = 0

        async def send() -> Completion:
            nonlocal timeouts, attempts
            attempts += 1
            # A retry has waited in line once already: it goes ahead of first attempts.
            await limiter.acquire(retry=attempts > 1)
            try:
                self.usage.add_request()
                sent = _tracking.note_sent()
                started = time.perf_counter()
                try:
                    if not self.adaptive_timeout:
                        completion = await self.api.complete(messages, config)
                    else:
                        # The SDK enforces the cap; this deadline follows the endpoint's
                        # adaptive bound, also while the attempt is in flight (_guard).
                        deadline = asyncio.timeout(None)
                        try:
                            async with deadline:
                                watch = guard.watch(deadline, cap_s, timeouts)
                                try:
                                    completion = await self.api.complete(messages, config)
                                finally:
                                    guard.unwatch(watch)
                        except TimeoutError:
                            if not deadline.expired():
                                raise
                            waited = time.perf_counter() - started
                            raise TransientError(
                                f"no answer within {waited:.3g}s (adaptive timeout: "
                                f"{guard.adaptive_bound_s or 0:.3g}s, doubled per timeout of "
                                f"the call, capped at timeout_s={cap_s:g})",
                                kind="timeout",
                            ) from None
                except TransientError as exc:
                    if exc.kind == "timeout":
                        timeouts += 1
                    self._note_error(_tracking.error_kind(exc))
                    raise
                except ModelError as exc:
                    self._note_error(_tracking.error_kind(exc))
                    if exc.fatal and isinstance(exc, ModelRequestError) and guard.fatal is None:
                        guard.fatal = exc
                    raise
                finally:
                    _tracking.note_answered(sent)
                elapsed = time.perf_counter() - started
                guard.record(elapsed)
                guard.open = True
                if not completion.latency_s:
                    completion.latency_s = elapsed
            finally:
                limiter.release()
            completion.cached = False
            return completion

        async def attempt() -> Completion:
            if guard.fatal is not None:
                raise guard.replay_fatal()
            if not guard.open:
                # Until one request has succeeded they go one at a time, each waiting for
                # the one before at most PROBE_WAIT_S (see _guard).
                try:
                    async with asyncio.timeout(PROBE_WAIT_S):
                        await guard.probe.acquire()
                except TimeoutError:
                    pass  # the request before is slow to answer: go on alone
                else:
                    try:
                        if guard.fatal is not None:
                            raise guard.replay_fatal()
                        if not guard.open:
                            try:
                                return await send()
                            except TransientError as exc:
                                # No answer at all: nothing learned by waiting in line.
                                if exc.kind == "timeout":
                                    guard.open = True
                                raise
                    finally:
                        guard.probe.release()
                if guard.fatal is not None:
                    raise guard.replay_fatal()
            return await send()

        def on_retry(exc: TransientError) -> None:
            self.usage.add_retry()
            _tracking.note_retry()

        # The call's deadline (retry.max_total_s) also cuts an attempt still running at it:
        # no reply, however slow or endless its stream, holds a unit longer.
        deadline = asyncio.timeout(self.retry.max_total_s)
        try:
            try:
                async with deadline:
                    completion = await call_with_retries(
                        attempt,
                        self.retry,
                        describe=f"{self.name} at {self.endpoint}",
                        on_retry=on_retry,
                    )
            except TimeoutError:
                if not deadline.expired():
                    raise
                self._note_error("timeout")
                raise ModelUnavailableError(
                    f"{self.name} at {self.endpoint}: gave up after {attempts} attempt(s): no "
                    f"answer within the call's deadline (retry.max_total_s="
                    f"{self.retry.max_total_s:g}s)"
                ) from None
        except ModelError:
            self.usage.add_failure()
            _tracking.note_failure()
            raise
        self.usage.add_call(
            completion.usage,
            input_price_per_mtok=self.input_price_per_mtok,
            output_price_per_mtok=self.output_price_per_mtok,
        )  # the server answered, and its tokens are spent, whatever the check below says
        return self._checked(completion, config)

    def _checked(self, completion: Completion, config: GenerateConfig) -> Completion:
        """:meth:`_check_logprobs`, a refusal counted as a failed call (``no_logprobs``)
        like every other error, whether the completion is fresh, cached or joined."""
        try:
            return self._check_logprobs(completion, config)
        except LogprobsUnavailableError:
            self._note_error("no_logprobs")
            self.usage.add_failure()
            _tracking.note_failure()
            raise

    def forget_fatal(self) -> None:
        """Forget the fatal refusal this model's endpoint answered with, so that the next
        request is sent: for a probe, which asks what the server refuses on purpose."""
        endpoint_guard(self._guard_key).fatal = None

    def _note_error(self, kind: str) -> None:
        self.usage.add_error(kind)
        _tracking.note_error(kind)

    # ---------------------------------------------------------------- checks

    def _check_config(self, config: GenerateConfig) -> None:
        k = config.top_logprobs
        if k is not None and k > self.max_top_logprobs:
            raise InputError(
                f"top_logprobs={k} exceeds the cap of {self.max_top_logprobs} for {self.name} "
                f"(OpenAI and vLLM allow at most 20 by default); ask for fewer, or create the "
                f"model with get_model(..., max_top_logprobs={k}) if the server allows more"
            )

    def _check_logprobs(self, completion: Completion, config: GenerateConfig) -> Completion:
        if config.top_logprobs is None or completion.logprobs is not None:
            return completion
        message = (
            f"{self.name} at {self.endpoint} returned no log-probabilities although "
            f"top_logprobs={config.top_logprobs} was requested; the server may not support "
            f"them (vLLM: raise --max-logprobs; some hosted models never return them)"
        )
        if self.require_logprobs:
            raise LogprobsUnavailableError(
                message + "; pass require_logprobs=False to accept completions without them"
            )
        if not self._warned_no_logprobs:
            self._warned_no_logprobs = True
            _log.warning("%s; continuing without them (require_logprobs=False)", message)
        return completion

    # ---------------------------------------------------------------- lifecycle

    async def aclose(self) -> None:
        """Close the backend's connections on the running loop."""
        await self.api.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _retrieve(task: asyncio.Future[Any]) -> None:
    """Mark a background task's outcome as seen (no "exception never retrieved")."""
    if not task.cancelled():
        task.exception()


def _check_messages(messages: Sequence[ChatMessage]) -> list[ChatMessage]:
    if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
        raise InputError(
            "messages must be a list of {'role': ..., 'content': ...} dicts, "
            f"got {type(messages).__name__}"
        )
    if not messages:
        raise InputError("messages must not be empty")
    checked: list[ChatMessage] = []
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise InputError(f"message {i} must be a dict, got {type(message).__name__}")
        role = message.get("role")
        if not isinstance(role, str) or not role:
            raise InputError(f"message {i} has no 'role' (e.g. 'user', 'system', 'assistant')")
        if "content" not in message:
            raise InputError(f"message {i} ({role}) has no 'content'")
        checked.append(dict(message))
    return checked
