"""``byzllm metrics``: every metric the reports print, with its formula and paper section."""

from __future__ import annotations

from typing import Annotated

import typer

from ._common import JsonOption, cli_errors, print_json

__all__ = ["metrics"]


def metrics(
    term: Annotated[
        str | None,
        typer.Argument(
            help="One metric, e.g. BFTI or survival_time [default: all].", show_default=False
        ),
    ] = None,
    markdown: Annotated[
        bool, typer.Option("--markdown", help="Print docs/metrics.md (a markdown table).")
    ] = False,
    json_output: JsonOption = False,
) -> None:
    """Define every metric the reports print: its meaning, formula and paper section.

    Each definition names the section it comes from (the SAC paper, §5.1; the
    rogue-agents paper, §4.1 ...).

    The same definitions are docs/metrics.md, the glossary at the end of every page and the
    text shown on hovering a column.

    Examples:

        byzllm metrics

        byzllm metrics BFTI

        byzllm metrics --json
    """
    with cli_errors():
        from byzllm.errors import InputError
        from byzllm.view import METRICS, find_term, metrics_markdown

        chosen = list(METRICS)
        if term is not None:
            found = find_term(term)
            if found is None:
                import difflib

                terms = [m.term for m in METRICS]
                lowered = {t.lower(): t for t in terms}
                close = difflib.get_close_matches(term.lower(), lowered, n=1, cutoff=0.5)
                hint = (
                    f"; did you mean {lowered[close[0]]}?"
                    if close
                    else f"; known: {', '.join(terms)}"
                )
                raise InputError(f"no metric {term!r}{hint}")
            chosen = [m for m in METRICS if m.term == found]
        if json_output:
            print_json(
                {
                    "metrics": [
                        {"term": m.term, "meaning": m.meaning, "formula": m.formula,
                         "source": m.source}
                        for m in chosen
                    ]
                }
            )  # fmt: skip
            return
        if markdown:
            typer.echo(metrics_markdown(), nl=False)
            return
        width = max(len(m.term) for m in chosen) + 2
        for m in chosen:
            typer.echo(f"{m.term:<{width}}{m.meaning}.")
            if m.formula:
                typer.echo(f"{'':<{width}}{m.formula}")
            if m.source:
                typer.echo(f"{'':<{width}}({m.source})")
        if term is None:
            typer.echo("\nThe same definitions: docs/metrics.md and every page's glossary.")
