"""Fixtures of the viewer's browser tests: Chromium."""

from __future__ import annotations

from collections.abc import Callable

import pytest


@pytest.fixture(scope="module")
def chromium(require_binary: Callable[..., str]) -> str:
    """Debian's headless-capable Chromium (a skip without it, a failure in CI)."""
    return require_binary("chromium", package="chromium")
