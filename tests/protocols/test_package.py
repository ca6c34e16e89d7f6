"""The protocols package: its metrics load alone, its engine and protocols on first use."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import byzllm.protocols as protocols


def test_the_metrics_load_without_the_engine() -> None:
    probe = (
        "import sys, json\n"
        "from byzllm.protocols import COUNT_FIELDS, compute_metrics\n"
        "print(json.dumps(sorted(m for m in ('networkx', 'numpy', 'byzllm.llm',"
        " 'byzllm.agents', 'byzllm.protocols._engine') if m in sys.modules)))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


def test_every_exported_name_resolves() -> None:
    for name in protocols.__all__:
        assert getattr(protocols, name) is not None, name
    assert set(protocols.PROTOCOLS) == {"sac", "cp-wbft", "debate", "majority", "w-msr"}
    assert protocols.PROTOCOLS["sac"] is protocols.SAC
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = protocols.nope  # type: ignore[attr-defined]


def test_make_protocol_still_names_the_choices() -> None:
    from byzllm.errors import InputError

    assert type(protocols.make_protocol("W-MSR", F=1)).__name__ == "WMSR"
    with pytest.raises(InputError, match="sac, cp-wbft, debate, majority, w-msr"):
        protocols.make_protocol("raft")


def test_the_consensus_report_loads_without_agents_engine_or_models() -> None:
    """``consensus report`` and the viewer read stored records: no agents, no engine."""
    probe = (
        "import sys, json\n"
        "heavy = ('networkx', 'byzllm.llm', 'byzllm.agents.consensus',"
        " 'byzllm.protocols._engine')\n"
        "import byzllm.experiments.consensus.report\n"
        "print(json.dumps(sorted(m for m in heavy if m in sys.modules)))\n"
        "from byzllm.experiments.consensus import ConsensusConfig\n"
        "print(json.dumps(sorted(m for m in heavy if m in sys.modules)))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    report_only, with_config = (json.loads(line) for line in done.stdout.splitlines())
    assert report_only == []
    # The config, asked for by name, brings the agents and the model layer; never the engine.
    assert with_config == ["byzllm.agents.consensus", "byzllm.llm"]
