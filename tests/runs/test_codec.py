"""Records are kept compressed in the store, a unit's records of one kind as one batch; stores
written before (a row per record, compressed or plain text) open."""

from __future__ import annotations

import json
import sqlite3
import time
import zlib
from pathlib import Path
from typing import ClassVar

import pytest
from hypothesis import given
from hypothesis import strategies as st

from byzllm.runs import Record, Store, StoreError, UnitResult, make_unit
from byzllm.runs import _store as store_module
from byzllm.runs._codec import (
    pack_batch,
    pack_json,
    parse_record,
    record_count,
    unpack_json,
    unpack_record_bytes,
    unpack_records,
)


class Trace(Record):
    kind: ClassVar[str] = "trace"
    k: int
    text: str


class Step(Record):
    kind: ClassVar[str] = "step"
    k: int


@given(st.text())
def test_pack_then_unpack_is_the_identity(text: str) -> None:
    assert unpack_json(pack_json(text)) == text
    assert unpack_records(pack_json(text)) == [text]


@given(st.lists(st.text().filter(lambda t: "\n" not in t), min_size=1))
def test_a_batch_gives_back_its_texts_and_their_count(texts: list[str]) -> None:
    packed = pack_batch(texts)
    assert unpack_records(packed) == texts and record_count(packed) == len(texts)


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


def _damage(path: Path, update: str) -> None:
    """Run ``update`` on the store file in ``path``, as damage from outside would."""
    conn = sqlite3.connect(path / "results.sqlite")
    conn.execute(update)
    conn.commit()
    conn.close()


def test_a_damaged_compressed_record_is_named_as_damage(tmp_path: Path) -> None:
    _store(tmp_path)
    _damage(tmp_path, "UPDATE records SET json = x'789c0000ffff' WHERE typeof(json) = 'blob'")
    with Store.open(tmp_path) as store, pytest.raises(StoreError, match="not valid JSON"):
        store.records("trace")


def _batched_store(path: Path) -> list[dict[str, object]]:
    """Two units, each with a trace and 40 steps interleaved (kinds mixed in write order)."""
    with Store(path) as store:
        units = [make_unit({"u": u}) for u in range(2)]
        store.register_units(units)
        now = time.time()
        results = []
        for u, unit in enumerate(units):
            records: list[Record] = [Trace(k=u, text="first " * 60)]
            for k in range(40):
                records.append(Step(k=k))
                if k == 20:
                    records.append(Trace(k=u, text="second " * 60))
            results.append(UnitResult(unit.id, "done", now, now, records))
        store.write_results(results)
    return [{"u": u} for u in range(2)]


def test_a_units_records_of_one_kind_are_one_row_and_come_back_in_order(tmp_path: Path) -> None:
    _batched_store(tmp_path)
    conn = sqlite3.connect(tmp_path / "results.sqlite")
    rows = conn.execute("SELECT unit_id, seq, kind FROM records ORDER BY unit_id, seq").fetchall()
    conn.close()
    # Per unit: one row per kind, numbered 0, 1 in the order the kinds first appear.
    assert [(seq, kind) for _, seq, kind in rows] == [(0, "trace"), (1, "step")] * 2
    with Store.open(tmp_path) as store:
        assert store.kinds() == {"step": 80, "trace": 4}
        steps = store.records("step", with_unit=True)
        assert [r["k"] for r in steps] == list(range(40)) * 2
        texts = [r["text"].split()[0] for r in store.records("trace")]
        assert texts == ["first", "second", "first", "second"]
        assert [s.k for s in store.typed_records(Step)][:3] == [0, 1, 2]


def test_a_store_with_a_row_per_record_counts_and_reads_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _batched_store(tmp_path / "new")
    with Store.open(tmp_path / "new") as store:
        expected = {kind: store.records(kind, with_unit=True) for kind in ("trace", "step")}
    # The previous version wrote every record as a row of its own, numbered in write order,
    # its JSON compressed when long, else text.
    monkeypatch.setattr(
        store_module,
        "_record_rows_of",
        lambda unit, records: [
            (unit, seq, type(r).kind, pack_json(r.model_dump_json()))
            for seq, r in enumerate(records)
        ],
    )
    _batched_store(tmp_path / "old")
    conn = sqlite3.connect(tmp_path / "old" / "results.sqlite")
    assert conn.execute("SELECT COUNT(*) FROM records").fetchone() == (84,)
    conn.close()
    monkeypatch.undo()
    with Store.open(tmp_path / "old") as store:
        assert store.kinds() == {"step": 80, "trace": 4}
        assert {k: store.records(k, with_unit=True) for k in ("trace", "step")} == expected


def test_a_damaged_batch_is_named_as_damage(tmp_path: Path) -> None:
    _batched_store(tmp_path)
    _damage(tmp_path, "UPDATE records SET json = x'2334303a789c0000ffff' WHERE kind = 'step'")
    with Store.open(tmp_path) as store, pytest.raises(StoreError, match="not valid JSON"):
        store.records("step")
    with pytest.raises(ValueError, match="holds a newline"):
        pack_batch(["{}", "{\n}"])


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1, "b": [true, null, 0.1, -0.0, 1e400], "c": {"é": "x"}}',
        "123456789012345678901234567890",
        "[NaN, Infinity, -Infinity, 5e-324, 2.2250738585072011e-308]",
        '{"a": 1, "a": 2}',
        '"\\ud800"',  # a lone surrogate: json accepts it, pydantic-core's parser does not
    ],
)
def test_a_record_parses_as_json_loads_parses_it(text: str) -> None:
    got, want = parse_record(text), json.loads(text)
    assert repr(got) == repr(want)


def test_text_that_is_not_json_raises_as_json_loads_does() -> None:
    with pytest.raises(json.JSONDecodeError):
        parse_record('{"a": ')


def test_records_unpack_to_the_bytes_of_their_texts() -> None:
    texts = ['{"a": "é"}', '{"b": 2}']
    for value in (pack_batch(texts), pack_json(json.dumps({"c": "é" * 300})), texts[1]):
        raw = unpack_record_bytes(value)
        assert [t if isinstance(t, str) else t.decode("utf-8") for t in raw] == unpack_records(
            value
        )
        assert [parse_record(t) for t in raw] == [json.loads(t) for t in unpack_records(value)]


def test_bytes_that_are_not_utf8_are_damage() -> None:
    with pytest.raises(json.JSONDecodeError):
        parse_record(b'{"a": "\xff"}')
    with pytest.raises(json.JSONDecodeError, match="does not inflate"):
        unpack_records(b"#1:" + zlib.compress(b"\xff"))


def test_nesting_deeper_than_python_recursion_is_damage_not_a_crash() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    with pytest.raises(json.JSONDecodeError, match="nested too deeply"):
        parse_record(deep)
    with pytest.raises(json.JSONDecodeError, match="nested too deeply"):
        parse_record(deep.encode())
