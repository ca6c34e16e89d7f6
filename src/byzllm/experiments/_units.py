"""Units: the independent pieces of work an experiment is made of.

A unit is a JSON payload (what defines it: question, protocol, seed, ...) with a stable id,
the hash of the payload's canonical JSON. The same payload always gets the same id, in any
process and on any machine, which is what makes resuming and distributing runs possible.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic_core import to_jsonable_python

from byzllm.errors import InputError

__all__ = ["Unit", "canonical_json", "make_unit", "unit_id"]

#: Hex digits of the SHA-256 kept as the id (80 bits: collisions are out of reach for any grid).
_ID_HEX_DIGITS = 20
_LABEL_MAX_CHARS = 80


def _reject_non_finite(value: Any) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise InputError(f"unit payloads must not contain NaN or infinity (got {value!r})")
    if isinstance(value, dict):
        for item in value.values():
            _reject_non_finite(item)
    elif isinstance(value, list):
        for item in value:
            _reject_non_finite(item)


def canonical_json(payload: Mapping[str, Any]) -> str:
    """The canonical JSON text of a payload: sorted keys, no spaces, UTF-8 kept as is.

    Pydantic models, paths, tuples and enums inside the payload are converted to plain JSON
    values first, so ``make_unit({"cfg": model})`` works. NaN and infinity are refused: they
    have no JSON spelling and would make ids ambiguous.
    """
    if not isinstance(payload, Mapping):
        raise InputError(f"a unit payload must be a mapping, got {type(payload).__name__}")
    try:
        plain = to_jsonable_python(dict(payload))
    except Exception as err:  # pydantic_core raises its own error types here
        raise InputError(f"unit payload is not JSON-serializable: {err}") from None
    _reject_non_finite(plain)
    return json.dumps(plain, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def unit_id(payload: Mapping[str, Any]) -> str:
    """The stable id of a payload: the first 20 hex digits of SHA-256 of its canonical JSON."""
    digest = hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()
    return digest[:_ID_HEX_DIGITS]


@dataclass(frozen=True, slots=True)
class Unit:
    """One independent piece of work.

    ``payload`` is plain JSON (what the work function receives); ``id`` is its hash;
    ``label`` is a short human-readable name for progress and failure messages.
    Units pickle cheaply, so any executor (threads, processes, Ray) can ship them.
    """

    id: str
    label: str
    payload: dict[str, Any]


def _default_label(payload: Mapping[str, Any]) -> str:
    parts = []
    for key, value in payload.items():
        text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
        parts.append(f"{key}={text}")
    label = ",".join(parts)
    if len(label) > _LABEL_MAX_CHARS:
        label = label[: _LABEL_MAX_CHARS - 1] + "…"
    return label


def make_unit(payload: Mapping[str, Any], label: str | None = None) -> Unit:
    """Build a unit from its payload; the id is :func:`unit_id` of the payload.

    The payload is normalized through its canonical JSON, so the work function receives
    exactly what the id was computed from (tuples become lists, models become dicts).

    >>> make_unit({"question": 3, "protocol": "sac"}, label="q3/sac").label
    'q3/sac'
    """
    text = canonical_json(payload)
    plain: dict[str, Any] = json.loads(text)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:_ID_HEX_DIGITS]
    return Unit(
        id=digest, label=label if label is not None else _default_label(plain), payload=plain
    )
