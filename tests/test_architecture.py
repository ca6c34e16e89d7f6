"""The package's structure, as docs/architecture.md states it: layers, and one shape per domain."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "byzllm"

#: Each top-level subpackage and its layer: a module may import only from lower layers (or its
#: own subpackage). The same map is drawn in docs/architecture.md.
LAYERS: dict[str, int] = {
    "errors": 0,
    "_process": 0,
    "graphs": 1,
    "tasks": 1,
    "llm": 1,
    "sandbox": 1,
    "testing": 2,
    "agents": 2,
    "protocols": 3,
    "envs": 3,
    "monitor": 4,
    "runs": 5,
    "experiments": 6,
    "view": 7,
    "reproduce": 8,
    "cli": 9,
}

#: The inner shape every domain repeats in a layer.
AGENT_MODULES = {"_types", "_prompts", "_parse", "_llm", "_sim"}
EXPERIMENT_MODULES = {"config", "records", "experiment"}


def _imports(path: Path) -> set[str]:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(parts[: len(parts) - node.level])
                found.add(".".join([*base, node.module] if node.module else base))
            elif node.module:
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name.startswith("byzllm.")}


def _modules() -> list[Path]:
    """Every module of a subpackage, and the top-level modules (``errors.py``, ...)."""
    return sorted(p for p in PACKAGE.rglob("*.py") if p != PACKAGE / "__init__.py")


def test_every_subpackage_has_a_layer() -> None:
    subpackages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    modules = {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    assert subpackages | modules <= set(LAYERS), (subpackages | modules) - set(LAYERS)


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_point_down(path: Path) -> None:
    own = path.relative_to(PACKAGE).with_suffix("").parts[0]
    upward = [
        name
        for name in _imports(path)
        if (other := name.split(".")[1]) != own and LAYERS.get(other, 0) >= LAYERS[own]
    ]
    assert not upward, f"{path.relative_to(PACKAGE)} imports a layer at or above its own: {upward}"


#: Subpackages of a layer that serve every domain rather than being one (the run viewer).
SHARED_SUBPACKAGES: dict[str, set[str]] = {}


def _domains(layer: str) -> list[Path]:
    shared = SHARED_SUBPACKAGES.get(layer, set())
    return sorted(
        p
        for p in (PACKAGE / layer).iterdir()
        if (p / "__init__.py").exists() and p.name not in shared
    )


@pytest.mark.parametrize("domain", _domains("agents"), ids=lambda p: p.name)
def test_agent_domains_share_one_shape(domain: Path) -> None:
    modules = {p.stem for p in domain.glob("*.py")}
    assert modules >= AGENT_MODULES, AGENT_MODULES - modules


@pytest.mark.parametrize("domain", _domains("experiments"), ids=lambda p: p.name)
def test_experiment_domains_share_one_shape(domain: Path) -> None:
    modules = {p.stem for p in domain.glob("*.py")}
    assert modules >= EXPERIMENT_MODULES, EXPERIMENT_MODULES - modules


def test_domains_are_the_same_across_layers() -> None:
    agents = {p.name for p in _domains("agents")}
    envs = {p.name for p in _domains("envs")}
    experiments = {p.name for p in _domains("experiments")}
    # Every environment has its agents and its experiments; monitor experiments have no agents.
    assert envs <= agents
    assert agents <= experiments
