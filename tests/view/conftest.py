"""Fixtures of the viewer's browser tests: Chromium, and a toy HumanEval file for CodeGen."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def chromium(require_binary: Callable[..., str]) -> str:
    """Debian's headless-capable Chromium (a skip without it, a failure in CI)."""
    return require_binary("chromium", package="chromium")


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
