"""The exception hierarchy every layer raises from.

The CLI turns a :class:`ByzllmError` into one clear line and an exit code (``exit_code``)
instead of a traceback; library users catch the same classes.
"""

from __future__ import annotations

__all__ = ["ByzllmError", "ConfigError", "InputError"]


class ByzllmError(Exception):
    """Base class of every error byzllm raises on purpose."""

    #: Exit code the CLI uses when this error ends a command.
    exit_code: int = 1
    #: True when the error cannot be specific to one unit of a run (a rejected API key, a
    #: model the server does not serve, a bad config): the runner stops the whole run at its
    #: first occurrence and leaves the affected units not done, instead of failing every
    #: unit one by one (:func:`byzllm.runs.run_units`).
    fatal: bool = False


class InputError(ByzllmError, ValueError):
    """Bad input from the user: an impossible graph, a malformed file, an invalid option."""

    exit_code = 2


class ConfigError(InputError):
    """A configuration that does not validate (unknown key, wrong type, missing file)."""

    fatal = True
