"""What ``--json`` puts on stdout when a command is interrupted (Ctrl-C, SIGTERM: exit 130).

A script that reads a command's stdout as JSON gets one JSON document whatever happens: the
command's result, or, when it is interrupted before printing it, one object saying so::

    {"status": "interrupted", "exit_code": 130,
     "error": "interrupted: 5 of 120 units done, 0 failed; rerun the same command to resume",
     "run_dir": "runs/sweep", "units": {"total": 120, "done": 5, "failed": 0, "pending": 115}}

``run_dir`` and ``units`` (the run folder's counts, every invocation together) come with a
command that was running units. Once a command has printed its JSON nothing is added, so
stdout stays one document. The same line goes to stderr as without ``--json``.
"""

from __future__ import annotations

from contextvars import ContextVar
from pathlib import Path
from typing import Any

__all__ = ["interrupted_document", "json_option_given", "note_json_written"]

#: Whether the command running was given ``--json``, and whether its JSON is out. Set by the
#: option's callback when a command parses its arguments; the root command clears them first,
#: so a command without the option never sees an earlier command's ``--json``.
_ASKED: ContextVar[bool] = ContextVar("byzllm_json_asked", default=False)
_WRITTEN: ContextVar[bool] = ContextVar("byzllm_json_written", default=False)


def json_option_given(value: bool) -> bool:
    """The callback of every ``--json`` option: remembers the value for
    :func:`interrupted_document` (nothing printed yet)."""
    _ASKED.set(bool(value))
    _WRITTEN.set(False)
    return value


def note_json_written() -> None:
    """Record that the running command has printed its JSON document."""
    _WRITTEN.set(True)


def interrupted_document(
    message: str,
    *,
    asked: bool = False,
    run_dir: Path | str | None = None,
    counts: dict[str, int] | None = None,
) -> dict[str, Any] | None:
    """The object to print for an interrupted command, ``None`` when there is none to print:
    ``--json`` not given (nor ``asked``, a caller's own ``json_output``), or the command's
    JSON already out."""
    if not (asked or _ASKED.get()) or _WRITTEN.get():
        return None
    document: dict[str, Any] = {"status": "interrupted", "exit_code": 130, "error": message}
    if run_dir is not None:
        document["run_dir"] = str(run_dir)
    if counts is not None:
        document["units"] = {"total": sum(counts.values()), **counts}
    return document
