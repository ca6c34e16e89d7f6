"""Running totals of what a model has consumed: calls, cache hits, tokens, retries, errors by
kind, cost."""

from __future__ import annotations

import threading

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from ._types import Usage

__all__ = ["ModelUsage"]


class ModelUsage(BaseModel):
    """Totals over a model's lifetime (``model.usage``).

    * ``calls`` -- requests the server answered successfully (retries not counted twice);
    * ``requests`` -- attempts sent to the server (successful or not, retries included);
    * ``cached_calls`` -- requests answered from the cache or by joining an identical
      request already in flight (no server call);
    * ``input_tokens`` / ``output_tokens`` -- as reported by the server, server calls only;
    * ``retries`` -- extra attempts after transient failures;
    * ``failures`` -- requests that ended in an error;
    * ``errors`` -- failed attempts by kind (``timeout``, ``connection``, ``bad_response``,
      ``http_429``, ``http_503``, ``http_401`` ...; see :func:`byzllm.llm.track_requests`);
    * ``cost`` -- in the currency of the prices given to ``get_model`` (``None`` if unpriced).
    """

    model_config = ConfigDict(validate_assignment=False)

    calls: int = 0
    requests: int = 0
    cached_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    retries: int = 0
    failures: int = 0
    errors: dict[str, int] = Field(default_factory=dict)
    cost: float | None = None

    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def add_call(
        self,
        usage: Usage,
        *,
        input_price_per_mtok: float | None = None,
        output_price_per_mtok: float | None = None,
    ) -> None:
        """Count one successful server call and its tokens (and cost, if priced)."""
        with self._lock:
            self.calls += 1
            self.input_tokens += usage.input_tokens
            self.output_tokens += usage.output_tokens
            if input_price_per_mtok is not None or output_price_per_mtok is not None:
                cost = (usage.input_tokens * (input_price_per_mtok or 0.0)) / 1e6
                cost += (usage.output_tokens * (output_price_per_mtok or 0.0)) / 1e6
                self.cost = (self.cost or 0.0) + cost

    def add_cached(self) -> None:
        """Count one request answered without a server call."""
        with self._lock:
            self.cached_calls += 1

    def add_retry(self) -> None:
        """Count one extra attempt."""
        with self._lock:
            self.retries += 1

    def add_request(self) -> None:
        """Count one attempt sent to the server."""
        with self._lock:
            self.requests += 1

    def add_error(self, kind: str) -> None:
        """Count one failed attempt of ``kind``."""
        with self._lock:
            self.errors[kind] = self.errors.get(kind, 0) + 1

    def add_failure(self) -> None:
        """Count one request that ended in an error."""
        with self._lock:
            self.failures += 1

    def snapshot(self) -> ModelUsage:
        """An independent copy of the current totals."""
        with self._lock:
            data = self.model_dump()
        return ModelUsage(**data)
