"""Shared test fixtures."""

from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import Callable
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


def require_module(name: str, *, extra: str) -> None:
    """Skip when an optional extra is not installed, except in CI, where it is a failure.

    CI (``.ci/run``, ``CI=true``) installs every extra, so no test group may be skipped there
    for a missing dependency.
    """
    if importlib.util.find_spec(name) is not None:
        return
    message = f"{name} is not installed (pip install -e '.[{extra}]')"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{message}: CI must install the {extra!r} extra")
    pytest.skip(message)


@pytest.fixture(scope="session")
def require_extra() -> Callable[..., None]:
    """:func:`require_module` as a fixture, for tests and fixtures in any folder."""
    return require_module


def require_program(name: str, *, package: str) -> str:
    """The path of a system program; skip when it is missing, except in CI (a failure there).

    ``.ci/run`` installs the Debian packages the tests need (``chromium`` for the viewer's
    browser tests), so in CI no test may be skipped for want of one.
    """
    import shutil

    path = shutil.which(name)
    if path:
        return path
    message = f"{name} is not installed (Debian: apt-get install {package})"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{message}: CI must install it")
    pytest.skip(message)


@pytest.fixture(scope="session")
def require_binary() -> Callable[..., str]:
    """:func:`require_program` as a fixture, for tests and fixtures in any folder."""
    return require_program


@pytest.fixture
def toy_problems(tmp_path: Path) -> Path:
    """Four HumanEval-format problems (``add_k``), for CodeGen runs on the simulator."""
    path = tmp_path / "he.jsonl"
    path.write_text(
        "".join(
            json.dumps(
                {
                    "task_id": f"Toy/{k}",
                    "prompt": f'def add_{k}(x: int) -> int:\n    """Return x plus {k}."""\n',
                    "canonical_solution": f"    return x + {k}\n",
                    "test": f"def check(candidate):\n    assert candidate(1) == {1 + k}\n",
                    "entry_point": f"add_{k}",
                }
            )
            + "\n"
            for k in range(4)
        ),
        encoding="utf-8",
    )
    return path
