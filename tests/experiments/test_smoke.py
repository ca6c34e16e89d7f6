"""End-to-end smoke test of the core API: units in, records stored, resume skips."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from byzllm.runs import ExperimentConfig, Record, Store, load_config, make_unit, run_units


class Square(Record):
    kind: ClassVar[str] = "square"
    n: int
    square: int


class SmokeConfig(ExperimentConfig):
    n: int = 5


def square_work(payload: dict[str, Any]) -> list[Record]:
    return [Square(n=payload["n"], square=payload["n"] ** 2)]


async def test_run_store_and_resume(tmp_path: Path) -> None:
    config = load_config(None, SmokeConfig, {"n": 12})
    units = [make_unit({"n": n}, label=f"n{n}") for n in range(config.n)]

    first = await run_units(tmp_path, units, square_work, config=config, progress=False)
    assert (first.done, first.skipped, first.failed, first.status) == (12, 0, 0, "finished")

    second = await run_units(tmp_path, units, square_work, config=config, progress=False)
    assert (second.done, second.skipped) == (0, 12)

    with Store.open(tmp_path) as store:
        rows = store.records("square")
        assert [row["square"] for row in rows] == [n * n for n in range(12)]
        assert store.counts() == {"pending": 0, "done": 12, "failed": 0}
        assert store.latest_config() == {"n": 12}
        assert list(store.records_frame("square").columns) == ["n", "square"]
