"""A small hand-made game whose deductions can be checked by hand."""

from __future__ import annotations

import pytest

from byzllm.envs.whodunit import WhoDunitGame

ATTRS = {
    "hat": ("brown", "black"),
    "eye_color": ("blue", "brown", "green"),
    "mood": ("happy", "sad"),
}
SUSPECTS = (
    {"hat": "brown", "eye_color": "blue", "mood": "happy"},  # 1
    {"hat": "black", "eye_color": "blue", "mood": "sad"},  # 2
    {"hat": "brown", "eye_color": "green", "mood": "sad"},  # 3  <- culprit
    {"hat": "black", "eye_color": "brown", "mood": "happy"},  # 4
)


@pytest.fixture
def asym_game() -> WhoDunitGame:
    return WhoDunitGame(
        id="hand-asym", variant="asym", attributes=ATTRS, suspects=SUSPECTS, culprit=2, max_turns=6
    )


@pytest.fixture
def sym_game() -> WhoDunitGame:
    # Facts: player 1 knows hat=brown (suspects 1, 3), player 2 knows mood=sad (2, 3):
    # together only suspect 3.
    return WhoDunitGame(
        id="hand-sym",
        variant="sym",
        attributes=ATTRS,
        suspects=SUSPECTS,
        culprit=2,
        facts=((("hat", "brown"),), (("mood", "sad"),)),
        max_turns=6,
    )
