"""`byzllm graph`: Build communication graphs and verify their r-/(r,s)-robustness."""

from __future__ import annotations

import typer

__all__ = ["app"]

app = typer.Typer(
    help="Build communication graphs and verify their r-/(r,s)-robustness.", no_args_is_help=True
)
