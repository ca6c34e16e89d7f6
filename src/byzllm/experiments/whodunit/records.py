"""Stored records of WhoDunitEnv games: one per game, one per agent turn."""

from __future__ import annotations

from typing import Any, ClassVar

from byzllm.runs import Record, UnitRequests

from ..parse_health import MoveParse

__all__ = ["WhoDunitGameRecord", "WhoDunitTurnRecord"]


class WhoDunitGameRecord(Record):
    """One played game (``simulated`` results carry their simulation parameters)."""

    kind: ClassVar[str] = "whodunit_game"

    game_id: str
    split: str
    repeat: int
    variant: str
    agents: str
    n_suspects: int
    success: bool
    accused: bool
    culprit: int
    accused_suspect: int | None
    total_turns: int
    resets: int
    parse_failures: int
    fallbacks: int
    invalid_actions: int
    hallucinations: int
    repetitions: int
    ignored_facts: int
    simulated: bool
    sim_params: dict[str, Any] | None = None
    parse: MoveParse = None
    requests: UnitRequests = None


class WhoDunitTurnRecord(Record):
    """One agent turn of a played game."""

    kind: ClassVar[str] = "whodunit_turn"

    game_id: str
    repeat: int
    success: bool
    turn: int
    budget_turn: int
    role: str
    agent: str
    action: dict[str, Any]
    valid: bool
    errors: list[str]
    fallback: bool
    #: The rules refused the agent's action, passed instead (false in records stored before
    #: it was recorded, when ``fallback`` covered both).
    rejected: bool = False
    decision: str
    message: str
    remaining_candidates: list[int]
    hallucination: bool
    repetition: bool
    ignored_fact: bool
    noise: list[str]
    distributions: list[list[tuple[str, float]]]
    simulated: bool
