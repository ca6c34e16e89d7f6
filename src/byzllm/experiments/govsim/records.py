"""Stored records of GovSim games: one per game, with the lake month by month and transcripts."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from byzllm.runs import Record, UnitRequests

__all__ = ["GovSimGameRecord"]


class GovSimGameRecord(Record):
    """One played game: the three metrics (Piatti et al. 2024; the rogue-agents paper, §4.1),
    the stock and catches per month, the meetings, and the catch decisions.

    ``simulated`` results carry their simulation parameters.
    """

    kind: ClassVar[str] = "govsim_game"

    game_id: str
    split: str
    repeat: int
    r0: int
    agents: str
    months: int
    collapse_below: int = 5
    months_played: int
    collapsed: bool
    survival_time: int
    survival_rate: float
    efficiency: float
    total_catch: int
    stocks: list[int] = Field(description="stock at the start of each month played")
    harvests: list[dict[str, Any]] = Field(default_factory=list)
    meetings: list[list[dict[str, Any]]] = Field(default_factory=list)
    undone_meetings: list[list[dict[str, Any]]] = Field(default_factory=list)
    decisions: list[dict[str, Any]] = Field(
        default_factory=list,
        description="every catch decision: month, fisher, wish, catch, decision, fallback, "
        "reply text, decision positions",
    )
    resets: int = 0
    resamples: int = 0
    parse_failures: int = 0
    fallbacks: int = 0
    simulated: bool
    sim_params: dict[str, Any] | None = None
    parse: dict[str, dict[str, int]] | None = Field(
        default=None,
        description="parse health: {'catch': {calls, fallbacks}}, one call per catch decision, "
        "a fallback per decision that fell back to 0 tons ({} for simulated fishers)",
    )
    requests: UnitRequests = None
