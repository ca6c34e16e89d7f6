"""Every domain declares its simulator's parameters in the one style of byzllm.agents._params."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from byzllm.agents._params import SimParameters, default_parameters
from byzllm.agents.codegen import CodeGenSimParams
from byzllm.agents.consensus import STRONG_PROFILE, SimulatedProfile
from byzllm.agents.govsim import FisherParams
from byzllm.agents.whodunit import SimParams
from byzllm.errors import InputError

DOMAINS: dict[str, type[SimParameters]] = {
    "consensus": SimulatedProfile,
    "whodunit": SimParams,
    "govsim": FisherParams,
    "codegen": CodeGenSimParams,
}


@pytest.mark.parametrize("params", DOMAINS.values(), ids=DOMAINS.keys())
def test_every_field_is_a_parameter_with_a_meaning_and_a_source(
    params: type[SimParameters],
) -> None:
    rows = params().rows()
    # A profile's name labels it; every other field is a behavioural parameter.
    assert [r.name for r in rows] == [n for n in params.model_fields if n != "name"]
    assert all(r.meaning and r.source for r in rows)


@pytest.mark.parametrize("params", DOMAINS.values(), ids=DOMAINS.keys())
def test_parameters_are_frozen_and_refuse_unknown_names(params: type[SimParameters]) -> None:
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        params.model_validate({"no_such_parameter": 1})
    first = next(iter(params().rows())).name
    with pytest.raises(ValidationError, match="frozen"):
        setattr(params(), first, 0)


@pytest.mark.parametrize(
    ("params", "name", "value", "message"),
    [
        (FisherParams, "rogue_rate", 1.5, "less than or equal to 1"),  # Probability
        (SimParams, "recall_confidence", 0.5, "greater than 0.5"),  # Confidence
        (CodeGenSimParams, "skill_spread", -0.1, "greater than or equal to 0"),  # NonNegative
        (SimParams, "temperature", 0.0, "greater than 0"),  # Positive
        (CodeGenSimParams, "zero_shot_seat", 4, "less than or equal to 3"),  # its own range
    ],
)
def test_a_range_type_refuses_what_it_excludes(
    params: type[SimParameters], name: str, value: float, message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        params.model_validate({name: value})


def test_a_default_profile_s_own_sources_override_the_declared_ones() -> None:
    rows = {r.name: r.source for r in STRONG_PROFILE.rows()}
    assert "Table 1" in rows["strength"]
    assert rows["false_accept"] == "assumption"


@pytest.mark.parametrize("domain", DOMAINS)
def test_default_parameters_are_the_domains_own(domain: str) -> None:
    groups = default_parameters(domain)
    assert groups and all(type(p) is DOMAINS[domain] for p in groups.values())
    assert all(p == type(p)() or p.name == group for group, p in groups.items())


def test_default_parameters_refuse_an_unknown_domain() -> None:
    with pytest.raises(InputError, match="unknown domain 'chess'"):
        default_parameters("chess")
