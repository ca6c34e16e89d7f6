"""``byzllm view``: a run as one HTML page, with its traces in a folder beside it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ._common import RunDirArgument, checked_on_failure, cli_errors, flag_option

__all__ = ["view"]


def view(
    run_dir: RunDirArgument,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out", "-o", help="The HTML file [default: RUN_DIR/view.html].", dir_okay=False
        ),
    ] = None,
    open_: Annotated[bool, flag_option("--open", "Open the page in the default browser.")] = False,
    max_details: Annotated[
        int | None,
        typer.Option(
            "--max-details",
            min=0,
            help="Units whose trace the page carries (default: every unit; the list holds all).",
        ),
    ] = None,
) -> None:
    """Write a run's HTML page (and its folder of traces) and print its path.

    The page opens offline, straight from disk (no server, no network): the
    run's summary tables with 95% intervals (the numbers of its `report
    --json`), parse health and model requests, per-round plots, and every
    question or game, filterable by protocol, topology, attack, condition
    (the intervention) or outcome, each opening its trace (graph and rounds, or the transcript
    with decision tokens coloured by entropy). Every unit's trace sits
    compressed in a folder named after the page (view_files/ beside view.html;
    page_files/ for -o page.html; copy both) and loads when
    the unit is opened.

    Examples:

        byzllm demo && byzllm view runs/demo

        byzllm view runs/sweep --open -o sweep/page.html
    """
    with cli_errors():
        from byzllm.view import write_view

        # The page reads every record unchecked; a record that makes it fail is named.
        with checked_on_failure(run_dir):
            path = write_view(run_dir, out, max_details=max_details)
        typer.echo(str(path))
        if open_:
            import webbrowser

            webbrowser.open(path.resolve().as_uri())
