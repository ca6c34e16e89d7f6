"""Typed records of the model-access layer: generation settings and completions.

Every backend normalizes what its server returns into these shapes, so the rest of the
package never sees a provider's wire format. Log-probabilities follow the OpenAI
``logprobs.content[].top_logprobs`` layout: one entry per generated token, each with the
token's own log-probability and the top-k alternatives at that position.
"""

from __future__ import annotations

import json
import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = [
    "ChatMessage",
    "Completion",
    "GenerateConfig",
    "JsonSchema",
    "TokenLogprob",
    "Usage",
    "chat_messages",
]

#: A chat message in the OpenAI shape: ``{"role": "user", "content": "..."}``.
ChatMessage = dict[str, str]


def chat_messages(system: str, user: str) -> list[ChatMessage]:
    """The conversation of one agent turn: the ``system`` instructions, then the ``user``
    prompt (every prompt renderer of the agents returns this shape)."""
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def _plain_json(value: Any, depth: int = 0) -> bool:
    """Whether ``value`` is JSON data (str keys, finite numbers) no deeper than 64 levels."""
    if depth > 64:
        return False
    if value is None or isinstance(value, (str, bool, int)):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, (list, tuple)):
        return all(_plain_json(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain_json(v, depth + 1) for k, v in value.items())
    return False


class JsonSchema(BaseModel):
    """A JSON schema the reply must follow: OpenAI's ``response_format`` of type
    ``json_schema`` (sent as ``{"type": "json_schema", "json_schema": {"name", "schema",
    "strict"}}``).

    Servers that decode under a grammar (``byzllm serve`` and the ``llamacpp`` provider,
    llama.cpp's server, vLLM's guided decoding) can then only produce text that parses
    against ``schema``. What they support of JSON Schema differs: byzllm's local generation
    takes what llama-cpp-python's converter takes (``properties`` in order, ``required``,
    ``enum``, ``const``, ``anyOf``, ``items``, ``maxItems``, ``maxLength``, ...); OpenAI's
    strict mode wants an object at the root and ``additionalProperties: false``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    #: OpenAI's rule for the name: letters, digits, ``_`` and ``-``, at most 64.
    name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    # ``schema`` would shadow a BaseModel attribute: stored as ``schema_``, spelt ``schema``.
    schema_: dict[str, Any] = Field(alias="schema")
    strict: bool = True

    @field_validator("schema_")
    @classmethod
    def _json_data(cls, value: dict[str, Any]) -> dict[str, Any]:
        # It is sent as JSON and hashed into the cache key: only plain JSON data will do.
        if not _plain_json(value):
            raise ValueError("the schema must be plain JSON data (string keys, finite numbers)")
        return value

    def wire(self) -> dict[str, Any]:
        """The ``response_format`` object of the OpenAI wire format."""
        return {
            "type": "json_schema",
            "json_schema": {"name": self.name, "schema": self.schema_, "strict": self.strict},
        }

    def schema_text(self) -> str:
        """The schema as compact JSON, keys in their given order.

        Order matters here, unlike in most JSON: a grammar derived from the schema generates
        an object's properties in the order they are listed (the rogue-agents paper's
        ReAct format writes ``thoughts`` before ``action``), so two schemas that differ only
        in that order ask for different replies.
        """
        return json.dumps(self.schema_, ensure_ascii=False, separators=(",", ":"))


class GenerateConfig(BaseModel):
    """Generation settings of one request (part of the cache key).

    ``top_logprobs`` asks for the k most likely alternatives at every generated position
    (0..20 by default; see ``get_model(max_top_logprobs=...)``). ``None`` asks for no
    log-probabilities at all. ``response_format`` asks for plain text, any JSON object
    (``"json_object"``), or JSON that follows a :class:`JsonSchema`; the schema is part of
    the cache key, so two schemas never share a cached reply.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    max_tokens: int | None = Field(default=None, ge=1)
    top_p: float | None = Field(default=None, gt=0.0, le=1.0)
    top_logprobs: int | None = Field(default=None, ge=0)
    seed: int | None = None
    stop: tuple[str, ...] | None = None
    response_format: Literal["text", "json_object"] | JsonSchema | None = None

    def redrawn(self, draw: int, temperature: float) -> GenerateConfig:
        """These settings for the ``draw``-th asking again of the same prompt (a resample, a
        rewrite after a reset): sampled at ``temperature`` with the draw as seed, since the
        same request at temperature 0, or through the response cache, gets the same reply.
        Draw 0 (the first asking) keeps them as they are."""
        if draw <= 0:
            return self
        return self.model_copy(update={"temperature": temperature, "seed": draw})


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
