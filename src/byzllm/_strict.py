"""Config sections that refuse ``true`` / ``false`` where a number is wanted.

pydantic's lax mode reads ``true`` as 1 and ``false`` as 0 in an int or float field, so a
slip in a YAML file or a ``--set`` (``F: [true]``, ``model.max_concurrency=true``,
``sim.rogue_rate=true``) silently ran a setting nobody asked for. Every section a user fills
in (experiment configs, model settings, retry policies, simulator parameters, sandbox limits,
game and task settings) derives from :class:`StrictNumbers` so the refusal is the same
everywhere.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args, get_origin

from pydantic import BaseModel, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

__all__ = ["StrictNumbers"]


class StrictNumbers(BaseModel):
    """A pydantic model whose number fields refuse bools (in lists and mappings too). A field
    that also takes a bool, ``Any`` or a section (a model, which validates its own fields)
    is left alone."""

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_for_a_number(cls, value: Any, info: ValidationInfo) -> Any:
        if _takes_numbers_only(cls, info.field_name or "") and _holds_bool(value):
            raise PydanticCustomError("number_not_bool", "expects a number, not true or false")
        return value


#: Per model class and field: whether it takes numbers only (computed once; some sections are
#: validated once per unit).
_NUMBERS_ONLY: dict[tuple[type[BaseModel], str], bool] = {}


def _takes_numbers_only(cls: type[BaseModel], name: str) -> bool:
    known = _NUMBERS_ONLY.get((cls, name))
    if known is None:
        field = cls.model_fields.get(name)
        known = field is not None and _numbers_only(_leaf_types(field.annotation))
        _NUMBERS_ONLY[(cls, name)] = known
    return known


def _leaf_types(annotation: Any) -> set[Any]:
    """The types an annotation is made of: unions, ``Annotated`` and containers opened."""
    args = get_args(annotation)
    if not args:
        return {annotation}
    if get_origin(annotation) is Literal:
        return {type(arg) for arg in args}
    if get_origin(annotation) is Annotated:
        return _leaf_types(args[0])
    return set().union(*(_leaf_types(arg) for arg in args if arg is not Ellipsis))


def _numbers_only(leaves: set[Any]) -> bool:
    """Whether a number is what the field takes where a bool could come: an int or a float,
    and neither bool, Any nor a section (which validates its own fields)."""
    if bool in leaves or Any in leaves or not leaves & {int, float}:
        return False
    return not any(isinstance(t, type) and issubclass(t, BaseModel) for t in leaves)


def _holds_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return True
    if isinstance(value, list | tuple):
        return any(_holds_bool(item) for item in value)
    if isinstance(value, dict):
        return any(_holds_bool(item) for item in value.values())
    return False
