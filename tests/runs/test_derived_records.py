"""Records that restate another record of their unit (``Record.derived_from``) are stored as a
count and rebuilt from that record when the store is read: readers see exactly the records
the work returned, and stores written before, which hold them in full, read the same."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from pathlib import Path
from typing import Any, ClassVar

import pytest
from hypothesis import given
from hypothesis import strategies as st

from byzllm.errors import InputError
from byzllm.runs import Record, Store, StoreError, UnitResult, make_unit, repair_store
from byzllm.runs._codec import (
    DERIVED_MARK,
    DerivedRow,
    derived_row,
    pack_batch,
    pack_derived,
    record_count,
    unpack_record_bytes,
)
from byzllm.runs._records import pack_records


class Game(Record):
    kind: ClassVar[str] = "test_game"
    name: str
    moves: list[dict[str, Any]]


class Move(Record):
    kind: ClassVar[str] = "test_move"
    derived_from: ClassVar[str | None] = "test_game"
    game: str
    turn: int
    score: float
    seen: dict[int, float]

    @classmethod
    def derive(cls, source: dict[str, Any]) -> list[dict[str, Any]]:
        return [{"game": source["name"], **move} for move in source["moves"]]


def _unit_records(name: str, turns: int) -> list[Record]:
    moves = [{"turn": t, "score": t / 3, "seen": {t: 0.5}} for t in range(turns)]
    game = Game(
        name=name, moves=[{**m, "seen": {str(k): v for k, v in m["seen"].items()}} for m in moves]
    )
    return [*(Move(game=name, **m) for m in moves), game]


def _write(path: Path, units: dict[str, list[Record]]) -> Store:
    store = Store(path)
    made = [make_unit({"name": name}) for name in units]
    store.register_units(made)
    now = time.time()
    store.write_results(
        [
            UnitResult(u.id, "done", now, now, records)
            for u, records in zip(made, units.values(), strict=True)
        ]
    )
    return store


def test_a_derived_kind_is_one_row_that_counts_it() -> None:
    rows = dict(pack_records(_unit_records("g", 4)).rows)
    assert rows["test_move"] == pack_derived(4, __name__, "test_game")
    assert record_count(rows["test_move"]) == 4
    assert derived_row(rows["test_move"]) == DerivedRow(4, __name__, "test_game")


def test_without_one_source_record_derived_records_are_stored_in_full() -> None:
    # No game to rebuild from, or two (which one?): the moves are kept as they are.
    moves = _unit_records("g", 2)[:-1]
    assert dict(pack_records(moves).rows)["test_move"][:1] == b"#"
    two = [*_unit_records("g", 2), Game(name="h", moves=[])]
    assert dict(pack_records(two).rows)["test_move"][:1] == b"#"


def test_readers_see_the_records_the_work_returned(tmp_path: Path) -> None:
    units = {"a": _unit_records("a", 3), "b": _unit_records("b", 0), "c": _unit_records("c", 2)}
    with _write(tmp_path / "s.sqlite", units) as store:
        expected = [
            json.loads(r.model_dump_json())
            for rs in units.values()
            for r in rs
            if isinstance(r, Move)
        ]
        assert store.kinds() == {"test_game": 3, "test_move": 5}
        assert store.records("test_move") == expected
        assert store.records(Move) == expected  # checked against the class, strictly
        assert store.typed_records(Move) == [
            r for rs in units.values() for r in rs if isinstance(r, Move)
        ]
        labelled = store.records("test_move", with_unit=True, with_payload=True)
        assert [r["payload"]["name"] for r in labelled] == ["a", "a", "a", "c", "c"]
        files = store.export("csv", tmp_path / "out", ["test_move"], include_units=False)
        assert len(files[0].read_text().splitlines()) == 1 + 5


def test_a_store_holding_them_in_full_reads_the_same(tmp_path: Path) -> None:
    units = {"a": _unit_records("a", 3)}
    with _write(tmp_path / "new.sqlite", units) as store:
        rebuilt = store.records("test_move")
    with _write(tmp_path / "old.sqlite", units) as store:
        moves = [r.model_dump_json() for r in units["a"] if isinstance(r, Move)]
        with sqlite3.connect(store.path) as conn:
            conn.execute("UPDATE records SET json=? WHERE kind='test_move'", (pack_batch(moves),))
        assert store.records("test_move") == rebuilt


def test_a_derived_row_without_its_source_is_damage(tmp_path: Path) -> None:
    with _write(tmp_path / "s.sqlite", {"a": _unit_records("a", 2)}) as store:
        with sqlite3.connect(store.path) as conn:
            conn.execute("DELETE FROM records WHERE kind='test_game'")
        with pytest.raises(StoreError, match="rebuilt from its test_game record, and it has 0"):
            store.records("test_move")


def test_a_count_that_disagrees_with_the_source_is_damage(tmp_path: Path) -> None:
    with _write(tmp_path / "s.sqlite", {"a": _unit_records("a", 2)}) as store:
        with sqlite3.connect(store.path) as conn:
            conn.execute(
                "UPDATE records SET json=? WHERE kind='test_move'",
                (pack_derived(3, __name__, "test_game"),),
            )
        with pytest.raises(StoreError, match="restates 2 test_move records, and its row counts 3"):
            store.records("test_move")


def test_a_store_never_makes_its_reader_import_a_module_outside_byzllm(tmp_path: Path) -> None:
    with _write(tmp_path / "s.sqlite", {"a": _unit_records("a", 1)}) as store:
        with sqlite3.connect(store.path) as conn:
            conn.execute(
                "UPDATE records SET json=?, kind='unknown_kind' WHERE kind='test_move'",
                (pack_derived(1, "antigravity", "test_game"),),
            )
        with pytest.raises(InputError, match="rebuilt from another record by antigravity"):
            store.records("unknown_kind")
    import sys

    assert "antigravity" not in sys.modules


def test_repair_keeps_derived_rows(tmp_path: Path) -> None:
    with _write(tmp_path / "run" / "results.sqlite", {"a": _unit_records("a", 2)}) as store:
        before = store.records("test_move")
    report = repair_store(tmp_path / "run", force=True)
    assert report.records == 3  # the game and its two moves
    with Store(tmp_path / "run" / "results.sqlite") as store:
        assert store.records("test_move") == before


def test_a_derived_class_must_say_how_it_is_derived() -> None:
    with pytest.raises(TypeError, match="sets derived_from but does not define derive"):

        class Orphan(Record):
            kind: ClassVar[str] = "test_orphan"
            derived_from: ClassVar[str | None] = "test_game"


@given(st.binary(max_size=200))
def test_any_bytes_are_a_derived_row_or_not_never_a_crash(value: bytes) -> None:
    try:
        row = derived_row(DERIVED_MARK + value)
    except ValueError:
        return
    assert row is not None and row.count >= 0 and row.module and row.source_kind
    with pytest.raises(ValueError, match="derived row holds no records"):
        unpack_record_bytes(DERIVED_MARK + value)


def test_a_derived_header_round_trips() -> None:
    row = derived_row(pack_derived(49, "byzllm.experiments.consensus.records", "a:b"))
    assert row == DerivedRow(49, "byzllm.experiments.consensus.records", "a:b")
    assert derived_row(b"#3:xyz") is None and derived_row("@1:m:k") is None


def test_consensus_round_records_are_their_question_rebuilt() -> None:
    # Every attack, protocol and topology, one and two adversaries: the round records a
    # unit returns are exactly those rebuilt from its question record.
    from byzllm.experiments.consensus.experiment import consensus_unit, expand_units
    from byzllm.experiments.consensus.matrix import matrix_config
    from byzllm.experiments.consensus.records import ConsensusQuestion, ConsensusRound

    async def check() -> int:
        checked = 0
        for unit in expand_units(matrix_config(questions=1)):
            records = await consensus_unit(dict(unit.payload))
            (question,) = [r for r in records if isinstance(r, ConsensusQuestion)]
            rounds = [
                json.loads(r.model_dump_json()) for r in records if isinstance(r, ConsensusRound)
            ]
            assert ConsensusRound.derive(json.loads(question.model_dump_json())) == rounds
            checked += len(rounds)
        return checked

    assert asyncio.run(check()) == 180 * 49


def test_with_derived_builds_its_records_only_when_read() -> None:
    from byzllm.runs import WithDerived, run_in_memory

    records = _unit_records("g", 3)
    game = records[-1]
    lazy = WithDerived(game, Move, 3)
    assert len(lazy) == 4 and lazy._built is None
    # The store's rows: a count and the game, the moves never built.
    assert pack_records(lazy) == pack_records(records) and lazy._built is None
    # Read, they are the moves the work would have returned, then the game.
    assert [r.model_dump() for r in lazy] == [r.model_dump() for r in records]
    assert lazy[-1] is game and isinstance(lazy[0], Move)

    def work(payload: dict[str, Any]) -> WithDerived:
        return WithDerived(game, Move, 3)

    unit = make_unit({"name": "g"})
    only_games = asyncio.run(run_in_memory([unit], work, kinds={"test_game"}))
    assert [row["kind"] for row in only_games] == ["test_game"]
    every = asyncio.run(run_in_memory([unit], work))
    assert [row["kind"] for row in every] == ["test_move"] * 3 + ["test_game"]


def test_with_derived_travels_as_its_source() -> None:
    import pickle

    from byzllm.runs import WithDerived

    lazy = WithDerived(_unit_records("g", 2)[-1], Move, 2)
    back = pickle.loads(pickle.dumps(lazy))
    assert back._built is None and list(back) == list(lazy)


def test_with_derived_refuses_a_wrong_class_or_count() -> None:
    from byzllm.runs import WithDerived

    game = _unit_records("g", 2)[-1]
    with pytest.raises(TypeError, match="not derived from Game"):
        WithDerived(game, Game, 1)
    with pytest.raises(ValueError, match="restates 2 Move records, not 5"):
        list(WithDerived(game, Move, 5))
