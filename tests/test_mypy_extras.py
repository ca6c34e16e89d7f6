"""The README's developer line (`ruff check . && mypy && pytest`) passes without the optional
extras: every module of an optional extra that src/ imports has a mypy override that lets
it be missing (it is checked against its own types when installed)."""

from __future__ import annotations

import ast
import re
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _imported_top_level() -> set[str]:
    names: set[str] = set()
    for path in (ROOT / "src" / "byzllm").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module.split(".")[0])
    return names


def test_every_optional_import_may_be_missing_for_mypy() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    base = {_name(r) for r in project["project"]["dependencies"]}
    extras = (
        {
            _name(r)
            for name, requirements in project["project"]["optional-dependencies"].items()
            if name != "dev"
            for r in requirements
        }
        - base
        - {_name(project["project"]["name"])}
    )  # an extra may name others: byzllm[...]
    allowed = set()
    for override in project["tool"]["mypy"]["overrides"]:
        if override.get("ignore_missing_imports"):
            modules = override["module"]
            allowed |= {
                m.removesuffix(".*") for m in ([modules] if isinstance(modules, str) else modules)
            }
    owners = packages_distributions()
    optional = {
        module
        for module in _imported_top_level()
        if {_name(d) for d in owners.get(module, [])} & extras
    }
    assert optional, "no optional extra is installed here to check"
    assert optional <= allowed, (
        f"add to [[tool.mypy.overrides]] ignore_missing_imports: {sorted(optional - allowed)}"
    )
