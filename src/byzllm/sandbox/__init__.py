"""The only place model-generated code runs.
May import: the bottom layer only (byzllm.errors, _process, _figures, _lazy, _files).

Each run is forked from a warm, pre-imported zygote (``_zygote``; one ``unshare`` from
util-linux per run where ``pidfd_open`` does not work) into fresh mount, network, PID, IPC and
UTS namespaces (without root, inside a user namespace): no network, a private PID space
(nothing it starts outlives it; it cannot see or signal host processes), a root file system
that shows only the system folders and the Python installation, read-only, a private
size-limited working folder, an unprivileged uid of its own (without root: no capability), a
seccomp filter (``_seccomp``), limits on CPU time, wall time, memory, open files, processes,
disk and output (and a cgroup per run where one can be made, ``_cgroup``), and an empty
environment. One clear result per run: passed, failed, timed out, crashed or rejected by a
limit.

:func:`run_program` runs a program; :func:`run_tests` (HumanEval's ``check(candidate)``) and
:func:`run_test_cases` (an outcome per test) run a solution against tests in a process of
their own, so the solution cannot forge the verdict (``_harness``); :func:`sandbox_support`
says which mechanisms work here. Where they are missing, all three runners refuse to run
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
