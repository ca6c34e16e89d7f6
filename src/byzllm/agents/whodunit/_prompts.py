"""Prompts and message formats of WhoDunitEnv (the rogue-agents paper, Appendix F, Figs. 10-16).

Two wordings: ``"award"`` (default) presents the task with "award" / "character" / "Winner",
which the paper found models cooperate with better (§4.1); ``"original"`` uses "accuse" /
"suspect" / "Culprit". The task itself is identical. Agents are asked for ReAct-style thoughts
before the JSON action (§4.1), in the JSON formats of Figs. 10, 13 and 14.

Two prompt styles: ``"paper"`` (default) renders Appendix F's system prompts; ``"compact"``
states the same rules, actions and knowledge in about half the tokens, for small models:
one line per action with its fields, the JSON as one filled-in example instead of a template
with ``//`` comments (which a 0.5B model copies literally), and each property's values listed
(the paper lists only the names). A small model copies the example's values too, so the
example is a *true* move built from the agent's own knowledge: the Accuser asks for general
information (naming no character, see :func:`compact_example`), Intel broadcasts a value with
the exact list of characters that have it, a player shares its first fact. Copied, it is a
legal and truthful move (repeated, it is the collapse the monitor is there to catch), never a
hallucination the prompt planted.
The per-turn user prompt (Figs. 11, 15) is the same in both styles.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from byzllm.llm import chat_messages

from ._types import AgentView, ChannelMessage, PromptStyle, Role, WhoDunitAction, WordingName

__all__ = [
    "WORDINGS",
    "compact_example",
    "describe_attributes",
    "render_message",
    "render_prompt",
    "render_system_prompt",
    "render_user_prompt",
]

#: Words substituted into every prompt and message, per wording.
WORDINGS: dict[WordingName, dict[str, str]] = {
    "award": {
        "culprit": "Winner",
        "suspect": "character",
        "suspects": "characters",
        "Suspect": "Character",
        "accuse": "award the prize to",
        "accusing": "awarding",
        "accused": "awarded the prize to",
        "accusation": "award",
    },
    "original": {
        "culprit": "Culprit",
        "suspect": "suspect",
        "suspects": "suspects",
        "Suspect": "Suspect",
        "accuse": "accuse",
        "accusing": "accusing",
        "accused": "accused",
        "accusation": "accusation",
    },
}


def describe_attributes(attrs: Mapping[str, str]) -> str:
    """``"hat: brown, mood: sad, ..."`` in the attribute table's order."""
    return ", ".join(f"{prop}: {value}" for prop, value in attrs.items())


def _suspect_block(view: AgentView, w: Mapping[str, str]) -> str:
    assert view.suspects is not None
    return "\n".join(
        f"{w['Suspect']} {i}: {describe_attributes(s)}" for i, s in enumerate(view.suspects, 1)
    )


def render_message(
    sender: str, role: Role, action: WhoDunitAction, wording: WordingName = "award"
) -> str:
    """The channel text of one action (Figs. 12 and 16)."""
    w = WORDINGS[wording]
    who = "Player" if role == "player" else "Agent"
    kind = action.kind
    if kind == "request_specific":
        return (
            f"Agent {sender} has requested information: is property {action.property} of "
            f"{w['suspect']} {action.character} {action.value}?"
        )
    if kind == "request_broad":
        return f"Agent {sender} has asked for general information (a broad message)"
    if kind == "respond":
        verb = "is" if action.answer else "is not"
        return (
            f"Agent {sender} has responded that for {w['suspect']} {action.character}, "
            f"the property {action.property} {verb} {action.value}"
        )
    if kind == "respond_broad":
        listed = ", ".join(str(c) for c in action.characters)
        return (
            f"Agent {sender} has decided to return a broad message: For {w['suspects']}: "
            f"[{listed}], the property {action.property} is {action.value}"
        )
    if kind == "accuse":
        return f"{who} {sender} has decided to {w['accuse']} {w['suspect']} {action.character}"
    if kind == "share":
        return (
            f"Player {sender} has decided to share a fact about the {w['culprit']}: "
            f"The {w['culprit']}'s {action.property} is {action.value}."
        )
    if kind == "skip":
        return f"Player {sender} has skipped their turn."
    return f"{who} {sender} did not make a valid move; the turn passed."


def _channel_text(channel: tuple[ChannelMessage, ...]) -> str:
    return "\n".join(m.text for m in channel) if channel else "(empty)"


_SYM_SYSTEM = """Introduction:
- Your name is {name}, and you are a helpful AI assistant participating in a cooperative game \
with other players. There are {n_agents} players in total: {agent_names}.

Game Overview:
- The game involves {suspects}, one of which is the {culprit}. Each player has information \
about all {suspects} and partial knowledge about who the {culprit} is.
- You will receive information in the following format:
1. A list of {suspects} with their descriptions.
2. A list of starting facts about the {culprit}, describing specific properties. These are \
only visible to you.
3. The current communication channel between you and other players, containing shared facts.

Game Mode:
- The game proceeds in rounds. In each round, you can either {accuse} a {suspect} you believe \
is the {culprit}, share one of your starting facts or skip your turn.
- If there is only one {suspect} matching the criteria according to your information, you \
should {accuse} them. Otherwise, if there's a fact that adds to your team's understanding, you \
should share a fact. If you believe you have nothing to add, you can skip your turn.
- The goal is to find the correct {culprit} in the minimum number of rounds. Choosing an \
incorrect {culprit} will lose points.

- Output Format in Game Mode: first write your reasoning, then one JSON object:
{{
  "thoughts": "Your reasoning: whether to share a fact, {accuse} a {suspect} or skip, and why.",
  "action": 1, 2 or 3, // 1 to share a fact, 2 to {accuse} a {suspect}, 3 to skip your turn
  "fact": If sharing, the number of the fact to share. This must be a number.
  "character": If {accusing}, the {suspect} number. This must be a number.
}}

Instructions Recap:
- Focus on minimizing rounds to find the {culprit}.
- Share informative facts to narrow down the possibilities.
- Only {accuse} a {suspect} when sure they are the {culprit}.
- Follow the specified JSON format for output in Game mode.

Possible properties of {suspects} are: {attributes}

Following is information about the {suspects}:
{suspect_block}"""

_ACCUSER_SYSTEM = """Introduction:
- Your name is {name}, and you are a helpful AI assistant participating in a cooperative game \
with another player: {partner}.

Game Overview:
- The game involves {n} {suspects}, identified by numbers 1 to {n}. One of the {suspects} is \
the {culprit}.
- You and your partner have access to different information. You know the {culprit}'s \
description, while your partner knows the description of every {suspect} but doesn't know \
which one is the {culprit}.
- There is only one {culprit}, and only that {suspect} exactly fits the {culprit}'s description.
- You will receive information in the following format:
1. A list of properties of the {culprit}.
2. The current communication channel between you and your partner, containing shared properties.

Game Mode:
- The game proceeds in rounds. In each round, you can either {accuse} a {suspect}, or ask your \
partner for information.
- If there is only one {suspect} matching the criteria according to your information, you \
should {accuse} them. Otherwise, ask your partner for the most helpful information.
- You can ask for information in two ways:
1. Ask if a specific {suspect} has a specific value for a property, and get a yes/no answer. \
You must include both a property and a value for this action.
2. Ask for general information: your partner chooses a property and value and lists all \
{suspects} that have it.
- The goal is to find the correct {culprit} in a minimum number of rounds. Once you \
{accuse} a {suspect}, the game ends.

- Output Format in Game Mode: first write your reasoning, then one JSON object:
{{
  "thoughts": "Your reasoning: whether to request information or {accuse} a {suspect}, and why.",
  "action": 1, 2 or 3, // 1 to request specific information, 2 to request general \
information, 3 to {accuse} a {suspect}
  "character": The {suspect} id to ask about or to {accuse}. This must be a number.,
  "property": "Relevant if action is 1. The property to ask about.",
  "value": "Relevant if action is 1. The value of the property you ask about."
}}

Instructions Recap:
- Focus on minimizing rounds to find the {culprit}.
- {Accuse} the {culprit} as soon as you are sure who it is.
- Request informative facts to narrow down the possibilities.
- Follow the specified JSON format for output in Game mode.
- Use your knowledge to eliminate {suspects} who cannot be the {culprit}.

Possible properties of {suspects} are: {attributes}

The {culprit} is described as:
{culprit_description}"""

_INTEL_SYSTEM = """Introduction:
- Your name is {name}, and you are a helpful AI assistant participating in a cooperative game \
with another player: {partner}.

Game Overview:
- The game involves {suspects}, one of which is the {culprit}.
- You have descriptions of all {suspects} but do not know which one is the {culprit}.
- {partner} has the description of the {culprit}, but not the {suspect} descriptions.
- You must help your partner discover which of the {suspects} is the {culprit}.
- You will receive information in the following format:
1. A list of {suspects} with their descriptions.
2. The current communication channel between you and {partner}, containing shared properties.

Game Mode:
- The game proceeds in rounds. In each round, you will receive a request from your partner: \
either a yes/no question about one {suspect} or a request for a broad message.
- Yes/no question: given the property, value and {suspect}, answer whether that combination is \
true or false.
- Broad message: share the value of a single property and the list of all {suspects} that have \
that value. You choose the property; share the most informative one. You may answer a yes/no \
question with a broad message instead.
- The goal is to identify the {culprit} in the minimum number of rounds.

- Output Format in Game Mode: first write your reasoning, then one JSON object:
{{
  "thoughts": "Your reasoning: what you respond and why.",
  "action": 1 or 2, // 1 to answer the yes/no question, 2 for a broad message
  "value": If action is 1, a boolean true/false. If action is 2, a property name and a value \
separated by a dash: "property-value",
  "character": Only if action is 2: the list of all {suspect} ids that have that property value.
}}

Instructions Recap:
- Focus on minimizing rounds to identify the {culprit}.
- Answer {partner}'s requests or broadcast your own messages to narrow down the possibilities.
- Follow the specified JSON format for output in Game Mode.

Possible properties of {suspects} are: {attributes}

Following is information about the {suspects}:
{suspect_block}"""

# The compact style (see the module docstring): the same game, the same actions and fields.
_SYM_COMPACT = """You are {name}, playing a cooperative game with {others}. There are {n} \
{suspects}, numbered 1 to {n}; one is the {culprit}. Everyone knows every {suspect}'s \
description; each player also has a few facts about the {culprit}, and together the facts \
single the {culprit} out. Find the {culprit} in as few rounds as possible; a wrong \
{accusation} loses.

Each turn, choose one action:
1 = share one of your facts: "fact" is its number
2 = {accuse} {suspect} "character" (only when sure: it ends the game)
3 = skip your turn

Reply with your reasoning, then one JSON object, for example:
{example}
(action 2: "character" instead of "fact"; action 3: no other field)

Properties and their values: {attribute_values}

The {suspects}:
{suspect_block}"""

_ACCUSER_COMPACT = """You are {name}, playing a cooperative game with {partner}. There are \
{n} {suspects}, numbered 1 to {n}; one is the {culprit}. You know the {culprit}'s \
description; {partner} knows every {suspect}'s description but not which one is the \
{culprit}. Only the {culprit} fits the description exactly. Find the {culprit} in as few \
rounds as possible.

Each turn, choose one action:
1 = ask {partner} whether {suspect} "character" has value "value" of property "property" \
(a yes/no answer)
2 = ask {partner} for general information (a property value and every {suspect} that has it)
3 = {accuse} {suspect} "character": do it as soon as only one {suspect} can fit; it ends \
the game

Reply with your reasoning, then one JSON object, for example:
{example}
(action 1: also "character", "property" and "value"; action 3: also "character")

Properties and their values: {attribute_values}

The {culprit} is described as: {culprit_description}"""

_INTEL_COMPACT = """You are {name}, playing a cooperative game with {partner}. There are \
{n} {suspects}, numbered 1 to {n}; one is the {culprit}. You know every {suspect}'s \
description but not which one is the {culprit}; {partner} knows the {culprit}'s \
description. Help {partner} find the {culprit} in as few rounds as possible.

Each turn, answer {partner}'s request with one action:
1 = answer the yes/no question: "value" is true or false
2 = a broad message: "value" is "property-value", "character" the list of every {suspect} \
with that value (you may send one instead of an answer; choose the most informative)

Reply with your reasoning, then one JSON object, for example:
{example}

Properties and their values: {attribute_values}

The {suspects}:
{suspect_block}"""

_SYM_USER = """You received the following starting facts about the {culprit} (these are the \
facts you may share):
{facts}

The current communication channel between you and the other players is:
{channel}

The current turn is {turn} out of {max_turns}.
It's your turn. What would you do?"""

_ASYM_USER = """The current communication channel between you and the other players is:
{channel}

The current turn is {turn} out of {max_turns}.
It's your turn. What would you do?"""


def _words(view: AgentView) -> dict[str, str]:
    w = dict(WORDINGS[view.wording])
    w["Accuse"] = w["accuse"][:1].upper() + w["accuse"][1:]
    w["attributes"] = ", ".join(view.attributes)
    w["name"] = view.name
    w["n"] = str(view.n_suspects)
    return w


def compact_example(view: AgentView) -> dict[str, object]:
    """The compact prompt's example move: legal and true for ``view`` (module docstring).

    Accuser: ask for general information (no character named: with a character id in the
    example, Qwen2.5-Coder-0.5B asked about and accused character 1 in every game). Intel: the
    first property's first value and every character that has it. Player: share fact 1.
    """
    thoughts = "..."
    prop, values = next(iter(view.attributes.items()))
    if view.role == "accuser":
        return {"thoughts": thoughts, "action": 2}
    if view.role == "intel":
        holders = [i for i, s in enumerate(view.suspects or (), 1) if s.get(prop) == values[0]]
        return {
            "thoughts": thoughts,
            "action": 2,
            "value": f"{prop}-{values[0]}",
            "character": holders,
        }
    if view.facts:
        return {"thoughts": thoughts, "action": 1, "fact": 1}
    return {"thoughts": thoughts, "action": 3}


def _compact_system_prompt(view: AgentView, w: dict[str, str]) -> str:
    w = {
        **w,
        "attribute_values": "; ".join(
            f"{p} ({', '.join(vs)})" for p, vs in view.attributes.items()
        ),
        "example": json.dumps(compact_example(view), ensure_ascii=False),
    }
    if view.role == "player":
        others = ", ".join(view.partners) or "the other players"
        return _SYM_COMPACT.format(others=others, suspect_block=_suspect_block(view, w), **w)
    partner = view.partners[0] if view.partners else "your partner"
    if view.role == "accuser":
        described = describe_attributes(view.culprit_description or {})
        return _ACCUSER_COMPACT.format(partner=partner, culprit_description=described, **w)
    return _INTEL_COMPACT.format(partner=partner, suspect_block=_suspect_block(view, w), **w)


def render_system_prompt(view: AgentView, style: PromptStyle = "paper") -> str:
    """The system prompt of the agent's role (Figs. 10, 13, 14; ``style="compact"``: the
    same in fewer words, see the module docstring)."""
    w = _words(view)
    if style == "compact":
        return _compact_system_prompt(view, w)
    if view.role == "player":
        names = [view.name, *view.partners]
        return _SYM_SYSTEM.format(
            n_agents=len(names),
            agent_names=", ".join(names),
            suspect_block=_suspect_block(view, w),
            **w,
        )
    partner = view.partners[0] if view.partners else "your partner"
    if view.role == "accuser":
        described = describe_attributes(view.culprit_description or {})
        return _ACCUSER_SYSTEM.format(partner=partner, culprit_description=described, **w)
    return _INTEL_SYSTEM.format(partner=partner, suspect_block=_suspect_block(view, w), **w)


def render_user_prompt(view: AgentView) -> str:
    """The per-turn user prompt (Figs. 11 and 15).

    "The current turn is T out of MAX" shows the game clock (:attr:`AgentView.clock_turn`,
    :attr:`AgentView.clock_max_turns`), which a reset does not rewind: without a reset it is
    the budget turn; after one the prompt differs from the pre-reset prompt of the same
    position.
    """
    w = WORDINGS[view.wording]
    common = {
        "channel": _channel_text(view.channel),
        "turn": view.clock_turn,
        "max_turns": view.clock_max_turns,
        "culprit": w["culprit"],
    }
    if view.role == "player":
        facts = "\n".join(
            f"{i}. The {w['culprit']}'s {prop} is {value}."
            for i, (prop, value) in enumerate(view.facts, 1)
        )
        return _SYM_USER.format(facts=facts, **common)
    return _ASYM_USER.format(**common)


def render_prompt(view: AgentView, style: PromptStyle = "paper") -> list[dict[str, str]]:
    """The chat messages for one turn: the role's system prompt, then the user prompt."""
    return chat_messages(render_system_prompt(view, style), render_user_prompt(view))
