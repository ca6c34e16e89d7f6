"""AgentRound.trusted: the round engine's unvalidated rows equal validated ones."""

from __future__ import annotations

import pytest

from byzllm.protocols import AgentRound

ROWS = [
    {"agent": 0, "round": 0, "answer": None, "correct": False},
    {
        "agent": 3,
        "round": 2,
        "answer": "42",
        "key": "42",
        "text": "42",
        "correct": True,
        "calls": 0,
        "latency_s": 0.0,
        "parse": {},
        "self_score": 0.9,
        "scores": {0: 0.9, 2: 0.1},
        "retained": [0],
        "filtered": [2],
    },
    {"agent": 1, "round": 6, "answer": "7", "correct": False, "confidence": 1.0},
]


@pytest.mark.parametrize("values", ROWS)
def test_a_trusted_row_is_the_validated_row(values: dict[str, object]) -> None:
    validated, trusted = AgentRound(**values), AgentRound.trusted(dict(values))
    assert trusted == validated
    assert trusted.model_dump_json() == validated.model_dump_json()
    assert trusted.model_fields_set == validated.model_fields_set


def test_trusted_rows_get_their_own_default_containers() -> None:
    first, second = (AgentRound.trusted(dict(ROWS[0])) for _ in range(2))
    first.scores[1] = 0.5
    first.retained.append(1)
    assert second.scores == {} and second.retained == []
