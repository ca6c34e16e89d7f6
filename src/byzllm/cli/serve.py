"""`byzllm serve`: serve the shipped small model (or any GGUF file) over the OpenAI wire format."""

from __future__ import annotations

from typing import Annotated

import typer

from ._common import cli_errors

__all__ = ["serve"]


def serve(
    model: Annotated[
        str,
        typer.Option(
            "--model",
            help="A shipped model (qwen0.5b, smollm2; qwen1.5b with the local-large extra; "
            "see byzllm models list) or the path of a .gguf file.",
        ),
    ] = "qwen0.5b",
    port: Annotated[
        int, typer.Option("--port", min=0, max=65535, help="Port on 127.0.0.1 (0: any free one).")
    ] = 8000,
    threads: Annotated[
        int | None,
        typer.Option(
            "--threads", help="CPU threads (default: half the cores, at least 1, at most 8)."
        ),
    ] = None,
    slots: Annotated[
        int,
        typer.Option(
            "--slots",
            help="Requests answered in parallel, each in its own context with --threads "
            "threads (the weights are loaded once). On 2 cores: --slots 2 --threads 1.",
        ),
    ] = 1,
) -> None:
    """Serve a GGUF model on 127.0.0.1 with byzllm's OpenAI-compatible server (llama-cpp-python).

    Starts the server, waits until it answers, prints the --base-url and --model to use with
    every other command, and runs until Ctrl-C (which stops it cleanly). Needs the local
    extra (pip install "byzllm[local]"; see the README for the fast build settings).

    A shipped model is reassembled from its packages into the user cache on first use and its
    SHA-256 checked on every start; a changed cached file is rebuilt, never loaded.

    Exit codes: 0 stopped with Ctrl-C; 1 the server died; 2 bad input (missing or corrupt
    GGUF file, missing part package, hash mismatch, full disk, busy port, bad --threads or
    --slots, extra
    not installed).

    Examples:

        byzllm serve                                   # Qwen2.5-Coder-0.5B-Instruct on port 8000

        byzllm serve --model smollm2 --port 8081       # the 135M model, for smoke tests

        byzllm serve --model ~/models/my-model.gguf --threads 4

        byzllm serve --slots 2 --threads 1             # two requests at once on 2 cores

        # then, in another terminal:
        byzllm models probe --base-url http://127.0.0.1:8000/v1 --model qwen0.5b
        byzllm consensus run --model openai/qwen0.5b --base-url http://127.0.0.1:8000/v1
    """
    with cli_errors():
        import signal

        from byzllm.llm import LocalServer

        # `kill` (SIGTERM) stops the server as Ctrl-C does, instead of leaving it running.
        signal.signal(signal.SIGTERM, _interrupt)
        server = LocalServer(model, port=port, threads=threads, slots=slots)
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
        # Read before stop(), which discards the server's output. "exited with code -4" hid
        # the signal, and with it the rebuild hint for a build this CPU cannot run.
        report = server.exit_report(code)
        server.stop()
        from byzllm.llm import ModelUnavailableError

        raise ModelUnavailableError(report)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt
