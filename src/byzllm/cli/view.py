"""``byzllm view``: a run as one self-contained HTML page."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ._common import RunDirArgument, cli_errors

__all__ = ["view"]


def view(
    run_dir: RunDirArgument,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out", "-o", help="The HTML file [default: RUN_DIR/view.html].", dir_okay=False
        ),
    ] = None,
    open_: Annotated[
        bool, typer.Option("--open", help="Open the page in the default browser.")
    ] = False,
    max_details: Annotated[
        int,
        typer.Option(
            "--max-details",
            min=0,
            help="Units whose full trace the page embeds (the list holds all).",
        ),
    ] = 500,
) -> None:
    """Write one self-contained HTML page of a run and print its path.

    The page opens offline (no server, no network): the run's summary tables
    with 95% intervals (the numbers of its `report --json`), parse health and
    model requests, per-round plots, and every question or game, filterable by
    protocol, topology, attack or outcome, each opening its trace (graph and
    rounds, or the transcript with decision tokens coloured by entropy).

    Examples:

        byzllm demo && byzllm view runs/demo

        byzllm view runs/sweep --open --max-details 2000
    """
    with cli_errors():
        from byzllm.view import write_view

        path = write_view(run_dir, out, max_details=max_details)
        typer.echo(str(path))
        if open_:
            import webbrowser

            webbrowser.open(path.resolve().as_uri())
