"""A WhoDunit transcript's flags in the viewer: a refused move is invalid, a reply without an
action a fall-back (byzllm.view._games)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from byzllm.experiments.whodunit import WhoDunitTurnRecord
from byzllm.view._games import _transcript


def _turn(**changes: Any) -> dict[str, Any]:
    """A stored turn record (a valid move unless ``changes`` say otherwise)."""
    values: dict[str, Any] = {
        "game_id": "g",
        "repeat": 0,
        "success": False,
        "turn": 1,
        "budget_turn": 1,
        "role": "accuser",
        "agent": "Beth",
        "action": {"kind": "request_broad", "action": 2},
        "valid": True,
        "errors": [],
        "fallback": False,
        "decision": "continue",
        "message": "Agent Beth asks.",
        "remaining_candidates": [1, 2, 3],
        "hallucination": False,
        "repetition": False,
        "ignored_fact": False,
        "noise": [],
        "distributions": [],
        "simulated": False,
    }
    return WhoDunitTurnRecord(**(values | changes)).model_dump()


def _flags(row: dict[str, Any]) -> str:
    (flags,) = re.findall(r"<td>([^<]*)</td></tr>", _transcript([row]))
    return str(flags)


@pytest.mark.parametrize(
    ("changes", "flags"),
    [
        ({}, ""),
        # The rules refused the action; the turn passed. Was "passed (fallback), invalid", as
        # for a reply without an action.
        ({"valid": False, "fallback": True, "rejected": True}, "invalid (passed)"),
        # No action in the reply: a fall-back, no invalid move. Was "passed (fallback), invalid".
        ({"valid": False, "fallback": True}, "passed (fallback)"),
        ({"hallucination": True}, "hallucination"),
    ],
)
def test_a_turns_flags_tell_a_refused_move_from_a_fall_back(
    changes: dict[str, Any], flags: str
) -> None:
    assert _flags(_turn(**changes)) == flags


def test_a_turn_stored_before_refusals_were_recorded_is_read() -> None:
    """Stored turn records before ``rejected``: read, a pass being a fall-back (the record
    cannot tell which it was)."""
    old = _turn(valid=False, fallback=True)
    del old["rejected"]
    assert WhoDunitTurnRecord.model_validate(old).rejected is False
    assert _flags(old) == "passed (fallback)"
