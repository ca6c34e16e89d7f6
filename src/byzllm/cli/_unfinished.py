"""What ``--json`` puts on stdout when a command does not finish: interrupted (Ctrl-C,
SIGTERM: exit 130) or stopped by an error (a bad path, an unreachable server or Ray cluster, a
refused config, a usage error such as an unknown option: the error's exit code, 2 for bad
input).

A script that reads a command's stdout as JSON gets one JSON document whatever happens: the
command's result, or, when the command ends before printing it, one object saying why::

    {"status": "interrupted", "exit_code": 130,
     "error": "interrupted: 5 of 120 units done, 0 failed; rerun the same command to resume",
     "run_dir": "runs/sweep", "units": {"total": 120, "done": 5, "failed": 0, "pending": 115}}

    {"status": "error", "exit_code": 2,
     "error": "no results store at runs/absent/results.sqlite (is this a run directory?)"}

``error`` is the line the command prints on stderr (an error's without its ``error:``
prefix); ``run_dir`` comes with a command that was running units into a run folder, and
``units`` (that folder's counts, every invocation together) with an interrupted run. Once a
command has printed its JSON nothing is added, so stdout stays one document; without
``--json`` nothing is printed on stdout.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Literal

__all__ = [
    "json_option_given",
    "note_json_written",
    "note_run_dir",
    "unfinished_document",
    "usage_error_document",
]

#: Whether the command running was given ``--json``, whether its JSON is out, and the run
#: folder it runs units into. Set by the option's callback when a command parses its
#: arguments; the root command clears them first, so a command without the option never sees
#: an earlier command's ``--json`` or run folder.
_ASKED: ContextVar[bool] = ContextVar("byzllm_json_asked", default=False)
_WRITTEN: ContextVar[bool] = ContextVar("byzllm_json_written", default=False)
_RUN_DIR: ContextVar[str | None] = ContextVar("byzllm_json_run_dir", default=None)


def json_option_given(value: bool) -> bool:
    """The callback of every ``--json`` option: remembers the value for
    :func:`unfinished_document` (nothing printed yet, no run folder)."""
    _ASKED.set(bool(value))
    _WRITTEN.set(False)
    _RUN_DIR.set(None)
    return value


def note_json_written() -> None:
    """Record that the running command has printed its JSON document."""
    _WRITTEN.set(True)


def note_run_dir(run_dir: Path | str, *, json_output: bool = False) -> None:
    """Record the run folder the command runs units into (the document's ``run_dir``);
    ``json_output``, a stage's own ``--json``, asks for the document as the option does."""
    _RUN_DIR.set(str(run_dir))
    if json_output:
        _ASKED.set(True)


def unfinished_document(
    status: Literal["interrupted", "error"],
    exit_code: int,
    message: str,
    *,
    counts: dict[str, int] | None = None,
) -> dict[str, Any] | None:
    """The object to print for a command ending with ``exit_code`` before its result,
    ``None`` when there is none to print: ``--json`` not given, or the command's JSON
    already out."""
    if not _ASKED.get() or _WRITTEN.get():
        return None
    document: dict[str, Any] = {"status": status, "exit_code": exit_code, "error": message}
    run_dir = _RUN_DIR.get()
    if run_dir is not None:
        document["run_dir"] = run_dir
    if counts is not None:
        document["units"] = {"total": sum(counts.values()), **counts}
    return document


def usage_error_document(argv: Sequence[str], exit_code: int, message: str) -> None:
    """A usage error (an unknown option, a missing argument, a bad value) stops a command
    before its ``--json`` is read: when ``argv`` asks for JSON and none is out, the error
    document goes to stdout all the same (its usage text stays on stderr)."""
    words = list(argv)
    if "--" in words:
        words = words[: words.index("--")]  # after "--", "--json" is an argument
    if "--json" not in words or _WRITTEN.get():
        return
    from ._common import print_json

    print_json({"status": "error", "exit_code": exit_code, "error": " ".join(message.split())})
