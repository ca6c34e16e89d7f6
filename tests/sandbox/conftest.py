"""Fixtures of the sandbox tests: skip (or, in CI, fail) where the sandbox cannot run."""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest

from byzllm.sandbox import sandbox_support
from byzllm.sandbox._run import _UID_BASE, _UID_SPAN


@pytest.fixture(scope="session")
def require_sandbox() -> None:
    """Skip where isolation is unavailable (no root, no unshare); CI must have it."""
    found = sandbox_support()
    if found["available"]:
        return
    message = f"the sandbox is unavailable here: {found['reason']}"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{message} (CI runs as root with util-linux installed)")
    pytest.skip(message)


def _sandbox_processes() -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            uid = os.stat(f"/proc/{entry}").st_uid
        except OSError:
            continue
        if _UID_BASE <= uid < _UID_BASE + _UID_SPAN:
            found.append(int(entry))
    return found


@pytest.fixture
def sandbox_processes() -> Callable[[], list[int]]:
    """Lists host processes running as a sandbox uid (none should outlive their run)."""
    return _sandbox_processes
