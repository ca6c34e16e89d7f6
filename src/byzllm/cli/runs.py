"""`byzllm runs`: List and inspect experiment runs."""

from __future__ import annotations

import typer

__all__ = ["app"]

app = typer.Typer(help="List and inspect experiment runs.", no_args_is_help=True)
