"""The generated tables of the docs match a fresh run (they are never typed by hand)."""

from __future__ import annotations

import importlib.util
import sys
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


MONITOR_SCRIPT = SCRIPT.with_name("monitor_tables.py")


@pytest.mark.slow
def test_docs_monitor_seed_row_is_regenerated_from_runs() -> None:
    """One of docs/monitor.md's 31 simulated pipelines (split seed 0 of the per-seed table: the
    default simulation, six conditions, under a minute): a change of the simulator that moves
    the monitor figures moves this row and fails here; ``python scripts/monitor_tables.py``
    regenerates them all. (The ablation table's seed 0 would cost two pipelines of eleven
    conditions each, and a change that moves it but not this row is a change of the
    ablations, which their own tests cover.)"""
    spec = importlib.util.spec_from_file_location("monitor_tables", MONITOR_SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    check = ["--only", "seeds", "--seeds", "0", "--check"]
    assert module.main(check) == 0, "run: python scripts/monitor_tables.py"
