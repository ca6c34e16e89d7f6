"""What every game environment shares with monitors and interventions.

An environment plays turns; after an agent has produced its action and *before* the action
takes effect, the game loop shows a :class:`TurnObservation` to an optional
:class:`Intervener`, which answers ``"continue"``, ``"reset"`` (roll the environment back to
its last irreversible action, the rogue-agents paper, §2) or ``"resample"`` (discard this action
and ask the
same agent again, the ablation of the rogue-agents paper, §6.1). WhoDunitEnv, GovSim and CodeGen
all use
exactly these types, so monitors work unchanged across them.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field

__all__ = ["Decision", "Intervener", "TopLogprobs", "TurnObservation"]

#: The top-k alternatives at one generated position: ``(token, logprob)`` pairs, sorted by
#: descending log-probability (a truncated distribution; it need not sum to 1).
TopLogprobs = list[tuple[str, float]]

#: An intervener's verdict on one turn.
Decision = Literal["continue", "reset", "resample"]


class TurnObservation(BaseModel):
    """One agent turn as a monitor sees it, before the action takes effect.

    ``distributions`` holds the top-k distributions at the turn's *decision positions*
    (for WhoDunitEnv: where the agent generated the action number and a character id);
    it is empty when the turn had none.

    ``turn`` is the game's total turn count, including this turn and every turn spent before
    an intervention (it only grows). ``run_turn`` is the turn counted since the game's last
    reset (1 on the first turn of the game and on the first turn after each reset; a
    resampled turn keeps its run turn); it is what the agents' turn budget shows them. The
    game loop sets it exactly; ``None`` means an environment that does not report it (an
    intervener may then infer it from its own interventions). Without interventions the
    two counts agree.
    """

    game_id: str
    turn: int = Field(ge=1, description="total turn count so far, including this turn (1-based)")
    run_turn: int | None = Field(
        default=None,
        ge=1,
        description="turn counted since the last reset, including this turn (1-based)",
    )
    role: str
    agent: str
    action: dict[str, Any] = Field(default_factory=dict)
    distributions: list[TopLogprobs] = Field(default_factory=list)


class Intervener(Protocol):
    """Decides, turn by turn, whether to let an action take effect."""

    def decide(self, obs: TurnObservation) -> Decision:
        """Return ``"continue"``, ``"reset"`` or ``"resample"`` for this turn."""
        ...
