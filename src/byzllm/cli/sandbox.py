"""`byzllm sandbox`: run one Python file in the sandbox, or say whether the sandbox works here."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from byzllm.errors import InputError

from ._common import JsonOption, cli_errors, print_json

__all__ = ["app"]

app = typer.Typer(
    help="Run untrusted Python in the sandbox (no network, private files, resource limits).",
    no_args_is_help=True,
)


@app.command("run")
def run_command(
    program: Annotated[Path, typer.Argument(help="The Python file to run.")],
    timeout: Annotated[
        float, typer.Option("--timeout", min=0.001, max=3600, help="Wall-time limit, seconds.")
    ] = 10.0,
    memory: Annotated[
        int,
        typer.Option(
            "--memory", min=32, max=1_048_576, help="Address-space limit per process, MB."
        ),
    ] = 512,
    stdin: Annotated[
        Path | None, typer.Option("--stdin", help="A file whose content the program reads.")
    ] = None,
    unsafe: Annotated[
        bool,
        typer.Option(
            "--unsafe",
            help="Run even where isolation is unavailable (limits only: NOT a sandbox).",
        ),
    ] = False,
    json_output: JsonOption = False,
) -> None:
    """Run PROGRAM in the sandbox and print how it ended.

    The result is one of passed, failed (an assertion failed: shown), timed_out, crashed
    (exception, signal or non-zero exit: shown) or rejected (a limit: which one), with the
    program's output, its control characters escaped (\\x1b: the program cannot drive your
    terminal; --json gives the output as it was). Use it to check the sandbox on your
    machine, e.g. with a program that tries to open a socket or write to your home folder.

    Exit codes: 0 the program passed; 1 it did not; 2 bad input; 3 the sandbox is unavailable
    here (see `byzllm sandbox check`; --unsafe runs the program anyway, without isolation).

    Examples:

        byzllm sandbox run solution.py

        byzllm sandbox run untrusted.py --timeout 2 --memory 256 --json
    """
    with cli_errors():
        import asyncio

        from byzllm.sandbox import SandboxLimits, run_program

        source = _read(program, "program")
        data = _read(stdin, "--stdin file") if stdin is not None else ""
        limits = SandboxLimits(timeout_s=timeout, memory_mb=memory)
        result = asyncio.run(run_program(source, stdin=data, limits=limits, allow_unsafe=unsafe))
        if not result.isolated:
            # Asked for with --unsafe, but never to pass unnoticed: nothing was isolated.
            typer.echo(
                "warning: the sandbox is unavailable here: the program ran WITHOUT isolation "
                "(your network and files were within its reach)",
                err=True,
            )
        for limit, why in result.limits_not_held.items():
            # The limit was asked for: that it did not hold must not pass unnoticed either.
            typer.echo(f"warning: the {limit} limit did not hold: {why}", err=True)
        if json_output:
            print_json(result.model_dump())
        else:
            typer.echo(f"status: {result.status}")
            if result.detail:
                typer.echo(f"detail: {_shown(result.detail)}")
            typer.echo(f"exit code: {result.exit_code}   duration: {result.duration_s:.2f} s")
            for name, text in (("stdout", result.stdout), ("stderr", result.stderr)):
                if text:
                    typer.echo(f"--- {name} ---")
                    typer.echo(_shown(text), nl=not text.endswith("\n"))
        raise typer.Exit(0 if result.passed else 1)


@app.command("check")
def check_command(json_output: JsonOption = False) -> None:
    """Say which isolation mechanisms work here and whether model code may run.

    Exit codes: 0 the sandbox is available; 3 it is not (the reason is printed).
    """
    from byzllm.sandbox import sandbox_support

    found = sandbox_support()
    if json_output:
        print_json(found)
    else:
        for key, value in found.items():
            if key != "reason":
                typer.echo(
                    f"{key}: {'yes' if value is True else 'no' if value is False else value}"
                )
        if found["reason"]:
            typer.echo(f"reason: {found['reason']}")
        for note in _notes(found):
            typer.echo(f"note: {note}")
    raise typer.Exit(0 if found["available"] else 3)


def _notes(found: dict[str, bool | str]) -> list[str]:
    """What the mechanisms above mean for a run here (docs/sandbox.md)."""
    notes = []
    if found.get("rootless"):
        notes.append(
            "not root: the namespaces are made inside a user namespace; the program keeps "
            "the caller's uid with no capability"
        )
    held = [k for k in ("sysv_ipc_closed", "memfd_refused", "inode_limit") if found.get(k)]
    if found.get("cgroup"):
        notes.append(
            f"each run gets a cgroup {found.get('cgroup_version')} (memory with swap off, pids) "
            "bounding its total memory and processes; per-process rlimits bound each process, "
            "and " + (", ".join(held) if held else "nothing") + " hold what rlimits miss"
        )
        if found.get("cgroup_missing"):
            notes.append(f"not cgroup v2: {found['cgroup_missing']}")
    else:
        notes.append(
            f"no cgroup is used ({found.get('cgroup_missing')}): per-process rlimits bound "
            "memory, processes and files, and "
            + (", ".join(held) if held else "nothing")
            + " hold what they miss"
        )
    if found.get("seccomp_filter") == "hand-built":
        notes.append(
            "seccomp: the hand-built deny-list (install the seccomp extra for libseccomp's "
            "allow-list: pip install 'byzllm[seccomp]')"
        )
    if found.get("zygote"):
        notes.append("runs are forked from a warm zygote (no interpreter start per run)")
    return notes


#: Control characters but newline and tab (C0, DEL, C1), each as its ``\\xNN`` escape.
_CONTROLS = {
    code: f"\\x{code:02x}" for code in (*range(0x20), *range(0x7F, 0xA0)) if chr(code) not in "\n\t"
}


def _shown(text: str) -> str:
    """The program's text (its output, or a detail quoting it) as it may reach a terminal:
    escape sequences written raw would let the program drive the terminal, e.g. clear the
    screen and print a status line of its own."""
    return text.translate(_CONTROLS)


def _read(path: Path, what: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"cannot read the {what} {path}: {error}") from error
