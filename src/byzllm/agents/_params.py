"""Named behavioural parameters with their sources (the product brief, §5).

Every domain declares its simulator's parameters in one style: a :class:`SimParameters`
subclass whose every field is

    name: <range> = parameter(default, meaning="...", source="...")

``<range>`` is the field's type with the values it may take (:data:`Probability`,
:data:`Confidence`, :data:`NonNegative`, :data:`Positive`, or a plain type with pydantic's
constraints passed to :func:`parameter`); :func:`parameter` gives the default, a one-line
meaning and where the value comes from (a measurement on a real run, a published figure with
its citation, or ``"assumption"``). :meth:`SimParameters.rows` (:func:`parameter_rows`) turns
the parameters into the rows ``byzllm sim show`` prints, so the documentation of every default
lives next to the default itself and cannot drift from it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from byzllm._strict import StrictNumbers
from byzllm.errors import InputError

__all__ = [
    "ASSUMPTION",
    "Confidence",
    "NonNegative",
    "ParameterRow",
    "Positive",
    "Probability",
    "SimParameters",
    "default_parameters",
    "parameter",
    "parameter_rows",
    "parameter_source",
]

#: The source of a value nobody has measured yet: a modelling choice, switchable like any other.
ASSUMPTION = "assumption"


#: A probability or a share: from 0 to 1.
Probability = Annotated[float, Field(ge=0, le=1)]
#: The probability a confident turn reports on the token it writes: above even odds, below 1.
Confidence = Annotated[float, Field(gt=0.5, lt=1)]
#: A spread, a weight or an exponent that may be 0.
NonNegative = Annotated[float, Field(ge=0)]
#: A weight, a slope or a temperature that must be above 0.
Positive = Annotated[float, Field(gt=0)]


def parameter(default: Any, *, meaning: str, source: str = ASSUMPTION, **constraints: Any) -> Any:
    """A pydantic field for one behavioural parameter: default, meaning and source.

    ``constraints`` are pydantic's (``ge``, ``le``, ``gt``, ...), for a range that none of
    the range types above names.
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


def _is_parameter(model: type[BaseModel], name: str) -> bool:
    extra = model.model_fields[name].json_schema_extra
    return isinstance(extra, Mapping) and "source" in extra


def parameter_rows(
    params: BaseModel, sources: Mapping[str, str] | None = None
) -> list[ParameterRow]:
    """Every field of ``params`` declared with :func:`parameter`, with its value, meaning and
    source, in declaration order (other fields, such as a profile's name, are no parameter).

    ``sources`` overrides the declared source per field (a default profile whose value has its
    own citation, or a profile fitted from a run).
    """
    cls = type(params)
    rows = []
    for name, field in cls.model_fields.items():
        if not _is_parameter(cls, name):
            continue
        source = (sources or {}).get(name) or parameter_source(cls, name)
        rows.append(ParameterRow(name, getattr(params, name), field.description or "", source))
    return rows


class SimParameters(StrictNumbers):
    """The base of every domain's simulator parameters (the module docstring's style).

    Frozen, so a run's parameters cannot change under it; unknown names are refused, so a
    misspelt parameter in a config is an error rather than a silent default.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    def sources(self) -> Mapping[str, str]:
        """Per-value sources that override the declared ones (none by default)."""
        return {}

    def rows(self) -> list[ParameterRow]:
        """The parameters as ``byzllm sim show`` prints them."""
        return parameter_rows(self, self.sources())


def default_parameters(domain: str) -> dict[str, SimParameters]:
    """``domain``'s default simulated population, by group: consensus's ``strong`` and
    ``weak`` profiles; one group, ``""``, for WhoDunit, GovSim and CodeGen (every agent,
    fisher or coder). The values a run uses when its config sets none, read from where each
    domain declares them."""
    # Imported here: each domain's ``_sim`` imports this module.
    if domain == "consensus":
        from .consensus import STRONG_PROFILE, WEAK_PROFILE

        return {"strong": STRONG_PROFILE, "weak": WEAK_PROFILE}
    if domain == "whodunit":
        from .whodunit import SimParams

        return {"": SimParams()}
    if domain == "govsim":
        from .govsim import FisherParams

        return {"": FisherParams()}
    if domain == "codegen":
        from .codegen import CodeGenSimParams

        return {"": CodeGenSimParams()}
    raise InputError(f"unknown domain {domain!r}: consensus, whodunit, govsim or codegen")
