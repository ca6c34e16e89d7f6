"""`byzllm monitor`: Rogue-agent monitors: collect, train, evaluate, report."""

from __future__ import annotations

import typer

__all__ = ["app"]

app = typer.Typer(
    help="Rogue-agent monitors: collect, train, evaluate, report.", no_args_is_help=True
)
