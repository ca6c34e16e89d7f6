"""Stored records of GovSim games: one per game, with the lake month by month and transcripts."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, Field

from byzllm.agents.govsim import Utterance
from byzllm.envs.govsim import Harvest
from byzllm.runs import Record, UnitRequests

__all__ = ["CatchDecision", "GovSimGameRecord"]


class CatchDecision(BaseModel):
    """One catch decision as a game record keeps it: the month, the fisher, its wish and
    catch (None when it was discarded before the harvest), the monitor's decision, whether it
    was applied (a reset discards the month's decisions), whether the amount fell back to
    the parse default, the reply's text, how many decision positions it had and the most
    alternatives one of them reported (the run's top-k, which ``byzllm sim fit`` gives the
    twin; None in records written before it was kept).

    Typed so that a checked read refuses an edited month or wish: the fit and the
    transcripts read them as numbers."""

    month: int
    fisher: str
    wish: int
    catch: int | None
    decision: str
    applied: bool = True
    fallback: bool
    errors: list[str]
    text: str
    positions: int
    alternatives: int | None = None


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
    # Typed as the game's own models: the fit and the report read their numbers.
    harvests: list[Harvest] = Field(default_factory=list)
    meetings: list[list[Utterance]] = Field(default_factory=list)
    undone_meetings: list[list[Utterance]] = Field(default_factory=list)
    decisions: list[CatchDecision] = Field(
        default_factory=list,
        description="every catch decision: month, fisher, wish, catch, decision, fallback, "
        "reply text, decision positions, the most alternatives at one",
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
