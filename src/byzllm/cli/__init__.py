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


def main() -> None:
    """Entry point of the ``byzllm`` console script."""
    from ._help_cache import replay, run_and_keep

    argv = sys.argv[1:]
    _printable_streams()
    status = replay(argv)
    if status is not None:
        raise SystemExit(status)
    from ._app import app_for

    run_and_keep(argv, app_for(argv))
