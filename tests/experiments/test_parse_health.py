"""Parse health: per-stage totals, the 20% warning, simulated and old runs."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from byzllm.agents import ParseCounts
from byzllm.experiments.parse_health import (
    STAGES,
    WARN_ABOVE,
    from_records,
    logprob_counts,
    move_counts,
)


def _unit(simulated: bool = False, **stages: tuple[int, int]) -> dict[str, object]:
    return {
        "simulated": simulated,
        "parse": {s: {"calls": c, "fallbacks": f} for s, (c, f) in stages.items()},
    }


def test_totals_rows_and_one_warning_per_stage() -> None:
    health = from_records(
        [
            _unit(score=(42, 42), answer=(6, 0), refine=(12, 1)),
            _unit(score=(42, 42), answer=(6, 3), refine=(12, 0)),
        ]
    )
    assert [(s.stage, s.calls, s.fallbacks) for s in health.stages] == [
        ("score", 84, 84),
        ("answer", 12, 3),
        ("refine", 24, 1),
    ]
    assert health.rows() == [
        {"stage": "SAC score", "calls": 84, "fallbacks": 84, "rate": "100.0%"},
        {"stage": "answer extraction", "calls": 12, "fallbacks": 3, "rate": "25.0%"},
        {"stage": "refine extraction", "calls": 24, "fallbacks": 1, "rate": "4.2%"},
    ]
    assert health.warnings() == [
        "warning: 100% of SAC scores defaulted to 0.5 (84 of 84): the model did not follow "
        "the scoring format, so nothing was filtered (SAC ran as debate)",
        "warning: 25% of initial answers could not be extracted (3 of 12): the model did not "
        "follow the answer format, so those agents started without an answer (counted wrong)",
    ]
    assert health.status == "warning" and health.note is None
    data = health.to_json()
    assert data["status"] == "warning" and data["threshold"] == WARN_ABOVE
    assert data["stages"][0] == {
        "stage": "score",
        "label": "SAC score",
        "calls": 84,
        "fallbacks": 84,
        "rate": 1.0,
    }
    assert data["warnings"] == health.warnings()


def test_the_threshold_is_strictly_above_20_percent() -> None:
    assert from_records([_unit(move=(10, 2))]).warnings() == []
    assert from_records([_unit(move=(10, 2))]).status == "ok"
    (line,) = from_records([_unit(move=(100, 21))]).warnings()
    assert line.startswith("warning: 21% of WhoDunit moves fell back to a pass (21 of 100): ")


def test_simulated_and_old_runs_say_so() -> None:
    simulated = from_records([_unit(simulated=True), _unit(simulated=True)])
    assert simulated.status == "n/a (simulated)" and simulated.warnings() == []
    assert simulated.note is not None and "n/a (simulated" in simulated.note
    assert simulated.rows() == [] and simulated.to_json()["stages"] == []
    old = from_records([{"simulated": False, "trace": {}}])
    assert old.status == "not recorded" and old.note is not None
    mixed = from_records([_unit(simulated=True, score=(7, 0))])  # LLM strong + simulated weak
    assert mixed.status == "ok" and mixed.note is None


def test_move_counts() -> None:
    assert move_counts([False, True, True], simulated=False) == {
        "move": {"calls": 3, "fallbacks": 2}
    }
    assert move_counts([False, True], simulated=True) == {}
    assert move_counts([], simulated=False) == {}


def test_logprob_counts_leave_out_turns_that_fell_back() -> None:
    position = [("3", -0.1), ("4", -2.3)]
    turns = [(False, [position, position]), (False, []), (True, []), (False, [position])]
    assert logprob_counts(turns, simulated=False) == {"logprobs": {"calls": 3, "fallbacks": 1}}
    assert logprob_counts(turns, simulated=True) == {}
    assert logprob_counts([(True, [])], simulated=False) == {}


def test_every_stage_has_wording() -> None:
    from byzllm.agents import PARSE_STAGES

    assert set(STAGES) == set(PARSE_STAGES)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.dictionaries(
            st.sampled_from(["score", "confidence", "answer", "refine", "move"]),
            st.tuples(st.integers(0, 50), st.integers(0, 50)).map(
                lambda t: {"calls": t[0], "fallbacks": min(t)}
            ),
        ),
        max_size=6,
    )
)
def test_totals_are_sums_and_warnings_match_rates(units: list[dict[str, dict[str, int]]]) -> None:
    health = from_records([{"simulated": False, "parse": u} for u in units])
    for stage in health.stages:
        assert stage.calls == sum(u.get(stage.stage, {}).get("calls", 0) for u in units)
        assert stage.fallbacks == sum(u.get(stage.stage, {}).get("fallbacks", 0) for u in units)
    warned = {line.split(" of ", 1)[1].split(" (")[0] for line in health.warnings()}
    assert len(health.warnings()) == len(warned)  # at most one line per stage
    expected = {
        STAGES[s.stage].what for s in health.stages if s.rate is not None and s.rate > WARN_ABOVE
    }
    assert warned == expected
    assert ParseCounts.of(*units).to_dict() == {
        s.stage: {"calls": s.calls, "fallbacks": s.fallbacks} for s in health.stages
    }


def test_malformed_counts_are_ignored() -> None:
    health = from_records(
        [{"parse": {"score": "x", "move": {"calls": "3"}, "answer": {"calls": 2, "fallbacks": 9}}}]
    )
    assert [(s.stage, s.calls, s.fallbacks) for s in health.stages] == [("answer", 2, 2)]
