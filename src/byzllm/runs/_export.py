"""Writing rows (lists of dicts) to CSV, JSON Lines and Parquet files."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from byzllm._files import atomic_path

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["JSON_FIELD_METADATA", "parquet_table", "write_table"]

#: The Arrow field metadata of a Parquet column written as JSON text (:func:`parquet_table`).
JSON_FIELD_METADATA = {b"byzllm.encoding": b"json"}


def _flat(value: Any) -> Any:
    """Nested values become JSON text: CSV cells are flat. NaN and infinity are spelt as in
    that JSON (``NaN``, ``Infinity``, ``-Infinity``): pandas writes a NaN as an empty cell,
    the cell of a missing value, so a stored NaN came back as ``None``; pandas and
    ``float()`` read these spellings back as the same floats."""
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, sort_keys=True)
    if isinstance(value, float) and not math.isfinite(value):
        return json.dumps(value)
    return value


def _columns(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Every key of every row, in first-seen order (rows may differ in their keys)."""
    seen: dict[str, None] = {}
    for row in rows:
        for key in row:
            seen.setdefault(key, None)
    return list(seen)


def _parquet_ok(kind: pa.DataType) -> bool:
    """Whether Parquet can store ``kind``: it has no struct without fields (``{}`` values
    infer as ``struct<>``), at any depth."""
    import pyarrow as pa

    if pa.types.is_struct(kind):
        return kind.num_fields > 0 and all(
            _parquet_ok(kind.field(i).type) for i in range(kind.num_fields)
        )
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        return _parquet_ok(kind.value_type)
    if pa.types.is_map(kind):
        return _parquet_ok(kind.key_type) and _parquet_ok(kind.item_type)
    return True


def _lossless(array: pa.Array, values: list[Any]) -> bool:
    """Whether a nested column reads back as the values it was built from: dicts with
    different keys infer as one struct of every key, which would read back with null-filled
    keys the records never had."""
    import pyarrow as pa

    kind = array.type
    if not (pa.types.is_struct(kind) or pa.types.is_map(kind) or pa.types.is_list(kind)):
        return True
    return bool(array.to_pylist() == values)


def parquet_table(rows: Sequence[dict[str, Any]]) -> pa.Table:
    """``rows`` as an Arrow table Parquet can store, column by column.

    A column keeps its native type (nested lists and structs included) when pyarrow can infer
    one Parquet can write and that reads back as the same values; otherwise (values of mixed
    types, empty dicts, which infer as a struct with no field, or dicts with different keys)
    every value of that column is JSON text, so the column loads back
    with ``json.loads``; such a column's field carries the metadata ``byzllm.encoding: json``
    (:data:`JSON_FIELD_METADATA`), so a reader can tell it from a column of plain text. Every
    key of every row is a column (missing values are null).
    """
    import pyarrow as pa

    arrays: dict[str, pa.Array] = {}
    as_json: set[str] = set()
    for name in _columns(rows):
        values = [row.get(name) for row in rows]
        try:
            array = pa.array(values)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError):
            array = None
        if array is None or not _parquet_ok(array.type) or not _lossless(array, values):
            array = pa.array(
                [None if v is None else json.dumps(v, sort_keys=True) for v in values],
                type=pa.string(),
            )
            as_json.add(name)
        arrays[name] = array
    if not arrays:
        return pa.table({})
    schema = pa.schema(
        [
            pa.field(name, array.type, metadata=JSON_FIELD_METADATA if name in as_json else None)
            for name, array in arrays.items()
        ]
    )
    return pa.table(list(arrays.values()), schema=schema)


def write_table(rows: Sequence[dict[str, Any]], path: Path, fmt: str) -> Path:
    """Write ``rows`` to ``path`` in ``fmt`` (csv, jsonl or parquet); returns ``path``.

    Written beside it first and renamed into place: a write that fails (a full disk) leaves
    no cut-off file under the final name that looks complete."""
    if fmt not in ("jsonl", "csv", "parquet"):
        raise ValueError(f"unknown table format {fmt!r}")
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as partial:
        _write(rows, partial, fmt)
    return path


def _write(rows: Sequence[dict[str, Any]], path: Path, fmt: str) -> None:
    import pandas as pd

    if fmt == "jsonl":
        with path.open("w", encoding="utf-8") as handle:
            for row in rows:
                handle.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
    elif fmt == "csv":
        # Object columns keep each value as stored: an integer column with a missing value
        # became floats ("5.0") under pandas' inference.
        frame = pd.DataFrame([{k: _flat(v) for k, v in row.items()} for row in rows], dtype=object)
        frame.to_csv(path, index=False)
    else:
        import pyarrow.parquet as pq

        pq.write_table(parquet_table(rows), path)
