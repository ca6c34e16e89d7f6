"""Fixtures of the sandbox tests: skip (or, in CI, fail) where the sandbox cannot run."""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest

from byzllm.sandbox import _run, sandbox_support


@pytest.fixture(scope="session")
def require_sandbox() -> None:
    """Skip where isolation is unavailable (no unshare, neither root nor user namespaces);
    CI must have it."""
    found = sandbox_support()
    if found["available"]:
        return
    message = f"the sandbox is unavailable here: {found['reason']}"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{message} (CI runs as root and as a user, with util-linux installed)")
    pytest.skip(message)


def _sandbox_processes() -> list[int]:
    """Host processes of a sandboxed run: with root, those of a run's uid; without root
    (runs keep the caller's uid), the caller's processes inside a nested PID namespace."""
    found = []
    rootless = os.geteuid() != 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if rootless:
                # /proc/PID/status, not the folder's owner: a process that is not dumpable
                # has a /proc folder owned by root.
                with open(f"/proc/{entry}/status", encoding="utf-8") as handle:
                    fields = dict(line.split(":", 1) for line in handle if ":" in line)
                uid = int(fields["Uid"].split()[0])
                nested = len(fields.get("NSpid", "").split()) > 1
                ended = fields["State"].split()[0] in ("Z", "X")  # waiting to be reaped
                if uid == os.getuid() and nested and not ended:
                    found.append(int(entry))
                continue
            uid = os.stat(f"/proc/{entry}").st_uid
        except (OSError, KeyError, ValueError):
            continue
        # This process's share of the uid range (tests/conftest.py, _own_sandbox_uids).
        if _run._UID_BASE <= uid < _run._UID_BASE + _run._UID_SPAN:
            found.append(int(entry))
    return found


@pytest.fixture
def sandbox_processes() -> Callable[[], list[int]]:
    """Lists host processes running as a sandbox uid (none should outlive their run)."""
    return _sandbox_processes
