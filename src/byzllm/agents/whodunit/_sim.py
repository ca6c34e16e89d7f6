"""Simulated WhoDunitEnv agents: a belief over suspects, a soft policy on it, explicit noise.

A documented behavioural model of LLM agents (product brief §5), not a stub. Every
behavioural assumption is a named :class:`SimParams` field with a default, a one-line meaning
and its source (``SimParams().rows()`` lists them; most are assumptions, and
``byzllm sim fit`` replaces the identifiable ones by figures measured on a real run). Every
turn the agent rebuilds its *belief* (a posterior over suspects) from what it knows and what
the channel says, turns the belief into a *soft policy* (a probability for every action
number), acts on both, and reports the distributions it "generated" at the decision
positions. Those distributions are the belief and the policy the turn acted on, plus the
shift each fault applies to them, scaled by ``fault_signal`` (below): a monitor sees a fault
only as far as that parameter lets it (the rogue-agents paper, §2: a rogue agent is one whose
state has gone wrong; its uncertainty is how the paper's monitors see it). Nothing in a
simulated agent reads the truth (the culprit's index, the analysis flags).

**Belief** (index 0 is id 1). Every message is evidence the agent trusts but does not treat
as infallible: a suspect contradicted by ``v`` messages (or facts) gets log-weight
``-evidence_weight * v``. The Accuser (who knows only the culprit's description) also adds
``confirm_weight`` per culprit property a message confirms for the suspect and
``match_bonus`` when every property is confirmed (:func:`~._deduce.accuser_evidence`); a
symmetric player counts the facts (its own and the shared ones) each suspect contradicts
(:func:`~._deduce.fact_violations`). A consistent channel gives a sharp posterior; a
channel that contradicts itself (a hallucinated answer, a wrong broad list) leaves *every*
suspect contradicted and the posterior diffuse; forgotten messages leave it wide. Intel holds
no belief over suspects: it knows every description and the culprit is not its question;
what it can be unsure of is its recollection of each fact (``recall_confidence``), which is
what its distributions report. (It narrows its broad messages to the suspects consistent
with the Accuser's questions, a choice of topic, not a reported distribution.)

**Soft policy** (action-number position). The Accuser accuses with probability
``sigmoid(decisiveness * (top - accuse_confidence))`` (``top``: its largest posterior
probability), raised to at least ``last_turn_accuse`` on its last turn of the budget;
otherwise it asks, a specific question with probability
``sigmoid(decisiveness * (m2 - specific_focus))`` (``m2``: the belief held by its two best
candidates; 0 if its best candidate has no unconfirmed property), else broadly. A player
accuses the same way, otherwise shares (with ``recall_confidence`` if it has an unshared
fact) or skips. Intel answers a pending yes/no question with its confidence in the answer,
and otherwise broadcasts with ``recall_confidence``. The agent takes the decision the soft
policy favours, in two stages (accuse when ``P(accuse) >= 0.5``; then the likelier
question), so its action and its distribution agree.

**Character-id positions.** An accusation or a specific question writes an id drawn from the
belief: the position's distribution is the posterior. Intel writes a broad message's ids in
ascending order; its confidence that suspect ``c`` has the announced value is ``q_c``
(``recall_confidence`` for what it remembers, ``1 - recall_confidence`` for the rest), so the
position of each id has ``P(next = c) = q_c * prod_{prev < c' < c} (1 - q_c')`` and the
end of the list takes the rest.

**Noise modes**, each drawn independently per turn; each acts on the belief or the policy
and the distributions follow from what it did:

- **hallucination** (``hallucination_rate``): the Accuser misremembers one property of the
  culprit this turn (its posterior is built on the wrong description); Intel mis-recalls one
  fact: a yes/no answer flips or one id is added to / dropped from a broad list; a symmetric
  player believes one fact it holds (its own or a shared one, drawn uniformly) has a wrong
  value, which moves its posterior: whether it accuses, and whom. A player shares a fact by its
  number, which the environment binds to the player's true fact (a share that states
  another is refused), so what it shares is never false, as a model-backed player's reply,
  which names only the number, never is. Intel holds the mis-recalled fact
  with a confidence drawn uniformly from ``[hallucination_confidence_low,
  hallucination_confidence]``; the Accuser's and a player's hallucinations show only through
  the belief built on them.
- **collapse** (``collapse_rate``, then ``collapse_persistence``): the agent repeats its own
  previous message; once its last two messages are identical it is *in a loop* and keeps
  repeating with probability ``collapse_persistence`` (§6.3). Repetition is copying: every
  distribution of the turn puts ``collapse_copy`` extra weight on the copied token (loops
  are confident, not confused). What can collapse is a specific request or statement:
  repeating an accusation, a broad request or a skip is ordinary play, so an agent whose
  last message was one of those never collapses on this turn (a definition, not a
  parameter).
- **role loss** (``role_loss_rate``): the agent loses track of its role; its action number
  is drawn from its soft policy mixed with the uniform one (weight ``role_loss_mix``), with
  arguments drawn at random (an accused id is drawn from its belief, so a premature
  accusation is as uncertain as the belief behind it; an Intel list is a coin flip per id).
  A share ``role_loss_invalid`` of role-loss turns write another role's action instead,
  which the environment refuses and passes (an invalid move, as an LLM's unusable reply is).
- **recall failure** (``recall_failure_rate``): the agent ignores each channel message (and
  a symmetric player each of its own facts) with probability ``recall_drop``.

**Rogue episodes** (``rogue_rate``): at the start of every episode (a play of a game, or the
play after a reset) each agent is drawn *rogue* with this probability; a rogue agent has
every noise rate multiplied by ``rogue_noise_multiplier`` and decodes at
``rogue_temperature`` times the temperature (flatter distributions). A reset draws again,
which is what a well-timed intervention can fix (the rogue-agents paper, §2).

**Fault signal** (``fault_signal``, in ``[0, 1]``). How far a faulty turn's *reported*
distributions move from those of a clean turn with the same belief and policy inputs: a
hallucinated recollection is held with ``recall_confidence + s * (u - recall_confidence)``
(``u`` the draw above), a rogue episode reports at ``temperature * rogue_temperature ** s``,
a collapse copies with weight ``s * collapse_copy``, and a role-loss turn reports its policy
mixed with weight ``s * role_loss_mix`` (an Intel list it does not recall with
``q_c`` moved ``s`` of the way to a coin flip). At 1 (the default) the shifts are the full
ones above; at 0 a faulty turn reports exactly what a clean turn writing the same action
from the same beliefs would, so no reported distribution depends on whether a message is
true, and a monitor can learn nothing from the fault itself. What the agent *does* never
depends on ``fault_signal``: every draw is made at every value, so games are identical
across values and only what is reported changes. What a fault does to the agent's beliefs
(a diffuse posterior after a contradiction, a wrong description) is content, not signal, and
is not scaled.

All noise rates and the rogue rate are multiplied by
``(n_suspects / reference_suspects) ** size_exponent`` (capped at 1): a longer lineup is a
longer, harder context (the rogue-agents paper, §6.2, Fig. 6). Every distribution is
tempered, ``p ** (1 / temperature)`` renormalized, then cut to the ``top_k`` tokens
(natural log-probabilities; tokens are the numbers as strings and ``"]"`` for the end of a
list).
"""

from __future__ import annotations

import math
import random
import weakref
from collections.abc import Mapping, Sequence

from pydantic import model_validator

from .._params import (
    ASSUMPTION,
    Confidence,
    NonNegative,
    Positive,
    Probability,
    SimParameters,
    parameter,
)
from ._deduce import accuser_evidence, fact_violations, shared_facts
from ._types import (
    ActionKind,
    AgentTurn,
    AgentView,
    ChannelMessage,
    Role,
    TopLogprobs,
    WhoDunitAction,
    action_kinds,
    action_number,
)

__all__ = ["SimParams", "SimulatedAgent", "list_position"]

#: The token that ends an id list in a broad message.
END_OF_LIST = "]"

#: What a role-loss turn writes when it breaks the rules: an action of another role, which
#: the environment refuses (the turn passes).
WRONG_ROLE_ACTION: dict[Role, WhoDunitAction] = {
    "accuser": WhoDunitAction(kind="respond_broad"),
    "intel": WhoDunitAction(kind="request_broad"),
    "player": WhoDunitAction(kind="request_broad"),
}


class SimParams(SimParameters):
    """The simulated agent's behaviour (reported with every simulated result).

    Every field is a named assumption with its meaning and source
    (:meth:`~byzllm.agents._params.SimParameters.rows` lists them; ``byzllm sim show`` prints
    them). See the module docstring for the model each parameter belongs to.
    """

    # Noise modes (per turn).
    hallucination_rate: Probability = parameter(
        0.03,
        meaning="per-turn probability of misremembering one fact (a culprit property, an "
        "answer, a listed id, a fact a player holds)",
        source=f"{ASSUMPTION} (the mode: the rogue-agents paper, §6.3, 48% of 50 reviewed "
        "monitor triggers)",
    )
    collapse_rate: Probability = parameter(
        0.02,
        meaning="per-turn probability of repeating its own previous message (a specific "
        "request or statement; an accusation, broad request or skip is never a collapse)",
        source=f"{ASSUMPTION} (the mode: the rogue-agents paper, §6.3, 16% of reviewed triggers)",
    )
    collapse_persistence: Probability = parameter(
        0.8, meaning="probability of repeating again once its last two messages are identical"
    )
    role_loss_rate: Probability = parameter(
        0.008,
        meaning="per-turn probability of losing track of its role",
        source=f"{ASSUMPTION} (the mode: the rogue-agents paper, §6.3, 8% of reviewed triggers)",
    )
    role_loss_invalid: Probability = parameter(
        0.0,
        meaning="share of role-loss turns that write another role's action (the environment "
        "passes the turn: an invalid move)",
    )
    recall_failure_rate: Probability = parameter(
        0.04,
        meaning="per-turn probability of ignoring part of what it was told",
        source=f"{ASSUMPTION} (the mode: the rogue-agents paper, §6.3, 4% of reviewed triggers)",
    )
    recall_drop: Probability = parameter(
        0.5,
        meaning="on a recall failure, probability of ignoring each channel message (and own fact)",
    )
    # Rogue episodes (per agent, per episode).
    rogue_rate: Probability = parameter(
        0.25,
        meaning="probability that an agent is rogue for a whole episode (a game, or the play "
        "after a reset)",
        source=f"{ASSUMPTION} (the notion: the rogue-agents paper, §2)",
    )
    rogue_noise_multiplier: float = parameter(
        6.0, meaning="factor on every noise rate in a rogue episode", ge=1.0
    )
    rogue_temperature: float = parameter(
        2.0,
        meaning="factor on the reporting temperature in a rogue episode (at fault_signal 1)",
        ge=1.0,
    )
    # What a monitor can see of a fault.
    fault_signal: Probability = parameter(
        1.0,
        meaning="how strongly a faulty turn (hallucination, collapse, role loss, rogue "
        "episode) shifts the distributions it reports (0 = the monitor gets no signal from it)",
    )
    # Difficulty.
    reference_suspects: int = parameter(
        10,
        meaning="lineup size at which the noise and rogue rates apply unscaled",
        source="the rogue-agents paper, §4.1: 10 suspects in the asymmetric variant",
        ge=1,
    )
    size_exponent: NonNegative = parameter(
        1.0,
        meaning="rates scale with (suspects / reference_suspects) ** size_exponent, capped at 1",
        source=f"{ASSUMPTION} (direction: the rogue-agents paper, §6.2, Fig. 6: success falls "
        "with more suspects)",
    )
    # Belief.
    evidence_weight: Positive = parameter(
        5.0, meaning="log-weight a suspect loses per message or fact contradicting it"
    )
    confirm_weight: NonNegative = parameter(
        0.7, meaning="log-weight the Accuser adds per culprit property a message confirms"
    )
    match_bonus: NonNegative = parameter(
        7.0, meaning="log-weight the Accuser adds when every culprit property is confirmed"
    )
    recall_confidence: Confidence = parameter(
        0.98,
        meaning="confidence in a fact it remembers (Intel's answers and lists, a player's share)",
    )
    hallucination_confidence_low: float = parameter(
        0.5,
        meaning="lowest confidence a hallucinated recollection is held with (at fault_signal 1)",
        ge=0.5,
        lt=1.0,
    )
    hallucination_confidence: float = parameter(
        0.8,
        meaning="highest confidence a hallucinated recollection is held with (at fault_signal 1)",
        ge=0.5,
        lt=1.0,
    )
    # Soft policy and decoding.
    accuse_confidence: float = parameter(
        0.9, meaning="top posterior probability at which accusing becomes even odds", gt=0.0, lt=1.0
    )
    specific_focus: float = parameter(
        0.5,
        meaning="belief held by the Accuser's two best candidates at which a specific question "
        "becomes even odds against a broad one",
        source=f"{ASSUMPTION} (this simulator's own: the paper gives no rule for choosing "
        "between the two requests)",
        gt=0.0,
        lt=1.0,
    )
    decisiveness: Positive = parameter(
        20.0, meaning="slope of the sigmoids that turn belief into the soft policy"
    )
    last_turn_accuse: float = parameter(
        0.95, meaning="least probability of accusing on its last turn of the budget", ge=0.5, le=1.0
    )
    collapse_copy: Probability = parameter(
        0.8,
        meaning="extra probability a repeated turn puts on each copied token (at fault_signal 1)",
    )
    role_loss_mix: Probability = parameter(
        0.7, meaning="weight of the uniform policy mixed into a role-loss turn's action number"
    )
    temperature: Positive = parameter(
        1.0, meaning="temperature of every reported distribution, p ** (1 / T) renormalized"
    )
    top_k: int = parameter(
        10,
        meaning="alternatives reported per decision position",
        source="the rogue-agents paper, §2, footnote 2: k = 10",
        ge=1,
    )

    @model_validator(mode="after")
    def _confidence_range(self) -> SimParams:
        if self.hallucination_confidence_low > self.hallucination_confidence:
            raise ValueError(
                "hallucination_confidence_low must be at most hallucination_confidence"
            )
        return self


_TINY = 1e-9


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def _normalized(logw: Sequence[float]) -> list[float]:
    top = max(logw)
    w = [math.exp(x - top) for x in logw]
    total = sum(w)
    return [x / total for x in w]


def _shift(clean: float, faulty: float, signal: float) -> float:
    """``clean`` moved ``signal`` of the way to ``faulty`` (exactly either at 0 and 1)."""
    if signal == 1.0:
        return faulty
    return clean + signal * (faulty - clean)


def _temper(probs: Mapping[str, float], temperature: float) -> dict[str, float]:
    """``p ** (1 / T)`` renormalized (``T > 1`` flattens)."""
    if temperature == 1.0:
        floored = {tok: max(p, _TINY) for tok, p in probs.items()}
        total = sum(floored.values())
        return {tok: p / total for tok, p in floored.items()}
    inv = 1.0 / temperature
    powered = {tok: max(p, _TINY) ** inv for tok, p in probs.items()}
    total = sum(powered.values())
    return {tok: p / total for tok, p in powered.items()}


def _top(probs: Mapping[str, float], chosen: str, k: int) -> TopLogprobs:
    """The top-k of ``probs`` as ``(token, logprob)``, always including the chosen token."""
    ranked = sorted(probs.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
    if chosen not in {t for t, _ in ranked}:
        ranked = [*ranked[: k - 1], (chosen, probs.get(chosen, _TINY))]
        ranked.sort(key=lambda kv: (-kv[1], kv[0]))
    return [(tok, math.log(max(p, _TINY))) for tok, p in ranked]


def list_position(q: Sequence[float], previous: int) -> dict[str, float]:
    """The next-token distribution of an ascending id list after id ``previous`` (0: first).

    ``q[c - 1]`` is the writer's confidence that id ``c`` belongs in the list; the next id is
    the first one it includes: ``P(c) = q_c * prod_{previous < c' < c} (1 - q_c')``, and
    :data:`END_OF_LIST` takes the probability of including none.
    """
    out: dict[str, float] = {}
    skip_all = 1.0
    for c in range(previous + 1, len(q) + 1):
        out[str(c)] = skip_all * q[c - 1]
        skip_all *= 1.0 - q[c - 1]
    out[END_OF_LIST] = skip_all
    return out


class _Turn:
    """Scratch state of one decision: the view, the draws, what the noise did."""

    def __init__(
        self, view: AgentView, rng: random.Random, params: SimParams, *, rogue: bool
    ) -> None:
        self.view = view
        self.rng = rng
        self.params = params
        scale = (view.n_suspects / params.reference_suspects) ** params.size_exponent
        self.scale = scale * (params.rogue_noise_multiplier if rogue else 1.0)
        self.rogue = rogue
        # A rogue episode's flatter decoding is a reported shift: scaled by fault_signal.
        flatter = params.rogue_temperature**params.fault_signal if rogue else 1.0
        self.temperature = params.temperature * flatter
        self.noise: list[str] = []

    def fires(self, rate: float) -> bool:
        return bool(self.rng.random() < min(1.0, rate * self.scale))

    def doubt(self) -> float:
        """The confidence a hallucinated recollection is held with.

        Drawn at every ``fault_signal`` (what the agent does never depends on it), then moved
        back toward the clean ``recall_confidence`` as the signal falls.
        """
        p = self.params
        held = self.rng.uniform(p.hallucination_confidence_low, p.hallucination_confidence)
        return _shift(p.recall_confidence, held, p.fault_signal)


class _Plan:
    """What the agent believes and intends this turn, before any copying or role loss."""

    def __init__(
        self,
        belief: list[float] | None,
        policy: dict[int, float],
        action: WhoDunitAction,
        *,
        list_confidence: list[float] | None = None,
    ) -> None:
        # The posterior over suspects; None for Intel, who holds none (module docstring).
        self.belief = belief
        self.policy = policy
        self.action = action
        # Intel's confidence, per id, that the id belongs in this turn's broad list.
        self.list_confidence = list_confidence


def _written(action: WhoDunitAction) -> WhoDunitAction:
    """What a reply wrote of ``action``: a yes/no answer names no question (Fig. 14: action 1
    and a boolean), the environment binds it to the pending one. A repeated answer is that
    reply again: an answer to the question pending now, or, with none pending, a move the
    environment refuses (it passes the turn), as an LLM's copied reply would be."""
    if action.kind == "respond":
        return WhoDunitAction(kind="respond", answer=action.answer)
    return action


class SimulatedAgent:
    """A simulated Accuser, Intel or symmetric player (the role comes from the view)."""

    def __init__(self, name: str, params: SimParams | None = None) -> None:
        self.name = name
        self.params = params or SimParams()
        # Per episode (a game, and each reset of it): whether the agent is rogue in it. A
        # reset starts a new turn budget at the game's clock (``clock_offset``), which a
        # resampled turn does not: comparing budget turns missed resets in the first turns,
        # where an agent's first turn after the reset equals the last one it played.
        self._episodes: dict[tuple[str, int], bool] = {}
        # Per game: the (clock turn, draw) of the last view this agent acted on, and that
        # turn's rng. Within one play the pair never falls (a resample repeats the clock turn
        # with a higher draw, a reset moves the clock on), so a view before it, or at it
        # with another rng, is a new play of the same game, whose episodes are drawn again
        # from that play's rng (else a reused agent carried the first play's rogue draws into
        # the second, and a replay depended on what ran before it).
        self._last_seen: dict[str, tuple[tuple[int, int], weakref.ref[random.Random]]] = {}

    def _new_play(self, view: AgentView, rng: random.Random) -> bool:
        seen = self._last_seen.get(view.game_id)
        now = (view.clock_turn, view.draw)
        self._last_seen[view.game_id] = (now, weakref.ref(rng))
        if seen is None:
            return False
        last, last_rng = seen
        return now < last or (now == last and last_rng() is not rng)

    def _is_rogue(self, view: AgentView, rng: random.Random) -> bool:
        if self._new_play(view, rng):
            self._episodes = {k: v for k, v in self._episodes.items() if k[0] != view.game_id}
        episode = (view.game_id, view.clock_offset)
        rogue = self._episodes.get(episode)
        if rogue is None:
            p = self.params
            scale: float = (view.n_suspects / p.reference_suspects) ** p.size_exponent
            rogue = bool(rng.random() < min(1.0, p.rogue_rate * scale))
            self._episodes[episode] = rogue
        return rogue

    async def act(self, view: AgentView, rng: random.Random) -> AgentTurn:
        """Choose an action from the belief, apply the noise modes, report distributions."""
        return self.decide(view, rng)

    # -- one turn ---------------------------------------------------------------------------

    def decide(self, view: AgentView, rng: random.Random) -> AgentTurn:
        """The synchronous core of :meth:`act` (cheap: no I/O)."""
        p = self.params
        t = _Turn(view, rng, p, rogue=self._is_rogue(view, rng))
        # Every mode is drawn on every turn, before anything else: which modes fire does not
        # depend on the policy's own draws.
        recall = t.fires(p.recall_failure_rate)
        hallucinate = t.fires(p.hallucination_rate)
        role_loss = t.fires(p.role_loss_rate)
        channel = list(view.channel)
        if recall:
            t.noise.append("recall_failure")
            channel = [m for m in channel if rng.random() >= p.recall_drop]

        repeat = self._collapse(t)
        if repeat is not None:
            t.noise.append("collapse")
            plan = self._plan(t, channel, hallucinate=False)
            plan.list_confidence = None  # a copied list is written as confidently as before
            return self._finish(t, plan, repeat, copy=p.fault_signal * p.collapse_copy)
        if role_loss:
            t.noise.append("role_loss")
            plan = self._plan(t, channel, hallucinate=False)
            return self._lost(t, plan)
        if hallucinate:
            t.noise.append("hallucination")
        plan = self._plan(t, channel, hallucinate=hallucinate)
        return self._finish(t, plan, plan.action)

    def _plan(self, t: _Turn, channel: Sequence[ChannelMessage], *, hallucinate: bool) -> _Plan:
        if t.view.role == "accuser":
            return self._accuser(t, channel, hallucinate)
        if t.view.role == "intel":
            return self._intel(t, channel, hallucinate)
        return self._player(t, channel, hallucinate)

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
            return _written(last)
        return None

    def _turns_left_for_me(self, view: AgentView) -> int:
        """How many more turns this agent gets in the current budget after this one."""
        step = 1 + len(view.partners)
        return (view.max_turns - view.turn) // step

    def _p_accuse(self, view: AgentView, belief: Sequence[float]) -> float:
        p = self.params
        p_acc = _sigmoid(p.decisiveness * (max(belief) - p.accuse_confidence))
        if self._turns_left_for_me(view) == 0:
            p_acc = max(p_acc, p.last_turn_accuse)
        return p_acc

    # -- the Accuser ------------------------------------------------------------------------

    def _accuser(self, t: _Turn, channel: Sequence[ChannelMessage], hallucinate: bool) -> _Plan:
        view, p = t.view, self.params
        n = view.n_suspects
        culprit = dict(view.culprit_description or {})
        if hallucinate and culprit:
            prop = t.rng.choice(sorted(culprit))
            others = [v for v in view.attributes.get(prop, ()) if v != culprit[prop]]
            if others:
                culprit[prop] = t.rng.choice(others)
        violations, confirmed = accuser_evidence(n, culprit, view.attributes, channel)
        logw = [
            -p.evidence_weight * violations[i]
            + p.confirm_weight * len(confirmed[i])
            + (p.match_bonus if culprit and len(confirmed[i]) == len(culprit) else 0.0)
            for i in range(n)
        ]
        belief = _normalized(logw)
        best = max(range(n), key=lambda i: (belief[i], -i)) + 1
        unknown = sorted(pr for pr in culprit if pr not in confirmed[best - 1])
        p_acc = self._p_accuse(view, belief)
        # Ask specifically when the belief is focused: its two best candidates hold more of
        # it than specific_focus.
        focus = sum(sorted(belief, reverse=True)[:2])
        p_spec = _sigmoid(p.decisiveness * (focus - p.specific_focus)) if unknown else 0.0
        policy = {3: p_acc, 1: (1 - p_acc) * p_spec, 2: (1 - p_acc) * (1 - p_spec)}
        if p_acc >= 0.5:
            action = WhoDunitAction(kind="accuse", character=best)
        elif p_spec > 0.5:
            prop = t.rng.choice(unknown)
            action = WhoDunitAction(
                kind="request_specific", character=best, property=prop, value=culprit[prop]
            )
        else:
            action = WhoDunitAction(kind="request_broad")
        return _Plan(belief, policy, action)

    # -- Intel ------------------------------------------------------------------------------

    def _intel(self, t: _Turn, channel: Sequence[ChannelMessage], hallucinate: bool) -> _Plan:
        view, p = t.view, self.params
        suspects = view.suspects or ()
        n = view.n_suspects
        rc = p.recall_confidence
        pending = view.pending_request
        if pending is not None and pending.kind == "request_specific":
            assert pending.character is not None and pending.property is not None
            truth = suspects[pending.character - 1].get(pending.property) == pending.value
            confidence = t.doubt() if hallucinate else rc
            action = WhoDunitAction(
                kind="respond",
                character=pending.character,
                property=pending.property,
                value=pending.value,
                answer=(not truth) if hallucinate else truth,
            )
            # How sure it is of its answer, against answering broadly instead.
            return _Plan(None, {1: confidence, 2: 1 - confidence}, action)
        prop, value = self._broad_topic(t, channel)
        q = [rc if s.get(prop) == value else 1 - rc for s in suspects]
        if hallucinate and n:
            flip = t.rng.randrange(n)
            held = t.doubt()
            q[flip] = held if q[flip] < 0.5 else 1 - held
        holders = tuple(c for c in range(1, n + 1) if q[c - 1] > 0.5)
        action = WhoDunitAction(
            kind="respond_broad", property=prop, value=value, characters=holders
        )
        policy = {2: rc, 1: 1 - rc}  # nothing to answer: a broad message
        return _Plan(None, policy, action, list_confidence=q)

    def _broad_topic(self, t: _Turn, channel: Sequence[ChannelMessage]) -> tuple[str, str]:
        """The unannounced property-value that splits the plausible suspects most evenly."""
        view = t.view
        suspects = view.suspects or ()
        # Hints about the culprit: the values the Accuser asked about (it asks about its own).
        hints = [
            (str(m.action.property), str(m.action.value))
            for m in channel
            if m.action.kind == "request_specific" and m.action.property and m.action.value
        ]
        misfits = fact_violations(suspects, hints)
        pool = [c for c, v in enumerate(misfits, 1) if v == 0] or list(range(1, len(suspects) + 1))
        done = {
            (m.action.property, m.action.value) for m in channel if m.action.kind == "respond_broad"
        }
        scored: list[tuple[int, float, str, str]] = []
        for prop, values in view.attributes.items():
            counts: dict[str | None, int] = {}
            for c in pool:
                v = suspects[c - 1].get(prop)
                counts[v] = counts.get(v, 0) + 1
            for value in values:
                if (prop, value) in done:
                    continue
                has = counts.get(value, 0)
                scored.append((min(has, len(pool) - has), t.rng.random(), prop, value))
        if not scored:
            prop = t.rng.choice(list(view.attributes))
            return prop, t.rng.choice(view.attributes[prop])
        _, _, prop, value = max(scored)
        return prop, value

    # -- symmetric players ------------------------------------------------------------------

    def _player(self, t: _Turn, channel: Sequence[ChannelMessage], hallucinate: bool) -> _Plan:
        view, p = t.view, self.params
        suspects = view.suspects or ()
        n = view.n_suspects
        public = shared_facts(view.channel)
        unshared = [i for i, f in enumerate(view.facts, 1) if f not in public]
        share_index: int | None = None
        if unshared:
            # The fact that narrows the publicly plausible suspects most.
            public_misfits = fact_violations(suspects, public)
            pool = [suspects[c] for c, v in enumerate(public_misfits) if v == 0]

            def remaining(i: int) -> int:
                return sum(1 for v in fact_violations(pool, [view.facts[i - 1]]) if v == 0)

            share_index = min(unshared, key=lambda j: (remaining(j), t.rng.random()))
        own = list(view.facts)
        if "recall_failure" in t.noise:
            own = [f for f in own if t.rng.random() >= p.recall_drop]
        facts = own + shared_facts(channel)
        if hallucinate and facts:
            # It misremembers one fact it holds (its own or a shared one): its posterior, and
            # so whether and whom it accuses, uses the wrong value. What it shares is a fact
            # number, which the environment binds to the true fact, as it does an LLM's.
            prop, value = t.rng.choice(list(dict.fromkeys(facts)))
            others = [v for v in view.attributes.get(prop, ()) if v != value]
            if others:
                wrong = (prop, t.rng.choice(others))
                facts = [wrong if f == (prop, value) else f for f in facts]
        misfits = fact_violations(suspects, facts) if suspects else [0] * n
        belief = _normalized([-p.evidence_weight * v for v in misfits])
        best = max(range(n), key=lambda i: (belief[i], -i)) + 1
        p_acc = self._p_accuse(view, belief)
        share = p.recall_confidence if unshared else 1 - p.recall_confidence
        policy = {2: p_acc, 1: (1 - p_acc) * share, 3: (1 - p_acc) * (1 - share)}
        if p_acc >= 0.5:
            return _Plan(belief, policy, WhoDunitAction(kind="accuse", character=best))
        if share_index is None:
            return _Plan(belief, policy, WhoDunitAction(kind="skip"))
        prop, value = view.facts[share_index - 1]
        action = WhoDunitAction(kind="share", fact=share_index, property=prop, value=value)
        return _Plan(belief, policy, action)

    # -- role loss --------------------------------------------------------------------------

    def _lost(self, t: _Turn, plan: _Plan) -> AgentTurn:
        """A turn played without the role: the action number from the blurred policy."""
        view, rng, p = t.view, t.rng, self.params
        numbers = sorted(action_kinds(view.role))
        policy = {k: plan.policy.get(k, 0.0) for k in numbers}
        total = sum(policy.values()) or 1.0

        def blurred(mix: float) -> dict[int, float]:
            return {k: (1 - mix) * v / total + mix / len(numbers) for k, v in policy.items()}

        acting = blurred(p.role_loss_mix)
        number = rng.choices(numbers, weights=[acting[k] for k in numbers])[0]
        # What it reports is blurred only as far as fault_signal lets the fault show.
        reported_mix = p.fault_signal * p.role_loss_mix
        if reported_mix > 0:
            plan.policy = blurred(reported_mix)
        if p.role_loss_invalid > 0 and rng.random() < p.role_loss_invalid:
            t.noise.append("invalid_move")
            return self._finish(t, plan, WRONG_ROLE_ACTION[view.role], number=number)
        kind: ActionKind = action_kinds(view.role)[number]
        pending = view.pending_request
        if kind == "respond" and (pending is None or pending.kind != "request_specific"):
            kind = "respond_broad"
        if kind == "share" and not view.facts:
            kind = "skip"
        n = view.n_suspects
        attr = rng.choice(list(view.attributes))
        value = rng.choice(view.attributes[attr])
        action: WhoDunitAction
        if kind in ("accuse", "request_specific"):
            character = rng.choices(range(1, n + 1), weights=plan.belief)[0]
            if kind == "accuse":
                action = WhoDunitAction(kind=kind, character=character)
            else:
                action = WhoDunitAction(kind=kind, character=character, property=attr, value=value)
        elif kind == "respond":
            assert pending is not None
            action = WhoDunitAction(
                kind=kind,
                character=pending.character,
                property=pending.property,
                value=pending.value,
                answer=rng.random() < 0.5,
            )
        elif kind == "respond_broad":
            # It writes ids it does not actually recall: every id is a coin flip, reported
            # as one as far as fault_signal lets it show (at 0: as if it recalled them).
            ids = tuple(c for c in range(1, n + 1) if rng.random() < 0.5)
            rc = p.recall_confidence
            plan.list_confidence = [
                _shift(rc if c in ids else 1 - rc, 0.5, p.fault_signal) for c in range(1, n + 1)
            ]
            action = WhoDunitAction(kind=kind, property=attr, value=value, characters=ids)
        elif kind == "share":
            i = rng.randint(1, len(view.facts))
            fp, fv = view.facts[i - 1]
            action = WhoDunitAction(kind=kind, fact=i, property=fp, value=fv)
        else:
            action = WhoDunitAction(kind=kind)
        return self._finish(t, plan, action)

    # -- distributions ----------------------------------------------------------------------

    def _finish(
        self,
        t: _Turn,
        plan: _Plan,
        action: WhoDunitAction,
        *,
        copy: float = 0.0,
        number: int | None = None,
    ) -> AgentTurn:
        """Report the decision-position distributions of ``action`` from the plan.

        ``copy`` > 0 (a collapse): each position puts that much extra weight on the token
        actually written, since a repetition copies its tokens. ``number``: the action
        number written when ``action`` is not one of the role's (an invalid move).
        """
        view, p = t.view, self.params
        k, temp = p.top_k, t.temperature

        def position(probs: Mapping[str, float], chosen: str) -> TopLogprobs:
            total = sum(probs.values()) or 1.0
            dist = {tok: v / total for tok, v in probs.items()}
            if copy > 0:
                dist = {tok: (1 - copy) * v for tok, v in dist.items()}
                dist[chosen] = dist.get(chosen, 0.0) + copy
            return _top(_temper(dist, temp), chosen, k)

        if number is None:
            number = action_number(view.role, action.kind)
        numbers = sorted(action_kinds(view.role))
        chosen = str(number if number is not None else numbers[0])
        policy = {str(num): max(plan.policy.get(num, 0.0), 0.0) for num in numbers}
        if sum(policy.values()) <= 0:
            policy = {tok: 1.0 for tok in policy}
        dists: list[TopLogprobs] = [position(policy, chosen)]
        if (
            action.kind in ("accuse", "request_specific")
            and action.character is not None
            and plan.belief is not None
        ):
            belief = {str(i + 1): b for i, b in enumerate(plan.belief)}
            dists.append(position(belief, str(action.character)))
        elif action.kind == "respond_broad" and view.role == "intel":
            q = plan.list_confidence
            if q is None or len(q) != view.n_suspects:
                rc = p.recall_confidence
                q = [
                    rc if c in action.characters else 1 - rc for c in range(1, view.n_suspects + 1)
                ]
            previous = 0
            for c in action.characters:
                dists.append(position(list_position(q, previous), str(c)))
                previous = c
        if plan.belief is not None:
            state = f"top belief {max(plan.belief):.2f}"
        elif plan.list_confidence:
            state = f"least sure of an id at {min(max(q, 1 - q) for q in plan.list_confidence):.2f}"
        else:
            state = f"answer confidence {max(plan.policy.values()):.2f}"
        return AgentTurn(
            action=action,
            thoughts=(
                f"simulated {view.role}{' (rogue)' if t.rogue else ''}; {state}; "
                f"noise: {', '.join(t.noise) or 'none'}"
            ),
            distributions=dists,
            noise=[*t.noise, *(["rogue"] if t.rogue else [])],
            simulated=True,
        )
