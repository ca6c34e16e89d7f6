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
    "_figures": 0,
    "_lazy": 0,
    "_files": 0,
    "_strict": 0,
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

#: Subpackages that may import only these, whatever their layer: the run engine knows no
#: domain (no agents, protocols, environments, monitors or experiments), only models.
ONLY_FROM: dict[str, set[str]] = {
    "runs": {"errors", "_process", "_figures", "_lazy", "_files", "_strict", "llm"}
}


def _imports(path: Path, root: Path = PACKAGE) -> set[str]:
    """The ``byzllm.*`` modules a file imports (at the top or inside a function)."""
    parts = path.relative_to(root.parent).with_suffix("").parts
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


def violations(path: Path, root: Path = PACKAGE) -> list[str]:
    """Each import of ``path`` that breaks the layer rule or its subpackage's ONLY_FROM list."""
    own = path.relative_to(root).with_suffix("").parts[0]
    found = []
    for name in sorted(_imports(path, root)):
        other = name.split(".")[1]
        if other == own:
            continue
        if LAYERS.get(other, 0) >= LAYERS[own]:
            found.append(f"{name} (layer {LAYERS.get(other, 0)} >= {own}'s {LAYERS[own]})")
        elif own in ONLY_FROM and other not in ONLY_FROM[own]:
            found.append(f"{name} ({own} may import only {sorted(ONLY_FROM[own])})")
    return found


def _modules(root: Path = PACKAGE) -> list[Path]:
    """Every module of a subpackage, and the top-level modules (``errors.py``, ...)."""
    return sorted(p for p in root.rglob("*.py") if p != root / "__init__.py")


def test_every_subpackage_has_a_layer() -> None:
    subpackages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    modules = {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    assert subpackages | modules <= set(LAYERS), (subpackages | modules) - set(LAYERS)


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_point_down(path: Path) -> None:
    found = violations(path)
    assert not found, f"{path.relative_to(PACKAGE)} imports against the layers: {found}"


@pytest.mark.parametrize(
    ("module", "source", "expected"),
    [
        # A lower layer reaching up: the model layer importing the command line.
        ("graphs/_planted.py", "from byzllm.cli import app\n", "byzllm.cli (layer"),
        # The same inside a function (a lazy import is still an import).
        ("agents/_planted.py", "def f():\n    from byzllm.runs import Store\n", "byzllm.runs"),
        # Sideways within one layer.
        ("envs/_planted.py", "import byzllm.protocols.sac\n", "byzllm.protocols.sac (layer"),
        # Relative imports resolve too.
        ("runs/_planted.py", "from ..experiments import reports\n", "byzllm.experiments"),
        # The run engine importing a domain that sits below it.
        ("runs/_planted.py", "from byzllm.agents import ParseCounts\n", "may import only"),
    ],
)
def test_a_planted_violation_is_caught(
    tmp_path: Path, module: str, source: str, expected: str
) -> None:
    root = tmp_path / "byzllm"
    planted = root / module
    planted.parent.mkdir(parents=True)
    planted.write_text(source, encoding="utf-8")
    found = violations(planted, root)
    assert len(found) == 1 and expected in found[0], found


def test_an_allowed_import_is_not_flagged(tmp_path: Path) -> None:
    root = tmp_path / "byzllm"
    planted = root / "experiments" / "_planted.py"
    planted.parent.mkdir(parents=True)
    planted.write_text("from byzllm.runs import Store\nfrom . import reports\n", encoding="utf-8")
    assert violations(planted, root) == []


def _subpackages() -> list[Path]:
    return sorted(p for p in PACKAGE.iterdir() if (p / "__init__.py").exists())


#: Subpackages whose ``__init__`` does not state its imports yet (strict: passing fails).
UNSTATED: set[str] = set()


@pytest.mark.parametrize(
    "package",
    [
        pytest.param(
            p,
            id=p.name,
            marks=[pytest.mark.xfail(strict=True, reason="no 'May import:' line yet")]
            if p.name in UNSTATED
            else [],
        )
        for p in _subpackages()
    ],
)
def test_each_subpackage_says_what_it_is_and_may_import(package: Path) -> None:
    """The first paragraph of each ``__init__``: what it is, and what it may import, in at
    most three lines."""
    doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text(encoding="utf-8")))
    assert doc, f"{package.name}/__init__.py has no docstring"
    head = doc.split("\n\n")[0].splitlines()
    assert len(head) <= 3 and head[-1].startswith("May import:"), head


def test_no_subpackage_holds_more_than_a_fifth_of_the_lines() -> None:
    def lines(paths: list[Path]) -> int:
        return sum(len(p.read_text(encoding="utf-8").splitlines()) for p in paths)

    total = lines(sorted(PACKAGE.rglob("*.py")))
    shares = {p.name: lines(sorted(p.rglob("*.py"))) / total for p in _subpackages()}
    assert max(shares.values()) <= 0.20, {k: round(v, 3) for k, v in shares.items()}


def _domains(layer: str) -> list[Path]:
    return sorted(p for p in (PACKAGE / layer).iterdir() if (p / "__init__.py").exists())


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


# --- docs/architecture.md names only what exists ------------------------------------------------

ROOT = PACKAGE.parents[1]
DOMAINS = ("consensus", "whodunit", "govsim", "codegen", "monitor")


def _named_in_architecture_page() -> tuple[set[str], set[str]]:
    """The module paths (``runs/_store.py``, ``envs/<domain>/``, ``tests/...``) and dotted
    names (``byzllm.runs.Record``) docs/architecture.md mentions, in prose or diagrams."""
    import re

    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    paths = set(
        re.findall(
            r"(?<![\w./<>-])((?:[a-z_]+|<domain>)(?:/(?:[a-z_]+|<domain>))*/(?:[a-z_]+\.py)?)", text
        )
    )
    paths |= set(re.findall(r"(?<![\w./<>-])((?:[a-z_]+/)+[a-z_]+\.py)", text))
    dotted = set(re.findall(r"\bbyzllm(?:\.[A-Za-z_]+)+", text))
    return paths, dotted


def _exists(path: str) -> bool:
    base = ROOT if path.split("/")[0] in {"tests", "docs", "src"} else PACKAGE
    candidates = [path.replace("<domain>", d) for d in DOMAINS] if "<domain>" in path else [path]
    return any((base / c).exists() for c in candidates)


def test_every_module_the_architecture_page_names_exists() -> None:
    paths, _ = _named_in_architecture_page()
    assert {"runs/_runner.py", "runs/_store.py", "cli/whodunit.py", "view/_games.py"} <= paths
    missing = sorted(p for p in paths if not _exists(p))
    assert not missing, f"docs/architecture.md names modules that do not exist: {missing}"


def test_every_name_the_architecture_page_imports_exists() -> None:
    import importlib

    _, dotted = _named_in_architecture_page()
    assert "byzllm.view.register_view" in dotted
    for name in sorted(dotted):
        parts = name.split(".")
        for cut in range(len(parts), 0, -1):
            try:
                found: object = importlib.import_module(".".join(parts[:cut]))
            except ImportError:
                continue
            for attribute in parts[cut:]:
                assert hasattr(found, attribute), f"docs/architecture.md: no {name}"
                found = getattr(found, attribute)
            break


def test_the_architecture_page_draws_every_layer() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    for name, layer in LAYERS.items():
        shown = f"{name}/" if (PACKAGE / name).is_dir() else name
        assert any(line.startswith(f"{layer} ") and shown in line for line in text.splitlines()), (
            f"{shown} is not drawn on layer {layer}"
        )
