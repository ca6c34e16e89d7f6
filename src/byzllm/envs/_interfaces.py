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

    ``turn`` counts the game's turns so far, this one and every discarded one included (it
    only grows). ``run_turn`` is the environment's own turn clock, the one a monitor's
    turn-count feature reads (the monitor experiments train on it). Per environment:

    - WhoDunitEnv: ``turn`` is the game's total turn count, ``run_turn`` the turn counted
      since the last reset (1 on the first turn of the game and after each reset; what the
      agents' turn budget shows them). Without interventions the two agree.
    - GovSim: ``run_turn`` is the month (the paper's round, §4.1; a reset does not rewind
      it), ``turn`` counts the catch decisions of all fishers, month 1's included, so the
      two never agree: with 5 fishers and no reset, month 2's decisions are turns 6-10 and
      month 12's are 56-60.
    - CodeGen: ``run_turn`` is the feedback round ``j - 1``, ``turn`` counts the judge's and
      the tester's turns.

    A resampled turn keeps its ``run_turn``. The game loops set it exactly; ``None`` means
    an environment that does not report it (an intervener may then infer it from its own
    interventions, counting as WhoDunitEnv does).
    """

    game_id: str
    turn: int = Field(
        ge=1, description="turns so far, this one and discarded ones included (1-based)"
    )
    run_turn: int | None = Field(
        default=None,
        ge=1,
        description="the environment's turn clock, which monitors read (WhoDunitEnv: the "
        "turn since the last reset; GovSim: the month; CodeGen: the feedback round)",
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
