"""Views of a small hand-made game, built directly (agents do not need the environment)."""

from __future__ import annotations

import pytest

from byzllm.agents.whodunit import AgentView, WhoDunitAction

ATTRS = {
    "hat": ("brown", "black"),
    "eye_color": ("blue", "brown", "green"),
    "shirt": ("button-up", "tee"),
    "shirt_color": ("pink", "green"),
}
SUSPECTS = tuple(
    {"hat": h, "eye_color": e, "shirt": s, "shirt_color": c}
    for h, e, s, c in [
        ("brown", "blue", "tee", "pink"),
        ("black", "blue", "button-up", "green"),
        ("brown", "green", "button-up", "pink"),
        ("black", "brown", "tee", "green"),
        ("brown", "brown", "tee", "green"),
        ("black", "green", "tee", "pink"),
        ("brown", "blue", "button-up", "green"),
        ("black", "blue", "tee", "pink"),
        ("brown", "green", "tee", "green"),
        ("black", "brown", "button-up", "pink"),
        ("brown", "brown", "button-up", "pink"),
        ("black", "green", "button-up", "green"),
    ]
)


def make_view(role: str, **kw: object) -> AgentView:
    base: dict[str, object] = {
        "game_id": "g",
        "variant": "sym" if role == "player" else "asym",
        "role": role,
        "name": "Beth" if role == "accuser" else "Alex",
        "partners": ("Alex",) if role == "accuser" else ("Beth",),
        "attributes": ATTRS,
        "n_suspects": len(SUSPECTS),
        "suspects": None if role == "accuser" else SUSPECTS,
        "culprit_description": dict(SUSPECTS[2]) if role == "accuser" else None,
        "facts": (("hat", "brown"), ("eye_color", "green")) if role == "player" else (),
        "turn": 1,
        "max_turns": 31,
    }
    base.update(kw)
    return AgentView.model_validate(base)


QUESTION = WhoDunitAction(kind="request_specific", character=3, property="hat", value="brown")


@pytest.fixture
def accuser_view() -> AgentView:
    return make_view("accuser")


@pytest.fixture
def intel_view() -> AgentView:
    return make_view("intel", pending_request=QUESTION, turn=2)


@pytest.fixture
def player_view() -> AgentView:
    return make_view("player")
