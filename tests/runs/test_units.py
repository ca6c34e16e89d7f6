"""Units: stable ids from canonical JSON; records: kinds and coercion."""

from __future__ import annotations

import hashlib
import pickle
from enum import Enum
from pathlib import Path
from typing import Any, ClassVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from byzllm.errors import InputError
from byzllm.runs import Record, canonical_json, make_unit, unit_id
from byzllm.runs._records import coerce_records

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)
payloads = st.dictionaries(st.text(max_size=10), json_values, max_size=6)


def test_id_is_the_sha256_of_the_canonical_json() -> None:
    payload = {"protocol": "sac", "question": 3, "name": "é"}
    text = '{"name":"é","protocol":"sac","question":3}'
    assert canonical_json(payload) == text
    assert unit_id(payload) == hashlib.sha256(text.encode()).hexdigest()[:20]
    assert make_unit(payload).id == unit_id(payload)


def test_key_order_does_not_change_the_id() -> None:
    assert unit_id({"a": 1, "b": {"x": 1, "y": 2}}) == unit_id({"b": {"y": 2, "x": 1}, "a": 1})
    assert unit_id({"a": 1}) != unit_id({"a": 2}) != unit_id({"a": "1"})


def test_payload_is_normalized_to_plain_json() -> None:
    class Color(Enum):
        RED = "red"

    class Section(BaseModel):
        n: int = 2
        k: int = 0

    unit = make_unit({"t": (1, 2), "m": Section(k=1), "p": Path("a/b"), "c": Color.RED})
    # A model keeps only its non-default fields (docs/experiments.md, "Unit ids").
    assert unit.payload == {"c": "red", "m": {"k": 1}, "p": "a/b", "t": [1, 2]}
    assert unit.id == unit_id(unit.payload)
    assert Section.model_validate(unit.payload["m"]) == Section(k=1)


@pytest.mark.parametrize("bad", [{"x": float("nan")}, {"x": [float("inf")]}, {"x": object()}])
def test_unhashable_payloads_are_input_errors(bad: dict[str, Any]) -> None:
    with pytest.raises(InputError):
        make_unit(bad)


def test_payload_must_be_a_mapping() -> None:
    with pytest.raises(InputError, match="mapping"):
        make_unit([1, 2])  # type: ignore[arg-type]


def test_labels() -> None:
    assert make_unit({"q": 3}, label="q3").label == "q3"
    assert make_unit({"q": 3, "protocol": "sac"}).label == "protocol=sac,q=3"
    assert len(make_unit({"long": "x" * 500}).label) == 80


def test_units_pickle() -> None:
    unit = make_unit({"q": [1, 2]}, label="l")
    assert pickle.loads(pickle.dumps(unit)) == unit


@settings(max_examples=60)
@given(payloads)
def test_ids_are_stable_and_payload_round_trips(payload: dict[str, Any]) -> None:
    unit = make_unit(payload)
    assert make_unit(unit.payload).id == unit.id
    reordered = dict(reversed(list(payload.items())))
    assert unit_id(reordered) == unit.id
    assert len(unit.id) == 20


class ConsensusOutcome(Record):
    correct: bool


class Named(Record):
    kind: ClassVar[str] = "custom_kind"


def test_record_kinds() -> None:
    assert ConsensusOutcome.kind == "consensus_outcome"
    assert Named.kind == "custom_kind"


def test_coerce_records() -> None:
    record = Named()
    assert coerce_records(None) == []
    assert coerce_records(record) == [record]
    assert coerce_records((record, record)) == [record, record]
    for bad in ({"a": 1}, "text", 3, [record, 1]):
        with pytest.raises(TypeError):
            coerce_records(bad)
