"""Shared test fixtures."""

from __future__ import annotations

import gzip
import importlib.util
import json
import os
import secrets
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

# Commands run by the tests keep no help pages in the home folder (byzllm.cli._help_cache);
# the tests of that cache choose their own folders.
os.environ.setdefault("BYZLLM_HELP_CACHE", "off")
# Output width is each test's choice (tests that need one set COLUMNS): a pytest-xdist worker
# starts with COLUMNS=80 and LINES=24 in its environment, which would fold long paths and
# table cells that a pipe with no COLUMNS keeps on one line.
for _size in ("COLUMNS", "LINES"):
    os.environ.pop(_size, None)

#: The public data sets live beside the repository, never inside it.
SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


#: uids in one test process's share of the sandbox's range (of 100 million).
_SANDBOX_UID_SHARE = 1_000_000


@pytest.fixture(scope="session", autouse=True)
def _own_sandbox_uids() -> Iterator[None]:
    """Sandboxed programs of this test process take their uids from a share of the sandbox's
    range that is its own.

    The sandbox tests look for leftovers among the host's processes by uid, so programs of
    another suite on the same machine (a random share), or of another worker of this one
    (the next share: pytest-xdist gives its workers one run id and numbers them ``gwN``),
    are not taken for this process's leftovers.
    """
    from byzllm.sandbox import _run

    shares = _run._UID_SPAN // _SANDBOX_UID_SHARE
    run_id = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    first = int(run_id, 16) if run_id else secrets.randbelow(shares)
    worker = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
    saved = _run._UID_BASE, _run._UID_SPAN
    _run._UID_BASE = saved[0] + _SANDBOX_UID_SHARE * ((first + worker) % shares)
    _run._UID_SPAN = _SANDBOX_UID_SHARE
    yield
    _run._UID_BASE, _run._UID_SPAN = saved


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


def edit_stored_record(
    run_dir: Path,
    kind: str,
    field: str,
    value: Any,
    *,
    unit: str | None = None,
    position: int = 0,
) -> str:
    """Set ``field`` (dotted into objects and lists: ``requests.retries``,
    ``trace.rounds.0.0.calls``) of one record in a run's SQLite file, as a hand edit would:
    the ``position``-th record of ``kind`` of ``unit`` (default: the first unit that has
    one). Returns the unit's id."""
    from byzllm.runs._codec import pack_batch, pack_json, unpack_records

    with sqlite3.connect(run_dir / "results.sqlite") as conn:
        rows = conn.execute(
            "SELECT unit_id, seq, json FROM records WHERE kind=? ORDER BY unit_id, seq", (kind,)
        ).fetchall()
        unit_id, seq, stored = next(row for row in rows if unit in (None, row[0]))
        texts = unpack_records(stored)
        record = json.loads(texts[position])
        target = record
        *path, last = field.split(".")
        for part in path:
            target = target[int(part)] if isinstance(target, list) else target[part]
        if isinstance(target, list):
            target[int(last)] = value
        else:
            target[last] = value
        texts[position] = json.dumps(record)
        packed = pack_json(texts[0]) if len(texts) == 1 else pack_batch(texts)
        conn.execute("UPDATE records SET json=? WHERE unit_id=? AND seq=?", (packed, unit_id, seq))
    return str(unit_id)


@pytest.fixture(scope="session")
def edit_record() -> Callable[..., str]:
    """:func:`edit_stored_record` as a fixture, for tests in any folder."""
    return edit_stored_record


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


# Under pytest-xdist (`pytest -n N`, set in pyproject.toml) tests go to whichever worker is
# free, one by one, except two sets that each stay on one worker: the sandbox tests read the
# host's process table for leftover sandboxed programs (rootless, another worker's programs
# would be taken for leftovers), and the Ray tests share a local Ray instance per module. The
# long tests are handed out first, so that no worker is left with one at the end.
_LONG_FIRST = ("real_model", "sandbox")  # folders of tests/


def _in_tests(path: Path) -> tuple[str, ...]:
    """The parts of ``path`` below this folder (none for a file outside it): a folder of the
    same name above the checkout must not count."""
    try:
        return path.resolve().relative_to(Path(__file__).resolve().parent).parts
    except ValueError:
        return ()


def worker_group(path: Path) -> str | None:
    """The pytest-xdist group of the tests in ``path`` (``None``: any worker)."""
    parts = _in_tests(path)
    if parts[:1] == ("sandbox",):
        return "sandbox"
    if parts and parts[-1].startswith("test_ray_"):
        return "ray"
    return None


# First: pytest-xdist reads the groups in its own hook of the same name.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        group = worker_group(item.path)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))

    def rank(item: pytest.Item) -> int:
        folder = _in_tests(item.path)[:1]
        return next(
            (i for i, name in enumerate(_LONG_FIRST) if folder == (name,)), len(_LONG_FIRST)
        )

    items.sort(key=rank)  # stable: the order within a rank is unchanged
