"""A run in worker processes that a test stops as a terminal's Ctrl-C does: SIGINT to the
whole process group, the workers included (not a test module).

Usage: python group_signal_worker.py RUN_DIR MARKER

Two workers, three units: two at once, then the third, which touches MARKER as it starts and
takes a second. Once MARKER exists, one worker runs that unit and the other waits for work.
"""

from __future__ import annotations

import sys
from pathlib import Path

import typer

sys.path.insert(0, str(Path(__file__).with_name("importable")))

import process_work  # type: ignore[import-not-found]

from byzllm.cli._common import cli_errors, execute_units
from byzllm.runs import ProcessExecutor, make_unit


def main() -> None:
    units = [make_unit({"n": n, "s": 0}) for n in range(2)]
    units.append(make_unit({"n": 2, "s": 1.0, "started": sys.argv[2]}))
    executor = ProcessExecutor(2, keep_secrets=False)
    try:
        with cli_errors():
            execute_units(
                sys.argv[1], units, process_work.marked_slow_square, executor=executor,
                concurrency=2, quiet=True,
            )  # fmt: skip
    except typer.Exit as stop:
        sys.exit(stop.exit_code)


if __name__ == "__main__":
    main()
