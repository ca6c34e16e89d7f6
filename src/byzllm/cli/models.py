"""`byzllm models`: Probe model endpoints (reachability, latency, log-probabilities)."""

from __future__ import annotations

import typer

__all__ = ["app"]

app = typer.Typer(
    help="Probe model endpoints (reachability, latency, log-probabilities).", no_args_is_help=True
)
