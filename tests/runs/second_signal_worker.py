"""A command that a test stops with two signals, the second while the run stops (not a test
module).

Usage: python second_signal_worker.py RUN_DIR MARKER

Its executor touches MARKER when it starts to close, then takes 0.5 s: a second signal sent
once MARKER exists lands while the run stops.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Any, ClassVar

import typer

from byzllm.cli._common import cli_errors, execute_units
from byzllm.runs import LocalExecutor, Record, make_unit


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


def main() -> None:
    units = [make_unit({"index": i, "test": "second_signal"}) for i in range(400)]
    try:
        with cli_errors():
            execute_units(
                sys.argv[1], units, work, executor=SlowToClose(), concurrency=2, quiet=True
            )
    except typer.Exit as stop:
        sys.exit(stop.exit_code)


if __name__ == "__main__":
    main()
