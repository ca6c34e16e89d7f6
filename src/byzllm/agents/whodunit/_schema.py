"""The JSON schema of one WhoDunitEnv move, for schema-constrained decoding.

The rogue-agents paper asks its agents for ReAct thoughts, then one JSON action in the
formats of Appendix F (Figs. 10, 13, 14). A small model often copies that format template
literally (``"action": 1, 2 or 3, // 1 to request ...``), which is not JSON. Sent as the
request's ``response_format``, the schema built here lets a grammar-constrained server only
produce a valid move: one object with ``thoughts`` first (the ReAct reasoning, §4.1, still
written before the decision), then the action number and exactly the arguments that action
takes, with the values the agent's view allows:

- Accuser (Fig. 13): 1 — ``character``, ``property`` and one of *that* property's values
  (one alternative per property); 2 — nothing more; 3 — ``character``.
- Intel (Fig. 14): 1 — ``value`` true/false, offered only while a yes/no question is pending
  (otherwise the parser refuses it); 2 — ``value`` ``"property-value"`` and the list of
  ``character`` ids (at most one per character).
- Symmetric player (Fig. 10): 1 — ``fact``, one of the player's own fact numbers (offered
  only if it has facts); 2 — ``character``; 3 — nothing more.

Every reply the schema admits is read by :func:`~byzllm.agents.whodunit.parse_action` as a
valid action of the same shape (the field names are the parser's, the decision positions
the same: the action number and every character id). The schema constrains *form*, not
truth: Intel can still list the wrong characters, the Accuser still accuse the wrong one.
"""

from __future__ import annotations

from typing import Any

from ._types import AgentView, action_number

__all__ = [
    "DEFAULT_MAX_THOUGHTS",
    "action_schema",
    "broad_values",
    "last_own_turn",
    "thoughts_budget",
]

#: Longest ``thoughts`` string the schema admits, in characters (about 150 tokens of
#: English): room to reason, and a bound on a small model that repeats itself inside the
#: string until ``max_tokens`` cuts the object open.
DEFAULT_MAX_THOUGHTS = 600


def thoughts_budget(max_tokens: int | None, n_suspects: int) -> int:
    """The ``thoughts`` length that leaves room to close the object within ``max_tokens``.

    A truncated object is no move at all, so the thoughts get what remains after the rest
    of the object (the action and its arguments, a broad message listing every id: at most
    about ``32 + 4·n_suspects`` tokens) at a conservative 2 characters a token (English runs
    3 to 4; digits and repetition fewer), capped at :data:`DEFAULT_MAX_THOUGHTS` and never
    below 16.
    """
    if max_tokens is None:
        return DEFAULT_MAX_THOUGHTS
    room = max_tokens - (32 + 4 * n_suspects)
    return max(16, min(DEFAULT_MAX_THOUGHTS, 2 * room))


def last_own_turn(view: AgentView) -> bool:
    """Whether ``view``'s agent has no later turn in the current budget.

    Agents act in a fixed order, one per budget turn (the rogue-agents paper, §2), so the
    agent's next turn would be ``turn + (its partners + 1)``.
    """
    return view.turn + len(view.partners) + 1 > view.max_turns


def broad_values(view: AgentView) -> list[str]:
    """Intel's broad-message values, ``"property-value"`` for every property and value."""
    return [f"{prop}-{value}" for prop, values in view.attributes.items() for value in values]


def _move(thoughts: dict[str, Any], number: int | None, fields: dict[str, Any]) -> dict[str, Any]:
    assert number is not None  # every role's own kinds have a number
    properties: dict[str, Any] = {"thoughts": thoughts, "action": {"const": number}, **fields}
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def action_schema(
    view: AgentView, *, max_thoughts: int = DEFAULT_MAX_THOUGHTS, accuse_only: bool = False
) -> dict[str, Any]:
    """The JSON schema of every valid move of ``view``'s agent (see the module docstring).

    An ``anyOf`` of one object per move shape; properties in the order the reply is written
    (thoughts, action, arguments), all required, no others. ``accuse_only`` admits only the
    accusation (for the Accuser and symmetric players; Intel cannot accuse): the
    ``final_move: accuse`` setting of small-model runs, see :class:`~byzllm.agents.whodunit.
    LLMAgent`.
    """
    if max_thoughts < 1:
        raise ValueError("max_thoughts must be at least 1")
    thoughts = {"type": "string", "maxLength": max_thoughts}
    ids = {"type": "integer", "enum": list(range(1, view.n_suspects + 1))}
    if accuse_only and view.role in ("accuser", "player"):
        return _move(thoughts, action_number(view.role, "accuse"), {"character": ids})
    moves: list[dict[str, Any]] = []
    if view.role == "accuser":
        for prop, values in view.attributes.items():
            moves.append(
                _move(
                    thoughts,
                    action_number("accuser", "request_specific"),
                    {
                        "character": ids,
                        "property": {"const": prop},
                        "value": {"enum": list(values)},
                    },
                )
            )
        moves.append(_move(thoughts, action_number("accuser", "request_broad"), {}))
        moves.append(_move(thoughts, action_number("accuser", "accuse"), {"character": ids}))
    elif view.role == "intel":
        pending = view.pending_request
        if pending is not None and pending.kind == "request_specific":
            moves.append(
                _move(thoughts, action_number("intel", "respond"), {"value": {"type": "boolean"}})
            )
        moves.append(
            _move(
                thoughts,
                action_number("intel", "respond_broad"),
                {
                    "value": {"enum": broad_values(view)},
                    "character": {"type": "array", "items": ids, "maxItems": view.n_suspects},
                },
            )
        )
    else:
        if view.facts:
            facts = {"type": "integer", "enum": list(range(1, len(view.facts) + 1))}
            moves.append(_move(thoughts, action_number("player", "share"), {"fact": facts}))
        moves.append(_move(thoughts, action_number("player", "accuse"), {"character": ids}))
        moves.append(_move(thoughts, action_number("player", "skip"), {}))
    return moves[0] if len(moves) == 1 else {"anyOf": moves}
