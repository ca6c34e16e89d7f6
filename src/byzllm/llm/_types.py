"""Typed records of the model-access layer: generation settings and completions.

Every backend normalizes what its server returns into these shapes, so the rest of the
package never sees a provider's wire format. Log-probabilities follow the OpenAI
``logprobs.content[].top_logprobs`` layout: one entry per generated token, each with the
token's own log-probability and the top-k alternatives at that position.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "ChatMessage",
    "Completion",
    "GenerateConfig",
    "TokenLogprob",
    "Usage",
]

#: A chat message in the OpenAI shape: ``{"role": "user", "content": "..."}``.
ChatMessage = dict[str, str]


class GenerateConfig(BaseModel):
    """Generation settings of one request (part of the cache key).

    ``top_logprobs`` asks for the k most likely alternatives at every generated position
    (0..20 by default; see ``get_model(max_top_logprobs=...)``). ``None`` asks for no
    log-probabilities at all.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    max_tokens: int | None = Field(default=None, ge=1)
    top_p: float | None = Field(default=None, gt=0.0, le=1.0)
    top_logprobs: int | None = Field(default=None, ge=0)
    seed: int | None = None
    stop: tuple[str, ...] | None = None
    response_format: Literal["text", "json_object"] | None = None


class TokenLogprob(BaseModel):
    """One generated token: its text, its log-probability and the top-k alternatives.

    ``top`` is a list of ``(token, logprob)`` pairs sorted by descending log-probability,
    as the server sent them (a truncated distribution: the probabilities need not sum to 1).
    """

    model_config = ConfigDict(frozen=True)

    token: str
    logprob: float
    top: list[tuple[str, float]] = Field(default_factory=list)


class Usage(BaseModel):
    """Token counts of one completion."""

    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


class Completion(BaseModel):
    """What a model returned for one request, in one provider-independent shape."""

    text: str
    logprobs: list[TokenLogprob] | None = None
    usage: Usage = Field(default_factory=Usage)
    cached: bool = False
    latency_s: float = 0.0
    model: str = ""
    finish_reason: str | None = None
