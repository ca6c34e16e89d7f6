"""`sim fit` on GovSim runs: the estimators on hand-made records, recovery of the parameters
that generated a simulated run, the profile in a config (Piatti et al. 2024's fishing game;
the rogue-agents paper, §4.1).

Stated tolerances (80 simulated games each, every fisher's proposal and catch): ``greed``
within 0.06 (month 1's catches, about 400 of them: its standard error is about 0.03),
``estimate_noise`` within 15% relative, ``persuadability`` within 0.06, ``rogue_rate``
within 0.03 and ``rogue_multiplier`` within 0.3 (a ratio of two fitted numbers). At a high
greed, where many catches are capped at the stock: within 0.5 by the censored likelihood
(the true mixture), within 0.6 by the median at greed 8, a stated lower bound at greed 10.
``top_k`` (the most alternatives a catch decision reported) exactly.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from byzllm.agents.govsim import FisherParams
from byzllm.errors import ConfigError, InputError
from byzllm.experiments._fitting import FittedProfile
from byzllm.experiments.govsim import GovSimRunConfig, expand_units, fit_govsim, work
from byzllm.experiments.govsim.fit import (
    CatchObservation,
    ProposalMixture,
    ProposalObservation,
    _log_catch,
    month_one_greed,
    observations,
    persuadability_slope,
    proposal_mixture,
)
from byzllm.runs import load_config
from byzllm.runs._runner import run_in_memory


def _utterance(month: int, speaker: str, *amounts: int) -> dict[str, Any]:
    return {"month": month, "speaker": speaker, "text": "", "amounts": list(amounts)}


def _game(**changes: Any) -> dict[str, Any]:
    """Two months of two fishers on a lake of 100 tons (hand-made, every number chosen)."""
    game: dict[str, Any] = {
        "game_id": "g",
        "repeat": 0,
        "r0": 100,
        "simulated": False,
        "harvests": [
            {
                "month": 1,
                "stock_before": 100,
                "wishes": {"Ana": 30, "Ben": 20},
                "catches": {"Ana": 30, "Ben": 20},
                "stock_after": 50,
            },
            {
                "month": 2,
                "stock_before": 100,
                "wishes": {"Ana": 27, "Ben": 100},
                "catches": {"Ana": 27, "Ben": 73},
                "stock_after": 0,
            },
        ],
        "meetings": [
            # Ana speaks twice: only her first amount is her proposal; Ben's second
            # utterance names none. The median of the meeting's first amounts is 24.
            [
                _utterance(1, "Ana", 24, 99),
                _utterance(1, "Ben", 30),
                _utterance(1, "Ana", 20),
                _utterance(1, "Ben"),
            ],
            [_utterance(2, "Ana", 5)],
        ],
        "decisions": [],
    }
    return game | changes


def test_observations_read_proposals_and_catches_by_hand() -> None:
    props, catches = observations([_game()])
    # Meeting 1: stock after 50 regrows to min(100, 100) = 100; s* = (100 // 2) // 2 = 25.
    assert [(p.fisher, p.amount, p.share, p.scale) for p in props] == [
        ("Ana", 24, 25, 50.0),
        ("Ben", 30, 25, 50.0),
    ]  # meeting 2 follows a collapse to 0: nothing regrows, no proposal to read
    assert [(c.month, c.fisher, c.wish, c.share, c.proposal, c.agreed) for c in catches] == [
        (1, "Ana", 30, 25, None, None),
        (1, "Ben", 20, 25, None, None),
        (2, "Ana", 27, 25, 24, 24.0),  # median of 24, 30, 20
        (2, "Ben", 100, 25, 30, 24.0),
    ]
    fell_back = _game(decisions=[{"month": 2, "fisher": "Ana", "applied": True, "fallback": True}])
    _, catches = observations([fell_back])
    assert [(c.month, c.fisher) for c in catches] == [(1, "Ana"), (1, "Ben"), (2, "Ben")]


def _catch(month: int, wish: int, proposal: int | None = None, agreed: float | None = None) -> Any:
    return CatchObservation("g", month, "Ana", wish, 10, 100, 5, proposal, agreed)


def test_month_one_greed_without_proposals_is_the_median_ratio() -> None:
    catches = [_catch(1, 12), _catch(1, 13), _catch(1, 30), _catch(2, 50)]
    # wish / s*: 1.2, 1.3, 3.0 (month 2 is left out); the median less one.
    assert month_one_greed(catches, None) == pytest.approx(0.3)
    # A wish at the stock counts at its cap, 100 / 10, the least its ratio can be (it was
    # left out, which moved the median to 1.25).
    capped = CatchObservation("g", 1, "Ana", 100, 10, 100, 5, None, None)
    assert month_one_greed([*catches[:2], capped], None) == pytest.approx(0.3)
    assert month_one_greed([capped], None) == pytest.approx(9.0)  # a lower bound


def test_a_catch_at_the_stock_is_censored_by_hand() -> None:
    """A catch at the stock stands for every intention that rounds to the stock or above.

    On 100 tons, 5 fishers (s* = 10, S = 20), greed 8 and noise 0.15, an intention is
    N(90, 27²): a capped catch has probability Φ((90 − 99.5) / 27) = Φ(−0.35185) = 0.36248;
    one of 90 tons below it Φ(0.5 / 27) − Φ(−0.5 / 27) = 0.014775.
    """
    wish, cap = np.array([100.0, 90.0]), np.array([100.0, 100.0])
    mean, sd = np.array([90.0, 90.0]), np.array([27.0, 27.0])
    assert np.exp(_log_catch(wish, cap, mean, sd)) == pytest.approx([0.36248, 0.014775], rel=1e-4)
    # A cap of 0 takes every draw.
    assert _log_catch(np.zeros(1), np.zeros(1), np.ones(1), np.ones(1))[0] == 0.0


def test_month_one_greed_of_capped_catches_is_the_top_of_its_range() -> None:
    """Only capped catches: the likelihood grows with greed (they were left out: no greed)."""
    mixture = ProposalMixture(
        rate=0.06,
        noise=0.15,
        factor=3.9,
        rogue=(),
        expected_rogue=0.0,
        log_likelihood=0.0,
        informative=0,
    )
    capped = [CatchObservation("g", 1, "Ana", 100, 10, 100, 5, None, None)] * 5
    assert month_one_greed(capped, mixture) == pytest.approx(10.0, abs=1e-3)


def test_month_one_greed_of_exact_estimates_is_the_greed_that_rounds_every_catch() -> None:
    """Fishers who estimate the sustainable share exactly make the catches' likelihood a
    spike at the greed that rounds every catch right and flat elsewhere: the bounded search
    missed it and returned 10, the top of its range."""
    mixture = ProposalMixture(
        rate=1e-6,
        noise=0.001,
        factor=1.5,
        rogue=(),
        expected_rogue=0.0,
        log_likelihood=0.0,
        informative=0,
    )
    # s* = 10 on 100 tons and 5 fishers: a catch of 13 is round((1 + g) * 10) for g in
    # [0.25, 0.35), where (noise 0.001 * 20 tons) it has probability 1; 0 elsewhere.
    catches = [_catch(1, 13) for _ in range(5)]
    greed = month_one_greed(catches, mixture)
    assert greed is not None and 0.25 < greed < 0.35
    # s* = 8 on 80 tons: a catch of 10 is round((1 + g) * 8) for g in [0.1875, 0.3125); both
    # catches hold for g in [0.25, 0.3125).
    shared = [*catches, CatchObservation("h", 1, "Ana", 10, 8, 80, 5, None, None)]
    greed = month_one_greed(shared, mixture)
    assert greed is not None and 0.25 < greed < 0.3125


def test_persuadability_is_the_least_squares_slope_by_hand() -> None:
    # greed 0.5: own intentions u = 1.5 * proposal = 15 and 12; the medians 12 and 12.
    # (wish - u)(G - u): (14 - 15)(12 - 15) = 3 and 0; (G - u)^2: 9 and 0 -> p = 1/3.
    paired = [_catch(2, 14, 10, 12.0), _catch(2, 12, 8, 12.0)] * 5
    assert persuadability_slope(paired, 0.5) == pytest.approx(1 / 3)
    assert persuadability_slope(paired[:4], 0.5) is None  # too few catches
    same = [_catch(2, 12, 8, 12.0)] * 10
    assert persuadability_slope(same, 0.5) is None  # intention always the median


def test_the_proposal_mixture_on_two_clean_clusters() -> None:
    # 90 proposals within two tons of the share 25 (a uniform spread: s.d. sqrt(2) tons on a
    # scale of 50 per fisher, less the rounding's 1/12) and 10 at four times the share.
    clean = [ProposalObservation("g", 1, f"f{i}", 25 + (i % 5) - 2, 25, 50.0) for i in range(90)]
    rogue = [ProposalObservation("g", 1, f"r{i}", 100, 25, 50.0) for i in range(10)]
    mix = proposal_mixture(clean + rogue)
    assert mix.rate == pytest.approx(0.1, abs=1e-3)
    assert mix.factor == pytest.approx(4.0, abs=0.02)
    assert mix.noise == pytest.approx((2 - 1 / 12) ** 0.5 / 50, rel=0.1)
    assert mix.expected_rogue == pytest.approx(10, abs=0.01)
    assert all(r < 1e-6 for r in mix.rogue[:90]) and all(r > 0.999 for r in mix.rogue[90:])
    with pytest.raises(InputError, match="no proposals"):
        proposal_mixture([])


def test_only_a_positive_amount_on_a_positive_share_counts_for_the_mixture() -> None:
    """18 proposals within two tons of the share 25 and 2 at four times it, beside 100
    proposals of 0 on a zero share (a lake below two tons per fisher): the mixture's rogue
    share is 2 / 20 and 2 proposals look rogue. A proposal on a zero share is 0 in both
    parts, its posterior the prior 0.1: summing it counted 2 + 100 · 0.1 = 12 rogue ones."""
    clean = [ProposalObservation("g", 1, f"f{i}", 25 + (i % 5) - 2, 25, 50.0) for i in range(18)]
    rogue = [ProposalObservation("g", 1, f"r{i}", 100, 25, 50.0) for i in range(2)]
    empty = [ProposalObservation("g", 2, f"e{i}", 0, 0, 1.2) for i in range(100)]
    mix = proposal_mixture(clean + rogue + empty)
    assert mix.informative == 20
    assert mix.rate == pytest.approx(0.1, abs=0.01)
    assert mix.expected_rogue == pytest.approx(2.0, abs=0.01)
    assert proposal_mixture(empty).informative == 0
    # An amount of 0 on a positive share is censored (every draw below half a ton).
    assert proposal_mixture([ProposalObservation("g", 1, "z", 0, 25, 50.0)]).informative == 0


def test_uninformative_proposals_leave_the_mixture_unfitted() -> None:
    """Every proposal 0 on a zero share (the lake below two tons per fisher at the meeting):
    the likelihood is flat in the noise below the default's, so the search stayed at its
    start, and the noise (0.01 for a truth of 0.15) and rogue rate were written as fitted;
    greed, fitted with that noise, came out 2.70 for a truth of 2.0. Now the mixture keeps
    its defaults and says why, and greed is month 1's median ratio less one (2.2247)."""
    games = _simulate({"greed": 2.0}, n_games=30, seed=2)
    props, _ = observations(games)
    assert props and all(p.amount == 0 and p.share == 0 for p in props)
    profile = fit_govsim(games, run="empty")
    fitted, sources = profile.groups["sim"], profile.sources["sim"]
    for name in ("estimate_noise", "rogue_rate", "rogue_multiplier", "persuadability"):
        assert fitted[name] == getattr(FisherParams(), name)
        assert "none of the 5 proposals is a positive amount on a positive" in sources[name]
    assert profile.evidence["proposals"]["informative"] == 0
    median_ratio = profile.evidence["catches"]["month_one_median_ratio"]
    assert fitted["greed"] == pytest.approx(median_ratio - 1)
    assert fitted["greed"] == pytest.approx(2.0, abs=0.25)
    assert "median of month 1's" in sources["greed"]
    assert "the proposals do not identify the noise" in sources["greed"]


def test_a_run_without_proposals_keeps_those_defaults_and_says_why() -> None:
    game = _game(meetings=[[_utterance(1, "Ana")], []])
    profile = fit_govsim([game], run="hand")
    fitted, sources = profile.groups["sim"], profile.sources["sim"]
    # Month 1: 30 / 25 and 20 / 25; the median ratio 1.0 less one.
    assert fitted["greed"] == 0.0
    assert sources["greed"].startswith("fitted from hand on 1 games: median of month 1's")
    assert sources["greed"].endswith("n = 2")
    for name in ("estimate_noise", "persuadability", "rogue_rate", "rogue_multiplier"):
        assert fitted[name] == getattr(FisherParams(), name)
        assert "not fitted from hand: no utterance of the run names an amount" in sources[name]
    assert "keep no token distributions" in sources["fault_signal"]
    assert not profile.run_simulated
    with pytest.raises(InputError, match="no GovSim games"):
        fit_govsim([], run="hand")


def test_the_profile_counts_a_games_repeats_as_plays_of_one_game() -> None:
    """Two plays of one game read "on 2 games", where sim compare counts 1."""
    plays = [_game(), _game(repeat=1)]
    profile = fit_govsim(plays, run="hand")
    assert profile.sources["sim"]["greed"].startswith("fitted from hand on 1 games (2 plays): ")
    assert profile.evidence["catches"]["games"] == 1
    assert profile.evidence["catches"]["plays"] == 2


def _llm_game(alternatives: int) -> dict[str, Any]:
    """The record of a three-month game of LLM fishers whose server reports
    ``alternatives`` alternatives per token."""
    from collections.abc import Sequence

    from byzllm.envs.govsim import GovSimGame, LakeConfig, llm_fishers, play_game
    from byzllm.experiments.govsim import game_record
    from byzllm.llm import ChatMessage, ChatModel, Completion, GenerateConfig, TokenLogprob

    class Server(ChatModel):
        name = "server"

        async def generate(
            self, messages: Sequence[ChatMessage], config: GenerateConfig | None = None
        ) -> Completion:
            speaking = "your turn to speak" in str(messages[-1]["content"])
            text = "I propose 10 tons each." if speaking else "Answer: 10 tons"
            top = [(f"x{i}", -3.0 - i) for i in range(alternatives - 1)]
            tokens = [TokenLogprob(token=c, logprob=-0.1, top=[(c, -0.1), *top]) for c in text]
            return Completion(text=text, logprobs=tokens)

    lake = LakeConfig(months=3)
    result = asyncio.run(
        play_game(GovSimGame(id="g", r0=100), llm_fishers(Server(), lake), config=lake)
    )
    return game_record(result, split="test", repeat=0, agents="llm", sim=None).model_dump()


def test_the_fit_writes_the_runs_own_top_k() -> None:
    """LLM fishers asking for ten alternatives (the rogue-agents paper's k, §2 footnote 2)
    were fitted with the simulated default of 5: the twin's monitor features were computed
    over fewer alternatives than the run's."""
    game = _llm_game(10)
    profile = fit_govsim([game], run="real")
    assert profile.groups["sim"]["top_k"] == 10
    assert profile.sources["sim"]["top_k"] == (
        "fitted from real on 1 games: the run's top-k, the most alternatives the catch "
        "decisions' positions report (10), n = 15"
    )
    # A digit has ten alternatives: a server's twelve are written as ten, saying so.
    profile = fit_govsim([_llm_game(12)], run="real")
    assert profile.groups["sim"]["top_k"] == 10
    source = profile.sources["sim"]["top_k"]
    assert "report (12); the nearest value the simulator takes is 10" in source
    # Records written before decisions kept it: the default, and why.
    old = {**game, "decisions": [{**d, "alternatives": None} for d in game["decisions"]]}
    profile = fit_govsim([old], run="real")
    assert profile.groups["sim"]["top_k"] == FisherParams().top_k
    assert profile.sources["sim"]["top_k"].endswith(
        "not fitted from real: the run's catch decisions do not say how many alternatives "
        "they reported (records written before it was kept)"
    )


# -- recovery on simulated runs --------------------------------------------------------------

SETTINGS: dict[str, dict[str, float]] = {
    "rogue": {
        "greed": 0.5,
        "estimate_noise": 0.1,
        "persuadability": 0.4,
        "rogue_rate": 0.1,
        "rogue_multiplier": 2.5,
        "top_k": 3,
    },
    "defaults": {},
}


def _simulate(truth: dict[str, float], n_games: int = 80, seed: int = 1) -> list[dict[str, Any]]:
    cfg = GovSimRunConfig.model_validate(
        {"split": "generated", "n_games": n_games, "seed": seed, "govsim": {"sim": truth}}
    )
    return asyncio.run(run_in_memory(expand_units(cfg), work))


@pytest.fixture(scope="module")
def games() -> dict[str, list[dict[str, Any]]]:
    return {name: _simulate(truth) for name, truth in SETTINGS.items()}


@pytest.fixture(scope="module")
def profiles(games: dict[str, list[dict[str, Any]]]) -> dict[str, FittedProfile]:
    return {name: fit_govsim(rows, run="sim") for name, rows in games.items()}


@pytest.mark.parametrize("name", list(SETTINGS))
def test_fit_recovers_the_generating_parameters(
    profiles: dict[str, FittedProfile], name: str
) -> None:
    truth = FisherParams.model_validate(SETTINGS[name])
    profile = profiles[name]
    fitted, sources = profile.groups["sim"], profile.sources["sim"]
    assert profile.domain == "govsim" and profile.run_simulated
    assert fitted["greed"] == pytest.approx(truth.greed, abs=0.06)
    assert fitted["estimate_noise"] == pytest.approx(truth.estimate_noise, rel=0.15)
    assert fitted["persuadability"] == pytest.approx(truth.persuadability, abs=0.06)
    assert fitted["rogue_rate"] == pytest.approx(truth.rogue_rate, abs=0.03)
    assert fitted["rogue_multiplier"] == pytest.approx(truth.rogue_multiplier, abs=0.3)
    assert fitted["top_k"] == truth.top_k
    for key in (
        "greed",
        "estimate_noise",
        "persuadability",
        "rogue_rate",
        "rogue_multiplier",
        "top_k",
    ):
        assert sources[key].startswith("fitted from sim on 80 games: "), sources[key]
    for key in ("confidence_logit", "resample_persistence"):
        assert "the default, not fitted from sim" in sources[key]
    FisherParams.model_validate(fitted)


def test_a_run_without_rogue_episodes_fits_none() -> None:
    truth = {"rogue_rate": 0.0, "greed": 0.1, "estimate_noise": 0.25, "persuadability": 0.8}
    profile = fit_govsim(_simulate(truth, n_games=30), run="calm")
    fitted, sources = profile.groups["sim"], profile.sources["sim"]
    assert fitted["rogue_rate"] < 0.005
    # No rogue proposal to measure the factor on: the default stays, and says why.
    assert fitted["rogue_multiplier"] == FisherParams().rogue_multiplier
    assert "proposals look rogue" in sources["rogue_multiplier"]
    assert fitted["persuadability"] == pytest.approx(0.8, abs=0.06)


def test_fishers_with_accurate_estimates_get_their_greed_and_persuadability() -> None:
    """A model that computes the sustainable share (estimate_noise 0.01) fitted greed 10.0,
    the top of its range, for a truth of 0.3, and persuadability 0.99 through it."""
    truth = {"rogue_rate": 0.0, "greed": 0.3, "estimate_noise": 0.01, "persuadability": 0.6}
    fitted = fit_govsim(_simulate(truth, n_games=10), run="exact").groups["sim"]
    assert fitted["greed"] == pytest.approx(0.3, abs=0.02)
    assert fitted["persuadability"] == pytest.approx(0.6, abs=0.06)


@pytest.mark.parametrize("greed", [8.0, 10.0])
def test_a_high_greed_is_recovered_from_capped_catches(greed: float) -> None:
    """At greed 8 about 40% of month 1's catches hit the stock, at 10 about 60%; leaving
    them out fitted 6.2 and 6.5 with the true mixture, and 6.7 and 7.1 by the median (the
    games empty the lake in month 1: no proposals). With the true mixture the censored
    likelihood holds 0.5 (its standard error on 400 catches is about 0.2); the median holds
    0.6 at 8 (the rogue catches above it pull it up by about 0.2) and at 10, with more than
    half capped, is a lower bound that says so."""
    truth = {"greed": greed}
    games = _simulate(truth)
    _, catches = observations(games)
    params = FisherParams.model_validate(truth)
    mixture = ProposalMixture(
        rate=params.rogue_rate,
        noise=params.estimate_noise,
        factor=(1.0 + greed) * params.rogue_multiplier,
        rogue=(),
        expected_rogue=0.0,
        log_likelihood=0.0,
        informative=0,
    )
    assert month_one_greed(catches, mixture) == pytest.approx(greed, abs=0.5)
    profile = fit_govsim(games, run="greedy")
    fitted, source = profile.groups["sim"]["greed"], profile.sources["sim"]["greed"]
    if greed < 9:
        assert fitted == pytest.approx(greed, abs=0.6)
        assert "a lower bound" not in source
    else:
        assert 8.9 <= fitted <= greed and "a lower bound" in source


def test_the_fit_reads_nothing_only_the_simulator_knows(
    games: dict[str, list[dict[str, Any]]], profiles: dict[str, FittedProfile]
) -> None:
    honest = profiles["rogue"]
    # What an LLM run would hold: no simulation parameters, not labelled simulated.
    rows = [{**g, "sim_params": None, "simulated": False} for g in games["rogue"]]
    blind = fit_govsim(rows, run="sim")
    assert blind.groups == honest.groups and blind.evidence == honest.evidence
    assert not blind.run_simulated


def test_a_config_takes_a_fitted_profile_file(
    profiles: dict[str, FittedProfile], tmp_path: Path
) -> None:
    profile = profiles["rogue"]
    folder = tmp_path / "cfg"
    profile.save(folder / "fitted.yaml")
    config = folder / "run.yaml"
    config.write_text(yaml.safe_dump({"govsim": {"sim": "fitted.yaml"}, "n_games": 2}), "utf-8")
    cfg = load_config(config, GovSimRunConfig)  # resolved beside the config file
    assert cfg.govsim.sim == FisherParams.model_validate(profile.groups["sim"])
    # Inlined: the unit payloads record the values, not the path.
    payload: dict[str, Any] = expand_units(cfg)[0].payload
    assert payload["config"]["govsim"]["sim"]["greed"] == cfg.govsim.sim.greed
    other = FittedProfile(
        domain="whodunit", run="x", run_simulated=True, groups={"sim": {}}, sources={}
    )
    other.save(folder / "wrong.yaml")
    config.write_text(yaml.safe_dump({"govsim": {"sim": "wrong.yaml"}}), "utf-8")
    with pytest.raises(ConfigError, match="whodunit run, not a govsim one"):
        load_config(config, GovSimRunConfig)


def test_an_estimate_at_the_top_of_its_range_is_not_written(
    games: dict[str, list[dict[str, Any]]],
) -> None:
    """Every proposal 0 pushed the noise to its bound (5.0), written as a fitted value."""
    import copy

    zeros = copy.deepcopy(games["defaults"])
    for game in zeros:
        for meeting in game["meetings"]:
            for utterance in meeting:
                utterance["amounts"] = [0]
    profile = fit_govsim(zeros, run="zeros")
    assert profile.groups["sim"]["estimate_noise"] == FisherParams().estimate_noise
    assert "reached the top of its range" in profile.sources["sim"]["estimate_noise"]


def test_compare_gives_only_survival_the_wilson_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    """Efficiency is a share per game: ten games all at 100% got Wilson's [0.72, 1], as if
    it were a rate, where the report gives [1, 1]; Survival-Rate keeps Wilson's bounds."""
    from byzllm.experiments.govsim import fit as govsim_fit

    games = [
        {"game_id": f"g{i}", "split": "test", "survival_rate": 1.0, "survival_time": 12,
         "efficiency": 1.0}
        for i in range(10)
    ]  # fmt: skip
    monkeypatch.setattr(govsim_fit, "_read", lambda run_dir: games)
    monkeypatch.setattr(govsim_fit, "simulate_twin", lambda run_dir, params, repeats: games)
    own = FittedProfile(
        domain="govsim", run="x", run_simulated=True, groups={"sim": {}}, sources={}
    )
    ((meta, rows),) = govsim_fit.compare_govsim_run("unused", own, resamples=200)
    found = {r.metric: r for r in rows}
    assert meta == {"split": "test"}
    assert found["Efficiency"].real_low == found["Efficiency"].simulated_low == 1.0
    assert found["Survival-Rate"].real_low == pytest.approx(10 / 13.841459, abs=1e-6)
    assert found["Survival-Time"].real_low == 12.0
