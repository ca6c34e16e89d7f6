"""`byzllm models`: the shipped real models, and probes of model endpoints."""

from __future__ import annotations

from typing import Annotated

import typer

from ._common import JsonOption, cli_errors, console, print_json

__all__ = ["app"]

app = typer.Typer(
    help="The shipped real models (list) and endpoint checks (probe).", no_args_is_help=True
)


@app.command("list")
def list_models(json_output: JsonOption = False) -> None:
    """The real models byzllm ships as packages: size, SHA-256, licence, source, state.

    "installed" means every package that carries the model is installed; "cached" means the
    reassembled file is in the user cache (it is hash-checked again on every use).

    Examples:

        byzllm models list

        byzllm models list --json
    """
    with cli_errors():
        from byzllm.llm._shipped import SHIPPED_MODELS, model_state

        rows = [
            {
                "alias": m.alias,
                "model": m.title,
                "size_mb": round(m.size / 1e6, 1),
                "sha256": m.sha256,
                "licence": m.licence,
                "source": m.origin,
                "extra": m.extra,
                **model_state(m),
            }
            for m in SHIPPED_MODELS.values()
        ]
        if json_output:
            print_json(rows)
            return
        from rich.table import Table

        table = Table(title="shipped models (use the alias with byzllm serve --model or llamacpp/)")
        for column in ("alias", "model", "MB", "sha256", "extra", "state", "licence", "source"):
            table.add_column(column, overflow="fold")
        for row in rows:
            state = "cached" if row["cached"] else ("installed" if row["installed"] else "-")
            table.add_row(
                str(row["alias"]),
                str(row["model"]),
                f"{row['size_mb']:.0f}",
                str(row["sha256"]),
                str(row["extra"]),
                state,
                str(row["licence"]),
                str(row["source"]),
            )
        console().print(table)


@app.command("probe")
def probe(
    base_url: Annotated[
        str,
        typer.Option("--base-url", help="OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1."),
    ],
    model: Annotated[str, typer.Option("--model", help="The model id the server serves.")],
    api_key_env: Annotated[
        str,
        typer.Option(
            "--api-key-env",
            help="Environment variable holding the API key ('' for none; the key is never shown).",
        ),
    ] = "OPENAI_API_KEY",
    timeout_s: Annotated[
        float, typer.Option("--timeout", min=0.1, help="Seconds per request.")
    ] = 30.0,
    max_k: Annotated[int, typer.Option("--max-k", min=1, help="Largest top_logprobs to try.")] = 20,
    json_output: JsonOption = False,
) -> None:
    """Check an endpoint: reachable, latency, log-probabilities, largest top_logprobs.

    Sends a handful of tiny requests (a few tokens each).

    Exit codes: 0 the model answered; 1 unreachable or failing; 2 bad input or a rejected key.

    Examples:

        byzllm models probe --base-url http://127.0.0.1:8000/v1 --model Qwen/Qwen2.5-7B-Instruct

        byzllm models probe --base-url https://api.openai.com/v1 --model gpt-4o-mini --json
    """
    with cli_errors():
        import asyncio

        from byzllm.llm._probe import probe_endpoint

        report = asyncio.run(
            probe_endpoint(
                base_url, model, api_key_env=api_key_env or None, timeout_s=timeout_s, max_k=max_k
            )
        )
        if json_output:
            print_json(report.model_dump())
            if report.warning:
                typer.echo(f"warning: {report.warning}", err=True)
        else:
            _print_report(report)
        if report.exit_code:
            raise typer.Exit(report.exit_code)


def _yes_no(value: bool | None) -> str:
    return "-" if value is None else ("yes" if value else "no")


def _print_report(report: object) -> None:
    from rich.table import Table
    from rich.text import Text

    from byzllm.llm._probe import ProbeReport

    assert isinstance(report, ProbeReport)
    table = Table(title=f"{report.model} at {report.base_url}", show_header=False)
    table.add_column("check", style="bold")
    table.add_column("result")
    latency = "-" if report.latency_s is None else f"{report.latency_s * 1000:.0f} ms"
    rows = [
        ("reachable", _yes_no(report.reachable)),
        ("latency", latency),
        ("reply", report.reply if report.reply is not None else "-"),
        ("logprobs", _yes_no(report.logprobs)),
        (
            "max top_logprobs",
            "-" if report.max_top_logprobs is None else str(report.max_top_logprobs),
        ),
    ]
    if report.answered_as is not None:
        rows.append(("answered as", report.answered_as))
    if report.error:
        rows.append(("error", report.error))
    for check, result in rows:
        table.add_row(check, Text(result))
    console().print(table)
    if report.warning:
        typer.echo(f"warning: {report.warning}", err=True)
