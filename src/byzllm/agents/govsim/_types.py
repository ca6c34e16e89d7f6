"""Plain data the GovSim fishers see and produce (Piatti et al. 2024; the rogue-agents paper,
§4.1).

The environment (``byzllm.envs.govsim``) builds a :class:`FisherView` for a fisher, who
answers with a :class:`CatchTurn` (how many tons to catch this month) or a
:class:`SpeechTurn` (one utterance of the monthly discussion). The view holds what GovSim's
fishers are told: the lake, its stock and capacity, the regrowth rule, their own and the
others' past catches, and the discussion so far. It never holds anything about interventions:
after a reset (the rogue-agents paper, §4.1) the fishers discuss again "without any knowledge
of the reset"; ``attempt`` only keys a simulated fisher's random draws (a fresh sample, as a
sampled model would give) and is never rendered into a prompt.
"""

from __future__ import annotations

import random
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "CatchTurn",
    "Fisher",
    "FisherView",
    "SpeechTurn",
    "TopLogprobs",
    "Utterance",
]

#: The top-k alternatives at one generated position, ``(token, logprob)`` pairs by descending
#: log-probability; the same shape as ``byzllm.envs.TopLogprobs`` (agents sit below envs).
TopLogprobs = list[tuple[str, float]]


class Utterance(BaseModel):
    """One utterance of a monthly discussion, as every fisher sees it.

    ``amounts`` are the resource amounts (tons) the speaker wrote, in order; they are what
    the simulated fishers read from a discussion (LLM-backed fishers read the text).
    """

    model_config = ConfigDict(frozen=True)

    month: int = Field(ge=1)
    speaker: str
    text: str
    amounts: tuple[int, ...] = ()


class FisherView(BaseModel):
    """Everything one fisher knows when it acts.

    - ``month`` / ``months``: the current month (1-based) and the game's length ``m``.
    - ``stock``: tons in the lake now (before this month's harvest in the harvest phase,
      after it in the discussion phase); ``capacity``: the lake's maximum, ``R_0``.
    - ``catches``: per past month, every fisher's catch by name (``{name: tons}``).
    - ``discussion``: the utterances of the current month's discussion so far (discussion
      phase), or of the previous month's discussion (harvest phase); ``earlier``: the
      discussions before that, oldest first.
    - ``collapse_below``: the collapse threshold ``γ``.
    - ``attempt``: how many times this month's discussion was reset before (0 unless an
      intervention happened); never shown to a model.
    - ``draw``: how many times this same decision was asked before (a resample, the
      rogue-agents paper, §6.1); never shown to a model.
    """

    model_config = ConfigDict(frozen=True)

    game_id: str
    name: str
    fishers: tuple[str, ...]
    month: int = Field(ge=1)
    months: int = Field(ge=1)
    stock: int = Field(ge=0)
    capacity: int = Field(ge=1)
    collapse_below: int = Field(ge=0)
    catches: tuple[dict[str, int], ...] = ()
    discussion: tuple[Utterance, ...] = ()
    earlier: tuple[Utterance, ...] = ()
    attempt: int = Field(default=0, ge=0)
    draw: int = Field(default=0, ge=0)

    @property
    def others(self) -> tuple[str, ...]:
        """The other fishers, in seat order."""
        return tuple(f for f in self.fishers if f != self.name)

    def own_catches(self) -> list[int]:
        """This fisher's catch in every past month."""
        return [month.get(self.name, 0) for month in self.catches]


class CatchTurn(BaseModel):
    """A fisher's harvest decision for one month.

    ``wish`` is the tons it asks for (the lake may give less, see
    ``byzllm.envs.govsim.assign_catches``). ``distributions`` are the top-k distributions
    at the positions where it wrote the amount (the rogue-agents paper, §4.1). ``fallback``
    is true when no reply gave a valid amount and ``wish`` is the documented default
    (:data:`byzllm.agents.govsim.FALLBACK_CATCH`); ``parse_errors`` gives each rejected
    reply's reason. ``rogue`` is a simulated fisher's own label (never read by a monitor).
    """

    wish: int = Field(ge=0)
    text: str = ""
    distributions: list[TopLogprobs] = Field(default_factory=list)
    replies: list[str] = Field(default_factory=list)
    parse_errors: list[str] = Field(default_factory=list)
    fallback: bool = False
    simulated: bool = False
    rogue: bool = False


class SpeechTurn(BaseModel):
    """One utterance: its text, the amounts it mentions and their distributions."""

    text: str
    amounts: tuple[int, ...] = ()
    distributions: list[TopLogprobs] = Field(default_factory=list)
    simulated: bool = False
    empty: bool = Field(default=False, description="the reply was empty (nothing was said)")


class Fisher(Protocol):
    """A GovSim fisher: LLM-backed or simulated, behind one interface."""

    name: str

    async def catch(self, view: FisherView, rng: random.Random) -> CatchTurn:
        """How many tons to catch this month."""
        ...

    async def speak(self, view: FisherView, rng: random.Random) -> SpeechTurn:
        """One utterance of this month's discussion."""
        ...
