"""The ``byzllm`` command: thin wrappers that parse, call the library and print.
May import: every other subpackage (it is the top layer); no library module imports it.

Each area has its own module with a ``typer.Typer`` sub-app; heavy library imports happen
inside the commands so that ``byzllm --help`` stays instant.
"""

from __future__ import annotations

import typer

from byzllm import __version__

from . import (
    codegen,
    consensus,
    govsim,
    graph,
    models,
    monitor,
    reproduce,
    runs,
    sandbox,
    serve,
    sim,
    view,
    whodunit,
)

__all__ = ["app", "main"]

app = typer.Typer(
    name="byzllm",
    help=(
        "Multi-agent LLM systems that stay correct when some agents are wrong or malicious.\n\n"
        "Start with `byzllm demo` (simulated agents, no API key needed). Every command that "
        "talks to models takes --model/--base-url to run the same experiment on real LLMs."
    ),
    no_args_is_help=True,
    rich_markup_mode="rich",
    pretty_exceptions_show_locals=False,
)


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"byzllm {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version_callback, is_eager=True, help="Print the version."
    ),
) -> None:
    """byzllm: Byzantine-robust multi-agent LLM toolkit."""


consensus.register(app)
serve.register(app)
app.command("view")(view.view)
app.command("reproduce")(reproduce.reproduce)
app.add_typer(graph.app, name="graph")
app.add_typer(models.app, name="models")
app.add_typer(runs.app, name="runs")
app.add_typer(whodunit.app, name="whodunit")
app.add_typer(govsim.app, name="govsim")
app.add_typer(monitor.app, name="monitor")
app.add_typer(codegen.app, name="codegen")
app.add_typer(sim.app, name="sim")
app.add_typer(sandbox.app, name="sandbox")


def main() -> None:
    """Entry point of the ``byzllm`` console script."""
    app()
