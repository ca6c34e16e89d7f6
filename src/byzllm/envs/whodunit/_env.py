"""The WhoDunitEnv state machine: turn order, rules, truth analysis, snapshot and rollback.

The rogue-agents paper, §3 and §4.1. Asymmetric: the Accuser and Intel alternate, the Accuser
first; the
Accuser requests a yes/no answer, a broad message, or accuses; Intel answers the pending
yes/no question or returns a broad message (it may choose a broad message instead of the
answer). Symmetric: the players act in round robin; each shares one of its facts (a share
that states another fact is refused), accuses or skips. An accusation ends the game and is
*irreversible*; sharing information is *reversible*. The game also ends when the turn
budget is spent.

Reset semantics (the rogue-agents paper, §2, §4.1):
:meth:`WhoDunitEnv.rollback_to_last_irreversible` clears the channel back to the last
irreversible action (in WhoDunitEnv: the start, since an accusation ends the game); suspects,
culprit and facts are kept; play resumes with the first agent and a fresh turn budget; the
total turn count keeps growing, and so does the *game clock* the agents see ("The current turn
is T out of MAX"): a rollback does not rewind it (see
:meth:`WhoDunitEnv.rollback_to_last_irreversible` for the rule).

The environment knows the truth and records, for analysis only (agents never see it), for
every message whether it was false (*hallucination*), repeated a message already in the
channel (*repetition*, the collapse of §6.3) or ignored a fact already established
(*ignored_fact*: asking what the channel already answered, or targeting a suspect the channel
already ruled out).
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from byzllm.agents.whodunit import (
    AgentView,
    ChannelMessage,
    Role,
    WhoDunitAction,
    WordingName,
    accuser_deductions,
    consistent_suspects,
    render_message,
    shared_facts,
)
from byzllm.errors import InputError

from ._games import WhoDunitGame

__all__ = [
    "ASYM_NAMES",
    "IRREVERSIBLE",
    "SYM_NAMES",
    "VARIANT_ROLES",
    "AnalysisFlags",
    "ChannelEntry",
    "GameState",
    "StepOutcome",
    "WhoDunitEnv",
]

#: Default agent names (the paper's example: Beth accuses, Alex is Intel).
ASYM_NAMES: tuple[str, str] = ("Beth", "Alex")
SYM_NAMES: tuple[str, ...] = ("Alex", "Beth", "Casey", "Dana", "Eli", "Finn", "Gale", "Hana")

#: The roles of each variant's agents: what a monitor set is keyed by (one monitor per role).
VARIANT_ROLES: dict[str, tuple[Role, ...]] = {"asym": ("accuser", "intel"), "sym": ("player",)}

#: Irreversible action kinds (§2, §4.1): committing to a solution. Every other action only
#: shares information and is reversible.
IRREVERSIBLE: frozenset[str] = frozenset({"accuse"})


class AnalysisFlags(BaseModel):
    """Truth-tracking flags of one message (for analysis only)."""

    hallucination: bool = False
    repetition: bool = False
    ignored_fact: bool = False


class ChannelEntry(BaseModel):
    """A channel message with the truth the agents do not see."""

    message: ChannelMessage
    flags: AnalysisFlags = Field(default_factory=AnalysisFlags)
    total_turn: int


class GameState(BaseModel):
    """Everything that changes during a game (snapshot / restore copy exactly this)."""

    channel: list[ChannelEntry] = Field(default_factory=list)
    budget_turn: int = 0  # turns taken in the current budget
    total_turns: int = 0  # every agent turn, including those before a reset
    clock_offset: int = 0  # total_turns when the current budget began (the clock's offset)
    resets: int = 0
    irreversible_at: int = 0  # channel length just after the last irreversible action
    finished: bool = False
    accused: int | None = None  # 1-based id


class StepOutcome(BaseModel):
    """What applying one action did."""

    message: ChannelMessage
    flags: AnalysisFlags
    remaining_candidates: list[int]
    finished: bool


class WhoDunitEnv:
    """One game being played. Construct, then loop: :meth:`view`, agent acts, :meth:`step`."""

    def __init__(
        self,
        game: WhoDunitGame,
        *,
        names: tuple[str, ...] | None = None,
        wording: WordingName = "award",
    ) -> None:
        self.game = game
        self.wording: WordingName = wording
        if game.variant == "asym":
            self.names: tuple[str, ...] = names or ASYM_NAMES
            self.roles: tuple[Role, ...] = VARIANT_ROLES["asym"]
            if len(self.names) != 2:
                raise InputError("the asymmetric variant has exactly two agents")
        else:
            count = len(game.facts)
            self.names = names or tuple(
                SYM_NAMES[i] if i < len(SYM_NAMES) else f"Player{i + 1}" for i in range(count)
            )
            if len(self.names) != count:
                raise InputError(f"this symmetric game has {count} agents")
            self.roles = tuple("player" for _ in range(count))
        if len(set(self.names)) != len(self.names):
            raise InputError("agent names must be distinct")
        self.state = GameState()
        # The eliminated ids of the last channel analysed (asym), extended message by message:
        # every turn analyses the channel before and after its message.
        self._eliminated_cache: tuple[list[ChannelMessage], set[int]] | None = None

    # -- whose turn ------------------------------------------------------------------------

    @property
    def done(self) -> bool:
        return self.state.finished or self.state.budget_turn >= self.game.max_turns

    @property
    def current_index(self) -> int:
        """Index (into :attr:`names`) of the agent whose turn it is."""
        return self.state.budget_turn % len(self.names)

    @property
    def current_agent(self) -> str:
        return self.names[self.current_index]

    @property
    def current_role(self) -> Role:
        return self.roles[self.current_index]

    def _pending_request(self) -> WhoDunitAction | None:
        if self.game.variant != "asym" or self.current_role != "intel":
            return None
        channel = self.state.channel
        if channel and channel[-1].message.role == "accuser":
            action = channel[-1].message.action
            if action.kind in ("request_specific", "request_broad"):
                return action
        return None

    def view(self) -> AgentView:
        """What the current agent sees (the truth stays hidden)."""
        game, i = self.game, self.current_index
        role = self.roles[i]
        return AgentView(
            game_id=game.id,
            variant=game.variant,
            role=role,
            name=self.names[i],
            partners=tuple(n for n in self.names if n != self.names[i]),
            wording=self.wording,
            attributes=game.attributes,
            n_suspects=len(game.suspects),
            suspects=None if role == "accuser" else game.suspects,
            culprit_description=game.culprit_description if role == "accuser" else None,
            facts=game.facts[i] if role == "player" else (),
            channel=tuple(e.message for e in self.state.channel),
            turn=self.state.budget_turn + 1,
            max_turns=game.max_turns,
            clock_offset=self.state.clock_offset,
            pending_request=self._pending_request(),
        )

    # -- rules -----------------------------------------------------------------------------

    def check_action(self, action: WhoDunitAction) -> list[str]:
        """Why ``action`` is illegal for the current agent (empty when legal)."""
        role, game = self.current_role, self.game
        n = len(game.suspects)
        allowed = {
            "accuser": {"request_specific", "request_broad", "accuse", "pass"},
            "intel": {"respond", "respond_broad", "pass"},
            "player": {"share", "accuse", "skip", "pass"},
        }[role]
        errors: list[str] = []
        if action.kind not in allowed:
            return [f"{action.kind} is not an action of the {role}"]
        if action.kind in ("accuse", "request_specific") and not (
            action.character is not None and 1 <= action.character <= n
        ):
            errors.append(f"character must be between 1 and {n}")
        if any(not 1 <= c <= n for c in action.characters):
            errors.append(f"listed characters must be between 1 and {n}")
        if action.kind in ("request_specific", "respond_broad") and (
            action.property not in game.attributes
            or action.value not in game.attributes[action.property]
        ):
            errors.append("unknown property or value")
        if action.kind == "respond":
            # Intel answers the Accuser's pending yes/no question (§3), never one of its own:
            # a respond that states its question must state the pending one.
            question = self._pending_request()
            if question is None or question.kind != "request_specific":
                errors.append("there is no yes/no question to answer")
            elif action.property is not None and (
                action.character,
                action.property,
                action.value,
            ) != (question.character, question.property, question.value):
                errors.append("a yes/no answer must answer the pending question")
            if action.answer is None:
                errors.append("a yes/no answer is needed")
        if action.kind == "share":
            # A share is the choice of one of the player's own facts (§3: "the agent selects
            # a fact from K_i"): a share that states its fact must state that very fact, as
            # an LLM's reply, which names only the fact's number, always does.
            facts = game.facts[self.current_index]
            if action.fact is None or not 1 <= action.fact <= len(facts):
                errors.append(f"fact must be between 1 and {len(facts)}")
            elif (
                action.property is not None
                and (action.property, action.value) != facts[action.fact - 1]
            ):
                errors.append(f"a share must state the player's own fact {action.fact}")
        return errors

    def _complete(self, action: WhoDunitAction) -> WhoDunitAction:
        """Fill in what the agent refers to: the question answered, the fact shared."""
        if action.kind == "respond" and action.property is None:
            q = self._pending_request()
            assert q is not None
            return action.model_copy(
                update={"character": q.character, "property": q.property, "value": q.value}
            )
        if action.kind == "share" and action.property is None:
            assert action.fact is not None
            prop, value = self.game.facts[self.current_index][action.fact - 1]
            return action.model_copy(update={"property": prop, "value": value})
        if action.kind == "respond_broad":
            # A list is a set of ids: written in another order or with a repeat it says the
            # same, and is rendered, compared and judged as the ascending list.
            listed = tuple(sorted(set(action.characters)))
            if listed != action.characters:
                return action.model_copy(update={"characters": listed})
        return action

    def remaining_candidates(self, channel: list[ChannelMessage] | None = None) -> list[int]:
        """Suspect ids the channel (at face value) has not ruled out (§3 analysis).

        Asymmetric: with the Accuser's knowledge of the culprit; symmetric: from the shared
        facts. An empty list means the channel contradicts itself.
        """
        msgs = channel if channel is not None else [e.message for e in self.state.channel]
        game = self.game
        if game.variant == "asym":
            eliminated = self._eliminated(msgs)
            return [c for c in range(1, len(game.suspects) + 1) if c not in eliminated]
        return consistent_suspects(game.suspects, shared_facts(msgs))

    def _eliminated(self, msgs: list[ChannelMessage]) -> set[int]:
        """:func:`accuser_deductions`' eliminated ids, reusing the last analysed prefix.

        Elimination is a union over messages, so a channel that extends the cached one (the
        very same message objects) only needs its new messages read.
        """
        game = self.game

        def deduce(part: list[ChannelMessage]) -> set[int]:
            out, _ = accuser_deductions(
                len(game.suspects), game.culprit_description, game.attributes, part
            )
            return out

        cached = self._eliminated_cache
        if (
            cached is not None
            and len(cached[0]) <= len(msgs)
            and all(a is b for a, b in zip(cached[0], msgs, strict=False))
        ):
            known = len(cached[0])
            eliminated = cached[1] | deduce(msgs[known:]) if known < len(msgs) else cached[1]
        else:
            eliminated = deduce(msgs)
        self._eliminated_cache = (list(msgs), eliminated)
        return set(eliminated)

    def _flags(self, action: WhoDunitAction, sender: str) -> AnalysisFlags:
        game = self.game
        culprit = game.culprit_description
        earlier = [e.message for e in self.state.channel]
        hallucination = False
        if action.kind == "respond":
            assert action.character is not None and action.property is not None
            truth = game.suspects[action.character - 1][action.property] == action.value
            hallucination = truth != action.answer
        elif action.kind == "respond_broad":
            assert action.property is not None
            holders = tuple(
                i for i, s in enumerate(game.suspects, 1) if s[action.property] == action.value
            )
            hallucination = holders != action.characters
        elif action.kind == "share":
            assert action.property is not None
            hallucination = culprit.get(action.property) != action.value
        repetition = action.kind not in ("pass", "skip", "accuse", "request_broad") and any(
            m.action == action for m in earlier
        )
        ignored = False
        alive = self.remaining_candidates(earlier)
        if action.kind == "accuse":
            ignored = action.character not in alive
        elif action.kind == "request_specific":
            assert action.character is not None
            prop = action.property
            assert prop is not None
            two_valued = len(game.attributes[prop]) == 2

            def answers(m: ChannelMessage) -> bool:
                # Whether m already says if the character has prop = value. About the same
                # character and property, a "yes" to any value answers it, a "no" only about
                # this value or, with two values, the other one. A broad list about the
                # property answers it for this value or two values, and for a listed
                # character (it has the listed value) whatever the value.
                a = m.action
                if a.property != prop:
                    return False
                same = two_valued or a.value == action.value
                if a.kind == "respond" and a.character == action.character:
                    return same or a.answer is True
                if a.kind == "respond_broad":
                    return same or action.character in a.characters
                return False

            known = any(answers(m) for m in earlier)
            ignored = known or action.character not in alive
        elif action.kind == "share":
            ignored = (action.property, action.value) in shared_facts(earlier)
        return AnalysisFlags(
            hallucination=hallucination, repetition=repetition, ignored_fact=ignored
        )

    def step(self, action: WhoDunitAction) -> StepOutcome:
        """Apply the current agent's action (it must be legal: see :meth:`check_action`)."""
        if self.done:
            raise InputError("the game is over")
        errors = self.check_action(action)
        if errors:
            raise InputError("illegal action: " + "; ".join(errors))
        action = self._complete(action)
        sender, role = self.current_agent, self.current_role
        flags = self._flags(action, sender)
        message = ChannelMessage(
            sender=sender,
            role=role,
            action=action,
            text=render_message(sender, role, action, self.wording),
        )
        st = self.state
        st.total_turns += 1
        st.budget_turn += 1
        st.channel.append(ChannelEntry(message=message, flags=flags, total_turn=st.total_turns))
        if action.kind in IRREVERSIBLE:
            st.irreversible_at = len(st.channel)
            if action.kind == "accuse":
                st.finished = True
                st.accused = action.character
        return StepOutcome(
            message=message,
            flags=flags,
            remaining_candidates=self.remaining_candidates(),
            finished=self.done,
        )

    def count_discarded_turn(self) -> None:
        """Count a turn whose action never took effect (reset or resample): total only."""
        self.state.total_turns += 1

    # -- state -----------------------------------------------------------------------------

    def snapshot(self) -> GameState:
        """A deep copy of the whole mutable state."""
        return self.state.model_copy(deep=True)

    def restore(self, snapshot: GameState) -> None:
        """Return to ``snapshot`` exactly (the snapshot itself stays untouched)."""
        self.state = snapshot.model_copy(deep=True)

    def rollback_to_last_irreversible(self) -> None:
        """Reset (the rogue-agents paper, §2, §4.1): clear the channel back to the last
        irreversible action.

        Play resumes with the first agent; the total turn count is kept and the reset is
        counted. Raises :class:`InputError` once the game has ended in an accusation (it
        cannot be undone).

        **The game clock keeps running; the turn limit restarts.** After a reset at total
        turn ``T`` (the discarded turn included) the agents are shown "turn ``T + 1`` out of
        ``T + max_turns``" and get ``max_turns`` more turns (:attr:`AgentView.clock_offset`
        becomes ``T``; the budget turn, which decides whose turn it is and when the game
        ends, starts again at 1). Why both halves:

        - *The clock is not rewound.* The rogue-agents paper, §2, undoes only the reversible
          actions — sharing information; time already spent is not something a rollback can
          give back. Restarting the clock would also make the first prompt after a reset
          byte-identical to the game's first prompt, so at temperature 0 (the paper's
          setting) a deterministic model — and the response cache, keyed by the request —
          would replay the very game the monitor just flagged.
        - *The limit restarts.* §2 resets to "provide agents with another opportunity to
          collaborate", and the paper reports that interventions cost *additional* turns
          (Game-Length, which counts turns before interventions, grows by 1.6x / 1.9x with
          one / two resets, §5): a reset buys a full new budget rather than the rest of the
          old one. Game-Length (``total_turns``) therefore still includes every turn before
          a reset, as before.

        Snapshots carry the clock (:class:`GameState`), so :meth:`restore` puts it back
        exactly like the rest of the state.
        """
        st = self.state
        if st.finished:
            raise InputError("the game ended with an accusation, which is irreversible")
        del st.channel[st.irreversible_at :]
        st.budget_turn = 0
        st.clock_offset = st.total_turns
        st.resets += 1

    @property
    def success(self) -> bool:
        return self.state.accused is not None and self.state.accused == self.game.culprit + 1
