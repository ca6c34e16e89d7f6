"""The protocols package: its metrics load alone, its engine and protocols on first use."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

import byzllm.protocols as protocols

Probe = Callable[[str, Sequence[str]], list[str]]

#: What a reader of stored records does not need: the engine and what it brings.
ENGINE = ("networkx", "byzllm.llm", "byzllm.agents.consensus", "byzllm.protocols._engine")


def test_the_metrics_load_without_the_engine(loaded_after: Probe) -> None:
    code = "from byzllm.protocols import COUNT_FIELDS, compute_metrics"
    assert loaded_after(code, ENGINE) == []


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


def test_the_consensus_report_loads_without_agents_engine_or_models(loaded_after: Probe) -> None:
    """``consensus report`` and the viewer read stored records: no agents, no engine."""
    report = "import byzllm.experiments.consensus.report"
    assert loaded_after(report, ENGINE) == []
    # The config, asked for by name, brings the agents and the model layer; never the engine.
    config = f"{report}\nfrom byzllm.experiments.consensus import ConsensusConfig"
    assert loaded_after(config, ENGINE) == ["byzllm.agents.consensus", "byzllm.llm"]
