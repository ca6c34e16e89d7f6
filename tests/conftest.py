"""Shared test fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

#: The public data sets live beside the repository, never inside it.
SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@pytest.fixture
def shared_data() -> Path:
    """Path to ``../shared/data``; skips the test when the folder is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip("public data sets (../shared/data) not available")
    return SHARED_DATA
