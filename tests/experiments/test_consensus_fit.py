"""`sim fit` recovers the parameters that generated a consensus run; `sim compare` pairs them."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from byzllm.agents.consensus import STRONG_PROFILE, WEAK_PROFILE
from byzllm.experiments._fitting import FittedProfile
from byzllm.experiments.consensus.config import ConsensusConfig
from byzllm.experiments.consensus.experiment import run_in_memory
from byzllm.experiments.consensus.fit import (
    CONSENSUS_METRICS,
    _score_levels,
    compare_consensus,
    fit_consensus,
    simulated_twin,
)

TRUTH = {
    "strength": 0.7,
    "error_correlation": 0.5,
    "answer_spread": 0.4,
    "self_trust": 0.9,
    "false_accept": 0.2,
    "false_reject": 0.3,
    "score_accept": 0.85,
    "score_reject": 0.15,
    "calibration_noise": 0.05,
    "anchoring": 0.5,
    "susceptibility": 0.6,
    "confidence_right": 0.85,
    "confidence_wrong": 0.6,
    "confidence_at_one_right": 0.4,
    "confidence_at_one_wrong": 0.1,
    "refine_slip": 0.2,
    "slip_accuracy": 0.25,
    "difficulty_correlation": 0.0,
}
WEAK_TRUTH = {**TRUTH, "strength": 0.3, "false_accept": 0.35}

#: Stated tolerances of the fit at this size (300 questions x 2 protocols): rates measured on
#: hundreds of events within 0.06; anchoring is a ratio of two rates (fewer events) within 0.2.
TOLERANCE = {
    "anchoring": 0.2,
    "susceptibility": 0.12,
    "self_trust": 0.08,
    "slip_accuracy": 0.1,
    "difficulty_correlation": 0.1,
}


def _config(n: int) -> ConsensusConfig:
    return ConsensusConfig.model_validate(
        {
            "protocols": ["sac", "cp-wbft"],
            "topologies": ["complete"],
            "T": [3],
            "seeds": [0],
            "dataset": {"n": n},
            "agents": {"strong": {"profile": TRUTH}, "weak": {"profile": WEAK_TRUTH}},
        }
    )


@pytest.fixture(scope="module")
def generated() -> tuple[ConsensusConfig, list[dict[str, object]]]:
    config = _config(300)
    return config, run_in_memory(config)


def test_fit_recovers_the_generating_parameters(
    generated: tuple[ConsensusConfig, list[dict[str, object]]],
) -> None:
    config, records = generated
    profile = fit_consensus(records, run="generated", config=config)
    assert profile.run_simulated
    for group, truth in (("strong", TRUTH), ("weak", WEAK_TRUTH)):
        fitted = profile.groups[group]
        for name, value in truth.items():
            tol = TOLERANCE.get(name, 0.06)
            assert fitted[name] == pytest.approx(value, abs=tol), (group, name, fitted[name])
            assert profile.sources[group][name].startswith("fitted from generated:")
        # No evidence for injections in a replay run: the default stays, and says so.
        assert "no evidence" in profile.sources[group]["injection_susceptibility"]


def test_a_different_generator_gives_a_different_fit(
    generated: tuple[ConsensusConfig, list[dict[str, object]]],
) -> None:
    config = _config(80).model_copy(
        update={
            "agents": _config(80).agents.model_copy(
                update={
                    "strong": _config(80).agents.strong.model_copy(
                        update={"profile": {**TRUTH, "false_accept": 0.6, "strength": 0.4}}
                    )
                }
            )
        }
    )
    records = run_in_memory(config)
    fitted = fit_consensus(records, run="other", config=config).groups["strong"]
    assert fitted["false_accept"] == pytest.approx(0.6, abs=0.1)
    assert fitted["strength"] == pytest.approx(0.4, abs=0.08)


def test_profile_file_round_trips_and_plugs_into_a_config(
    tmp_path: Path, generated: tuple[ConsensusConfig, list[dict[str, object]]]
) -> None:
    config, records = generated
    path = fit_consensus(records[:40], run="generated", config=config).save(tmp_path / "p.yaml")
    loaded = FittedProfile.load(path)
    cfg_file = tmp_path / "sweep.yaml"
    cfg_file.write_text("agents:\n  strong: {profile: p.yaml}\n  weak: {profile: p.yaml}\n")
    from byzllm.runs import load_config

    cfg = load_config(cfg_file, ConsensusConfig)
    assert cfg.agents.strong.profile == loaded.groups["strong"]
    assert cfg.agents.weak.profile == loaded.groups["weak"]
    twin = simulated_twin(cfg, loaded)
    assert twin.agents.strong.backend == "simulated"


def test_a_profile_of_another_domain_is_refused(tmp_path: Path) -> None:
    FittedProfile(
        domain="whodunit", run="r", run_simulated=True, groups={"sim": {}}, sources={"sim": {}}
    ).save(tmp_path / "w.yaml")
    cfg_file = tmp_path / "sweep.yaml"
    cfg_file.write_text("agents:\n  strong: {profile: w.yaml}\n")
    from byzllm.errors import ConfigError
    from byzllm.runs import load_config

    with pytest.raises(ConfigError, match="whodunit"):
        load_config(cfg_file, ConsensusConfig)


def test_compare_pairs_every_metric_with_intervals(
    generated: tuple[ConsensusConfig, list[dict[str, object]]],
) -> None:
    config, records = generated
    small = config.model_copy(update={"dataset": config.dataset.model_copy(update={"n": 30})})
    real = run_in_memory(small)
    profile = fit_consensus(records, run="generated", config=config)
    table = compare_consensus(real, small, profile, resamples=200)
    assert {meta["protocol"] for meta, _ in table} == {"sac", "cp-wbft"}
    for _, rows in table:
        assert [r.metric for r in rows] == list(CONSENSUS_METRICS)
        for r in rows:
            assert r.real_low <= r.real <= r.real_high
            assert r.simulated_low <= r.simulated <= r.simulated_high
            assert math.isclose(r.difference, r.simulated - r.real)
            assert r.n_real == r.n_simulated == 30
    # The twin of a simulated run on its own fitted parameters lands close to it.
    for meta, rows in table:
        iaa = next(r for r in rows if r.metric == "IAA")
        assert abs(iaa.difference) < 0.15, meta


def test_compare_of_an_interrupted_run_uses_the_questions_it_finished() -> None:
    """The twin reruns the whole configured grid: a run that finished 10 of its 30 questions
    was set beside the twin's 30 (IAA 0.643 against 0.576 for a twin on the run's own
    generating parameters, which reproduces the run exactly)."""
    config = ConsensusConfig.model_validate(
        {"protocols": ["cp-wbft"], "topologies": ["complete"], "T": [2], "dataset": {"n": 30}}
    )
    records = run_in_memory(config)
    finished = [r for r in records if int(str(r["task_id"]).rsplit("/", 1)[-1]) < 10]
    groups = {
        group: {k: float(v) for k, v in profile.model_dump().items() if k != "name"}
        for group, profile in (("strong", STRONG_PROFILE), ("weak", WEAK_PROFILE))
    }
    own = FittedProfile(
        domain="consensus",
        run="own",
        run_simulated=True,
        groups=groups,
        sources={group: {} for group in groups},
    )
    ((_, rows),) = compare_consensus(finished, config, own, resamples=100)
    for row in rows:
        assert row.n_real == row.n_simulated == 10
        assert row.simulated == pytest.approx(row.real), row.metric


def test_the_twin_of_an_interrupted_run_plays_only_the_questions_it_finished(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The twin played the whole configured grid (30 questions for a run that finished 10)
    and then compared the 10 both held: the other 20 were simulated for nothing."""
    import byzllm.experiments.consensus.experiment as experiment

    config = ConsensusConfig.model_validate(
        {"protocols": ["majority"], "topologies": ["complete"], "T": [1], "dataset": {"n": 30}}
    )
    records = run_in_memory(config)
    finished = records[:10]
    played: list[str] = []
    unit = experiment.consensus_unit

    async def counting(payload: dict[str, object]) -> object:
        played.append(str(payload["task_id"]))
        return await unit(payload)

    monkeypatch.setattr(experiment, "consensus_unit", counting)
    own = fit_consensus(records, run="own", config=config)
    ((_, rows),) = compare_consensus(finished, config, own, resamples=50)
    assert sorted(played) == sorted(str(r["task_id"]) for r in finished)
    assert all(row.n_real == row.n_simulated == 10 for row in rows)


def test_round_zero_is_counted_once_per_question_whatever_the_protocols() -> None:
    """Every protocol of a question starts from the same answers: the strength's n was the
    strong answers times the protocols (1,800 for 600 distinct answers)."""
    config = ConsensusConfig.model_validate(
        {
            "protocols": ["sac", "cp-wbft"],
            "topologies": ["complete"],
            "T": [1],
            "dataset": {"n": 30},
        }
    )
    profile = fit_consensus(run_in_memory(config), run="x", config=config)
    assert profile.sources["strong"]["strength"].endswith("n = 120")  # 30 questions x 4 agents


def test_scores_and_confidences_count_once_per_question_whatever_the_topologies() -> None:
    """Every topology asks an agent the same scoring and confidence prompts on a question:
    the self-trust's n was the strong agents' solutions times the topologies (360 for 120),
    and a judged answer or a confidence counted again for every topology."""
    config = ConsensusConfig.model_validate(
        {
            "protocols": ["sac", "cp-wbft"],
            "topologies": ["merg", "complete", "erdos-renyi"],
            "dataset": {"n": 30},
        }
    )
    sources = fit_consensus(run_in_memory(config), run="x", config=config).sources["strong"]
    assert sources["self_trust"].endswith("n = 120")  # 30 questions x 4 agents
    # The same records again under other topology names: the same prompts, no new evidence.
    one = config.model_copy(update={"topologies": ["complete"]})
    records = run_in_memory(one)
    again = [{**r, "topology": name} for name in ("merg", "erdos-renyi") for r in records]
    once = fit_consensus(records, run="x", config=one)
    thrice = fit_consensus(records + again, run="x", config=one)
    for group in ("strong", "weak"):
        for name in ("self_trust", "false_accept", "false_reject", "score_accept"):
            assert thrice.sources[group][name] == once.sources[group][name], (group, name)
        for name in ("confidence_at_one_right", "confidence_at_one_wrong", "confidence_wrong"):
            assert thrice.sources[group][name] == once.sources[group][name], (group, name)
        for name in ("scores_given", "confidences"):
            assert thrice.evidence[group][name] == once.evidence[group][name], (group, name)


def test_score_levels_stay_in_their_parameters_range() -> None:
    """Scores only ever 0 or 1 (every one censored): the levels were searched on [0.5, 1.5]
    and [-0.5, 0.5] and stopped at 1.5 and -0.5 (written clipped to 1 and 0), the noise at
    0.032 where the flat likelihood left it, so the simulator drew scores of 0.97 to 1.0.
    Within the levels' range the likelihood is largest at 1 and 0 with no noise: the noise's
    floor, 0.001, which the scores' rounding to 0.01 makes exact."""
    accept, reject, sigma, n = _score_levels([1.0] * 15, [0.0] * 15) or (0.0, 0.0, 0.0, 0)
    assert (accept, reject, n) == (pytest.approx(1.0), pytest.approx(0.0), 30)
    assert sigma == pytest.approx(1e-3)


def test_score_levels_are_searched_from_more_than_one_start() -> None:
    """30 scores of 1.0 beside 2 of 0.0 and 8 of 0.1: one start (an even split, the spread
    of the uncensored scores, 0) stopped after one step at the rejecting level 0.5 and a
    noise of 1.2; the maximum is near 0.078 and 0.040 (the two scores at 0 are a censored
    tail below the eight at 0.1)."""
    accept, reject, sigma, _ = _score_levels([1.0] * 30, [0.0] * 2 + [0.1] * 8) or (0, 0, 0, 0)
    assert accept == pytest.approx(1.0)
    assert reject == pytest.approx(0.078, abs=0.005)
    assert sigma == pytest.approx(0.040, abs=0.005)


def test_score_noise_is_fitted_through_the_clipping_at_0_and_1() -> None:
    """The simulator clips each score to [0, 1]: the plain s.d. of the scores fitted a noise
    of 0.2 as 0.14 (and the accepting level 0.9 as 0.86) on every seed."""
    truth = {**TRUTH, "calibration_noise": 0.2, "score_accept": 0.9}
    config = ConsensusConfig.model_validate(
        {
            "protocols": ["sac"],
            "topologies": ["complete"],
            "T": [2],
            "dataset": {"n": 150},
            "agents": {"strong": {"profile": truth}, "weak": {"profile": WEAK_TRUTH}},
        }
    )
    profile = fit_consensus(run_in_memory(config), run="x", config=config)
    fitted = profile.groups["strong"]
    assert fitted["calibration_noise"] == pytest.approx(0.2, abs=0.02)
    assert fitted["score_accept"] == pytest.approx(0.9, abs=0.03)
    assert "censored" in profile.sources["strong"]["calibration_noise"]


def _row(agent: int, answer: str, **extra: object) -> dict[str, object]:
    row = {"agent": agent, "round": 0, "answer": answer, "key": answer, "correct": answer == "7"}
    return row | extra


def test_replies_that_fell_back_to_the_parser_default_are_not_read() -> None:
    """Two strong agents on one SAC question (T = 1), every row hand-made. Agent 0 (right,
    "7") gave agent 1's wrong "8" the parser's default 0.5 (its scoring fell back once) and
    itself 0.5; agent 1 scored agent 0's answer 0.9 and itself 0.3; agent 0's refinement fell
    back (it keeps "7"), agent 1's moved to "7". The defaults were read as the model's: a
    false accept of 1.0 (n = 1), a self-trust of 0.5 (n = 2) and a refine slip over 2
    refinements. Now agent 0's scores, self-score and refinement are left out and counted."""
    rounds = [
        [
            _row(0, "7", scores={1: 0.5}, self_score=0.5, retained=[1],
                 parse={"score": {"calls": 2, "fallbacks": 1},
                        "refine": {"calls": 1, "fallbacks": 1}}),
            _row(1, "8", scores={0: 0.9}, self_score=0.3, retained=[0],
                 parse={"score": {"calls": 2, "fallbacks": 0},
                        "refine": {"calls": 1, "fallbacks": 0}}),
        ],
        [_row(0, "7", round=1), _row(1, "7", round=1)],
    ]  # fmt: skip
    trace = {
        "task_id": "q",
        "protocol": "sac",
        "truth": "7",
        "groups": ["strong", "strong"],
        "rounds": rounds,
    }
    profile = fit_consensus([{"trace": trace, "seed": 0}], run="hand")
    fitted, sources = profile.groups["strong"], profile.sources["strong"]
    assert "no evidence in hand" in sources["false_accept"]
    assert fitted["false_accept"] == STRONG_PROFILE.false_accept
    # Agent 1's score of agent 0's right answer: 0.9, not a false reject.
    assert fitted["false_reject"] == 0.0 and sources["false_reject"].endswith("n = 1")
    assert fitted["self_trust"] == 0.0 and sources["self_trust"].endswith("n = 1")
    # Agent 1 doubted its own (0.3) and moved to the heaviest retained answer, agent 0's.
    assert fitted["susceptibility"] == 1.0 and sources["susceptibility"].endswith("n = 1")
    assert fitted["refine_slip"] == 0.0 and sources["refine_slip"].endswith("n = 1")
    assert profile.evidence["strong"]["agent_rounds_at_parse_default"] == {
        "refine": 1,
        "score": 1,
    }


def test_an_anchoring_through_the_default_susceptibility_says_so() -> None:
    """Three strong agents on one SAC question, hand-made: agent 2 ("8") believes its own
    (0.8), retains agents 0 and 1 ("7", scored 0.9 each: 1.8 against its own 1.0) and moves
    to "7"; no agent doubts its own, so susceptibility is not fitted. The anchoring
    1 - 1 / 0.7 (clipped to 0) divided by the default 0.7, and its source did not say so."""
    rounds = [
        [
            _row(0, "7", scores={2: 0.2}, self_score=0.9),
            _row(1, "7", self_score=0.9),
            _row(2, "8", scores={0: 0.9, 1: 0.9}, self_score=0.8, retained=[0, 1]),
        ],
        [_row(0, "7", round=1), _row(1, "7", round=1), _row(2, "7", round=1)],
    ]
    trace = {"task_id": "q", "protocol": "sac", "truth": "7", "groups": ["strong"] * 3}
    profile = fit_consensus([{"trace": trace | {"rounds": rounds}, "seed": 0}], run="hand")
    fitted, sources = profile.groups["strong"], profile.sources["strong"]
    assert "no evidence in hand" in sources["susceptibility"]
    assert fitted["anchoring"] == 0.0
    assert sources["anchoring"] == (
        "fitted from hand: 1 - P(moves | believes its own) / susceptibility, P = 1.000, "
        "susceptibility 0.7 (the default: no doubting occasion), n = 1"
    )
