"""A command that a test stops with two signals, the second while the run stops or while the
command then counts the run's units (not a test module).

Usage: python second_signal_worker.py RUN_DIR MARKER [closing|counting]

``closing`` (the default): its executor touches MARKER when it starts to close, then takes
0.5 s. ``counting``: the command touches MARKER when it starts to count the run's units for
the resume line and its ``--json`` document (given), which then takes 0.5 s. Either way a
second signal sent once MARKER exists lands there.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Any, ClassVar

import typer

from byzllm.cli._common import cli_errors, execute_units
from byzllm.runs import LocalExecutor, Record, Store, make_unit


class Mark(Record):
    kind: ClassVar[str] = "mark"
    index: int


async def work(payload: dict[str, Any]) -> Mark:
    await asyncio.sleep(0.02)
    return Mark(index=payload["index"])


class SlowToClose(LocalExecutor):
    async def aclose(self) -> None:
        Path(sys.argv[2]).touch()
        time.sleep(0.5)  # blocking: a Ctrl-C under asyncio.run raises right here
        await super().aclose()


def slow_counts(store: Store) -> dict[str, int]:
    Path(sys.argv[2]).touch()
    time.sleep(0.5)  # a Ctrl-C or the CLI's SIGTERM raises right here
    return counts(store)


counts = Store.counts


def main() -> None:
    units = [make_unit({"index": i, "test": "second_signal"}) for i in range(400)]
    counting = sys.argv[3:] == ["counting"]
    if counting:
        Store.counts = slow_counts  # type: ignore[method-assign]
    executor = LocalExecutor() if counting else SlowToClose()
    try:
        with cli_errors():
            execute_units(
                sys.argv[1], units, work, executor=executor, concurrency=2, quiet=True,
                json_output=counting,
            )  # fmt: skip
    except typer.Exit as stop:
        sys.exit(stop.exit_code)


if __name__ == "__main__":
    main()
