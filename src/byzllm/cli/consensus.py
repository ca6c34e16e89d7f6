"""`byzllm consensus` and `byzllm demo`: Byzantine-robust consensus experiments."""

from __future__ import annotations

import typer

__all__ = ["app", "register"]

app = typer.Typer(
    help="Byzantine-robust consensus (SAC, CP-WBFT, debate, majority): run and report.",
    no_args_is_help=True,
)


def register(root: typer.Typer) -> None:
    """Attach ``consensus`` and the top-level ``demo`` command to the root app."""
    root.add_typer(app, name="consensus")
