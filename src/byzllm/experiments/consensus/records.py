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
    """One agent in one round of one unit (flat, for per-round analysis and CSV export).

    It restates the unit's :class:`ConsensusQuestion` (a row of its trace, with the
    question's fields and the agent's name and group), so the store keeps it as a count and
    rebuilds it from the question record when read (:meth:`derive`).
    """

    kind: ClassVar[str] = "consensus_round"
    derived_from: ClassVar[str | None] = "consensus_question"

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

    @classmethod
    def derive(cls, source: dict[str, Any]) -> list[dict[str, Any]]:
        """The round records of a stored question record (JSON values), one per row of its
        trace in round order, as the unit returned them."""
        common = {name: source[name] for name in _QUESTION_FIELDS}
        agents = source["agents"]
        fields = cls.model_fields
        records = []
        for round_rows in source["trace"]["rounds"]:
            for row in round_rows:
                agent = agents[row["agent"]]
                values = {**common, **row, "agent_name": agent["name"], "group": agent["group"]}
                records.append({name: values[name] for name in fields if name in values})
        return records


#: The fields a round record takes from its question record.
_QUESTION_FIELDS = ("protocol", "topology", "composition", "F", "T", "seed", "task_id", "simulated")


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
