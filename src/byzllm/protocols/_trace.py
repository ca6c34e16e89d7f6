"""What a consensus run records: per question, per round, per agent.

Convention: the record of round t holds the response r_i^(t) and what the agent did *with*
round-t messages (scores, filter, confidence) to produce r_i^(t+1); its call counters charge
every model call made in that step (round 0 also charges the initial answer). The record of
round T holds the final responses.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["AgentRound", "QuestionTrace"]


class AgentRound(BaseModel):
    """One agent in one round of one question."""

    model_config = ConfigDict(extra="forbid")

    agent: int
    round: int
    answer: str | None
    key: str | None = Field(default=None, description="normalized answer (votes compare keys)")
    text: str = ""
    correct: bool
    self_score: float | None = None
    scores: dict[int, float] = Field(default_factory=dict, description="s_{i→j} given")
    confidence: float | None = Field(default=None, description="self-reported (CP-WBFT)")
    peer_confidences: dict[int, float] = Field(default_factory=dict)
    retained: list[int] = Field(default_factory=list)
    filtered: list[int] = Field(default_factory=list)
    calls: int = 0
    cached_calls: int = 0
    saved_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    latency_s: float = 0.0
    parse: dict[str, dict[str, int]] = Field(
        default_factory=dict,
        description="replies parsed per stage: {stage: {calls, fallbacks}} (parse health)",
    )

    @classmethod
    def trusted(cls, values: dict[str, Any]) -> AgentRound:
        """A row from values that already have their fields' exact types (the round engine's
        own, on a network of agents that call no model): built without validation (a
        simulated question builds 49 of them). Fields missing from ``values`` take their
        defaults; the row equals the validated one and dumps the same."""
        row = cls.__new__(cls)
        fields = _TEMPLATE.copy()  # every field in declaration order, as validation orders them
        fields.update(values)
        for name, empty in _CONTAINERS:
            if name not in values:
                fields[name] = empty()  # a fresh container per row, as default_factory gives
        object.__setattr__(row, "__dict__", fields)
        object.__setattr__(row, "__pydantic_fields_set__", set(values))
        object.__setattr__(row, "__pydantic_extra__", None)
        object.__setattr__(row, "__pydantic_private__", None)
        return row


#: AgentRound's defaults in declaration order (the order of a validated row's values).
_TEMPLATE: dict[str, Any] = {
    name: field.get_default(call_default_factory=True)
    for name, field in AgentRound.model_fields.items()
}
#: The fields whose default is a fresh container (default_factory).
_CONTAINERS: tuple[tuple[str, type[dict[Any, Any]] | type[list[Any]]], ...] = tuple(
    (name, type(value)) for name, value in _TEMPLATE.items() if isinstance(value, dict | list)
)


class QuestionTrace(BaseModel):
    """The whole run of one protocol on one question: ``rounds[t][i]`` is agent i at round t."""

    model_config = ConfigDict(extra="forbid")

    task_id: str
    protocol: str
    truth: str
    groups: list[str]
    rounds: list[list[AgentRound]]

    @property
    def n_rounds(self) -> int:
        """T, the number of communication rounds (``len(rounds) - 1``)."""
        return len(self.rounds) - 1
