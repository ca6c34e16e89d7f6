"""Exports load back with the rows and values they were written from (Parquet above all:
records of real runs carry empty dicts, which Arrow infers as a struct with no field)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, ClassVar

import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import Field

from byzllm.runs import Record, Store, UnitResult, make_unit
from byzllm.runs._export import parquet_table, write_table


class Game(Record):
    kind: ClassVar[str] = "game"
    n: int
    outcome: dict[str, Any] = Field(default_factory=dict)
    notes: list[dict[str, Any]] = Field(default_factory=list)


def _decoded(value: Any, original: Any) -> Any:
    """A cell read back: JSON text where the export fell back to it."""
    if isinstance(value, str) and not isinstance(original, str):
        return json.loads(value)
    return value


def _column(rows: list[dict[str, Any]], back: list[dict[str, Any]], key: str) -> list[Any]:
    """Column ``key`` read back, decoded where the export wrote it as JSON text (a column of
    values Parquet cannot type: all of them are JSON text, strings included)."""
    got = [r[key] for r in back]
    wanted = [r.get(key) for r in rows]
    text = all(g is None or isinstance(g, str) for g in got)
    if text and any(w is not None and not isinstance(w, str) for w in wanted):
        return [None if g is None else json.loads(g) for g in got]
    return got


def _read_back(path: Path) -> list[dict[str, Any]]:
    return pq.read_table(path).to_pylist()


def _assert_equal(rows: list[dict[str, Any]], back: list[dict[str, Any]]) -> None:
    assert len(back) == len(rows)
    for key in {k for row in rows for k in row}:
        assert _column(rows, back, key) == [row.get(key) for row in rows], key


def test_parquet_writes_empty_dicts_and_nested_empty_structs(tmp_path: Path) -> None:
    rows: list[dict[str, Any]] = [
        {"n": 1, "outcome": {}, "deep": {"a": {}}, "items": [{}], "ok": {"x": 1}},
        {"n": 2, "outcome": {}, "deep": {"a": {}}, "items": [], "ok": {"x": 2}},
    ]
    path = write_table(rows, tmp_path / "t.parquet", "parquet")
    back = _read_back(path)
    _assert_equal(rows, back)
    # Columns Parquet can hold keep their native type; the others are JSON text.
    assert back[0]["ok"] == {"x": 1}
    assert back[0]["outcome"] == "{}" and back[0]["deep"] == '{"a": {}}'
    # Which string columns are JSON text says the schema (plain text has no such mark).
    schema = pq.read_schema(path)
    marked = {f.name for f in schema if (f.metadata or {}).get(b"byzllm.encoding") == b"json"}
    assert marked == {"outcome", "deep", "items"}


def test_parquet_keeps_rows_whose_keys_differ_and_mixed_values(tmp_path: Path) -> None:
    rows: list[dict[str, Any]] = [
        {"n": 1, "extra": {"a": 1.0}, "value": 1},
        {"n": 2, "extra": {"b": 2.0}, "value": "two", "late": True},
    ]
    back = _read_back(write_table(rows, tmp_path / "t.parquet", "parquet"))
    _assert_equal(rows, back)
    assert back[0]["late"] is None and back[1]["late"] is True
    assert json.loads(back[0]["extra"]) == {"a": 1.0}  # not {"a": 1.0, "b": None}


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.dictionaries(st.sampled_from(["a", "b", "c"]), _json, max_size=3), max_size=4))
def test_parquet_round_trips_any_json_rows(
    tmp_path_factory: pytest.TempPathFactory, rows: list[dict[str, Any]]
) -> None:
    table = parquet_table(rows)
    path = tmp_path_factory.mktemp("pq") / "t.parquet"
    pq.write_table(table, path)
    back = pq.read_table(path).to_pylist() if rows and table.num_columns else []
    if table.num_columns:
        _assert_equal(rows, back)


def test_store_export_of_records_with_empty_dicts(tmp_path: Path) -> None:
    with Store(tmp_path / "run") as store:
        units = [make_unit({"k": k}, label=f"k{k}") for k in range(3)]
        store.register_units(units)
        now = time.time()
        store.write_results(
            [
                UnitResult(unit.id, "done", now, now, [Game(n=k, notes=[{}] if k else [])])
                for k, unit in enumerate(units)
            ]
        )
        files = store.export("parquet", tmp_path / "out")
    assert {p.name for p in files} == {"units.parquet", "game.parquet"}
    back = _read_back(tmp_path / "out" / "game.parquet")
    assert [r["n"] for r in back] == [0, 1, 2]
    assert [_decoded(r["outcome"], {}) for r in back] == [{}, {}, {}]
    assert [r["unit_label"] for r in back] == ["k0", "k1", "k2"]


class Move(Record):
    kind: ClassVar[str] = "move"
    n: int


def test_an_export_during_a_run_is_one_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run's commit landing between two files of an export: units.jsonl said the unit was
    pending while game.jsonl held its record, and move.jsonl (read after the commit) held
    its move where game.jsonl (read before) had no game. Every file now shows the store as
    the export began."""
    from byzllm.runs import _export

    run = tmp_path / "run"
    units = [make_unit({"k": k}, label=f"k{k}") for k in range(3)]
    now = time.time()
    with Store(run) as store:
        store.register_units(units)
        store.write_results([UnitResult(units[0].id, "done", now, now, [Game(n=0), Move(n=0)])])
    real_write_table = _export.write_table
    commits = []

    def commit_after_the_first_file(rows: Any, path: Path, fmt: str) -> Path:
        written = real_write_table(rows, path, fmt)
        k = len(commits) + 1
        if k < len(units):  # another process's run commits a unit after each file
            with Store(run, create=False) as writer:
                records = [Game(n=k), Move(n=k)]
                writer.write_results([UnitResult(units[k].id, "done", now, now, records)])
            commits.append(k)
        return written

    monkeypatch.setattr(_export, "write_table", commit_after_the_first_file)
    with Store.open(run) as reader:
        reader.export("jsonl", tmp_path / "out")
    assert commits == [1, 2]  # both units were committed while the export read

    def lines(name: str) -> list[dict[str, Any]]:
        text = (tmp_path / "out" / f"{name}.jsonl").read_text(encoding="utf-8")
        return [json.loads(line) for line in text.splitlines()]

    status = {row["id"]: row["status"] for row in lines("units")}
    assert status == {units[0].id: "done", units[1].id: "pending", units[2].id: "pending"}
    assert [r["unit_id"] for r in lines("game")] == [units[0].id]
    assert [r["unit_id"] for r in lines("move")] == [units[0].id]


@pytest.mark.parametrize("field", ["unit_id", "unit_label", "payload"])
def test_a_record_field_the_store_adds_is_refused_at_definition(field: str) -> None:
    """Read with its unit (every export), such a field was silently replaced by the unit's."""
    from pydantic import create_model

    with pytest.raises(TypeError, match=f"field named {field}"):
        create_model("Clash", __base__=Record, **{field: (str, "x")})


def test_a_kind_named_like_the_units_table_is_refused() -> None:
    with pytest.raises(TypeError, match="reserved"):

        class Units(Record):  # kind "units": its export would overwrite units.csv
            n: int


def test_a_failed_write_leaves_no_file_that_looks_complete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk left a cut-off CSV (4,096 bytes) under the export's own name."""
    import errno

    from byzllm.runs import _export

    def fills_the_disk(rows: object, path: Path, fmt: str) -> None:
        path.write_text("unit_id,value\n1,")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(_export, "_write", fills_the_disk)
    with pytest.raises(OSError, match="No space left"):
        _export.write_table([{"value": 1}], tmp_path / "out" / "value.csv", "csv")
    assert list((tmp_path / "out").iterdir()) == []


def test_csv_keeps_integers_of_a_column_with_a_missing_value(tmp_path: Path) -> None:
    """pandas read a column of 5, 9 and a missing value as floats: the CSV said 5.0, 9.0."""
    import csv

    path = write_table(
        [{"a": 5, "b": 1.5}, {"a": None, "b": 2.0}, {"a": 9}], tmp_path / "t.csv", "csv"
    )
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [row["a"] for row in rows] == ["5", "", "9"]
    assert [row["b"] for row in rows] == ["1.5", "2.0", ""]


async def test_nan_and_infinity_in_a_record_come_back_as_stored(tmp_path: Path) -> None:
    """They were stored as null: records() gave None, and typed_records refused the record."""
    import math

    from byzllm.runs import Record, Store, make_unit, run_units

    class Measured(Record):
        kind: ClassVar[str] = "measured"
        x: float
        y: float

    def work(payload: dict[str, Any]) -> list[Record]:
        return [Measured(x=float("nan"), y=float("-inf"))]

    await run_units(tmp_path, [make_unit({"i": 0})], work, progress=False)
    with Store.open(tmp_path) as store:
        [row] = store.records("measured")
        assert math.isnan(row["x"]) and row["y"] == float("-inf")
        [typed] = store.typed_records(Measured)
        assert math.isnan(typed.x) and typed.y == float("-inf")


def test_csv_keeps_nan_and_infinity_apart_from_a_missing_value(tmp_path: Path) -> None:
    """pandas wrote a NaN as an empty cell, the cell of a missing value: a record's NaN came
    back as None, while the same NaN inside a list of the row read back as NaN."""
    import csv
    import math

    import pandas as pd

    rows: list[dict[str, Any]] = [
        {"x": float("nan"), "xs": [float("nan")]},
        {"x": None, "xs": [None]},
        {"x": float("inf"), "xs": [float("inf")]},
        {"x": float("-inf"), "xs": [float("-inf")]},
        {"x": 1.5, "xs": [1.5]},
    ]
    path = write_table(rows, tmp_path / "t.csv", "csv")
    with path.open(encoding="utf-8", newline="") as handle:
        cells = [row["x"] for row in csv.DictReader(handle)]
    assert cells == ["NaN", "", "Infinity", "-Infinity", "1.5"]
    assert [float(cell) for cell in cells[2:]] == [float("inf"), float("-inf"), 1.5]
    back = pd.read_csv(path)["x"].tolist()
    assert math.isnan(back[0]) and back[2:] == [float("inf"), float("-inf"), 1.5]
