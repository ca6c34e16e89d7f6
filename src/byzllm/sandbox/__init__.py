"""The only place model-generated code runs.
May import: the bottom layer only (byzllm.errors, _process, _figures, _lazy, _files).

Each run is a separate process group in fresh Linux namespaces (``unshare`` from util-linux):
no network, a private PID space (nothing it starts outlives it; it cannot see or signal host
processes), the host file system read-only with secrets' usual places hidden, a private
size-limited working folder, an unprivileged uid of its own, limits on CPU time, wall time,
memory, open files and processes, and an environment with nothing of the host's in it. One
clear result per run: passed, failed, timed out, crashed or rejected by a limit.

Where the mechanisms are missing, :func:`run_program` and :func:`run_tests` refuse to run
anything (:class:`SandboxUnavailableError`) unless called with ``allow_unsafe=True``.
docs/sandbox.md says what the sandbox does and does not protect against.
"""

from __future__ import annotations

from ._errors import SandboxError, SandboxUnavailableError
from ._limits import LimitName, SandboxLimits, SandboxResult, Status, TestOutcome
from ._programs import run_program, run_test_cases, run_tests
from ._support import sandbox_support

__all__ = [
    "LimitName",
    "SandboxError",
    "SandboxLimits",
    "SandboxResult",
    "SandboxUnavailableError",
    "Status",
    "TestOutcome",
    "run_program",
    "run_test_cases",
    "run_tests",
    "sandbox_support",
]
