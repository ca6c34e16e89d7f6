"""`byzllm whodunit`: WhoDunitEnv: generate, play and run games."""

from __future__ import annotations

import typer

__all__ = ["app"]

app = typer.Typer(help="WhoDunitEnv: generate, play and run games.", no_args_is_help=True)
