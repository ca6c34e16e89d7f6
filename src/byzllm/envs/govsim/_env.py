"""GovSim's fishing lake: state, rules, and rollback of a discussion (Piatti et al. 2024; the
rogue-agents paper, §4.1).

**A month** ``j`` (1-based), in the order of GovSim's code (Piatti et al. 2024: harvest, the
fishers at the lake, the restaurant conversation, home; then the end-of-month check):

1. *Harvest* (irreversible): every fisher states a wish at once (concurrently); a wish above
   the stock is capped at the stock (the action set is ``a ∈ [0, R_j]``); if the wishes add up
   to more than the stock, :func:`assign_catches` divides it. The stock after fishing is
   ``R*_j = R_j − Σ catches``; the lake has **collapsed** if ``R*_j < γ``.
2. *Meeting* (reversible): up to ``utterances`` utterances, fishers speaking in seat order.
   It is held every month, also after a collapse and after the last harvest, as GovSim's
   code does (it ends the game only once the month's conversation is over).
3. *End of month*: if the lake collapsed in this month, or ``j = m``, the game is over;
   otherwise *regrowth*: ``R_{j+1} = min(2·R*_j, R_0)``.

**Snapshot and rollback.** Harvests are irreversible, discussion is reversible. The
environment keeps a snapshot of the state right after the last harvest (before its meeting):
:meth:`GovSimEnv.rollback_discussion` restores it exactly, so the meeting it undoes (and the
regrowth after it) can be held again; the harvests stay untouched. Only the reset and turn
counters survive a rollback (they only grow).
"""

from __future__ import annotations

import math
import random
from typing import Literal

from pydantic import BaseModel, Field

from byzllm.agents.govsim import FisherView, Utterance
from byzllm.errors import InputError

from ._games import GovSimGame, LakeConfig

__all__ = ["GovSimEnv", "Harvest", "LakeState", "Phase", "assign_catches", "regrow"]

#: Where a month stands.
Phase = Literal["harvest", "meeting", "over"]


def regrow(stock_after: int, capacity: int) -> int:
    """``R_{j+1} = min(2·R*_j, R_0)`` (the rogue-agents paper, §4.1)."""
    if stock_after < 0 or capacity < 0:
        raise ValueError("stocks are never negative")
    return min(2 * stock_after, capacity)


def _proportional(wishes: list[int], stock: int) -> list[int]:
    total = sum(wishes)
    exact = [stock * w / total for w in wishes]
    out = [math.floor(x) for x in exact]
    left = stock - sum(out)
    # Largest remainders first; ties to the earlier seat.
    order = sorted(range(len(wishes)), key=lambda i: (-(exact[i] - out[i]), i))
    for i in order[:left]:
        out[i] += 1
    return out


def assign_catches(
    wishes: list[int],
    stock: int,
    rng: random.Random,
    rule: Literal["stochastic", "proportional"] = "stochastic",
) -> list[int]:
    """Each fisher's catch given the wishes (tons, capped at ``stock`` first).

    When the wishes fit in the stock, everyone gets their wish. Otherwise, ``"stochastic"``
    (GovSim's baseline setting, Piatti et al. 2024) hands the stock out one ton at a time,
    each ton to a fisher drawn uniformly among those whose wish is not yet met, until the
    lake is empty; ``"proportional"`` gives each ``floor(stock · wish / Σ wishes)`` and the
    leftover tons to the largest remainders. Either way no one gets more than they wished and
    the catches add up to the stock exactly.
    """
    if stock < 0 or any(w < 0 for w in wishes):
        raise ValueError("stocks and wishes are never negative")
    capped = [min(w, stock) for w in wishes]
    if sum(capped) <= stock:
        return capped
    if rule == "proportional":
        return _proportional(capped, stock)
    got = [0] * len(capped)
    wanting = [i for i, w in enumerate(capped) if w > 0]
    for _ in range(stock):
        i = rng.choice(wanting)
        got[i] += 1
        if got[i] == capped[i]:
            wanting.remove(i)
    return got


class Harvest(BaseModel):
    """One month's harvest: wishes, catches and the stock before and after."""

    month: int = Field(ge=1)
    stock_before: int = Field(ge=0)
    wishes: dict[str, int]
    catches: dict[str, int]
    stock_after: int = Field(ge=0)


class LakeState(BaseModel):
    """Everything that changes during a game (copied whole by a snapshot)."""

    month: int = Field(default=1, ge=1)
    stock: int = Field(ge=0)
    phase: Phase = "harvest"
    collapsed: bool = False
    harvests: list[Harvest] = Field(default_factory=list)
    #: ``meetings[j - 1]``: the utterances of month ``j``'s meeting.
    meetings: list[list[Utterance]] = Field(default_factory=list)
    #: ``attempts[j - 1]``: how many times month ``j``'s meeting was reset.
    attempts: list[int] = Field(default_factory=list)
    #: Counters that survive a rollback (they only grow).
    total_turns: int = 0
    resets: int = 0


class GovSimEnv:
    """One GovSim fishing game (module docstring)."""

    def __init__(self, game: GovSimGame, config: LakeConfig | None = None) -> None:
        self.game = game
        self.config = config or LakeConfig()
        self.names = self.config.names()
        self.state = LakeState(stock=game.r0)
        self._snapshot: LakeState | None = None
        #: Meetings undone by a reset, in order (for transcripts).
        self.undone: list[list[Utterance]] = []

    @property
    def done(self) -> bool:
        """The game is over: collapse, or the last month was fished."""
        return self.state.phase == "over"

    @property
    def capacity(self) -> int:
        return self.game.r0

    def view(self, name: str, *, draw: int = 0) -> FisherView:
        """What fisher ``name`` sees now (harvest phase: the last meeting; meeting phase: this
        one so far). ``draw`` counts resamples of the same decision (never rendered)."""
        st = self.state
        if name not in self.names:
            raise InputError(f"no fisher named {name!r}")
        if st.phase == "harvest":
            last = st.month - 1
            discussion = tuple(st.meetings[last - 1]) if last >= 1 else ()
            earlier = tuple(u for m in st.meetings[: max(0, last - 1)] for u in m)
            attempt = st.attempts[last - 1] if last >= 1 else 0
        else:
            discussion = tuple(st.meetings[st.month - 1]) if len(st.meetings) >= st.month else ()
            earlier = tuple(u for m in st.meetings[: st.month - 1] for u in m)
            attempt = st.attempts[st.month - 1] if len(st.attempts) >= st.month else 0
        return FisherView(
            game_id=self.game.id,
            name=name,
            fishers=self.names,
            month=st.month,
            months=self.config.months,
            stock=st.stock,
            capacity=self.capacity,
            collapse_below=self.config.collapse_below,
            catches=tuple(dict(h.catches) for h in st.harvests),
            discussion=discussion,
            earlier=earlier,
            attempt=attempt,
            draw=draw,
        )

    def harvest(self, wishes: dict[str, int], rng: random.Random) -> Harvest:
        """Apply this month's harvest (irreversible) and take the snapshot a reset restores."""
        st = self.state
        if st.phase != "harvest":
            raise InputError(f"no harvest in the {st.phase} phase")
        if set(wishes) != set(self.names):
            raise InputError("every fisher states exactly one wish")
        if any(int(w) < 0 for w in wishes.values()):
            raise InputError("a wish is never negative")
        ordered = [min(int(wishes[n]), st.stock) for n in self.names]
        got = assign_catches(ordered, st.stock, rng, self.config.assignment)
        before = st.stock
        st.stock = before - sum(got)
        record = Harvest(
            month=st.month,
            stock_before=before,
            wishes=dict(zip(self.names, ordered, strict=True)),
            catches=dict(zip(self.names, got, strict=True)),
            stock_after=st.stock,
        )
        st.harvests.append(record)
        st.collapsed = st.stock < self.config.collapse_below
        # GovSim holds the month's meeting even after a collapse or the last harvest.
        st.phase = "meeting"
        st.meetings.append([])
        st.attempts.append(0)
        self._snapshot = st.model_copy(deep=True)
        return record

    def count_turn(self) -> int:
        """Count one harvest decision shown (also discarded ones); returns the new total."""
        self.state.total_turns += 1
        return self.state.total_turns

    def say(self, name: str, text: str, amounts: tuple[int, ...] = ()) -> Utterance:
        """Add one utterance to this month's meeting (reversible)."""
        st = self.state
        if st.phase != "meeting":
            raise InputError(f"no meeting in the {st.phase} phase")
        meeting = st.meetings[st.month - 1]
        if len(meeting) >= self.config.utterances:
            raise InputError(f"a meeting has at most {self.config.utterances} utterances")
        utterance = Utterance(month=st.month, speaker=name, text=text, amounts=amounts)
        meeting.append(utterance)
        return utterance

    def end_month(self) -> int:
        """Close the meeting; the game is over after a collapse or the last month, else the
        lake regrows: ``R_{j+1} = min(2·R*_j, R_0)``. Returns the stock."""
        st = self.state
        if st.phase != "meeting":
            raise InputError(f"a month ends after its meeting, not in the {st.phase} phase")
        if st.collapsed or st.month >= self.config.months:
            st.phase = "over"
            self._snapshot = None
            return st.stock
        st.stock = regrow(st.stock, self.capacity)
        st.month += 1
        st.phase = "harvest"
        return st.stock

    @property
    def can_rollback(self) -> bool:
        """A harvest (month ≥ 2) is pending after a meeting that can be held again."""
        return self._snapshot is not None and self.state.phase == "harvest"

    def rollback_discussion(self) -> None:
        """Undo the last meeting (and the regrowth after it): restore the state right after
        the last harvest exactly; the harvests are untouched (the rogue-agents paper, §4.1)."""
        if self._snapshot is None or self.state.phase != "harvest":
            raise InputError("nothing to roll back: no meeting since the last harvest")
        st = self.state
        self.undone.append(list(st.meetings[-1]))
        restored = self._snapshot.model_copy(deep=True)
        restored.total_turns = st.total_turns
        restored.resets = st.resets + 1
        restored.attempts[-1] = st.attempts[-1] + 1
        self.state = restored
