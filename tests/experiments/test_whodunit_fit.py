"""`sim fit` recovers the parameters that generated a WhoDunit run; `sim compare` pairs the run
with its simulated twin.

Each generating run goes through the real experiment path (config, units, work, store). The fit
sees only what an LLM run records; parameters a run cannot identify (the rogue mixture) are
given to it as its ``base``, as a user would state them.

Stated tolerances: a fitted rate lies within three binomial standard errors of the truth,
``3 / sqrt(events)`` relative (the events: the invalid moves or false messages it was measured
on); the temperature within 0.02 (clean Intel turns report it exactly); ``fault_signal`` such
that the false answers' mean entropy, which the fit inverts, lies within three standard errors
of what the true signal gives them (a fixed tolerance on the signal would mean more or less
evidence as the curve flattens towards 1).
"""

from __future__ import annotations

import asyncio
import math
from pathlib import Path
from typing import Any

import pytest
import yaml

from byzllm.agents.whodunit import SimParams
from byzllm.errors import ConfigError
from byzllm.experiments._fitting import FittedProfile
from byzllm.experiments.whodunit import (
    WHODUNIT_METRICS,
    WhoDunitRunConfig,
    compare_whodunit,
    compare_whodunit_run,
    expand_units,
    fit_whodunit,
    fit_whodunit_run,
    simulate_twin,
    work,
)
from byzllm.experiments.whodunit.fit import _false_answer_entropy, _read, _rogue_share, _scales
from byzllm.runs import Store, load_config, run_units

#: Generating settings: rogue-free with a partial fault signal; with rogue episodes (given to
#: the fit as its base); symmetric; and no fault signal at all.
SETTINGS: dict[str, tuple[str, int, dict[str, float]]] = {
    "asym": (
        "asym",
        200,
        {
            "rogue_rate": 0.0,
            "hallucination_rate": 0.05,
            "role_loss_rate": 0.03,
            "role_loss_invalid": 1.0,
            "temperature": 1.5,
            "fault_signal": 0.6,
        },
    ),
    "asym-rogue": (
        "asym",
        250,  # enough false answers (at least 15) for the fault-signal check
        {
            "rogue_rate": 0.2,
            "hallucination_rate": 0.02,
            "role_loss_rate": 0.01,
            "role_loss_invalid": 1.0,
            "temperature": 1.0,
            "fault_signal": 1.0,
        },
    ),
    "sym": (
        "sym",
        300,
        {
            "rogue_rate": 0.0,
            "hallucination_rate": 0.1,
            "role_loss_rate": 0.05,
            "role_loss_invalid": 1.0,
        },
    ),
    "asym-silent": (
        "asym",
        200,
        {
            "hallucination_rate": 0.05,
            "role_loss_rate": 0.02,
            "role_loss_invalid": 1.0,
            "fault_signal": 0.0,
        },
    ),
}


def _generate(run_dir: Path, variant: str, n_games: int, truth: dict[str, float]) -> None:
    cfg = WhoDunitRunConfig.model_validate(
        {
            "game": {"variant": variant},
            "split": "generated",
            "n_games": n_games,
            "seed": 3,
            "sim": truth,
        }
    )
    summary = asyncio.run(run_units(run_dir, expand_units(cfg), work, config=cfg, progress=False))
    assert summary.complete


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = {}
    for name, (variant, n_games, truth) in SETTINGS.items():
        run_dir = tmp_path_factory.mktemp(name)
        _generate(run_dir, variant, n_games, truth)
        out[name] = run_dir
    return out


def _base(truth: dict[str, float]) -> SimParams:
    # What the run cannot identify, stated as a user would: the rogue mixture.
    return SimParams(rogue_rate=truth.get("rogue_rate", SimParams().rogue_rate))


def _within_binomial(fitted: float, truth: float, events: int) -> bool:
    return events > 0 and abs(fitted / truth - 1) <= 3 / math.sqrt(events)


def _signal_within_evidence(run_dir: Path, profile: FittedProfile, truth: float) -> bool:
    """Whether the false answers' mean entropy lies within three standard errors of what the
    true ``fault_signal`` gives them (at the fitted temperature and rogue share): the fit
    inverts that mean, and near 1 the curve is flat, so the error on the signal itself
    depends on the slope there as much as on the evidence."""
    fitted, ev = profile.groups["sim"], profile.evidence["intel"]
    n, mean, sd = (ev[f"entropy_false_answer_{k}"] for k in ("n", "mean", "sd"))
    turns, games = _read(run_dir)
    base = SimParams.model_validate(fitted)
    sizes = {str(g["game_id"]): int(g["n_suspects"]) for g in games}
    share = _rogue_share(fitted["hallucination_rate"], _scales(turns, sizes, base), base)
    expected = _false_answer_entropy(truth, fitted["temperature"], share, base)
    assert n >= 15, ev  # enough false answers for the check to say something
    # (the evidence rounds to 4 places: half a unit of the last one on top)
    return abs(expected - mean) <= 3 * sd / math.sqrt(n) + 5e-5


@pytest.mark.parametrize("name", list(SETTINGS))
def test_fit_recovers_the_generating_parameters(runs: dict[str, Path], name: str) -> None:
    variant, _, truth = SETTINGS[name]
    profile = fit_whodunit_run(runs[name], base=_base(truth))
    fitted, sources = profile.groups["sim"], profile.sources["sim"]
    pooled = profile.evidence["pooled"]
    assert profile.domain == "whodunit" and profile.run_simulated
    assert _within_binomial(
        fitted["role_loss_rate"], truth["role_loss_rate"], pooled["invalid_moves"]
    ), (fitted["role_loss_rate"], pooled)
    assert fitted["role_loss_invalid"] == 1.0
    if variant == "asym":
        assert _within_binomial(
            fitted["hallucination_rate"], truth["hallucination_rate"], pooled["wrong_messages"]
        ), (fitted["hallucination_rate"], pooled)
        assert sources["hallucination_rate"].startswith(f"fitted from {runs[name].name}: ")
        assert sources["hallucination_rate"].endswith(f"n = {pooled['fact_messages']}")
        assert fitted["temperature"] == pytest.approx(truth.get("temperature", 1.0), abs=0.02)
        assert _signal_within_evidence(runs[name], profile, truth["fault_signal"])
    else:
        # No Intel: none is identified, and the sources say so. A player's share is its own
        # fact and never false, so a symmetric run shows no hallucination in its messages
        # (the fit had read 0.1 back from false shares no model-backed player can write).
        assert pooled["fact_messages"] == 0 and pooled["wrong_messages"] == 0
        assert "no fact that can be false" in sources["hallucination_rate"]
        assert fitted["hallucination_rate"] == SimParams().hallucination_rate
        assert "not fitted" in sources["temperature"] and "not fitted" in sources["fault_signal"]
    assert sources["role_loss_rate"].startswith(f"fitted from {runs[name].name}: ")
    assert sources["role_loss_rate"].endswith(f"n = {pooled['turns'] - pooled['repetitions']}")
    assert "not fitted" in sources["collapse_rate"]
    # The run's own top-k, the most alternatives a position reported: the generating 10.
    assert fitted["top_k"] == 10
    assert sources["top_k"].startswith(f"fitted from {runs[name].name}: the run's top-k")
    given = truth.get("rogue_rate", 0.25) != 0.25
    expected = "set for the fit, not fitted" if given else "; the default, not fitted"
    assert expected in sources["rogue_rate"]
    # Per-role evidence: the rates and the entropies of clean and faulty turns.
    roles = {"accuser", "intel"} if variant == "asym" else {"player"}
    assert roles <= set(profile.evidence)
    for role in roles:
        ev = profile.evidence[role]
        for key in ("turns", "invalid_move_rate", "entropy_clean_mean", "entropy_faulty_mean"):
            assert ev[key] is not None, (role, key)
    if variant == "asym":
        assert profile.evidence["accuser"]["wrong_message_rate"] is None  # states no facts
    # The profile loads back as simulator parameters.
    SimParams.model_validate(fitted)


def test_the_fit_reads_nothing_only_the_simulator_knows(runs: dict[str, Path]) -> None:
    with Store.open(runs["asym"]) as store:
        turns = store.records("whodunit_turn")
        games = store.records("whodunit_game")
    base = _base(SETTINGS["asym"][2])
    honest = fit_whodunit(turns, games, run="r", base=base)
    # What an LLM run would hold: no noise labels, no simulation parameters, other thoughts.
    blind_turns = [{**t, "noise": [], "simulated": False} for t in turns]
    blind_games = [{**g, "sim_params": None, "simulated": False} for g in games]
    blind = fit_whodunit(blind_turns, blind_games, run="r", base=base)
    assert blind.groups == honest.groups and blind.evidence == honest.evidence
    assert not blind.run_simulated


def test_one_alternative_per_position_is_no_evidence_of_the_temperature(
    runs: dict[str, Path],
) -> None:
    """A run recorded with top_logprobs 1 has every entropy 0 once renormalized: the fit
    wrote temperature 0.01 and fault_signal 0 ("a monitor gets no signal") from nothing."""
    with Store.open(runs["asym"]) as store:
        turns = store.records("whodunit_turn")
        games = store.records("whodunit_game")
    base = _base(SETTINGS["asym"][2])
    cut = [{**t, "distributions": [d[:1] for d in t.get("distributions") or []]} for t in turns]
    profile = fit_whodunit(cut, games, run="r", base=base)
    assert profile.groups["sim"]["temperature"] == base.temperature
    assert profile.groups["sim"]["fault_signal"] == base.fault_signal
    assert not profile.sources["sim"]["temperature"].startswith("fitted")


def test_the_fitted_entropies_separate_clean_and_faulty_turns(runs: dict[str, Path]) -> None:
    signal = fit_whodunit_run(runs["asym"], base=_base(SETTINGS["asym"][2]))
    silent = fit_whodunit_run(runs["asym-silent"])
    loud = signal.evidence["intel"]
    quiet = silent.evidence["intel"]
    assert loud["entropy_false_answer_mean"] > loud["entropy_clean_median"] + 0.05
    # Without a fault signal a false answer reports exactly like a clean one.
    assert quiet["entropy_false_answer_mean"] == pytest.approx(quiet["entropy_clean_median"])


def test_compare_pairs_the_run_with_its_fitted_twin(runs: dict[str, Path]) -> None:
    run_dir = runs["asym"]
    profile = fit_whodunit_run(run_dir, base=_base(SETTINGS["asym"][2]))
    rows = compare_whodunit(run_dir, profile, resamples=300)
    assert [r.metric for r in rows] == list(WHODUNIT_METRICS)
    for r in rows:
        assert r.real_low <= r.real <= r.real_high
        assert r.simulated_low <= r.simulated <= r.simulated_high
        assert r.difference == pytest.approx(r.simulated - r.real)
        assert r.n_real == r.n_simulated == 200
    # A twin of the generating parameters is close to the run: the intervals overlap.
    for r in rows:
        assert r.simulated_low <= r.real_high and r.real_low <= r.simulated_high, r
    tables = compare_whodunit_run(run_dir, profile, resamples=300)
    assert [meta for meta, _ in tables] == [
        {"variant": "asym", "suspects": 10, "agents": "simulated"}
    ]


def test_the_twin_plays_on_the_fitted_parameters(runs: dict[str, Path]) -> None:
    run_dir = runs["asym"]
    profile = fit_whodunit_run(run_dir, base=_base(SETTINGS["asym"][2]))
    params = SimParams.model_validate(profile.groups["sim"])
    twin = simulate_twin(run_dir, params, repeats=2)
    assert len(twin) == 400 and all(g["simulated"] for g in twin)
    assert all(g["sim_params"] == params.model_dump() for g in twin)
    with Store.open(run_dir) as store:
        real_ids = sorted({g["game_id"] for g in store.records("whodunit_game")})
    assert sorted({g["game_id"] for g in twin}) == real_ids
    # The sim side moves with the profile: a twin that hallucinates on every turn fails.
    broken = profile.model_copy(
        update={"groups": {"sim": {**profile.groups["sim"], "hallucination_rate": 1.0}}}
    )
    fitted = compare_whodunit(run_dir, profile, resamples=200)[0]
    worse = compare_whodunit(run_dir, broken, resamples=200)[0]
    assert worse.real == fitted.real
    assert worse.simulated < fitted.simulated - 0.2


def test_a_config_takes_a_fitted_profile_file(runs: dict[str, Path], tmp_path: Path) -> None:
    profile = fit_whodunit_run(runs["sym"], base=_base(SETTINGS["sym"][2]))
    folder = tmp_path / "cfg"
    profile.save(folder / "fitted.yaml")
    config = folder / "run.yaml"
    config.write_text(yaml.safe_dump({"sim": "fitted.yaml", "n_games": 2}), "utf-8")
    cfg = load_config(config, WhoDunitRunConfig)  # resolved beside the config file
    assert cfg.sim == SimParams.model_validate(profile.groups["sim"])
    # Inlined: the unit payloads record the values, not the path.
    payload: dict[str, Any] = expand_units(cfg)[0].payload
    assert payload["config"]["sim"]["role_loss_rate"] == cfg.sim.role_loss_rate
    consensus = FittedProfile(
        domain="consensus", run="x", run_simulated=True, groups={"strong": {}}, sources={}
    )
    consensus.save(folder / "wrong.yaml")
    config.write_text(yaml.safe_dump({"sim": "wrong.yaml"}), "utf-8")
    with pytest.raises(ConfigError, match="consensus run, not a whodunit one"):
        load_config(config, WhoDunitRunConfig)
    config.write_text(yaml.safe_dump({"sim": "missing.yaml"}), "utf-8")
    with pytest.raises(ConfigError, match="profile file not found"):
        load_config(config, WhoDunitRunConfig)


def test_sim_compare_gives_a_rate_every_game_won_the_wilson_interval() -> None:
    """The comparison's note names the Wilson interval for rates at 0 or 100%: its own
    intervals now give it (ten games all won: [10 / (10 + 1.96²), 1], not [1, 1])."""
    from byzllm.experiments.whodunit.fit import _metric_intervals

    games = [
        {"game_id": f"g{i}", "success": True, "accused": True, "total_turns": 5} for i in range(10)
    ]
    found = _metric_intervals(games, resamples=200)
    assert found["Success-Rate"].low == pytest.approx(10 / 13.841459, abs=1e-6)
    assert found["Precision"].low == pytest.approx(10 / 13.841459, abs=1e-6)
    assert found["Game-Length"].low == 5.0


def test_sim_compare_gives_the_report_s_precision_of_a_run_with_repeats() -> None:
    """Precision per run, then the mean over runs, as `whodunit report` prints it: run 0 wins
    1 of its 2 accusations, run 1 2 of 3, so (1/2 + 2/3) / 2 = 7/12, not the pooled 3/5."""
    from byzllm.experiments.whodunit import report_rows
    from byzllm.experiments.whodunit.fit import _metric_intervals

    outcomes = {
        0: [(True, True), (False, True), (False, False)],
        1: [(True, True), (True, True), (False, True)],
    }
    games = [
        {
            "game_id": f"g{i}",
            "repeat": repeat,
            "variant": "asym",
            "agents": "simulated",
            "n_suspects": 10,
            "culprit": 1,
            "success": won,
            "accused": accused,
            "total_turns": 4 + i,
        }
        for repeat, plays in outcomes.items()
        for i, (won, accused) in enumerate(plays)
    ]
    found = _metric_intervals(games, resamples=200)
    assert found["Precision"].value == pytest.approx(7 / 12)
    assert found["Success-Rate"].value == pytest.approx((1 / 3 + 2 / 3) / 2)
    assert found["Game-Length"].value == pytest.approx(5.0)
    row = report_rows(games)[0]
    assert found["Precision"].value == pytest.approx(row["precision"])
    assert found["Success-Rate"].n == 3


def test_a_false_answer_that_copies_the_last_one_leaves_the_signal_alone() -> None:
    """An Intel answer writing its last answer again may be a collapse (a copied reply with the
    copied confidence): it counts as a false message, not in the false answers' entropy."""

    def turn(n: int, role: str, action: dict[str, Any], *, false: bool = False) -> dict[str, Any]:
        sure = [["1", -0.01], ["2", -4.6]]
        return {
            "game_id": "g",
            "repeat": 0,
            "turn": n,
            "role": role,
            "agent": role,
            "action": action,
            "valid": True,
            "decision": "continue",
            "hallucination": false,
            "repetition": False,
            "distributions": [sure],
        }

    ask = {"kind": "request_specific", "character": 1, "property": "hat", "value": "red"}
    ask2 = {"kind": "request_specific", "character": 2, "property": "hat", "value": "red"}
    turns = [
        turn(1, "accuser", ask),
        turn(2, "intel", {"kind": "respond", "answer": True}, false=True),
        turn(3, "accuser", ask2),
        turn(4, "intel", {"kind": "respond", "answer": True}, false=True),  # the same reply
    ]
    profile = fit_whodunit(turns, [{"game_id": "g", "n_suspects": 10}], run="r")
    intel = profile.evidence["intel"]
    assert intel["wrong_messages"] == 2  # both are false answers to their own question
    assert intel["entropy_false_answer_n"] == 1  # only the first speaks for the signal


def _hand_turn(
    game: str, n: int, role: str, action: dict[str, Any], **extra: Any
) -> dict[str, Any]:
    """One hand-made turn record: valid, applied and true unless ``extra`` says otherwise."""
    return {
        "game_id": game,
        "repeat": 0,
        "turn": n,
        "role": role,
        "agent": role,
        "action": action,
        "valid": True,
        "decision": "continue",
        "hallucination": False,
        "repetition": False,
        "distributions": [],
    } | extra


def test_the_fit_writes_the_runs_own_top_k() -> None:
    """A run whose turns report five alternatives per position (top_logprobs 5) was fitted
    with the simulated default of 10: the twin's monitor features were computed over more
    alternatives than the run's."""
    five = [[str(i), -0.2 - i] for i in range(5)]
    share = {"kind": "share", "fact": "f"}
    turns = [_hand_turn("g0", t, "player", share, distributions=[five]) for t in range(3)]
    turns.append(_hand_turn("g0", 3, "player", share))  # no position: not counted
    profile = fit_whodunit(turns, [{"game_id": "g0", "n_suspects": 10}], run="r")
    assert profile.groups["sim"]["top_k"] == 5
    assert profile.sources["sim"]["top_k"] == (
        "fitted from r: the run's top-k, the most alternatives the turns' decision positions "
        "report (5), n = 3"
    )
    # No distributions at all: the default stays, and its source says why.
    bare = [_hand_turn("g0", t, "player", share) for t in range(3)]
    profile = fit_whodunit(bare, [{"game_id": "g0", "n_suspects": 10}], run="r")
    assert profile.groups["sim"]["top_k"] == SimParams().top_k
    assert profile.sources["sim"]["top_k"].endswith(
        "not fitted from r: no decision position of the run reports alternatives (the turns' "
        "decision positions)"
    )


def test_a_rate_beyond_what_the_model_gives_is_written_as_a_bound() -> None:
    """Lineups of 5 (size scale 0.5, the default rogue mixture: rogue in 12.5% of episodes,
    six times the rate there): at role_loss_rate 1 the model makes at most 0.875 * 0.5 +
    0.125 * 1 = 0.5625 invalid moves. Seven of every ten turns invalid: the fit wrote 1 as
    if it gave 0.70; now its source says it is the top of the range, a lower bound. One
    false broad list in three lies within reach: 0.4375 x + 0.125 = 1/3, x = 0.47619."""
    turns, games = [], []
    for g in range(10):
        games.append({"game_id": f"g{g}", "n_suspects": 5})
        for t in range(10):
            if t < 7:
                turns.append(_hand_turn(f"g{g}", t, "intel", {"kind": "pass"}, valid=False))
            else:
                broad = {"kind": "respond_broad", "property": f"p{g}-{t}", "value": "v"}
                turns.append(_hand_turn(f"g{g}", t, "intel", broad, hallucination=t == 9))
    profile = fit_whodunit(turns, games, run="r")
    fitted, sources = profile.groups["sim"], profile.sources["sim"]
    assert fitted["role_loss_rate"] == 1.0
    assert sources["role_loss_rate"].endswith(
        "(above the most the model gives, 0.5625 at 1: the top of its range, a lower bound), "
        "n = 100"
    )
    assert fitted["hallucination_rate"] == pytest.approx(0.2083333 / 0.4375, abs=1e-4)
    assert "bound" not in sources["hallucination_rate"]


def test_no_role_loss_rate_from_a_run_of_repetitions_only() -> None:
    """Three turns, each a repetition (a collapse a role loss cannot interrupt): no turn
    could show a role loss, and the fit wrote role_loss_rate 0 "fitted", n = 0. Now it and
    role_loss_invalid keep their defaults and say why."""
    share = {"kind": "share", "fact": "f"}
    turns = [_hand_turn("g0", t, "player", share, repetition=True) for t in range(3)]
    profile = fit_whodunit(turns, [{"game_id": "g0", "n_suspects": 10}], run="r")
    fitted, sources = profile.groups["sim"], profile.sources["sim"]
    for name in ("role_loss_rate", "role_loss_invalid"):
        assert fitted[name] == getattr(SimParams(), name)
        assert sources[name].endswith(
            "the default, not fitted from r: every turn of the run repeats a message, which a "
            "role loss cannot interrupt"
        )


@pytest.mark.parametrize("false_answers", ["sure", "flat"])
def test_entropies_beyond_what_the_model_gives_are_written_as_bounds(false_answers: str) -> None:
    """Clean Intel answers at 0.9 / 0.1 fit a temperature inside its range. False answers
    surer than the clean ones lie below what fault_signal 0 gives (the clean entropy), and
    false answers spread over three actions (ln 3) above what 1 gives (at most ln 2): the
    fit wrote 0 and 1 as if they gave them; their sources now say they are bounds. Clean
    turns spread over three actions are flatter than any tempered two-point report: the
    temperature's source said "(clipped)" and now says which bound."""
    two = [["1", math.log(0.9)], ["2", math.log(0.1)]]
    three = [[str(k), -math.log(3)] for k in (1, 2, 3)]
    sure = [["1", math.log(0.99)], ["2", math.log(0.01)]]
    turns = []
    for g in range(10):
        ask = {"kind": "request_specific", "character": 1, "property": "hat", "value": "red"}
        ask2 = {"kind": "request_specific", "character": 2, "property": "hat", "value": "red"}
        false = sure if false_answers == "sure" else three
        turns += [
            _hand_turn(f"g{g}", 1, "accuser", ask),
            _hand_turn(
                f"g{g}", 2, "intel", {"kind": "respond", "answer": True}, distributions=[two]
            ),
            _hand_turn(f"g{g}", 3, "accuser", ask2),
            _hand_turn(
                f"g{g}",
                4,
                "intel",
                {"kind": "respond", "answer": False},
                hallucination=True,
                distributions=[false],
            ),
        ]
    games = [{"game_id": f"g{g}", "n_suspects": 10} for g in range(10)]
    profile = fit_whodunit(turns, games, run="r")
    fitted, sources = profile.groups["sim"], profile.sources["sim"]
    assert profile.evidence["intel"]["entropy_false_answer_n"] == 10
    assert 0.01 < fitted["temperature"] < 100 and "bound" not in sources["temperature"]
    if false_answers == "sure":
        assert fitted["fault_signal"] == 0.0
        assert (
            "(below the least the model gives, 0.3251 at 0: the bottom of its range, an "
            in (sources["fault_signal"])
        )
    else:
        assert fitted["fault_signal"] == 1.0
        assert "at 1: the top of its range, a lower bound), n = 10" in sources["fault_signal"]

    flat = [{**t, "distributions": [three]} if t["role"] == "intel" else t for t in turns]
    profile = fit_whodunit(flat, games, run="r")
    assert profile.groups["sim"]["temperature"] == 100.0
    assert (
        "(above the most the model gives, 0.6930 at 100: the top of its range, a lower bound)"
    ) in profile.sources["sim"]["temperature"]


@pytest.mark.parametrize("sure", [0.5, 0.52])
def test_no_fault_signal_beside_the_flattest_temperature(sure: float) -> None:
    """Clean Intel turns spread over three actions fit the temperature at the top of its
    range, where every report is all but even: fault_signal from 0 to 1 moves the false
    answers' expected entropy from 0.69296 to 0.69314 nats. False answers at 0.50 / 0.50
    wrote fault_signal 1 and at 0.52 / 0.48 wrote 0; now it keeps its default, saying why."""
    three = [[str(k), -math.log(3)] for k in (1, 2, 3)]
    false = [["1", math.log(sure)], ["2", math.log(1 - sure)]]
    ask = {"kind": "request_specific", "character": 1, "property": "hat", "value": "red"}
    ask2 = {"kind": "request_specific", "character": 2, "property": "hat", "value": "red"}
    turns = []
    for g in range(10):
        turns += [
            _hand_turn(f"g{g}", 1, "accuser", ask),
            _hand_turn(
                f"g{g}", 2, "intel", {"kind": "respond", "answer": True}, distributions=[three]
            ),
            _hand_turn(f"g{g}", 3, "accuser", ask2),
            _hand_turn(
                f"g{g}",
                4,
                "intel",
                {"kind": "respond", "answer": False},
                hallucination=True,
                distributions=[false],
            ),
        ]
    games = [{"game_id": f"g{g}", "n_suspects": 10} for g in range(10)]
    profile = fit_whodunit(turns, games, run="r", base=SimParams(fault_signal=0.6))
    assert profile.groups["sim"]["temperature"] == 100.0
    assert profile.groups["sim"]["fault_signal"] == 0.6
    assert profile.sources["sim"]["fault_signal"] == (
        "set for the fit, not fitted from r: the clean Intel turns are flatter than any "
        "temperature makes a report (temperature at the top of its range, 100): there every "
        "report is all but even, and fault_signal from 0 to 1 moves the false answers' "
        "expected entropy by about 2e-4 nats"
    )
    # Without a reason a parameter's source still says only that it was not fitted.
    assert profile.sources["sim"]["collapse_rate"].endswith("; the default, not fitted from r")
