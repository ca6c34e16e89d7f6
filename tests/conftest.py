"""Shared test fixtures."""

from __future__ import annotations

import gzip
import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

# Commands run by the tests keep no help pages in the home folder (byzllm.cli._help_cache);
# the tests of that cache choose their own folders.
os.environ.setdefault("BYZLLM_HELP_CACHE", "off")

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


def write_humaneval(path: Path, n: int, prefix: str = "HumanEval") -> Path:
    """A HumanEval-format file of ``n`` tiny problems ``add_k`` (ids ``<prefix>/k``, two
    examples in each prompt, as HumanEval's docstrings have), gzip-compressed when ``path``
    ends in ``.gz``. With 164 problems the CodeGen splits are HumanEval's own."""
    rows = [
        {
            "task_id": f"{prefix}/{k}",
            "prompt": f'def add_{k}(x: int) -> int:\n    """Return x plus {k}.\n'
            f"    >>> add_{k}({3 * k})\n    {4 * k}\n"
            f"    >>> add_{k}({3 * k + 1})\n    {4 * k + 1}\n"
            '    """\n',
            "canonical_solution": f"    return x + {k}\n",
            "test": f"def check(candidate):\n    assert candidate(1) == {1 + k}\n",
            "entry_point": f"add_{k}",
        }
        for k in range(n)
    ]
    text = "".join(json.dumps(row) + "\n" for row in rows)
    if path.suffix == ".gz":
        with gzip.open(path, "wt", encoding="utf-8") as f:
            f.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def humaneval_file() -> Callable[..., Path]:
    """:func:`write_humaneval` as a fixture, for tests in any folder."""
    return write_humaneval


@pytest.fixture
def toy_problems(tmp_path: Path) -> Path:
    """Four HumanEval-format problems (``add_k``), for CodeGen runs on the simulator."""
    return write_humaneval(tmp_path / "he.jsonl", 4, prefix="Toy")


def modules_loaded_after(code: str, names: Sequence[str]) -> list[str]:
    """Which of ``names`` are in ``sys.modules`` once ``code`` has run in a fresh interpreter
    (sorted): how a test checks that an import or a command leaves heavy libraries unloaded."""
    probe = (
        f"import sys, json\n{code}\n"
        f"print(json.dumps(sorted(m for m in {tuple(names)!r} if m in sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


@pytest.fixture(scope="session")
def loaded_after() -> Callable[[str, Sequence[str]], list[str]]:
    """:func:`modules_loaded_after`, for tests."""
    return modules_loaded_after
