"""Fit the simulated WhoDunit agents to a run, and compare the two (``byzllm sim``).

:func:`fit_whodunit` estimates :class:`~byzllm.agents.whodunit.SimParams` (the profile's one
group, ``sim``) from the records of a WhoDunitEnv run. It reads only what a run with LLM agents
records: per turn the role, the action's kind, ``valid``, ``decision``, the environment's truth
flags ``hallucination`` (the message was false) and ``repetition`` (it repeated a message
already in the channel), and the decision-position distributions; per game the lineup size.
It never reads the simulator's own ``noise`` labels or ``sim_params``, so fitting a simulated
run is an honest test of the fit.

**Statistics**, per role (the profile's evidence; ``pooled`` sums the roles):

* *invalid moves*: turns the environment passed (``valid`` false: a reply that never parsed,
  or an action the rules refuse), over the turns that are not repetitions (a collapse, which
  a role loss cannot interrupt in the simulator);
* *wrong messages*: among *fact-stating messages* (Intel's answers and broad lists; applied,
  and the first statement of their topic in the episode: a question, a property-value), the
  share the environment flagged false. A restatement (a copy, or an answer to a repeated
  question) is left out: a true one is flagged a repetition and a false one is not, so
  counting them would inflate the false share. The Accuser states no facts, and a player's
  share is one of its own facts, which the environment binds by number and which is never
  false: their rate is ``None``;
* *decision entropy*: the entropy (nats) of the action-number position, renormalized over
  its reported top-k; mean, s.d. and median on *clean* turns (valid, not false, not a
  repetition) and on *faulty* turns (invalid or false); for Intel also on its false yes/no
  answers, leaving out those that write its last answer again (a collapse copies its last
  reply with that reply's confidence, and the copy answers the question pending now).

**Mapping onto the parameters.** ``s`` is a game's size scale
``(suspects / reference_suspects) ** size_exponent``; in a rogue episode (probability
``min(1, rogue_rate * s)``) every rate is multiplied by ``rogue_noise_multiplier``. Those and
every parameter not listed here come from ``base`` (default: the declared defaults).

* ``role_loss_rate``: the base rate whose expected invalid-move share, through the size scale
  and the rogue mixture, equals the measured one (not fitted when every turn is a repetition:
  no turn could show it); ``role_loss_invalid`` is set to 1 (role loss
  is the simulator's main source of invalid moves, and a legal move made without the role
  cannot be told from ordinary play). A collapsed Intel that repeats an answer with no
  question pending is refused too, which the inversion counts as role loss: rare (1 invalid
  move in 1,416 turns of a run simulated with ``role_loss_rate`` 0, fitted back as 0.0007).
* ``hallucination_rate`` (runs with an Intel): the same inversion of the wrong-message
  share. A simulated hallucination of Intel always writes a false message. A symmetric run
  states no fact that can be false (a share is the player's own fact), so there it is not
  fitted.
* ``temperature`` (runs with an Intel): a clean Intel turn reports its two actions with
  ``{recall_confidence, 1 - recall_confidence}`` tempered at ``temperature``; the fitted value
  is the one whose entropy equals the median entropy of Intel's clean turns (the median, so
  the flatter rogue episodes do not move it while they are fewer than half).
* ``fault_signal`` (runs with false Intel answers): a false answer is held with
  ``recall_confidence + f * (u - recall_confidence)``, ``u`` uniform on the hallucinated
  confidence range, and reported at ``temperature * rogue_temperature ** f`` in a rogue
  episode (which holds a share ``r m / (1 - r + r m)`` of the false answers); the fitted ``f``
  is the one whose expected entropy equals the mean entropy of the false answers (0 when
  they look like clean ones, 1 at most).
* ``top_k``: the run's own top-k, the most alternatives a turn's decision position reports
  (:func:`~byzllm.experiments._fitting.put_top_k`), so the twin's monitor features are
  computed over as many as the run's.

Where no value of a parameter's range gives its statistic (an invalid-move share above what
the size scale and the rogue mixture make at rate 1, clean turns flatter than any tempered
two-point report), the fit writes the nearest end, which is then only a bound of what the
run asks for, and its source says so (:func:`_solve`). Clean Intel turns flatter than any
temperature makes a report leave ``fault_signal`` unfitted: at the top temperature every
report is all but even, and the whole range of ``fault_signal`` moves the false answers'
expected entropy by about 2e-4 nats (false answers at 0.50 / 0.50 fitted it 1, at 0.52 /
0.48 fitted it 0).

**Identifiability limits** (why the other parameters keep ``base``): one lineup size fixes
only ``rate * s``, not the size law; the run shows marginal rates, which a rogue mixture and a
higher base rate explain equally (fitting a run without rogue episodes on the default rogue
mixture gives base rates about 2.25 times smaller, with the same marginal rates); only the
tempered confidence is seen, not ``recall_confidence`` and ``temperature`` apart, and only the
shift of a false answer's confidence, not the hallucinated range and ``fault_signal`` apart;
repetitions and forgotten messages also happen in ordinary play, so collapse and recall
failure are not fitted (the evidence keeps the repetition rate); one rate serves every role
(the evidence keeps the per-role rates). A symmetric run has no Intel, and a player's policy
depends on its belief: there ``hallucination_rate``, ``temperature`` and ``fault_signal`` are
not fitted. An LLM's
invalid moves are mostly replies that never parsed; the fitted simulator reproduces their
rate, not their cause. Recovery on simulated runs (``tests/experiments/test_whodunit_fit.py``,
``docs/whodunit.md``) states the tolerances.

:func:`compare_whodunit` replays every game of the run (the stored units: the same games and
repeats) with simulated agents on the fitted parameters and returns Success-Rate, Precision and
Game-Length (the rogue-agents paper, §4.1) of both, computed as ``byzllm whodunit report``
computes them (each metric per run, then the mean over runs), each with a percentile bootstrap
interval over games (every repeat of a game resampled together).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from statistics import fmean, median, stdev
from typing import Any

from byzllm.agents.whodunit import SimParams
from byzllm.errors import InputError
from byzllm.runs import Interval, Store

from .._fitting import (
    ComparisonRow,
    Estimates,
    FittedProfile,
    bisect_increasing,
    comparison_row,
    profile_params,
    put_top_k,
    run_name,
    sim_profile,
)
from .._twin import replay_games
from .experiment import work
from .records import WhoDunitGameRecord, WhoDunitTurnRecord
from .report import game_estimates

__all__ = [
    "WHODUNIT_METRICS",
    "compare_whodunit",
    "compare_whodunit_run",
    "fit_whodunit",
    "fit_whodunit_run",
    "run_name",
    "simulate_twin",
]

#: The metrics compared, in table order (the rogue-agents paper, §4.1).
WHODUNIT_METRICS = ("Success-Rate", "Precision", "Game-Length")

#: The keys of :data:`WHODUNIT_METRICS` in :func:`~.report.game_estimates`, in the same order.
_REPORT_KEYS = ("success_rate", "precision", "game_length")

#: Action kinds whose message states a fact that can be false. A share is not one: it is the
#: player's own fact, bound by its number (the rogue-agents paper, §3), and never false.
FACT_KINDS = frozenset({"respond", "respond_broad"})

_ROLES = ("accuser", "intel", "player")
#: Bounds of the fitted temperature (a target beyond them gives an end, and the source says so).
_T_RANGE = (0.01, 100.0)
#: Why fault_signal is not fitted when the temperature reaches the top of its range.
_FLATTEST = (
    "the clean Intel turns are flatter than any temperature makes a report (temperature at "
    "the top of its range, {top:g}): there every report is all but even, and fault_signal "
    "from 0 to 1 moves the false answers' expected entropy by about 2e-4 nats"
)


# -- statistics ------------------------------------------------------------------------------


def _entropy(dist: Sequence[Sequence[Any]]) -> float | None:
    """Entropy (nats) of a top-k list ``[(token, logprob), ...]`` renormalized; None where it
    says nothing: fewer than two alternatives of nonzero probability (renormalized, a lone
    token is certain, and a run recorded with top_logprobs 1 fitted temperature 0.01 and
    fault_signal 0 from that), or a log-probability that is NaN or +inf."""
    logps = [float(lp) for _, lp in dist]
    if any(math.isnan(lp) or lp == math.inf for lp in logps):
        return None
    logps = [lp for lp in logps if lp > -math.inf]  # probability 0: no alternative
    if len(logps) < 2:
        return None
    top = max(logps)
    ps = [math.exp(lp - top) for lp in logps]
    total = sum(ps)
    return -sum(p / total * math.log(p / total) for p in ps if p > 0)


@dataclass
class _RoleTally:
    """What one role's turns show."""

    turns: int = 0
    invalid: int = 0
    facts: int = 0
    wrong: int = 0
    repeated: int = 0
    messages: int = 0
    clean: list[float] = field(default_factory=list)
    faulty: list[float] = field(default_factory=list)
    wrong_answers: list[float] = field(default_factory=list)

    def add(self, other: _RoleTally) -> None:
        """Pool ``other``'s turns into this tally (every count and every list)."""
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


def _summary(xs: Sequence[float], prefix: str) -> dict[str, Any]:
    return {
        f"{prefix}_n": len(xs),
        f"{prefix}_mean": round(fmean(xs), 4) if xs else None,
        f"{prefix}_sd": round(stdev(xs), 4) if len(xs) >= 2 else None,
        f"{prefix}_median": round(median(xs), 4) if xs else None,
    }


def _evidence(t: _RoleTally) -> dict[str, Any]:
    out: dict[str, Any] = {
        "turns": t.turns,
        "invalid_moves": t.invalid,
        "invalid_move_rate": round(t.invalid / t.turns, 4) if t.turns else None,
        "fact_messages": t.facts,
        "wrong_messages": t.wrong,
        "wrong_message_rate": round(t.wrong / t.facts, 4) if t.facts else None,
        "repetitions": t.repeated,
        "repetition_rate": round(t.repeated / t.messages, 4) if t.messages else None,
    }
    out |= _summary(t.clean, "entropy_clean")
    out |= _summary(t.faulty, "entropy_faulty")
    if t.wrong_answers:
        out |= _summary(t.wrong_answers, "entropy_false_answer")
    return out


def _topic(r: Mapping[str, Any], question: Mapping[str, Any] | None) -> tuple[Any, ...] | None:
    """What a fact-stating message is about (``None`` for other messages: :data:`FACT_KINDS`).

    An LLM's answer names only yes or no (the environment fills in the question), so an
    answer's topic is the pending question: the previous turn's specific request.
    """
    a = r.get("action") or {}
    kind = a.get("kind")
    if kind == "respond":
        q = a if a.get("property") is not None else (question or {})
        return (kind, q.get("character"), q.get("property"), q.get("value"))
    if kind == "respond_broad":
        return (kind, a.get("property"), a.get("value"))
    return None


def _episodes(turns: Sequence[Mapping[str, Any]]) -> list[list[Mapping[str, Any]]]:
    """The turns of every game play in turn order, cut at each reset (the channel clears)."""
    plays: dict[tuple[str, int], list[Mapping[str, Any]]] = {}
    for r in turns:
        plays.setdefault((str(r["game_id"]), int(r.get("repeat", 0))), []).append(r)
    out: list[list[Mapping[str, Any]]] = []
    for play in plays.values():
        episode: list[Mapping[str, Any]] = []
        for r in sorted(play, key=lambda x: int(x["turn"])):
            episode.append(r)
            if r.get("decision") == "reset":
                out.append(episode)
                episode = []
        if episode:
            out.append(episode)
    return out


def _tally(turns: Sequence[Mapping[str, Any]]) -> dict[str, _RoleTally]:
    tally: dict[str, _RoleTally] = {}
    for episode in _episodes(turns):
        stated: set[tuple[Any, ...]] = set()
        question: Mapping[str, Any] | None = None
        answers: dict[str, Any] = {}  # per agent: the yes/no of its last applied answer
        for r in episode:
            action = r.get("action") or {}
            copy = action.get("kind") == "respond" and answers.get(str(r.get("agent"))) == (
                action.get("answer")
            )
            role = tally.setdefault(str(r["role"]), _RoleTally())
            _turn(r, role, stated, question, copies_last_answer=copy)
            if r.get("decision", "continue") == "continue":
                question = action if action.get("kind") == "request_specific" else None
                if action.get("kind") == "respond" and r["valid"]:
                    answers[str(r.get("agent"))] = action.get("answer")
    return tally


def _turn(
    r: Mapping[str, Any],
    t: _RoleTally,
    stated: set[tuple[Any, ...]],
    question: Mapping[str, Any] | None,
    *,
    copies_last_answer: bool = False,
) -> None:
    """Count one turn into its role's tally (``stated``: the topics already stated;
    ``copies_last_answer``: a yes/no answer that writes what the agent's last answer wrote)."""
    t.turns += 1
    valid = bool(r["valid"])
    applied = r.get("decision", "continue") == "continue"
    kind = (r.get("action") or {}).get("kind")
    false = applied and bool(r.get("hallucination"))
    repeated = applied and bool(r.get("repetition"))
    dists = r.get("distributions") or []
    h = _entropy(dists[0]) if dists else None
    if not valid:
        t.invalid += 1
    if applied and valid and kind != "pass":
        t.messages += 1
        t.repeated += repeated
    topic = _topic(r, question) if applied and valid else None
    if topic is not None:
        # Only a topic's first statement: a restatement that is true is flagged a repetition
        # and a false one is not, so counting restatements would inflate the false share.
        if topic not in stated and not repeated:
            t.facts += 1
            t.wrong += false
        stated.add(topic)
    if h is None:
        return
    if not valid or false:
        t.faulty.append(h)
    elif applied and not repeated:
        t.clean.append(h)
    # A reply that writes the last answer again may be a collapse, whose confidence is the
    # copied reply's, not the answer's own: left out of the false answers' entropy. Whether
    # an answer equals the last one does not depend on how sure the agent is of it, so the
    # answers kept show the same confidence as all of them would without collapses.
    if (
        kind == "respond"
        and r["role"] == "intel"
        and false
        and valid
        and not repeated
        and not copies_last_answer
    ):
        t.wrong_answers.append(h)


# -- the model's side of each statistic ------------------------------------------------------


def _scales(
    turns: Sequence[Mapping[str, Any]], sizes: Mapping[str, int], base: SimParams
) -> dict[float, int]:
    """Size scale -> number of turns played at it."""
    out: dict[float, int] = {}
    for r in turns:
        n = sizes.get(str(r["game_id"]), base.reference_suspects)
        s = (n / base.reference_suspects) ** base.size_exponent
        out[s] = out.get(s, 0) + 1
    return out


def _expected_rate(rate: float, scales: Mapping[float, int], base: SimParams) -> float:
    """The marginal per-turn rate of a mode at base ``rate`` (size scale and rogue mixture)."""
    total = acc = 0.0
    m = base.rogue_noise_multiplier
    for s, w in scales.items():
        r = min(1.0, base.rogue_rate * s)
        acc += w * ((1 - r) * min(1.0, rate * s) + r * min(1.0, rate * s * m))
        total += w
    return acc / total if total else rate


def _rogue_share(rate: float, scales: Mapping[float, int], base: SimParams) -> float:
    """The share of a mode's events that happen in rogue episodes."""
    rogue = normal = 0.0
    m = base.rogue_noise_multiplier
    for s, w in scales.items():
        r = min(1.0, base.rogue_rate * s)
        rogue += w * r * min(1.0, rate * s * m)
        normal += w * (1 - r) * min(1.0, rate * s)
    return rogue / (rogue + normal) if rogue + normal > 0 else 0.0


def _solve(target: float, f: Callable[[float], float], lo: float, hi: float) -> tuple[float, str]:
    """The x in [lo, hi] with f(x) = target for an increasing f, and ``""``; where no x of the
    range gives the target, the nearest end and a note for its source saying so: the end is
    then a bound of what the statistic asks for, not a value that reproduces it."""
    low, high = f(lo), f(hi)
    if target < low:
        return lo, (
            f" (below the least the model gives, {low:.4f} at {lo:g}: the bottom of its range, "
            "an upper bound)"
        )
    if target > high:
        return hi, (
            f" (above the most the model gives, {high:.4f} at {hi:g}: the top of its range, "
            "a lower bound)"
        )
    if target == low:
        return lo, ""
    if target == high:
        return hi, ""
    return bisect_increasing(f, target, lo, hi, steps=80), ""


def _two_point_entropy(confidence: float, temperature: float) -> float:
    """Entropy of ``{c, 1 - c}`` tempered at ``temperature`` (how the simulator reports it)."""
    logit = (math.log(confidence) - math.log1p(-confidence)) / temperature
    p = 1.0 / (1.0 + math.exp(-logit)) if logit >= 0 else math.exp(logit) / (1 + math.exp(logit))
    return -sum(x * math.log(x) for x in (p, 1 - p) if x > 0)


def _false_answer_entropy(signal: float, temperature: float, rogue: float, p: SimParams) -> float:
    """Expected entropy of a false Intel answer at ``fault_signal = signal``."""
    low, high, rc = p.hallucination_confidence_low, p.hallucination_confidence, p.recall_confidence
    points = 64
    # Midpoint rule over u ~ U[low, high], the drawn confidence of the false recollection.
    us = [low + (high - low) * (i + 0.5) / points for i in range(points)]
    held = [rc + signal * (u - rc) for u in us]
    hot = temperature * p.rogue_temperature**signal
    calm = fmean(_two_point_entropy(c, temperature) for c in held)
    flat = fmean(_two_point_entropy(c, hot) for c in held)
    return (1 - rogue) * calm + rogue * flat


# -- the fit ---------------------------------------------------------------------------------


def fit_whodunit(
    turns: Sequence[Mapping[str, Any]],
    games: Sequence[Mapping[str, Any]],
    *,
    run: str,
    base: SimParams | None = None,
) -> FittedProfile:
    """Estimate :class:`SimParams` from one run's ``whodunit_turn`` and ``whodunit_game``
    records (see the module docstring for what is read and how it maps).

    ``base`` holds every parameter the run cannot identify (default: the declared defaults);
    the fitted rates are conditional on its size law and rogue mixture. Raises InputError when
    there is no turn.
    """
    if not turns:
        raise InputError(f"{run} has no WhoDunit turns to fit a profile from")
    base = base or SimParams()
    sizes = {str(g["game_id"]): int(g["n_suspects"]) for g in games if g.get("n_suspects")}
    tally = _tally(turns)
    pooled = _RoleTally()
    for t in tally.values():
        pooled.add(t)
    scales = _scales(turns, sizes, base)
    fit = Estimates(f"fitted from {run}", reasons=False)

    def invert(observed: float) -> tuple[float, str]:
        return _solve(observed, lambda x: _expected_rate(x, scales, base), 0.0, 1.0)

    mean_scale = sum(s * w for s, w in scales.items()) / sum(scales.values())
    how = f"through size scale {mean_scale:.2f} and the rogue mixture"
    # A repetition is a collapse (or ordinary play), which a role loss cannot interrupt.
    chances = pooled.turns - pooled.repeated
    if chances:
        invalid_rate = pooled.invalid / chances
        rate, note = invert(invalid_rate)
        fit.put(
            "role_loss_rate",
            rate,
            f"invalid-move share {invalid_rate:.4f} of the turns that are not repetitions, "
            f"{how}{note}",
            chances,
        )
        fit.put(
            "role_loss_invalid",
            1.0,
            "role loss is seen only as invalid moves (a legal move made without the role looks "
            "like ordinary play)",
            pooled.turns,
        )
    else:
        # No turn could show a role loss: a share of 0 out of 0 is no estimate.
        why = "every turn of the run repeats a message, which a role loss cannot interrupt"
        fit.unseen["role_loss_rate"] = fit.unseen["role_loss_invalid"] = why
    if pooled.facts:
        wrong_rate = pooled.wrong / pooled.facts
        rate, note = invert(wrong_rate)
        fit.put(
            "hallucination_rate",
            rate,
            f"false share {wrong_rate:.4f} of fact-stating messages, {how}{note}",
            pooled.facts,
        )
    else:
        fit.unseen["hallucination_rate"] = (
            "the run states no fact that can be false (Intel's answers and lists; a player's "
            "share is one of its own facts)"
        )
    intel = tally.get("intel")
    temperature = base.temperature
    flattest = False  # clean turns flatter than any temperature reports
    if intel is not None and intel.clean:
        target = median(intel.clean)
        rc = base.recall_confidence
        temperature, note = _solve(target, lambda x: _two_point_entropy(rc, x), *_T_RANGE)
        fit.put(
            "temperature",
            temperature,
            f"median decision entropy {target:.4f} of clean Intel turns, given "
            f"recall_confidence {rc}{note}",
            len(intel.clean),
        )
        flattest = bool(note) and temperature == _T_RANGE[1]
    if intel is not None and intel.wrong_answers and flattest:
        # At the top temperature every report is all but even: fault_signal's whole range
        # moves the false answers' expected entropy by about 2e-4 nats (a flat likelihood).
        fit.unseen["fault_signal"] = _FLATTEST.format(top=_T_RANGE[1])
    elif intel is not None and intel.wrong_answers:
        target = fmean(intel.wrong_answers)
        h = fit.values.get("hallucination_rate", base.hallucination_rate)
        share = _rogue_share(h, scales, base)
        signal, note = _solve(
            target, lambda f: _false_answer_entropy(f, temperature, share, base), 0.0, 1.0
        )
        fit.put(
            "fault_signal",
            signal,
            f"mean decision entropy {target:.4f} of false Intel answers, given the fitted "
            f"temperature and the hallucinated confidence range{note}",
            len(intel.wrong_answers),
        )
    widths = [len(d) for r in turns for d in r.get("distributions") or []]
    put_top_k(fit, SimParams, widths, "the turns' decision positions")
    fit.evidence = {role: _evidence(t) for role, t in sorted(tally.items())}
    fit.evidence["pooled"] = _evidence(pooled) | {"mean_size_scale": round(mean_scale, 4)}
    return sim_profile("whodunit", base, fit, run, games)


def _read(run_dir: str | Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The run's turns and games, each checked against its record class
    (:meth:`Store.records`): an edited or damaged one is an :class:`InputError` naming it."""
    with Store.open(run_dir) as store:
        turns = store.records(WhoDunitTurnRecord)
        games = store.records(WhoDunitGameRecord)
    if not games:
        raise InputError(f"{run_dir} holds no WhoDunit games")
    return turns, games


def fit_whodunit_run(run_dir: str | Path, *, base: SimParams | None = None) -> FittedProfile:
    """:func:`fit_whodunit` on the records stored in ``run_dir``."""
    turns, games = _read(run_dir)
    return fit_whodunit(turns, games, run=run_name(run_dir), base=base)


# -- the comparison --------------------------------------------------------------------------


def simulate_twin(
    run_dir: str | Path, params: SimParams, *, repeats: int = 1
) -> list[dict[str, Any]]:
    """Replay every game ``run_dir`` played with simulated agents on ``params``.

    The stored units give the games, their repeats and the wording; each is played
    ``repeats`` times (more: a tighter interval on the simulated side). Returns the twin's
    ``whodunit_game`` records as dicts.
    """
    sim = params.model_dump(mode="json")

    def twin(conf: Mapping[str, Any]) -> dict[str, Any]:
        # Only what the work reads for simulated agents: no model settings travel.
        return {
            "agents": "simulated",
            "sim": sim,
            "split": conf.get("split", "test"),
            "wording": conf.get("wording", "award"),
        }

    return replay_games(
        run_dir, twin, work, kind="whodunit_game", what="WhoDunit games", repeats=repeats
    )


def _metric_intervals(games: Sequence[Mapping[str, Any]], resamples: int) -> dict[str, Interval]:
    """:data:`WHODUNIT_METRICS` with their bootstrap intervals over games, as ``byzllm
    whodunit report`` gives them (:func:`~.report.game_estimates`): each metric per run
    (repeat), then the mean over runs; a game's repeats resampled together; the rates of
    games all won (or all lost) get Wilson's bounds. A metric no run defines (Precision
    without an accusation) is left out."""
    n = len({str(g["game_id"]) for g in games})
    estimates = game_estimates(games, resamples=resamples)
    found: dict[str, Interval] = {}
    for name, key in zip(WHODUNIT_METRICS, _REPORT_KEYS, strict=True):
        point, low, high = estimates.get(key, (math.nan, math.nan, math.nan))
        if math.isfinite(point):
            found[name] = Interval(point, low, high, n)
    return found


def _rows(
    real: Sequence[Mapping[str, Any]], sim: Sequence[Mapping[str, Any]], resamples: int
) -> list[ComparisonRow]:
    a, b = _metric_intervals(real, resamples), _metric_intervals(sim, resamples)
    nan = float("nan")

    def get(found: dict[str, Interval], metric: str, n: int) -> Interval:
        return found.get(metric) or Interval(nan, nan, nan, n)

    n_real = len({g["game_id"] for g in real})
    n_sim = len({g["game_id"] for g in sim})
    return [comparison_row(m, get(a, m, n_real), get(b, m, n_sim)) for m in WHODUNIT_METRICS]


def compare_whodunit(
    run_dir: str | Path,
    profile: FittedProfile,
    *,
    repeats: int = 1,
    resamples: int = 2000,
) -> list[ComparisonRow]:
    """Success-Rate, Precision and Game-Length of ``run_dir`` beside its simulated twin on
    ``profile`` (every game replayed ``repeats`` times), intervals over games."""
    params = profile_params(profile, "whodunit", "WhoDunit", SimParams)
    _, real = _read(run_dir)
    return _rows(real, simulate_twin(run_dir, params, repeats=repeats), resamples)


def compare_whodunit_run(
    run_dir: str | Path,
    profile: FittedProfile,
    *,
    repeats: int = 1,
    resamples: int = 2000,
) -> list[tuple[dict[str, Any], list[ComparisonRow]]]:
    """:func:`compare_whodunit` per (variant, suspects) of the run, each with its metadata."""
    params = profile_params(profile, "whodunit", "WhoDunit", SimParams)
    _, real = _read(run_dir)
    twin = simulate_twin(run_dir, params, repeats=repeats)

    def key(g: Mapping[str, Any]) -> tuple[str, int]:
        return str(g["variant"]), int(g["n_suspects"])

    out = []
    for k in sorted({key(g) for g in real}):
        mine = [g for g in real if key(g) == k]
        theirs = [g for g in twin if key(g) == k]
        meta = {"variant": k[0], "suspects": k[1], "agents": str(mine[0]["agents"])}
        out.append((meta, _rows(mine, theirs, resamples)))
    return out
