"""The ``byzllm`` command: thin wrappers that parse, call the library and print.
May import: every other subpackage (it is the top layer); no library module imports it.

The typer app (:data:`app`, built in :mod:`byzllm.cli._app`) is imported on first use, so
that :func:`main` can answer a help page it has shown before without importing typer
(:mod:`byzllm.cli._help_cache`); heavy library imports happen inside the commands.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._app import app

__all__ = ["app", "main"]


def __getattr__(name: str) -> Any:
    """``app``, imported on first use (PEP 562)."""
    if name != "app":
        raise AttributeError(f"module 'byzllm.cli' has no attribute {name!r}")
    from ._app import app

    return app


def _printable_streams() -> None:
    """Tables print arrows, minus signs and Greek letters: on a terminal whose encoding
    cannot show them (a Latin-1 locale, PYTHONIOENCODING=ascii) each becomes a replacement
    character instead of a UnicodeEncodeError after the work is done."""
    from ._streams import speaks_utf8

    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if not speaks_utf8(stream) and reconfigure is not None:
            reconfigure(errors="replace")


def _end_quietly_on_signals(status: int) -> None:
    """From now on, Ctrl-C (SIGINT) and SIGTERM end this process at once with ``status``,
    quietly: for a command that ended interrupted, while the interpreter waits at exit for
    what still runs (sync units in threads, which the run abandoned; a process pool's thread
    waiting for its busy workers). A second Ctrl-C there raised KeyboardInterrupt in that wait
    ("Exception ignored in: <module 'threading'>" and a traceback), and SIGTERM killed it
    (no exit code 130). Nothing is left to do: the run's stop stored what finished and the command
    has printed its lines. Its worker processes (which would exit with it anyway) are killed
    and its process pools' semaphores unlinked first (:func:`~byzllm._process.release_workers`):
    left to multiprocessing's resource tracker, those came back as a warning about leaked
    semaphore objects once the command had ended."""
    import contextlib
    import os
    import signal
    import threading

    from byzllm._process import release_workers

    def end(signum: int, frame: object) -> None:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):  # (a closed pipe: nothing more to say)
                stream.flush()
        release_workers()
        os._exit(status)

    if threading.current_thread() is threading.main_thread():
        for number in (signal.SIGINT, signal.SIGTERM):
            signal.signal(number, end)


def main() -> None:
    """Entry point of the ``byzllm`` console script. It ends the process: a command that
    ended interrupted (exit 130) leaves further signals ending it quietly with the same code
    (:func:`_end_quietly_on_signals`), which the in-process callers of the commands (the
    typer app, as tests call it) never get."""
    from ._help_cache import replay, run_and_keep

    argv = sys.argv[1:]
    _printable_streams()
    status = replay(argv)
    if status is not None:
        raise SystemExit(status)
    from ._app import app_for

    try:
        run_and_keep(argv, app_for(argv))
    except SystemExit as end:
        from ._common import EXIT_INTERRUPTED

        if end.code == EXIT_INTERRUPTED:
            _end_quietly_on_signals(EXIT_INTERRUPTED)
        raise
