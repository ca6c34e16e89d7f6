"""Named behavioural parameters with their sources (the product brief, §5).

Every assumption a simulated agent makes is a pydantic field declared with :func:`parameter`:
a default, a one-line meaning, and where the value comes from (a measurement on a real run,
a published figure with its citation, or ``"assumption"``). :func:`parameter_rows` turns a
parameter model into the rows ``byzllm sim show`` prints, so the documentation of every
default lives next to the default itself and cannot drift from it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field

__all__ = ["ASSUMPTION", "ParameterRow", "parameter", "parameter_rows", "parameter_source"]

#: The source of a value nobody has measured yet: a modelling choice, switchable like any other.
ASSUMPTION = "assumption"


def parameter(default: Any, *, meaning: str, source: str = ASSUMPTION, **constraints: Any) -> Any:
    """A pydantic field for one behavioural parameter: default, meaning and source.

    ``constraints`` are pydantic's (``ge``, ``le``, ``gt``, ...).
    """
    return Field(
        default=default,
        description=meaning,
        json_schema_extra={"source": source},
        **constraints,
    )


def parameter_source(model: type[BaseModel], name: str) -> str:
    """The declared source of ``model``'s field ``name`` (:data:`ASSUMPTION` when none)."""
    extra = model.model_fields[name].json_schema_extra
    if isinstance(extra, Mapping):
        return str(extra.get("source", ASSUMPTION))
    return ASSUMPTION


@dataclass(frozen=True)
class ParameterRow:
    """One parameter as ``byzllm sim show`` prints it."""

    name: str
    value: Any
    meaning: str
    source: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "value": self.value,
            "meaning": self.meaning,
            "source": self.source,
        }


def parameter_rows(
    params: BaseModel, sources: Mapping[str, str] | None = None, *, skip: tuple[str, ...] = ()
) -> list[ParameterRow]:
    """Every field of ``params`` with its value, meaning and source, in declaration order.

    ``sources`` overrides the declared source per field (a default profile whose value has its
    own citation, or a profile fitted from a run).
    """
    cls = type(params)
    rows = []
    for name, field in cls.model_fields.items():
        if name in skip:
            continue
        source = (sources or {}).get(name) or parameter_source(cls, name)
        rows.append(ParameterRow(name, getattr(params, name), field.description or "", source))
    return rows
