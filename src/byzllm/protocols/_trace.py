"""What a consensus run records: per question, per round, per agent.

Convention: the record of round t holds the response r_i^(t) and what the agent did *with*
round-t messages (scores, filter, confidence) to produce r_i^(t+1); its call counters charge
every model call made in that step (round 0 also charges the initial answer). The record of
round T holds the final responses.
"""

from __future__ import annotations

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
