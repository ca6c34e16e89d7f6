"""Records are kept zlib-compressed in the store; stores written before (plain text) open."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import ClassVar

import pytest
from hypothesis import given
from hypothesis import strategies as st

from byzllm.runs import Record, Store, StoreError, UnitResult, make_unit
from byzllm.runs._codec import pack_json, unpack_json


class Trace(Record):
    kind: ClassVar[str] = "trace"
    k: int
    text: str


@given(st.text())
def test_pack_then_unpack_is_the_identity(text: str) -> None:
    assert unpack_json(pack_json(text)) == text


def _store(path: Path) -> list[dict[str, object]]:
    with Store(path) as store:
        units = [make_unit({"k": k}) for k in range(3)]
        store.register_units(units)
        now = time.time()
        store.write_results(
            [
                UnitResult(u.id, "done", now, now, [Trace(k=k, text="agent says 42. " * 50 * k)])
                for k, u in enumerate(units)
            ]
        )
        return store.records("trace")


def test_long_records_are_compressed_and_read_back(tmp_path: Path) -> None:
    written = _store(tmp_path)
    conn = sqlite3.connect(tmp_path / "results.sqlite")
    kinds = sorted(t for (t,) in conn.execute("SELECT typeof(json) FROM records"))
    sizes = [n for (n,) in conn.execute("SELECT length(json) FROM records ORDER BY seq, unit_id")]
    conn.close()
    assert kinds == ["blob", "blob", "text"]  # the short record (k=0) stays text
    assert max(sizes) < 1_500 // 5  # 1,500 characters of text -> well under a fifth
    with Store.open(tmp_path) as store:
        assert store.records("trace") == written
        assert [t.k for t in store.typed_records(Trace)] == [0, 1, 2]


def test_a_store_of_the_previous_version_still_opens(tmp_path: Path) -> None:
    written = _store(tmp_path)
    # The previous version kept every record as JSON text.
    conn = sqlite3.connect(tmp_path / "results.sqlite")
    rows = conn.execute("SELECT rowid, json FROM records").fetchall()
    conn.executemany(
        "UPDATE records SET json = ? WHERE rowid = ?", [(unpack_json(v), r) for r, v in rows]
    )
    conn.commit()
    assert {t for (t,) in conn.execute("SELECT typeof(json) FROM records")} == {"text"}
    conn.close()
    with Store.open(tmp_path) as store:
        assert store.records("trace") == written


def test_a_damaged_compressed_record_is_named_as_damage(tmp_path: Path) -> None:
    _store(tmp_path)
    conn = sqlite3.connect(tmp_path / "results.sqlite")
    conn.execute("UPDATE records SET json = x'789c0000ffff' WHERE typeof(json) = 'blob'")
    conn.commit()
    conn.close()
    with Store.open(tmp_path) as store, pytest.raises(StoreError, match="not valid JSON"):
        store.records("trace")
