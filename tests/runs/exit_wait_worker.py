"""A ``byzllm`` command (through the console script's entry point) that a test stops with
Ctrl-C, then signals again while the process waits at exit for units still running in
threads (not a test module).

Usage: python exit_wait_worker.py RUN_DIR [MARKER]

Sync units on two threads: four short ones, then 5 s each. Once the resume line is on stderr,
the command has ended and the interpreter waits for the two units running. With MARKER, the
units run in two worker processes (``ProcessExecutor``): one short, then 5 s each; the command
touches MARKER as it ends, and the interpreter then waits for the pool's busy workers.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, ClassVar

import typer

sys.path.insert(0, str(Path(__file__).with_name("importable")))

import process_work  # type: ignore[import-not-found]

import byzllm.cli._app
from byzllm.cli import main
from byzllm.cli._common import cli_errors, execute_units
from byzllm.runs import LocalExecutor, ProcessExecutor, Record, make_unit


class Mark(Record):
    kind: ClassVar[str] = "mark"
    index: int


def work(payload: dict[str, Any]) -> Mark:
    time.sleep(payload["s"])
    return Mark(index=payload["index"])


command = typer.Typer()


@command.command()
def run(run_dir: Path, marker: Path | None = typer.Argument(None)) -> None:
    if marker is None:
        units = [make_unit({"index": i, "s": 0.01 if i < 4 else 5.0}) for i in range(20)]
        with cli_errors():
            execute_units(run_dir, units, work, executor=LocalExecutor(), concurrency=2, quiet=True)
        return
    units = [make_unit({"n": n, "s": 0.01 if n == 0 else 5.0}) for n in range(20)]
    try:
        with cli_errors():
            execute_units(
                run_dir, units, process_work.slow_square,
                executor=ProcessExecutor(2, keep_secrets=False), concurrency=2, quiet=True,
            )  # fmt: skip
    finally:
        marker.touch()


if __name__ == "__main__":
    byzllm.cli._app.app_for = lambda argv: command  # type: ignore[assignment]
    sys.exit(main())
