"""Parse an OpenAI-compatible chat-completion body into a :class:`Completion`.

The body is parsed by us rather than by the SDK's models so that the many near-compatible
servers (vLLM, SGLang, Ollama, llama.cpp, OpenRouter) are tolerated in one place, and so that
a malformed or truncated body becomes a :class:`ModelResponseError` the retry layer knows.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic_core import from_json

from ._errors import ModelResponseError
from ._logprobs import normalize_logprobs
from ._types import Completion, Usage

__all__ = ["parse_chat_completion"]

#: The largest token count of one reply taken as a count: no context window comes near it,
#: and sums of such counts stay far inside a float (prices) and a 64-bit integer (stores).
_MAX_TOKEN_COUNT = 1 << 32


def parse_chat_completion(
    body: bytes | str | Mapping[str, Any], *, top_k: int | None = None, model: str = ""
) -> Completion:
    """The completion of ``choices[0]``: text, normalized log-probabilities, usage.

    ``top_k`` cuts the alternatives at each position (see :func:`normalize_logprobs`);
    ``model`` is used when the body does not name the model. Raises
    :class:`ModelResponseError` with a short reason on anything unusable.
    """
    data = _load(body)
    error = data.get("error")
    if error is not None and "choices" not in data:
        message = error.get("message") if isinstance(error, Mapping) else error
        raise ModelResponseError(f"server returned an error object: {str(message)[:200]}")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        raise ModelResponseError("response has no choices")
    choice = choices[0]
    if not isinstance(choice, Mapping):
        raise ModelResponseError("choices[0] is not an object")
    text = _text_of(choice)
    finish = choice.get("finish_reason")
    # Every field is checked above, so skip pydantic's second validation (hot path).
    return Completion.model_construct(
        text=text,
        logprobs=normalize_logprobs(choice.get("logprobs"), top_k=top_k),
        usage=_usage_of(data.get("usage")),
        cached=False,
        latency_s=0.0,
        model=data["model"] if isinstance(data.get("model"), str) else model,
        finish_reason=finish if isinstance(finish, str) else None,
    )


def _load(body: bytes | str | Mapping[str, Any]) -> Mapping[str, Any]:
    if isinstance(body, Mapping):
        return body
    try:
        # pydantic-core's parser reads a reply in about a third of the stdlib's time; what
        # it accepts it reads as json.loads does (compared on mutated replies in the tests).
        # Anything it refuses goes to json.loads, which decides as before (BOMs, UTF-16,
        # lone surrogates) and words the error.
        data = from_json(body)
    except (ValueError, RecursionError):
        data = None
    if data is not None:
        if isinstance(data, Mapping):
            return data
        raise ModelResponseError(f"response body is a JSON {type(data).__name__}, not an object")
    try:
        data = json.loads(body)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, bad UTF-8, absurd nesting
        raise ModelResponseError(
            f"response body is not valid JSON ({len(body)} bytes): {str(exc)[:120]}"
        ) from None
    if not isinstance(data, Mapping):
        raise ModelResponseError(f"response body is a JSON {type(data).__name__}, not an object")
    return data


def _text_of(choice: Mapping[str, Any]) -> str:
    message = choice.get("message")
    if isinstance(message, Mapping):
        content = message.get("content")
        if content is None:
            return ""
        if isinstance(content, str):
            return content
        if isinstance(content, list):  # content parts: [{"type": "text", "text": ...}]
            parts = [
                part.get("text", "")
                for part in content
                if isinstance(part, Mapping) and isinstance(part.get("text", ""), str)
            ]
            return "".join(parts)
        raise ModelResponseError(f"message.content is a {type(content).__name__}")
    legacy = choice.get("text")  # completions-style servers
    if isinstance(legacy, str):
        return legacy
    raise ModelResponseError("choices[0] has neither message.content nor text")


def _usage_of(raw: Any) -> Usage:
    if not isinstance(raw, Mapping):
        return Usage()

    def count(key: str) -> int:
        value = raw.get(key)
        if not isinstance(value, int) or isinstance(value, bool):
            return 0
        # Like a negative count, an absurd one is no count: 10**400 made pricing the call
        # raise OverflowError (int too large to convert to float) out of generate().
        return value if 0 <= value <= _MAX_TOKEN_COUNT else 0

    return Usage(input_tokens=count("prompt_tokens"), output_tokens=count("completion_tokens"))
