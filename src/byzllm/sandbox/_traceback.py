"""Reading a Python traceback out of a program's stderr: which exception ended it, and where.

The text is whatever the sandboxed program wrote, so it is hostile input: it may be huge, may
contain fake tracebacks or none at all, and may not be valid UTF-8 (it was decoded with
replacement characters). Parsing never raises and looks only at the last ``_TAIL`` characters,
so its cost is bounded whatever the program printed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Frame", "ProgramError", "last_error"]

#: How much of the end of stderr is read: a traceback is at the end, and this bounds the work.
_TAIL = 64_000
#: The longest source line or message kept.
_MAX_TEXT = 300
#: The most frames kept from one traceback (the innermost ones).
_MAX_FRAMES = 50

_FRAME = re.compile(
    r'^  File "(?P<file>[^"\n]{0,500})", line (?P<line>\d{1,9})(?:, in (?P<func>.*))?$'
)
_EXCEPTION = re.compile(r"^(?P<type>[A-Za-z_][\w.]{0,200})(?::(?P<message>.*))?$")


@dataclass(frozen=True)
class Frame:
    """One ``File "...", line N, in f`` entry of a traceback, with its source line if shown."""

    file: str
    line: int
    function: str
    source: str


@dataclass(frozen=True)
class ProgramError:
    """The exception that ended a program, as its traceback shows it.

    ``frames``: the last traceback's entries, outermost first (at most ``_MAX_FRAMES``, the
    innermost ones); ``frame``: the innermost.
    """

    type: str
    message: str
    frames: tuple[Frame, ...]

    @property
    def frame(self) -> Frame | None:
        """The innermost frame, where the exception was raised."""
        return self.frames[-1] if self.frames else None

    def innermost_in(self, predicate: Callable[[Frame], bool]) -> Frame | None:
        """The innermost frame for which ``predicate`` holds (e.g. one in the program's file)."""
        return next((f for f in reversed(self.frames) if predicate(f)), None)

    @property
    def short_type(self) -> str:
        """The class name without its module (``KeyError`` for ``builtins.KeyError``)."""
        return self.type.rsplit(".", 1)[-1]


def _clip(text: str) -> str:
    text = text.strip()
    return text if len(text) <= _MAX_TEXT else text[: _MAX_TEXT - 1] + "…"


def last_error(stderr: str) -> ProgramError | None:
    """The exception of the last traceback in ``stderr``, or None when there is none.

    The last ``File "...", line N`` entry is the innermost frame; after it come its source line
    (indented by four spaces), optional ``^^^`` markers, then the exception line
    ``Type: message``. A syntax error has the same shape without the ``Traceback`` header.
    """
    lines = stderr[-_TAIL:].splitlines()
    for index in range(len(lines) - 1, -1, -1):
        if _FRAME.match(lines[index]) is None:
            continue
        source, after = _source_after(lines, index + 1)
        if after >= len(lines):
            return None
        exception = _EXCEPTION.match(lines[after])
        if exception is None:
            return None
        frames = [_frame(lines[index], source)]
        # Walk up to the outer frames of the same traceback: each is a frame line followed by
        # its indented source lines, up to the ``Traceback`` header (or anything else).
        position = index - 1
        while position >= 0 and len(frames) < _MAX_FRAMES:
            start = position
            while start >= 0 and lines[start].startswith("    "):
                start -= 1
            if start < 0 or _FRAME.match(lines[start]) is None:
                break
            frames.append(_frame(lines[start], _source_after(lines, start + 1)[0]))
            position = start - 1
        message = _clip(exception.group("message") or "")
        return ProgramError(
            type=exception.group("type"), message=message, frames=tuple(reversed(frames))
        )
    return None


def _source_after(lines: list[str], position: int) -> tuple[str, int]:
    """The source line shown under a frame (first indented line), and the index past them."""
    source = ""
    while position < len(lines) and lines[position].startswith("    "):
        if not source:
            source = lines[position]
        position += 1
    return _clip(source), position


def _frame(line: str, source: str) -> Frame:
    match = _FRAME.match(line)
    assert match is not None
    return Frame(
        file=match.group("file"),
        line=int(match.group("line")),
        function=(match.group("func") or "").strip(),
        source=source,
    )
