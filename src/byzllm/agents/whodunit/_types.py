"""Plain data the WhoDunitEnv agents see and produce (the rogue-agents paper, §3, Appendix F).

These types sit *below* the environment: the environment (``byzllm.envs.whodunit``) builds
an :class:`AgentView` for the agent whose turn it is, the agent answers with an
:class:`AgentTurn` carrying a validated :class:`WhoDunitAction`, and the environment applies it.
Agents never see the truth (the culprit's index, the analysis flags); only what the paper's
prompts give them.

Character ids are **1-based** everywhere an agent is involved, as in the paper's prompts.
"""

from __future__ import annotations

import random
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "ActionKind",
    "AgentTurn",
    "AgentView",
    "ChannelMessage",
    "Decoding",
    "FinalMove",
    "PromptStyle",
    "Role",
    "TopLogprobs",
    "Variant",
    "WhoDunitAction",
    "WhoDunitAgent",
    "WordingName",
    "action_kinds",
    "action_number",
]

#: The top-k alternatives at one generated position, ``(token, logprob)`` pairs by descending
#: log-probability; the same shape as ``byzllm.envs.TopLogprobs`` (agents sit below envs).
TopLogprobs = list[tuple[str, float]]

#: ``"asym"``: Accuser + Intel (the rogue-agents paper, §3, Fig. 2); ``"sym"``: equal players
#: (Fig. 3).
Variant = Literal["asym", "sym"]

#: The role an agent plays: the asymmetric variant's Accuser / Intel, or a symmetric player.
Role = Literal["accuser", "intel", "player"]

#: ``"award"``: the award / character / winner wording the paper used with models (§4.1);
#: ``"original"``: the accuse / suspect / culprit wording of the task description.
WordingName = Literal["award", "original"]

#: How an LLM agent's reply is decoded. ``"free"``: as the rogue-agents paper does, the model
#: writes its thoughts and JSON action freely and the lenient parser reads them. ``"schema"``:
#: the request carries the JSON schema of the agent's valid moves (``response_format``), so a
#: grammar-constrained server can only write one (:func:`action_schema`).
Decoding = Literal["free", "schema"]

#: The system prompts an LLM agent renders: ``"paper"``, Appendix F's (Figs. 10, 13, 14);
#: ``"compact"``: the same rules and knowledge in fewer tokens, for small models.
PromptStyle = Literal["paper", "compact"]

#: What an LLM agent that can accuse may do on its last turn of a budget. ``"free"``: any
#: valid move (the paper's game: a budget that ends without an accusation is a failure).
#: ``"accuse"``: with ``decoding="schema"``, only the accusation: a small model that asks the
#: same question until the clock runs out then still names a culprit, so a game's outcome
#: says whether the exchange found the right one (a change from the paper, for small models).
FinalMove = Literal["free", "accuse"]

#: What an action does. ``"pass"`` is not a paper action: it is the documented fallback when an
#: agent never produced a valid action (the turn is spent, nothing else happens).
ActionKind = Literal[
    "request_specific",  # accuser 1: is property P of character c equal to V?
    "request_broad",  # accuser 2: ask Intel for a broad message
    "accuse",  # accuser 3 / player 2: award (accuse) a character; ends the game
    "respond",  # intel 1: yes/no answer to the pending specific request
    "respond_broad",  # intel 2: property-value plus every character that has it
    "share",  # player 1: share one of the agent's own facts
    "skip",  # player 3: spend the turn
    "pass",  # fallback only (any role): the turn is spent, no message content
]

#: The paper's JSON action numbers per role (Appendix F, Figs. 10, 13, 14).
_ACTION_NUMBERS: dict[Role, dict[ActionKind, int]] = {
    "accuser": {"request_specific": 1, "request_broad": 2, "accuse": 3},
    "intel": {"respond": 1, "respond_broad": 2},
    "player": {"share": 1, "accuse": 2, "skip": 3},
}


def action_number(role: Role, kind: ActionKind) -> int | None:
    """The JSON ``"action"`` number of ``kind`` for ``role`` (``None`` for the fallback)."""
    return _ACTION_NUMBERS[role].get(kind)


def action_kinds(role: Role) -> dict[int, ActionKind]:
    """Map the JSON action numbers of ``role`` to action kinds."""
    return {number: kind for kind, number in _ACTION_NUMBERS[role].items()}


class WhoDunitAction(BaseModel):
    """One validated action.

    Fields used per kind: ``request_specific`` — character, property, value; ``accuse`` —
    character; ``respond`` — answer (the environment fills in the question it answers:
    character, property, value); ``respond_broad`` — property, value, characters; ``share`` —
    fact (1-based index into the agent's own facts; the environment fills in property and
    value).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: ActionKind
    character: int | None = Field(default=None, ge=1)
    property: str | None = None
    value: str | None = None
    answer: bool | None = None
    characters: tuple[int, ...] = ()
    fact: int | None = Field(default=None, ge=1)

    def as_dict(self, role: Role) -> dict[str, Any]:
        """The action as a plain dict: ``kind``, the paper's ``action`` number and set fields."""
        out: dict[str, Any] = {"kind": self.kind, "action": action_number(role, self.kind)}
        for key in ("character", "property", "value", "answer", "fact"):
            val = getattr(self, key)
            if val is not None:
                out[key] = val
        if self.characters:
            out["characters"] = list(self.characters)
        return out


class ChannelMessage(BaseModel):
    """One message of the shared communication channel, as every agent sees it."""

    model_config = ConfigDict(frozen=True)

    sender: str
    role: Role
    action: WhoDunitAction
    text: str


class AgentView(BaseModel):
    """Everything one agent knows at its turn (its ``K_i`` and the channel ``C_j``, §2).

    - ``suspects``: every character's description, for Intel and symmetric players; ``None``
      for the Accuser, who knows only ``culprit_description``.
    - ``facts``: a symmetric player's own starting facts, ``(property, value)`` pairs.
    - ``turn`` / ``max_turns``: the turn *within the current budget* (it starts again after a
      reset, §4.1), 1-based.
    - ``clock_offset``: the game's turns already taken when the current budget began (0 until
      the first reset). The prompt shows the *game clock*, :attr:`clock_turn` out of
      :attr:`clock_max_turns`: a reset gives a fresh budget but does not rewind the clock
      (the rogue-agents paper, §2), so the first prompt after a reset differs from the
      game's first prompt and a deterministic model can play differently.
    - ``pending_request``: for Intel, the Accuser's request of this round (``None`` if the
      Accuser passed).
    - ``draw``: how many times this same turn was asked before (a resample, the rogue-agents
      paper, §6.1): 0 unless a monitor discarded its earlier replies. The prompt does not show
      it; an LLM agent samples the turn afresh when it is above 0.
    """

    model_config = ConfigDict(frozen=True)

    game_id: str
    variant: Variant
    role: Role
    name: str
    partners: tuple[str, ...]
    wording: WordingName = "award"
    attributes: dict[str, tuple[str, ...]]
    n_suspects: int = Field(ge=1)
    suspects: tuple[dict[str, str], ...] | None = None
    culprit_description: dict[str, str] | None = None
    facts: tuple[tuple[str, str], ...] = ()
    channel: tuple[ChannelMessage, ...] = ()
    turn: int = Field(ge=1)
    max_turns: int = Field(ge=1)
    clock_offset: int = Field(default=0, ge=0)
    pending_request: WhoDunitAction | None = None
    draw: int = Field(default=0, ge=0)

    @property
    def clock_turn(self) -> int:
        """The game clock's turn (1-based): ``turn`` plus the turns before the budget."""
        return self.turn + self.clock_offset

    @property
    def clock_max_turns(self) -> int:
        """The clock's last turn of the current budget (``clock_max_turns − clock_turn`` is
        the number of turns left, as with ``max_turns − turn``)."""
        return self.max_turns + self.clock_offset


class AgentTurn(BaseModel):
    """What an agent produced for one turn.

    ``distributions`` are the top-k distributions at the turn's decision positions (the
    action number, then every character id), in generation order. ``parse_errors`` lists
    every rejected reply's reason; ``fallback`` is true when none was valid and ``action`` is
    the documented fallback (``"pass"``). ``noise`` names the noise modes a simulated agent
    applied this turn (empty for LLM-backed agents).
    """

    action: WhoDunitAction
    thoughts: str = ""
    distributions: list[TopLogprobs] = Field(default_factory=list)
    replies: list[str] = Field(default_factory=list)
    parse_errors: list[str] = Field(default_factory=list)
    fallback: bool = False
    noise: list[str] = Field(default_factory=list)
    simulated: bool = False


class WhoDunitAgent(Protocol):
    """An agent of either variant: LLM-backed or simulated, behind one interface."""

    name: str

    async def act(self, view: AgentView, rng: random.Random) -> AgentTurn:
        """Choose this turn's action; ``rng`` drives any randomness (reproducible games)."""
        ...
