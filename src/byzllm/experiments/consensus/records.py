"""Stored records of consensus units: one per agent per round, one per question."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from byzllm.protocols import (
    QuestionTrace,
)
from byzllm.runs import Record, UnitRequests

__all__ = ["ConsensusQuestion", "ConsensusRound"]


class ConsensusRound(Record):
    """One agent in one round of one unit (flat, for per-round analysis and CSV export)."""

    kind: ClassVar[str] = "consensus_round"

    protocol: str
    topology: str
    composition: str
    F: int
    T: int
    seed: int
    task_id: str
    simulated: bool
    agent: int
    agent_name: str
    group: str
    round: int
    answer: str | None
    correct: bool
    self_score: float | None
    scores: dict[int, float]
    confidence: float | None
    peer_confidences: dict[int, float]
    retained: list[int]
    filtered: list[int]
    calls: int
    cached_calls: int
    saved_calls: int
    input_tokens: int
    output_tokens: int
    latency_s: float
    parse: dict[str, dict[str, int]] = Field(
        default_factory=dict,
        description="replies this agent parsed in this round, per stage: {stage: {calls, "
        "fallbacks}} (empty for simulated agents and adversaries that call no model)",
    )


class ConsensusQuestion(Record):
    """One unit's whole trace with its configuration, agents and graph certificate."""

    kind: ClassVar[str] = "consensus_question"

    protocol: str
    topology: str
    composition: str
    composition_config: dict[str, Any]
    F: int
    T: int
    seed: int
    task_id: str
    simulated: bool
    byzantine_nodes: list[int]
    edges: list[tuple[int, int]]
    robustness: dict[str, Any]
    agents: list[dict[str, Any]]
    trace: QuestionTrace
    parse: dict[str, dict[str, int]] | None = Field(
        default=None,
        description="the unit's parse health: replies parsed per stage, all agents and rounds "
        "({} when no agent parsed model output; None in records written before it was kept)",
    )
    requests: UnitRequests = None
