"""Simulated WhoDunitEnv agents: a belief over suspects, a sensible policy, explicit noise.

A documented behavioural model of LLM agents (product brief §5), not a stub. Every turn the
agent rebuilds its belief from its knowledge and the channel (so a reset that clears the
channel also clears what misled it, as in the paper's interventions, §2), picks the action a
careful player would, and errs through four noise modes, each drawn independently per turn:

- **hallucination** (``hallucination_rate``): Intel answers a yes/no question wrongly or adds
  / drops an id in a broad message; the Accuser misremembers one culprit property this turn;
  a symmetric player shares a fact with a wrong value, or believes one.
- **collapse** (``collapse_rate``, then ``collapse_persistence``): the agent repeats its own
  previous message (a question, an answer, a broad message or a shared fact); once its last
  two messages are identical it is *in a loop* and keeps repeating with probability
  ``collapse_persistence`` (the repetition loops of §6.3).
- **role loss** (``role_loss_rate``): the agent forgets its role and takes a uniformly random
  legal action with random arguments (which may be a premature accusation).
- **recall failure** (``recall_failure_rate``): the agent ignores each channel message (and a
  symmetric player each of its own facts) with probability ``recall_drop``.

**Rogue episodes** (``rogue_rate``): at the start of every episode (a game, or the play after
a reset) each agent is drawn *rogue* with this probability; a rogue agent has every noise
rate multiplied by ``rogue_noise_multiplier`` and all its distributions flattened (below).
A reset draws again, which is what a well-timed intervention can fix (seed 002 §2).

All rates are multiplied by ``(n_suspects / reference_suspects) ** size_exponent``: a longer
lineup is a longer, harder context (seed 002 §6.2, Fig. 6).

**Decision-position distributions** (what monitors read): the action-number position puts
``b + (1 - b) * certainty`` on the chosen action number (``b = action_base``; Intel: 0.9) and
shares the rest among the others, where certainty is ``1 - H(belief) / log N``; a
character-id position is the belief over suspects (``belief_floor`` keeps every id possible;
Intel's listed ids: 0.97 on the id it writes). When a noise mode fires the agent is
*confused*: every distribution of that turn is mixed with the uniform one with weight
``confusion`` (a rogue agent's with ``rogue_confusion`` on every turn). So failing games tend
to show higher entropy at some turn: a real signal for monitors. Tokens are the numbers as
strings, the top ``top_k`` by probability, natural log-probabilities.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from ._deduce import accuser_deductions, consistent_suspects, shared_facts
from ._types import (
    ActionKind,
    AgentTurn,
    AgentView,
    ChannelMessage,
    TopLogprobs,
    WhoDunitAction,
    action_kinds,
    action_number,
)

__all__ = ["SimParams", "SimulatedAgent"]


class SimParams(BaseModel):
    """The simulated agent's behaviour (reported with every simulated result)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    hallucination_rate: float = Field(default=0.02, ge=0.0, le=1.0)
    collapse_rate: float = Field(default=0.02, ge=0.0, le=1.0)
    collapse_persistence: float = Field(default=0.8, ge=0.0, le=1.0)
    role_loss_rate: float = Field(default=0.008, ge=0.0, le=1.0)
    recall_failure_rate: float = Field(default=0.04, ge=0.0, le=1.0)
    rogue_rate: float = Field(default=0.25, ge=0.0, le=1.0)
    rogue_noise_multiplier: float = Field(default=6.0, ge=1.0)
    rogue_confusion: float = Field(default=0.6, ge=0.0, le=1.0)
    recall_drop: float = Field(default=0.5, ge=0.0, le=1.0)
    reference_suspects: int = Field(default=10, ge=1)
    size_exponent: float = Field(default=1.0, ge=0.0)
    confusion: float = Field(default=0.6, ge=0.0, le=1.0)
    action_base: float = Field(default=0.85, gt=0.0, lt=1.0)
    belief_floor: float = Field(default=0.005, ge=0.0, lt=1.0)
    confirm_weight: float = Field(default=0.7, ge=0.0)
    top_k: int = Field(default=10, ge=1)


def _entropy(p: Sequence[float]) -> float:
    return -sum(x * math.log(x) for x in p if x > 0)


def _top(probs: dict[str, float], chosen: str, k: int) -> TopLogprobs:
    """The top-k of ``probs`` as ``(token, logprob)``, always including the chosen token."""
    ranked = sorted(probs.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
    if chosen not in {t for t, _ in ranked}:
        ranked = [*ranked[: k - 1], (chosen, probs.get(chosen, 1e-6))]
        ranked.sort(key=lambda kv: (-kv[1], kv[0]))
    return [(tok, math.log(max(p, 1e-12))) for tok, p in ranked]


class _Turn:
    """Scratch state of one decision."""

    def __init__(
        self, view: AgentView, rng: random.Random, params: SimParams, *, rogue: bool
    ) -> None:
        self.view = view
        self.rng = rng
        self.params = params
        scale = (view.n_suspects / params.reference_suspects) ** params.size_exponent
        self.scale = scale * (params.rogue_noise_multiplier if rogue else 1.0)
        self.rogue = rogue
        self.noise: list[str] = []

    def fires(self, rate: float) -> bool:
        return bool(self.rng.random() < min(1.0, rate * self.scale))

    def remembered(self, channel: Sequence[ChannelMessage]) -> list[ChannelMessage]:
        drop = self.params.recall_drop
        return [m for m in channel if self.rng.random() >= drop]


class SimulatedAgent:
    """A simulated Accuser, Intel or symmetric player (the role comes from the view)."""

    def __init__(self, name: str, params: SimParams | None = None) -> None:
        self.name = name
        self.params = params or SimParams()
        # Per game: the last budget turn seen and whether this episode is rogue. A budget
        # turn lower than the last one seen means the game was reset: a new episode.
        self._episodes: dict[str, tuple[int, bool]] = {}

    def _is_rogue(self, view: AgentView, rng: random.Random) -> bool:
        last = self._episodes.get(view.game_id)
        if last is None or view.turn < last[0]:
            rogue = rng.random() < self.params.rogue_rate
        else:
            rogue = last[1]
        self._episodes[view.game_id] = (view.turn, rogue)
        return rogue

    async def act(self, view: AgentView, rng: random.Random) -> AgentTurn:
        """Choose an action from the belief, apply the noise modes, report distributions."""
        return self.decide(view, rng)

    # -- the policy -------------------------------------------------------------------------

    def decide(self, view: AgentView, rng: random.Random) -> AgentTurn:
        """The synchronous core of :meth:`act` (cheap: no I/O)."""
        t = _Turn(view, rng, self.params, rogue=self._is_rogue(view, rng))
        channel = list(view.channel)
        recall = t.fires(self.params.recall_failure_rate)
        if recall:
            t.noise.append("recall_failure")
            channel = t.remembered(channel)
        hallucinate = t.fires(self.params.hallucination_rate)
        if hallucinate:
            t.noise.append("hallucination")

        repeat = self._collapse(t)
        if repeat is not None:
            belief = self._belief(t, channel, hallucinate=False)
            return self._finish(t, repeat, belief)
        if t.fires(self.params.role_loss_rate):
            t.noise.append("role_loss")
            belief = self._belief(t, channel, hallucinate=False)
            return self._finish(t, self._random_action(t), belief)

        belief = self._belief(t, channel, hallucinate=hallucinate)
        if view.role == "accuser":
            action = self._accuser_policy(t, channel, belief)
        elif view.role == "intel":
            action = self._intel_policy(t, channel, hallucinate)
        else:
            action = self._player_policy(t, channel, belief, hallucinate)
        return self._finish(t, action, belief)

    def _own_messages(self, view: AgentView) -> list[ChannelMessage]:
        return [m for m in view.channel if m.sender == view.name and m.action.kind != "pass"]

    def _collapse(self, t: _Turn) -> WhoDunitAction | None:
        mine = self._own_messages(t.view)
        if not mine:
            return None
        last = mine[-1].action
        if last.kind in ("accuse", "request_broad", "skip"):
            return None  # repeating these is ordinary play, not a collapse
        looping = len(mine) >= 2 and mine[-2].action == last
        p = self.params
        if (looping and t.rng.random() < p.collapse_persistence) or t.fires(p.collapse_rate):
            t.noise.append("collapse")
            return last
        return None

    # -- beliefs -----------------------------------------------------------------------------

    def _belief(
        self, t: _Turn, channel: Sequence[ChannelMessage], *, hallucinate: bool
    ) -> list[float]:
        """A probability for every suspect id (index 0 is id 1)."""
        view, p = t.view, self.params
        n = view.n_suspects
        weights = [0.0] * n
        if view.role == "accuser":
            culprit = dict(view.culprit_description or {})
            if hallucinate and culprit:
                prop = t.rng.choice(sorted(culprit))
                others = [v for v in view.attributes.get(prop, ()) if v != culprit[prop]]
                if others:
                    culprit[prop] = t.rng.choice(others)
            eliminated, confirmed = accuser_deductions(n, culprit, view.attributes, channel)
            alive = [c for c in range(1, n + 1) if c not in eliminated] or list(range(1, n + 1))
            for c in alive:
                weights[c - 1] = math.exp(p.confirm_weight * len(confirmed.get(c, ())))
                if len(confirmed.get(c, ())) == len(culprit):
                    weights[c - 1] *= 1e3  # fully matches the description: it is the one
        elif view.suspects is not None:
            facts = list(view.facts)
            if "recall_failure" in t.noise:
                facts = [f for f in facts if t.rng.random() >= p.recall_drop]
            facts += shared_facts(channel)
            if hallucinate and facts:
                i = t.rng.randrange(len(facts))
                prop, value = facts[i]
                others = [v for v in view.attributes.get(prop, ()) if v != value]
                if others:
                    facts[i] = (prop, t.rng.choice(others))
            alive = consistent_suspects(view.suspects, facts) or list(range(1, n + 1))
            for c in alive:
                weights[c - 1] = 1.0
        else:
            weights = [1.0] * n
        total = sum(weights)
        belief = [w / total for w in weights]
        floor = p.belief_floor
        return [(1 - floor) * b + floor / n for b in belief]

    # -- role policies ----------------------------------------------------------------------

    def _turns_left_for_me(self, view: AgentView) -> int:
        """How many more turns this agent gets in the current budget after this one."""
        step = 1 + len(view.partners)
        return (view.max_turns - view.turn) // step

    def _accuser_policy(
        self, t: _Turn, channel: Sequence[ChannelMessage], belief: list[float]
    ) -> WhoDunitAction:
        view = t.view
        best = max(range(len(belief)), key=lambda i: belief[i]) + 1
        top = belief[best - 1]
        alive = [
            i + 1 for i, b in enumerate(belief) if b > 2 * self.params.belief_floor / len(belief)
        ]
        if top > 0.9 or len(alive) == 1 or self._turns_left_for_me(view) == 0:
            return WhoDunitAction(kind="accuse", character=best)
        if len(alive) <= 3:
            culprit = view.culprit_description or {}
            _, confirmed = accuser_deductions(view.n_suspects, culprit, view.attributes, channel)
            unknown = [pr for pr in culprit if pr not in confirmed.get(best, set())]
            if unknown:
                prop = t.rng.choice(unknown)
                return WhoDunitAction(
                    kind="request_specific", character=best, property=prop, value=culprit[prop]
                )
        return WhoDunitAction(kind="request_broad")

    def _intel_policy(
        self, t: _Turn, channel: Sequence[ChannelMessage], hallucinate: bool
    ) -> WhoDunitAction:
        view = t.view
        suspects = view.suspects or ()
        pending = view.pending_request
        if pending is not None and pending.kind == "request_specific":
            assert pending.character is not None and pending.property is not None
            truth = suspects[pending.character - 1].get(pending.property) == pending.value
            return WhoDunitAction(
                kind="respond",
                character=pending.character,
                property=pending.property,
                value=pending.value,
                answer=(not truth) if hallucinate else truth,
            )
        # Hints about the culprit: the values the Accuser asked about (it asks about its own).
        hints = [
            (m.action.property, m.action.value)
            for m in channel
            if m.action.kind == "request_specific" and m.action.property and m.action.value
        ]
        hint_facts = [(str(pr), str(v)) for pr, v in hints]
        pool = consistent_suspects(suspects, hint_facts) or list(range(1, len(suspects) + 1))
        done = {
            (m.action.property, m.action.value) for m in channel if m.action.kind == "respond_broad"
        }
        scored: list[tuple[int, float, str, str]] = []
        for prop, values in view.attributes.items():
            for value in values:
                if (prop, value) in done:
                    continue
                has = sum(1 for c in pool if suspects[c - 1].get(prop) == value)
                scored.append((min(has, len(pool) - has), t.rng.random(), prop, value))
        if not scored:
            prop = t.rng.choice(list(view.attributes))
            value = t.rng.choice(view.attributes[prop])
        else:
            _, _, prop, value = max(scored)
        holders = [i for i, s in enumerate(suspects, 1) if s.get(prop) == value]
        if hallucinate:
            flip = t.rng.randrange(1, len(suspects) + 1)
            holders = sorted(set(holders) ^ {flip})
        return WhoDunitAction(
            kind="respond_broad", property=prop, value=value, characters=tuple(holders)
        )

    def _player_policy(
        self,
        t: _Turn,
        channel: Sequence[ChannelMessage],
        belief: list[float],
        hallucinate: bool,
    ) -> WhoDunitAction:
        view = t.view
        suspects = view.suspects or ()
        best = max(range(len(belief)), key=lambda i: belief[i]) + 1
        floor = self.params.belief_floor / len(belief)
        alive = [i + 1 for i, b in enumerate(belief) if b > 2 * floor]
        if len(alive) == 1:
            return WhoDunitAction(kind="accuse", character=best)
        public = shared_facts(channel)
        unshared = [i for i, f in enumerate(view.facts, 1) if f not in public]
        if unshared:
            public_pool = consistent_suspects(suspects, public)

            def remaining(i: int) -> int:
                return len(
                    consistent_suspects([suspects[c - 1] for c in public_pool], [view.facts[i - 1]])
                )

            i = min(unshared, key=lambda j: (remaining(j), t.rng.random()))
            prop, value = view.facts[i - 1]
            if hallucinate:
                others = [v for v in view.attributes.get(prop, ()) if v != value]
                value = t.rng.choice(others) if others else value
            return WhoDunitAction(kind="share", fact=i, property=prop, value=value)
        if self._turns_left_for_me(view) == 0:
            return WhoDunitAction(kind="accuse", character=best)
        return WhoDunitAction(kind="skip")

    def _random_action(self, t: _Turn) -> WhoDunitAction:
        view, rng = t.view, t.rng
        kinds = list(action_kinds(view.role).values())
        kind: ActionKind = rng.choice(kinds)
        pending = view.pending_request
        if kind == "respond" and (pending is None or pending.kind != "request_specific"):
            kind = "respond_broad"
        if kind == "share" and not view.facts:
            kind = "skip"
        n = view.n_suspects
        prop = rng.choice(list(view.attributes))
        value = rng.choice(view.attributes[prop])
        if kind in ("accuse",):
            return WhoDunitAction(kind=kind, character=rng.randint(1, n))
        if kind == "request_specific":
            return WhoDunitAction(
                kind=kind, character=rng.randint(1, n), property=prop, value=value
            )
        if kind == "respond":
            assert pending is not None
            return WhoDunitAction(
                kind=kind,
                character=pending.character,
                property=pending.property,
                value=pending.value,
                answer=rng.random() < 0.5,
            )
        if kind == "respond_broad":
            ids = tuple(sorted(rng.sample(range(1, n + 1), rng.randint(0, n))))
            return WhoDunitAction(kind=kind, property=prop, value=value, characters=ids)
        if kind == "share":
            i = rng.randint(1, len(view.facts))
            fp, fv = view.facts[i - 1]
            return WhoDunitAction(kind=kind, fact=i, property=fp, value=fv)
        return WhoDunitAction(kind=kind)

    # -- distributions ----------------------------------------------------------------------

    def _finish(self, t: _Turn, action: WhoDunitAction, belief: list[float]) -> AgentTurn:
        view, p = t.view, self.params
        n = len(belief)
        confused = p.confusion if t.noise else (p.rogue_confusion if t.rogue else 0.0)
        certainty = 1.0 - _entropy(belief) / math.log(n) if n > 1 else 1.0
        numbers = sorted(action_kinds(view.role))
        chosen_number = action_number(view.role, action.kind)
        chosen_tok = str(chosen_number if chosen_number is not None else numbers[0])
        main = p.action_base + (1 - p.action_base) * certainty if view.role != "intel" else 0.9
        action_probs: dict[str, float] = {}
        for num in numbers:
            tok = str(num)
            base = main if tok == chosen_tok else (1 - main) / max(1, len(numbers) - 1)
            action_probs[tok] = (1 - confused) * base + confused / len(numbers)
        dists: list[TopLogprobs] = [_top(action_probs, chosen_tok, p.top_k)]

        def char_dist(chosen: int, probs: Sequence[float]) -> TopLogprobs:
            mixed = {str(i + 1): (1 - confused) * q + confused / n for i, q in enumerate(probs)}
            return _top(mixed, str(chosen), p.top_k)

        if action.kind in ("accuse", "request_specific") and action.character is not None:
            dists.append(char_dist(action.character, belief))
        elif action.kind == "respond_broad":
            for c in action.characters:
                sharp = [0.97 if i + 1 == c else 0.03 / max(1, n - 1) for i in range(n)]
                dists.append(char_dist(c, sharp))
        return AgentTurn(
            action=action,
            thoughts=(
                f"simulated {view.role}{' (rogue)' if t.rogue else ''}; "
                f"noise: {', '.join(t.noise) or 'none'}"
            ),
            distributions=dists,
            noise=[*t.noise, *(["rogue"] if t.rogue else [])],
            simulated=True,
        )
