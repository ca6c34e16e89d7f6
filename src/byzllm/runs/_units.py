"""Units: the independent pieces of work an experiment is made of.

A unit is a JSON payload (what defines it: question, protocol, seed, ...) with a stable id,
the hash of the payload's canonical JSON. The same payload always gets the same id, in any
process and on any machine, which is what makes resuming and distributing runs possible.

The canonical form (scheme :data:`UNIT_ID_SCHEME`) writes pydantic models found anywhere in
the payload with only their fields that differ from the field's default, so adding a field
with a default to a config model leaves every existing id (and so every stored result)
valid. See "Unit ids" in docs/experiments.md for the whole policy.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from byzllm.errors import InputError

__all__ = [
    "UNIT_ID_SCHEME",
    "PreparedModel",
    "Unit",
    "canonical_json",
    "make_unit",
    "prepare_model",
    "reset_to_defaults",
    "unit_id",
]

#: Version of the id scheme: how a payload becomes its canonical JSON and that text its id.
#: Scheme 1: sorted keys, no spaces, UTF-8 kept; pydantic models written with their
#: non-default fields only (recursively); sets sorted; the id is the SHA-256 of the text.
#: Bump it for a change that must invalidate every stored unit (e.g. a default whose new
#: value changes the work): from scheme 2 on, the number is hashed with the text.
UNIT_ID_SCHEME: Final = 1

#: Hex digits of the SHA-256 kept as the id (80 bits: collisions are out of reach for any grid).
_ID_HEX_DIGITS = 20
_LABEL_MAX_CHARS = 80

_M = TypeVar("_M", bound=BaseModel)


def _reject_non_finite(value: Any) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise InputError(f"unit payloads must not contain NaN or infinity (got {value!r})")
    if isinstance(value, dict):
        for item in value.values():
            _reject_non_finite(item)
    elif isinstance(value, list):
        for item in value:
            _reject_non_finite(item)


def _plain_text(value: Any) -> str:
    return json.dumps(
        to_jsonable_python(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )


def _transport_fields(model: BaseModel) -> dict[str, Any] | None:
    """The nested ``exclude`` spec of ``model``'s transport fields (how requests are sent:
    server URL, limits, timeouts, cache file; ``byzllm.llm.ModelSettings``), at any depth of
    nested models: they do not change what a unit computes, so they are not part of its id."""
    spec: dict[str, Any] = {}
    for name, field in type(model).model_fields.items():
        extra = field.json_schema_extra
        if isinstance(extra, dict) and extra.get("transport") is True:
            spec[name] = True
            continue
        value = getattr(model, name, None)
        if isinstance(value, BaseModel):
            inner = _transport_fields(value)
            if inner:
                spec[name] = inner
    return spec or None


@dataclass(frozen=True, slots=True)
class PreparedModel:
    """A pydantic model of unit payloads, reduced once (:func:`prepare_model`).

    A grid's units share their config: reducing it to its non-default fields for every unit
    was most of building a large grid (a demo unit: 0.11 ms, 0.036 ms prepared). In a payload it
    stands for the model it was made from: the same id, the same payload for the work.
    """

    #: The model's JSON without its transport fields (what ids hash).
    id_form: Any
    #: The model's JSON with them (what the work receives).
    work_form: Any


def prepare_model(model: BaseModel) -> PreparedModel:
    """``model`` reduced now for every payload it goes into (:class:`PreparedModel`).

    A snapshot: changing ``model`` afterwards does not change what the payloads hold.
    """
    return PreparedModel(_reduce(model), _reduce(model, transport=True))


def _reduce(value: Any, transport: bool = False) -> Any:
    """``value`` with every pydantic model replaced by the JSON dict of its non-default fields
    (transport fields left out, :func:`_transport_fields`, unless ``transport``).

    Pydantic applies ``exclude_defaults`` recursively (nested models, models in lists, dicts
    and ``Any`` fields). Sets become sorted lists: their iteration order differs between
    processes, their canonical order does not. Everything else is left to
    ``to_jsonable_python``.
    """
    if isinstance(value, PreparedModel):
        return value.work_form if transport else value.id_form
    if isinstance(value, BaseModel):
        exclude = None if transport else _transport_fields(value)
        return value.model_dump(mode="json", exclude_defaults=True, by_alias=True, exclude=exclude)
    if isinstance(value, Mapping):
        return {key: _reduce(item, transport) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_reduce(item, transport) for item in value]
    if isinstance(value, set | frozenset):
        return sorted((_reduce(item, transport) for item in value), key=_plain_text)
    return value


def canonical_json(payload: Mapping[str, Any], *, transport: bool = False) -> str:
    """The canonical JSON text of a payload (id scheme :data:`UNIT_ID_SCHEME`).

    Sorted keys, no spaces, UTF-8 kept as is. Paths, tuples, enums and sets (sorted) inside
    the payload become plain JSON values; a pydantic model becomes the dict of its fields
    that differ from their defaults (recursively), so a field added with a default does not
    change the text. NaN and infinity are refused: they have no JSON spelling and would
    make ids ambiguous. Transport fields of models (how requests reach a model: server URL,
    limits, timeouts, cache file) are left out of the text unless ``transport``: the id
    ignores them, the work receives them.
    """
    if not isinstance(payload, Mapping):
        raise InputError(f"a unit payload must be a mapping, got {type(payload).__name__}")
    return _canonical_text(_reduce(payload, transport))


def _canonical_text(reduced: Any) -> str:
    """The canonical JSON text of a payload already reduced (:func:`_reduce`)."""
    try:
        plain = to_jsonable_python(reduced)
    except Exception as err:  # pydantic_core raises its own error types here
        raise InputError(f"unit payload is not JSON-serializable: {err}") from None
    try:
        return json.dumps(
            plain, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        )
    except ValueError as err:  # NaN or infinity somewhere: find it for the message
        _reject_non_finite(plain)
        raise InputError(f"unit payload is not JSON-serializable: {err}") from None


def _digest(text: str, scheme: int = UNIT_ID_SCHEME) -> str:
    # Scheme 1 hashes the text alone, so plain-JSON payloads keep the ids they had before
    # schemes were numbered; later schemes hash their number too, so a bump changes every id.
    data = text if scheme == 1 else f"byzllm-unit-id/{scheme}\n{text}"
    return hashlib.sha256(data.encode("utf-8")).hexdigest()[:_ID_HEX_DIGITS]


def unit_id(payload: Mapping[str, Any]) -> str:
    """The stable id of a payload: the first 20 hex digits of SHA-256 of its canonical JSON."""
    return _digest(canonical_json(payload))


def reset_to_defaults(model: _M, fields: Iterable[str]) -> _M:
    """A copy of ``model`` with ``fields`` back at their defaults (so ids leave them out).

    For config fields that only shape the grid (how many repeats, which games) when the
    payload already carries the unit's own coordinates: changing them then adds or drops
    units without changing the ids of the others. The work must not read these fields.
    """
    declared = type(model).model_fields
    unknown = sorted(set(fields) - set(declared))
    if unknown:
        raise InputError(f"{type(model).__name__} has no field(s) {', '.join(unknown)}")
    return model.model_copy(
        update={name: declared[name].get_default(call_default_factory=True) for name in fields}
    )


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
    what the id was computed from (plus the transport fields of models, which the id leaves
    out: :func:`canonical_json`): tuples become lists, and a pydantic model
    becomes the dict of its non-default fields -- the work re-validates it
    (``Config.model_validate(payload["config"])``) to get the defaults back. Put the model
    itself in the payload, not its ``model_dump()``: a plain dict keeps every key, defaults
    included, in the id. A model many units share (the run's config) goes in once reduced,
    as :func:`prepare_model` makes it: the same id, the same payload, built faster.

    >>> make_unit({"question": 3, "protocol": "sac"}, label="q3/sac").label
    'q3/sac'
    """
    if not isinstance(payload, Mapping):
        raise InputError(f"a unit payload must be a mapping, got {type(payload).__name__}")
    reduced, with_transport = _reduce(payload), _reduce(payload, transport=True)
    text = _canonical_text(reduced)
    # Most payloads hold no transport field: their two texts are the same one.
    work_text = text if with_transport == reduced else _canonical_text(with_transport)
    plain: dict[str, Any] = json.loads(work_text)
    return Unit(
        id=_digest(text),
        label=label if label is not None else _default_label(plain),
        payload=plain,
    )
