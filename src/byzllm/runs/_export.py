"""Writing rows (lists of dicts) to CSV, JSON Lines and Parquet files."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["write_table"]


def _flat(value: Any) -> Any:
    """Nested values become JSON text: CSV cells are flat."""
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, sort_keys=True)
    return value


def write_table(rows: Sequence[dict[str, Any]], path: Path, fmt: str) -> Path:
    """Write ``rows`` to ``path`` in ``fmt`` (csv, jsonl or parquet); returns ``path``."""
    import pandas as pd

    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "jsonl":
        with path.open("w", encoding="utf-8") as handle:
            for row in rows:
                handle.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
        return path
    if fmt == "csv":
        frame = pd.DataFrame.from_records([{k: _flat(v) for k, v in row.items()} for row in rows])
        frame.to_csv(path, index=False)
        return path
    if fmt == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            table = pa.Table.from_pylist(list(rows))
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
            # Heterogeneous nested values pyarrow cannot type: fall back to JSON text.
            table = pa.Table.from_pylist([{k: _flat(v) for k, v in row.items()} for row in rows])
        pq.write_table(table, path)
        return path
    raise ValueError(f"unknown table format {fmt!r}")
