"""The generated tables of the docs match a fresh run (they are never typed by hand)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "consensus_tables.py"


@pytest.mark.slow
def test_docs_consensus_tables_are_regenerated_from_runs() -> None:
    spec = importlib.util.spec_from_file_location("consensus_tables", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--check"]) == 0, "run: python scripts/consensus_tables.py"
