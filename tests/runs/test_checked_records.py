"""Records read for a report are checked against their class: a store is a file a user can
edit, and a ``null`` or a text where a number belongs must be one clear error naming the
file, the unit, the record and the field, not a traceback from deep in a report's sum."""

from __future__ import annotations

import json
import re
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from byzllm.errors import InputError
from byzllm.runs import Record, Store, UnitRequests, UnitResult, make_unit


class Step(Record):
    kind: ClassVar[str] = "step"
    index: int
    score: float | None
    done: bool
    edge: tuple[int, int]
    weights: dict[int, float]
    note: str = ""
    requests: UnitRequests = None


def _step(index: int) -> Step:
    return Step(
        index=index,
        score=index / 4,
        done=index % 2 == 0,
        edge=(index, index + 1),
        weights={index: 0.5},
        requests={"requests": 2, "cached": 0, "retries": 1, "timeouts": 0, "failures": 0,
                  "errors": {"http_503": 1}},
    )  # fmt: skip


def _write(run_dir: Path, steps_per_unit: int = 3) -> list[str]:
    """Two units of ``steps_per_unit`` steps each (a batch per unit); their ids."""
    units = [make_unit({"u": u}, label=f"unit-{u}") for u in range(2)]
    now = time.time()
    with Store(run_dir) as store:
        store.register_units(units)
        store.write_results(
            UnitResult(unit.id, "done", now, now, [_step(k) for k in range(steps_per_unit)])
            for unit in units
        )
    return [unit.id for unit in units]


@pytest.fixture
def run(tmp_path: Path) -> tuple[Path, list[str]]:
    run_dir = tmp_path / "run"
    return run_dir, _write(run_dir)


def test_records_of_a_class_are_the_records_of_its_kind(run: tuple[Path, list[str]]) -> None:
    run_dir, _ = run
    with Store.open(run_dir) as store:
        assert store.records(Step) == store.records("step")
        assert len(store.records(Step, with_unit=True)) == 6
        # What the JSON holds, as ever: lists for tuples, text keys.
        assert store.records(Step)[0]["edge"] == [0, 1]
        assert store.records(Step)[0]["weights"] == {"0": 0.5}


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("index", None, "index: Input should be a valid integer (got None)"),
        ("index", "abc", "index: Input should be a valid integer (got 'abc')"),
        # Text that reads as a number, and true: pydantic's lax mode would take both.
        ("index", "12", "index: Input should be a valid integer (got '12')"),
        ("index", True, "index: Input should be a valid integer (got True)"),
        ("score", "0.5", "score: Input should be a valid number (got '0.5')"),
        ("done", None, "done: Input should be a valid boolean (got None)"),
        ("requests.retries", "abc", "requests: its 'retries' count must be a whole number"),
        ("requests.requests", None, "requests: its 'requests' count must be a whole number"),
        ("requests.errors", {"timeout": "x"}, "its 'errors' must map each kind to a whole"),
    ],
)
def test_a_value_that_is_not_of_its_type_names_file_unit_record_and_field(
    run: tuple[Path, list[str]],
    edit_record: Callable[..., str],
    field: str,
    value: Any,
    expected: str,
) -> None:
    run_dir, units = run
    edit_record(run_dir, "step", field, value, unit=units[1], position=2)
    with Store.open(run_dir) as store:
        with pytest.raises(InputError) as caught:
            store.records(Step)
        assert store.records("step")  # read by kind, as the viewer and the exports do
    message = str(caught.value)
    assert "\n" not in message
    assert expected in message
    assert f"step record 3 of unit 'unit-1' ({units[1]})" in message
    assert str(run_dir / "results.sqlite") in message


def test_typed_records_checks_as_records_do(
    run: tuple[Path, list[str]], edit_record: Callable[..., str]
) -> None:
    """typed_records raised pydantic's ValidationError, without the file, unit or record."""
    run_dir, units = run
    with Store.open(run_dir) as store:
        typed = store.typed_records(Step)
    assert [s.index for s in typed] == [0, 1, 2] * 2 and typed[0].edge == (0, 1)
    assert typed[0] == _step(0)
    edit_record(run_dir, "step", "score", "high", unit=units[1], position=1)
    with Store.open(run_dir) as store, pytest.raises(InputError) as caught:
        store.typed_records(Step)
    assert f"step record 2 of unit 'unit-1' ({units[1]})" in str(caught.value)
    assert "score: Input should be a valid number (got 'high')" in str(caught.value)


def test_iter_records_checks_as_records_do(
    run: tuple[Path, list[str]], edit_record: Callable[..., str]
) -> None:
    run_dir, units = run
    edit_record(run_dir, "step", "score", "high", unit=units[0])
    with Store.open(run_dir) as store, pytest.raises(InputError, match="step record 1 of unit"):
        next(store.iter_records(Step))


def test_a_null_where_the_class_allows_none_passes(
    run: tuple[Path, list[str]], edit_record: Callable[..., str]
) -> None:
    run_dir, units = run
    edit_record(run_dir, "step", "score", None, unit=units[0], position=1)
    edit_record(run_dir, "step", "requests", None, unit=units[0])
    with Store.open(run_dir) as store:
        rows = store.records(Step)
    assert rows[1]["score"] is None and rows[0]["requests"] is None


def test_a_record_only_the_fallback_parser_reads_is_checked_too(
    run: tuple[Path, list[str]], edit_record: Callable[..., str]
) -> None:
    """A lone surrogate escape, which pydantic's JSON parser refuses and ``json`` reads."""
    run_dir, units = run
    edit_record(run_dir, "step", "note", "\ud800", unit=units[0])
    with Store.open(run_dir) as store:
        assert store.records(Step)[0]["note"] == "\ud800"
    edit_record(run_dir, "step", "index", "abc", unit=units[0])
    with Store.open(run_dir) as store, pytest.raises(InputError, match="index: Input should"):
        store.records(Step)


class Counted(BaseModel):
    requests: UnitRequests = None


def test_check_reads_only_the_fields_of_its_model(
    run: tuple[Path, list[str]], edit_record: Callable[..., str]
) -> None:
    run_dir, units = run
    edit_record(run_dir, "step", "index", "not read", unit=units[0])
    with Store.open(run_dir) as store:
        assert len(store.records("step", check=Counted)) == 6
    edit_record(run_dir, "step", "requests.cached", "abc", unit=units[0])
    with Store.open(run_dir) as store, pytest.raises(InputError, match="'cached' count"):
        store.records("step", check=Counted)


def test_request_counts_that_are_not_whole_numbers_are_refused_on_writing() -> None:
    with pytest.raises(ValidationError, match="'retries' count must be a whole number"):
        Counted(requests={"requests": 1, "retries": 0.5})
    # Keys besides the counts are kept as they are.
    kept = Counted(requests={"requests": 1, "note": "kept", "errors": {}})
    assert kept.requests == {"requests": 1, "note": "kept", "errors": {}}


_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=5,
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(field=st.sampled_from(["index", "score", "done", "edge", "weights"]), value=_VALUES)
def test_any_value_in_any_field_reads_back_checked_or_is_one_input_error(
    tmp_path: Path, edit_record: Callable[..., str], field: str, value: Any
) -> None:
    """Whatever a hand edit puts in a field, a checked read gives records that validate or
    one InputError; never another exception."""
    run_dir = Path(tempfile.mkdtemp(dir=tmp_path))  # a fresh store for each example
    unit = _write(run_dir, steps_per_unit=1)[0]
    edit_record(run_dir, "step", field, value, unit=unit)
    with Store.open(run_dir) as store:
        try:
            rows = store.records(Step)
        except InputError as err:
            # The field, or an item in it (edge.0), after the file and the unit.
            assert re.search(rf"sqlite: {field}[.:]", str(err)) and unit in str(err)
            return
    for row in rows:
        Step.model_validate_json(json.dumps(row), strict=True)
        assert not isinstance(row["index"], bool) and isinstance(row["index"], int)
