"""Normalize the many shapes of per-token log-probabilities into :class:`TokenLogprob` lists.

The target shape is OpenAI's ``choices[0].logprobs.content[]``: one entry per generated token
with ``token``, ``logprob`` and ``top_logprobs: [{token, logprob}, ...]``. Servers differ:

* OpenAI, vLLM, SGLang, recent llama.cpp -- that shape (vLLM's may carry ``k + 1``
  alternatives when the sampled token is outside the top k; ``bytes``/``id`` extras);
* ``top_logprobs`` as a mapping ``{token: logprob}`` instead of a list;
* the legacy completions layout ``{tokens, token_logprobs, top_logprobs: [{tok: lp}]}``;
* older llama.cpp entries with probabilities instead of log-probabilities
  (``{"tok_str", "prob"}``, alternatives under ``probs``/``top_probs``);
* a bare list of entries instead of ``{"content": [...]}``.

Rules: a generated-token entry without a usable token or log-probability makes the whole
block invalid (:class:`ModelResponseError`) -- dropping it silently would misalign tokens
and features. An unusable *alternative* is skipped (the top-k list is a truncated
distribution anyway); alternatives that are neither a list nor an object
(``"top_logprobs": "abc"``) make the block invalid, as a ``content`` that is no list does:
read as "no alternatives" they would pass for a server that sent none. Log-probabilities are
clamped into ``[-9999, 0]`` (``-inf`` becomes -9999, as OpenAI reports impossible tokens; tiny
positive rounding becomes 0); NaN or clearly positive values are invalid. Alternatives are
sorted by descending log-probability and cut to the requested ``k``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ._errors import ModelResponseError
from ._types import TokenLogprob

__all__ = ["LOGPROB_FLOOR", "normalize_logprobs"]

#: The smallest log-probability kept (what OpenAI reports for impossible tokens).
LOGPROB_FLOOR = -9999.0

# Servers round; a log-probability a hair above 0 is 0, a clearly positive one is nonsense.
_POSITIVE_TOLERANCE = 1e-4
_TOKEN_KEYS = ("token", "text", "tok_str", "decoded_token", "content")
_TOP_KEYS = ("top_logprobs", "top_probs", "probs")


def normalize_logprobs(raw: Any, *, top_k: int | None = None) -> list[TokenLogprob] | None:
    """Turn a choice's ``logprobs`` field into one :class:`TokenLogprob` per generated token.

    Returns ``None`` when the server sent no log-probabilities (``raw`` is ``None``, or
    ``{"content": null}``). ``top_k`` cuts each entry's alternatives to the ``k`` most likely.
    Raises :class:`ModelResponseError` on a block that is present but unusable.
    """
    if raw is None:
        return None
    if isinstance(raw, Mapping):
        if "content" in raw:
            content = raw["content"]
            if content is None:
                return None
            if not isinstance(content, list):
                raise ModelResponseError(
                    f"logprobs.content must be a list, got {type(content).__name__}"
                )
            fast = _fast_openai(content, top_k)
            if fast is not None:
                return fast
            return [_entry(item, i, top_k) for i, item in enumerate(content)]
        if "tokens" in raw and "token_logprobs" in raw:
            return _legacy(raw, top_k)
        if not raw:
            return None
        raise ModelResponseError(
            f"unrecognized logprobs object with keys {_preview(sorted(map(str, raw)))}"
        )
    if isinstance(raw, list):
        return [_entry(item, i, top_k) for i, item in enumerate(raw)]
    raise ModelResponseError(f"logprobs must be an object or a list, got {type(raw).__name__}")


def _fast_openai(content: list[Any], top_k: int | None) -> list[TokenLogprob] | None:
    """The common case -- OpenAI's exact shape with in-range floats -- without the general
    path's per-field checks; ``None`` as soon as anything deviates (then the general path
    decides). Same results as the general path on the inputs it accepts (tested)."""
    out: list[TokenLogprob] = []
    for item in content:
        if type(item) is not dict:
            return None
        token, logprob = item.get("token"), item.get("logprob")
        if type(token) is not str or type(logprob) is not float:
            return None
        if not LOGPROB_FLOOR <= logprob <= 0.0:
            return None
        top_raw = item.get("top_logprobs")
        if top_raw:
            if type(top_raw) is not list:
                return None
            try:
                top = [(alt["token"], alt["logprob"]) for alt in top_raw if type(alt) is dict]
            except KeyError:
                return None
            if len(top) != len(top_raw):
                return None
            previous = 0.0
            ordered = True
            for alt_token, alt_logprob in top:
                if type(alt_token) is not str or type(alt_logprob) is not float:
                    return None
                if not LOGPROB_FLOOR <= alt_logprob <= 0.0:
                    return None
                if alt_logprob > previous:
                    ordered = False
                previous = alt_logprob
            if not ordered:
                top.sort(key=lambda pair: -pair[1])
            if top_k is not None:
                del top[max(top_k, 0) :]
        elif top_raw is None:
            if "top_probs" in item or "probs" in item:
                return None
            top = []
        elif top_raw == []:
            top = []
        else:
            return None
        out.append(_token(token, logprob, top))
    return out


_new_token = TokenLogprob.__new__
_set = object.__setattr__


def _token(token: str, logprob: float, top: list[tuple[str, float]]) -> TokenLogprob:
    """``TokenLogprob.model_construct(token=..., logprob=..., top=...)`` in half its time (a
    reply has one per generated token): the object pydantic builds there, its four slots set
    the same way (tested equal slot for slot, so a pydantic that builds it otherwise fails)."""
    made = _new_token(TokenLogprob)
    _set(made, "__dict__", {"token": token, "logprob": logprob, "top": top})
    _set(made, "__pydantic_fields_set__", {"token", "logprob", "top"})
    _set(made, "__pydantic_extra__", None)
    _set(made, "__pydantic_private__", None)
    return made


def _entry(item: Any, index: int, top_k: int | None) -> TokenLogprob:
    if not isinstance(item, Mapping):
        raise ModelResponseError(
            f"logprobs entry {index} must be an object, got {type(item).__name__}"
        )
    token = _token_of(item)
    if token is None:
        raise ModelResponseError(f"logprobs entry {index} has no token text")
    logprob = _logprob_of(item)
    if logprob is None:
        raise ModelResponseError(f"logprobs entry {index} ({token!r:.40}) has no valid logprob")
    top_raw: Any = None
    top_key = _TOP_KEYS[0]
    for key in _TOP_KEYS:
        if key in item and item[key] is not None:
            top_raw, top_key = item[key], key
            break
    where = f"logprobs entry {index} {top_key}"
    return TokenLogprob(token=token, logprob=logprob, top=_alternatives(top_raw, top_k, where))


def _legacy(raw: Mapping[str, Any], top_k: int | None) -> list[TokenLogprob]:
    tokens, logprobs = raw.get("tokens"), raw.get("token_logprobs")
    tops = raw.get("top_logprobs")
    if not isinstance(tokens, list) or not isinstance(logprobs, list):
        raise ModelResponseError("legacy logprobs need lists 'tokens' and 'token_logprobs'")
    if tops is not None and not isinstance(tops, list):
        raise ModelResponseError(
            f"legacy logprobs: top_logprobs must be a list, got {type(tops).__name__}"
        )
    if len(tokens) != len(logprobs):
        raise ModelResponseError(
            f"legacy logprobs: {len(tokens)} tokens but {len(logprobs)} token_logprobs"
        )
    out: list[TokenLogprob] = []
    for i, (token, value) in enumerate(zip(tokens, logprobs, strict=True)):
        if not isinstance(token, str):
            raise ModelResponseError(f"legacy logprobs: token {i} is not a string")
        logprob = _clamp(value)
        if logprob is None:
            raise ModelResponseError(f"legacy logprobs: token {i} has no valid logprob")
        top_raw = tops[i] if tops is not None and i < len(tops) else None
        top = _alternatives(top_raw, top_k, f"legacy logprobs: top_logprobs {i}")
        out.append(TokenLogprob(token=token, logprob=logprob, top=top))
    return out


def _alternatives(raw: Any, top_k: int | None, where: str) -> list[tuple[str, float]]:
    """A position's alternatives (``None``: none sent), best first, cut to ``top_k``.

    Unusable alternatives are skipped; a ``raw`` that is neither a list nor an object raises
    :class:`ModelResponseError` naming ``where``.
    """
    pairs: list[tuple[str, float]] = []
    if isinstance(raw, Mapping):
        for token, value in raw.items():
            logprob = _clamp(value)
            if isinstance(token, str) and logprob is not None:
                pairs.append((token, logprob))
    elif isinstance(raw, Sequence) and not isinstance(raw, str | bytes):
        for alt in raw:
            if not isinstance(alt, Mapping):
                continue
            token = _token_of(alt)
            logprob = _logprob_of(alt)
            if token is not None and logprob is not None:
                pairs.append((token, logprob))
    elif raw is not None:
        raise ModelResponseError(f"{where} must be a list or an object, got {type(raw).__name__}")
    pairs.sort(key=lambda pair: -pair[1])  # stable: ties keep the server's order
    if top_k is not None:
        pairs = pairs[: max(top_k, 0)]
    return pairs


def _token_of(item: Mapping[str, Any]) -> str | None:
    for key in _TOKEN_KEYS:
        value = item.get(key)
        if isinstance(value, str):
            return value
    raw_bytes = item.get("bytes")
    if isinstance(raw_bytes, list) and all(
        isinstance(b, int) and not isinstance(b, bool) and 0 <= b < 256 for b in raw_bytes
    ):
        return bytes(raw_bytes).decode("utf-8", errors="replace")
    token_id = item.get("id")
    if isinstance(token_id, int) and not isinstance(token_id, bool):
        return f"<id:{token_id}>"
    return None


def _logprob_of(item: Mapping[str, Any]) -> float | None:
    if "logprob" in item:
        return _clamp(item["logprob"])
    if "prob" in item:
        prob = _number(item["prob"])
        if prob is None or not 0.0 <= prob <= 1.0 + _POSITIVE_TOLERANCE:
            return None
        return _clamp(math.log(prob) if prob > 0 else -math.inf)
    return None


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str) and len(value) <= 32:
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _clamp(value: Any) -> float | None:
    number = _number(value)
    if number is None or math.isnan(number) or number > _POSITIVE_TOLERANCE:
        return None
    return min(max(number, LOGPROB_FLOOR), 0.0)


def _preview(keys: list[str]) -> str:
    shown = ", ".join(k[:20] for k in keys[:6])
    return f"[{shown}{', ...' if len(keys) > 6 else ''}]"
