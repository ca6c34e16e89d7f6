"""The package docstrings list what their package holds now, and their examples run as written."""

from __future__ import annotations

import ast
import contextlib
import io
import subprocess
import sys
import textwrap
from pathlib import Path

import byzllm
import byzllm.agents
import byzllm.sandbox
import byzllm.testing

PACKAGE = Path(byzllm.__file__).resolve().parent


def _example(doc: str | None) -> str:
    """The literal block a docstring introduces with ``::``, dedented."""
    assert doc and "::\n" in doc
    block = doc.split("::\n", 1)[1]
    # The block ends at the first line that is not indented (or at the docstring's end).
    lines = block.splitlines(keepends=True)
    end = next((i for i, line in enumerate(lines) if line.strip() and line[0] != " "), len(lines))
    return textwrap.dedent("".join(lines[:end]))


def _subpackages(root: Path) -> list[str]:
    return sorted(p.parent.name for p in root.glob("*/__init__.py"))


def test_the_package_docstring_names_every_subpackage() -> None:
    doc = byzllm.__doc__ or ""
    missing = [name for name in _subpackages(PACKAGE) if name not in doc]
    assert not missing, f"byzllm/__init__.py does not name {missing}"


def test_the_agents_docstring_names_every_domain_and_shared_module() -> None:
    doc = byzllm.agents.__doc__ or ""
    root = PACKAGE / "agents"
    names = _subpackages(root) + [p.stem for p in root.glob("_*.py") if p.stem != "__init__"]
    missing = [name for name in names if name not in doc]
    assert not missing, f"byzllm/agents/__init__.py does not name {missing}"


def test_the_sandbox_docstring_names_every_public_function() -> None:
    doc = byzllm.sandbox.__doc__ or ""
    functions = [name for name in byzllm.sandbox.__all__ if name.islower()]
    missing = [name for name in functions if f":func:`{name}`" not in doc]
    assert not missing, f"byzllm/sandbox/__init__.py does not name {missing}"


def test_the_testing_example_runs_as_written() -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(_example(byzllm.testing.__doc__), {"__name__": "example"})
    assert out.getvalue().strip() == "42"


def test_the_pytest_plugin_example_runs_as_written(tmp_path: Path) -> None:
    # Read from the source: importing the plugin here would keep pytest from rewriting its
    # asserts where tests/testing registers it.
    source = (PACKAGE / "testing" / "pytest_plugin.py").read_text(encoding="utf-8")
    example = _example(ast.get_docstring(ast.parse(source)))
    conftest, test = example.split("# test_pipeline.py\n")
    (tmp_path / "conftest.py").write_text(conftest, encoding="utf-8")
    (tmp_path / "test_pipeline.py").write_text(test, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", "."],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
