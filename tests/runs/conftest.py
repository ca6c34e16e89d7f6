"""Fixtures shared by the run-engine tests."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from byzllm.runs import _repair


def _forget_shells() -> None:
    _repair.recover_shell.cache_clear()
    _repair._recover_command.cache_clear()


@pytest.fixture
def shell_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder put first on PATH, for a ``sqlite3`` of the test's making (what repair found
    of the shells before is forgotten, and again after)."""
    folder = tmp_path / "bin"
    folder.mkdir()
    monkeypatch.setenv("PATH", f"{folder}:{Path(sys.executable).parent}")
    _forget_shells()
    yield folder
    _forget_shells()
