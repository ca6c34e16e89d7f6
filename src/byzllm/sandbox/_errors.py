"""Errors of the sandbox."""

from __future__ import annotations

from byzllm.errors import ByzllmError

__all__ = ["SandboxError", "SandboxUnavailableError"]


class SandboxError(ByzllmError):
    """The sandbox itself failed (not the program in it)."""


class SandboxUnavailableError(SandboxError):
    """Isolation is unavailable here, and running model code without it was not allowed.

    Raised instead of running anything unless the caller passes ``allow_unsafe=True``
    (``--unsafe`` on the command line). The message says which mechanism is missing.
    """

    exit_code = 3
