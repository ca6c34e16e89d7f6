"""Where a result came from: the byzllm version and the git commit of its source tree."""

from __future__ import annotations

import functools
import os
import subprocess
from pathlib import Path

from byzllm import __version__
from byzllm._process import without_secrets

__all__ = ["byzllm_version", "git_commit"]


def byzllm_version() -> str:
    """The installed byzllm version."""
    return __version__


@functools.cache
def git_commit() -> str | None:
    """The commit of the byzllm source checkout (``<sha>-dirty`` with local changes), or
    ``None`` when byzllm is not running from a git checkout or git is unavailable."""
    source = Path(__file__).resolve().parent
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=source,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
            env=without_secrets(os.environ),
        )
        if head.returncode != 0:
            return None
        commit = head.stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=source,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
            env=without_secrets(os.environ),
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if dirty.returncode == 0 and dirty.stdout.strip():
        commit += "-dirty"
    return commit or None
