"""Fit the simulated consensus population to a run, and compare the two (``byzllm sim``).

:func:`fit_consensus` estimates, per honest group (``strong`` / ``weak``), the parameters of
:class:`~byzllm.agents.consensus.SimulatedProfile` from what a consensus run records: every
agent's answer and correctness per round, the receiver-side scores it gave (SAC, W-MSR), its
own self-score, its verbalized confidence (CP-WBFT) and whom it retained. Only what an LLM
run records is read, so fitting a simulated run is an honest test of the fit. The statistics
(each judged answer, confidence and refine situation counted once per question and agent;
a judged answer, a confidence and a self-score once over all the topologies and protocols the
question ran under, which ask the agent the same prompts again):

* ``strength``: accuracy at round 0 (the SAC paper, §5.1, IAA of the group).
* ``error_correlation``: share of wrong round-0 answers equal to the task's most plausible
  distractor (tasks with listed distractors only); ``answer_spread``: among the other wrong
  round-0 answers, the share that is none of the task's listed distractors.
* ``false_accept`` / ``false_reject``: share of scores >= 0.5 given to another honest agent's
  wrong answer / < 0.5 given to a right one, leaving out answers equal to the scorer's own
  round-0 answer (those measure ``self_trust``: share of self-scores >= 0.5 on it).
* ``score_accept`` / ``score_reject``: mean score on either side of 0.5; ``calibration_noise``:
  the pooled standard deviation around them.
* ``confidence_*``: the share of confidences of exactly 1.0 and the mean of the others, for
  right and for wrong answers.
* ``anchoring`` / ``susceptibility``: among the occasions where the heaviest retained answer
  (scores summed per answer, the agent's own counting 1 when its self-score is >= 0.5) differs
  from the agent's own, the share that moved to it: ``r_doubt`` when the agent doubts its
  own answer, ``r_believe`` when it believes it. The profile's refine gives
  ``susceptibility = r_doubt`` and ``(1 - anchoring) * susceptibility = r_believe``. Only the
  first such occasion per (question, agent, own answer) counts: at temperature 0 a repeated
  situation repeats its decision, so later rounds add no evidence. Occasions where the agent
  answered anew (below) are left out: the profile's refine draws that first.
* ``difficulty_correlation`` (one value for every group): the ρ of the simulator's Gaussian
  copula that makes the expected number of honest pairs both right at round 0 equal the
  observed one (each question counted once, over its first record), given the fitted
  strengths: how much more often agents are right or wrong together than independence says.
* ``refine_slip``: among the refinements of the protocols that ask the model to refine (SAC and
  debate) with something retained, the share whose next answer is neither the
  agent's own nor a retained neighbour's; ``slip_accuracy``: the share of those new answers
  that are right, among the occasions where no offered answer was right.

A value the parser filled in is not read: where an agent-round's scoring, confidence or
refinement fell back to its default (its parse health), that stage's values of the row are
left out, and the evidence counts those rows per stage.

A parameter the run gives no evidence for keeps its default, and its source says so.
Adversaries' scores are left out of the judge's error rates (their message to a receiver is
not recorded); when summing retained answers, an adversary counts with its public answer.

:func:`compare_consensus` reruns the run's questions (its finished ones: an interrupted run is
compared on what it finished, and only that is rerun) with every honest group simulated on its
fitted profile and returns the §5.1 metrics of both on the questions both hold, each with a
bootstrap interval over questions.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from statistics import NormalDist, fmean
from typing import Any

from byzllm.agents.consensus import (
    PROFILE_SOURCES,
    STRONG_PROFILE,
    WEAK_PROFILE,
    SimulatedProfile,
    same_answer,
    wrong_answers,
)
from byzllm.errors import InputError
from byzllm.protocols import AgentRound, QuestionTrace
from byzllm.tasks import Task

from .._fitting import ComparisonRow, FittedProfile, comparison_row
from .config import AgentBackend, ConsensusConfig, GroupBackends
from .experiment import question_label, run_in_memory
from .report import consensus_intervals
from .setup import load_dataset

__all__ = ["CONSENSUS_METRICS", "compare_consensus", "difficulty_correlation", "fit_consensus"]

#: The §5.1 metrics compared, in table order.
CONSENSUS_METRICS = ("IAA", "FAA", "BFTI", "RA", "W_FAA", "S_FAA", "H_Majority")

_GROUPS = ("strong", "weak")
#: Protocols whose update is a call to the agent (CP-WBFT, majority and W-MSR compute theirs).
_REFINING = frozenset({"sac", "debate"})


def _defaults(group: str) -> SimulatedProfile:
    return STRONG_PROFILE if group == "strong" else WEAK_PROFILE


class _Tally:
    """The statistics of one group, accumulated over questions."""

    def __init__(self) -> None:
        self.initial: list[bool] = []
        self.distractor: list[bool] = []
        self.accept_wrong: list[bool] = []
        self.reject_right: list[bool] = []
        self.self_trust: list[bool] = []
        self.high: list[float] = []
        self.low: list[float] = []
        self.conf: dict[bool, list[float]] = {True: [], False: []}
        self.moves: dict[bool, list[bool]] = {True: [], False: []}
        self.spread: list[bool] = []
        self.anew: list[bool] = []
        self.anew_right: list[bool] = []
        #: Agent-rounds whose replies of a stage fell back to the parser's default, per stage.
        self.defaulted: dict[str, int] = {}


class _Asked:
    """What one agent has already been asked on one question, over every record of it."""

    def __init__(self) -> None:
        self.judged: set[str] = set()
        self.confided: set[str] = set()
        self.self_trust = False


#: The stages whose values the fit reads, as an agent-round's parse health names them.
_READ_STAGES = ("score", "confidence", "refine")


def _defaulted(row: AgentRound, t_: _Tally) -> frozenset[str]:
    """The stages of ``row`` (:data:`_READ_STAGES`) where a reply fell back to the parser's
    default (a score or confidence of 0.5, a refinement that keeps the agent's answer; the
    SAC paper, Appendix B), counted into ``t_``. Which of a stage's replies fell back is not
    recorded, so none of its values in the row is read: a default is the parser's number,
    not the model's judgement."""
    out = frozenset(s for s in _READ_STAGES if row.parse.get(s, {}).get("fallbacks"))
    for stage in out:
        t_.defaulted[stage] = t_.defaulted.get(stage, 0) + 1
    return out


def _tasks(config: ConsensusConfig | None) -> dict[str, Task]:
    if config is None:
        return {}
    try:
        return {t.id: t for t in load_dataset(config.dataset)}
    except (OSError, ValueError, InputError):
        return {}  # the data set moved: fit without the distractor statistic


def _question(
    trace: QuestionTrace,
    tally: Mapping[str, _Tally],
    task: Task | None,
    asked: Callable[[int], _Asked],
    *,
    first_seen: bool,
) -> None:
    """Add one question record's statistics. Round 0's (solving, distractors) only where
    ``first_seen``: every protocol of a question starts from the same answers, and counting
    them once per protocol multiplied their ``n`` by the protocols of the run. ``asked(i)``:
    what agent i was already asked on this question in the records added before (another
    topology or protocol asks it the same scoring and confidence prompts again)."""
    rounds = trace.rounds
    for i, group in enumerate(trace.groups):
        if group not in tally:
            continue
        t_ = tally[group]
        first = rounds[0][i]
        if first_seen:
            t_.initial.append(first.correct)
        if first_seen and not first.correct and task is not None and first.answer is not None:
            distractors = wrong_answers(task)
            if task.meta.get("distractors") and distractors:
                top = same_answer(task, first.answer, distractors[0])
                t_.distractor.append(top)
                if not top:
                    listed = any(same_answer(task, first.answer, d) for d in distractors)
                    t_.spread.append(not listed)
        # At temperature 0 a repeated situation repeats its reply: each (judged answer,
        # confidence in an answer, refine situation) counts once per question, or answers that
        # persist longer (or questions run on more topologies) would weigh more.
        seen: set[str | None] = set()
        done = asked(i)
        judged, confided = done.judged, done.confided
        for t, rnd in enumerate(rounds):
            row = rnd[i]
            defaulted = _defaulted(row, t_)
            scores = {} if "score" in defaulted else row.scores
            for j, score in scores.items():
                peer = rnd[j]
                if trace.groups[j] == "byzantine" or peer.key is None or peer.key in judged:
                    continue
                judged.add(peer.key)
                (t_.high if score >= 0.5 else t_.low).append(score)
                if peer.key == first.key:
                    continue  # the scorer's own solution: self-trust, not a judge's error
                if peer.correct:
                    t_.reject_right.append(score < 0.5)
                else:
                    t_.accept_wrong.append(score >= 0.5)
            believes: bool | None = None
            if row.self_score is not None and "score" not in defaulted:
                believes = row.self_score >= 0.5
                if row.key is not None and row.key == first.key and t == 0 and not done.self_trust:
                    done.self_trust = True
                    t_.self_trust.append(believes)
            if (
                row.confidence is not None
                and "confidence" not in defaulted
                and row.key is not None
                and row.key not in confided
            ):
                confided.add(row.key)
                t_.conf[row.correct].append(row.confidence)
            if "refine" in defaulted:
                continue  # the next answer is the parser's fallback, the agent's own
            anew = False
            if trace.protocol in _REFINING and row.retained and t + 1 < len(rounds):
                after = rounds[t + 1][i]
                offered = {row.key} | {rnd[j].key for j in row.retained}
                anew = after.key not in offered
                t_.anew.append(anew)
                truth_offered = row.correct or any(rnd[j].correct for j in row.retained)
                if anew and not truth_offered:
                    t_.anew_right.append(after.correct)
            if anew or believes is None or t + 1 >= len(rounds) or not scores:
                continue
            if row.key in seen:
                continue
            heaviest = _heaviest(row.key, believes, row.retained, scores, rnd)
            if heaviest is not None and heaviest != row.key:
                seen.add(row.key)
                t_.moves[believes].append(rounds[t + 1][i].key == heaviest)


def _heaviest(
    own: str | None,
    believes: bool,
    retained: Sequence[int],
    scores: Mapping[int, float],
    rnd: Sequence[Any],
) -> str | None:
    """The answer with the largest summed score among the retained (the profile's refine)."""
    weights: dict[str, float] = {}
    if own is not None and believes:
        weights[own] = 1.0
    for j in retained:
        key = rnd[j].key
        if key is not None:
            weights[key] = weights.get(key, 0.0) + float(scores.get(j, 1.0))
    if not weights:
        return None
    top = max(weights.values())
    tied = sorted(k for k, w in weights.items() if w == top)
    return own if own in tied else tied[0]


#: Fewest scores (and of each side) for the censored fit of the score levels; fewer keep
#: the plain means.
_MIN_SCORES = 20


def _score_levels(
    high: Sequence[float], low: Sequence[float]
) -> tuple[float, float, float, int] | None:
    """(accepting level, rejecting level, s.d., n) of the scores, by maximum likelihood under
    the simulator's own model of a score (:meth:`SimulatedAgent._noisy`): a level plus normal
    noise, clipped to [0, 1] and rounded to 0.01, the level the accepting or the rejecting one
    (a mixture: which one a judge meant is not observed). A score at 0 or 1 is censored
    (every value past the bound); None with too few scores, or where the fit fails."""
    if len(high) < _MIN_SCORES // 2 or len(low) < _MIN_SCORES // 2:
        return None
    import numpy as np
    from scipy import optimize, stats

    scores = np.array([*high, *low], dtype=float)
    top, bottom = scores >= 0.995, scores <= 0.005
    inside = ~(top | bottom)

    def loss(theta: Any) -> float:
        accept, reject, log_sigma, logit = theta
        sigma, share = math.exp(log_sigma), 1.0 / (1.0 + math.exp(-logit))
        like = np.zeros(len(scores))
        for level, weight in ((accept, share), (reject, 1.0 - share)):
            like[inside] += weight * stats.norm.pdf(scores[inside], level, sigma)
            like[top] += weight * stats.norm.sf(0.995, level, sigma)
            like[bottom] += weight * stats.norm.cdf(0.005, level, sigma)
        return float(-np.sum(np.log(np.maximum(like, 1e-300))))

    # The levels and the noise within the ranges of their parameters (the simulator's levels
    # are probabilities): searched beyond them, scores all 0 or 1 stopped at levels of 1.5
    # and -0.5, written clipped to 1 and 0 beside a noise fitted for the unclipped levels.
    bounds = [(0.5, 1.0), (0.0, 0.5), (math.log(1e-3), 0.0), (-8.0, 8.0)]
    # Several starts of the noise, at the observed split: one start at an even split and the
    # spread of the uncensored scores (0 when they are all equal) took one step into a
    # corner of the range (30 scores of 1.0 beside 2 of 0.0 and 8 of 0.1 stopped at the
    # rejecting level 0.5 and a noise of 1.2, against 0.08 and 0.04).
    split = math.log(len(high) / len(low))
    result = min(
        (
            optimize.minimize(
                loss,
                [fmean(high), fmean(low), math.log(sigma), split],
                method="L-BFGS-B",
                bounds=bounds,
            )
            for sigma in (0.01, 0.05, 0.2)
        ),
        key=lambda r: float(r.fun),
    )
    if not np.isfinite(result.fun):  # (L-BFGS-B may stop "abnormally" at a good optimum)
        return None
    accept, reject, log_sigma, _ = (float(v) for v in result.x)
    return accept, reject, math.exp(log_sigma), len(scores)


def _rate(flags: Sequence[bool]) -> float:
    return sum(flags) / len(flags)


def _estimates(t_: _Tally, group: str) -> tuple[dict[str, float], dict[str, str], dict[str, Any]]:
    """(values, statistic per value, evidence) of one group."""
    values: dict[str, float] = {}
    stat: dict[str, str] = {}

    def put(name: str, value: float, what: str, n: int) -> None:
        values[name] = round(min(1.0, max(0.0, value)), 4)
        stat[name] = f"{what}, n = {n}"

    # Each of these parameters is the share of its observations that hold (a rate).
    rates: tuple[tuple[str, list[bool], str], ...] = (
        ("strength", t_.initial, "accuracy at round 0"),
        (
            "error_correlation",
            t_.distractor,
            "share of wrong round-0 answers equal to the top distractor",
        ),
        (
            "answer_spread",
            t_.spread,
            "share of other wrong round-0 answers that are no listed distractor",
        ),
        ("self_trust", t_.self_trust, "P(self-score >= 0.5)"),
        ("false_accept", t_.accept_wrong, "P(score >= 0.5 | another's wrong answer)"),
        ("false_reject", t_.reject_right, "P(score < 0.5 | another's right answer)"),
    )
    for name, seen, what in rates:
        if seen:
            put(name, _rate(seen), what, len(seen))
    levels = _score_levels(t_.high, t_.low)
    if levels is not None:
        # The simulator clips each score to [0, 1] (and an accepting score can land below
        # 0.5): means and s.d. of the observed scores were biased (noise 0.2 fitted as 0.14).
        accept, reject, sigma, n_scores = levels
        what = "censored two-level normal fit of the scores (maximum likelihood)"
        put("score_accept", accept, f"{what}: accepting level", n_scores)
        put("score_reject", reject, f"{what}: rejecting level", n_scores)
        put("calibration_noise", sigma, f"{what}: s.d.", n_scores)
    else:
        for name, scores, what in (
            ("score_accept", t_.high, "mean score >= 0.5"),
            ("score_reject", t_.low, "mean score < 0.5"),
        ):
            if scores:
                put(name, fmean(scores), what, len(scores))
    spread = [s - values["score_accept"] for s in t_.high if "score_accept" in values]
    spread += [s - values["score_reject"] for s in t_.low if "score_reject" in values]
    if levels is not None:
        spread = []  # the noise is fitted above
    conf_spread: list[float] = []
    for right, suffix in ((True, "right"), (False, "wrong")):
        confs = t_.conf[right]
        if not confs:
            continue
        ones = [c for c in confs if c >= 1.0]
        rest = [c for c in confs if c < 1.0]
        put(
            f"confidence_at_one_{suffix}",
            len(ones) / len(confs),
            f"P(confidence = 1.0 | {suffix} answer)",
            len(confs),
        )
        if rest:
            mean = fmean(rest)
            put(f"confidence_{suffix}", mean, f"mean confidence < 1.0 | {suffix} answer", len(rest))
            conf_spread += [c - mean for c in rest]
    noise = spread if len(spread) >= 2 else conf_spread
    if len(noise) >= 2 and "calibration_noise" not in values:
        put(
            "calibration_noise",
            math.sqrt(sum(d * d for d in noise) / (len(noise) - 1)),
            "pooled s.d. of " + ("scores" if noise is spread else "confidences"),
            len(noise),
        )
    doubt, believe = t_.moves[False], t_.moves[True]
    if doubt:
        put(
            "susceptibility",
            _rate(doubt),
            "P(moves to the heaviest retained answer | doubts its own)",
            len(doubt),
        )
    if believe:
        susceptibility = values.get("susceptibility", _defaults(group).susceptibility)
        # Without a doubting occasion the ratio divides by the default: the source says so,
        # or the anchoring reads as measured when half of it is assumed.
        assumed = "" if "susceptibility" in values else " (the default: no doubting occasion)"
        moved = _rate(believe)
        anchoring = 1.0 - moved / susceptibility if susceptibility > 0 else 1.0
        put(
            "anchoring",
            anchoring,
            f"1 - P(moves | believes its own) / susceptibility, P = {moved:.3f}, "
            f"susceptibility {susceptibility:g}{assumed}",
            len(believe),
        )
    if t_.anew:
        put(
            "refine_slip",
            _rate(t_.anew),
            "P(a refinement's answer is neither its own nor a retained one)",
            len(t_.anew),
        )
    if t_.anew_right:
        put(
            "slip_accuracy",
            _rate(t_.anew_right),
            "P(right | answered anew, no offered answer right)",
            len(t_.anew_right),
        )
    evidence = {
        "agent_rounds_at_0": len(t_.initial),
        "scores_given": len(t_.high) + len(t_.low),
        "confidences": len(t_.conf[True]) + len(t_.conf[False]),
        "refine_occasions": len(doubt) + len(believe),
        # Agent-rounds whose values of a stage were left out: a reply fell back to the default.
        "agent_rounds_at_parse_default": dict(sorted(t_.defaulted.items())),
    }
    return values, stat, evidence


def fit_consensus(
    questions: Sequence[Mapping[str, Any]],
    *,
    run: str,
    config: ConsensusConfig | None = None,
) -> FittedProfile:
    """Estimate each honest group's profile from ``consensus_question`` records of one run.

    ``config`` (the run's) locates the questions for the distractor statistic. Raises
    InputError when no record has an honest agent.
    """
    tasks = _tasks(config)
    tally = {g: _Tally() for g in _GROUPS}
    simulated = False
    solved: dict[tuple[str, Any], list[tuple[str, bool]]] = {}
    starts: set[tuple[str, Any, Any]] = set()
    asked: dict[tuple[Any, ...], _Asked] = {}
    for record in questions:
        trace = record["trace"]
        trace = trace if isinstance(trace, QuestionTrace) else QuestionTrace.model_validate(trace)
        simulated = simulated or bool(record.get("simulated"))
        start = (trace.task_id, record.get("seed"), record.get("composition"))
        names = [a.get("name") for a in record.get("agents") or []]

        def agent(i: int, start: tuple[Any, ...] = start, names: list[Any] = names) -> _Asked:
            who = names[i] if i < len(names) and names[i] is not None else i
            return asked.setdefault((*start, who), _Asked())

        _question(trace, tally, tasks.get(trace.task_id), agent, first_seen=start not in starts)
        starts.add(start)
        # Every protocol of a question starts from the same answers: count each question once.
        solved.setdefault(
            (trace.task_id, record.get("seed")),
            [(g, a.correct) for g, a in zip(trace.groups, trace.rounds[0], strict=False)
             if g in tally],
        )  # fmt: skip
    groups: dict[str, dict[str, float]] = {}
    sources: dict[str, dict[str, str]] = {}
    evidence: dict[str, dict[str, Any]] = {}
    for group in _GROUPS:
        if not tally[group].initial:
            continue
        values, stat, evidence[group] = _estimates(tally[group], group)
        default = _defaults(group)
        defaults = PROFILE_SOURCES.get(group, {})
        groups[group] = {}
        sources[group] = {}
        for name, field in SimulatedProfile.model_fields.items():
            if name == "name":
                continue
            if name in values:
                groups[group][name] = values[name]
                sources[group][name] = f"fitted from {run}: {stat[name]}"
            else:
                groups[group][name] = float(getattr(default, name))
                extra = field.json_schema_extra
                declared = extra.get("source") if isinstance(extra, dict) else None
                origin = defaults.get(name) or str(declared or "assumption")
                sources[group][name] = f"default ({origin}); no evidence in {run}"
    if not groups:
        raise InputError(f"{run} has no honest agents to fit a profile from")
    strengths = {g: groups[g]["strength"] for g in groups}
    fitted = difficulty_correlation(list(solved.values()), strengths)
    if fitted is not None:
        rho, pairs = fitted
        for group in groups:
            groups[group]["difficulty_correlation"] = rho
            sources[group]["difficulty_correlation"] = (
                f"fitted from {run}: honest pairs both right at round 0 against the strengths, "
                f"n = {pairs} pairs"
            )
    return FittedProfile(
        domain="consensus",
        run=run,
        run_simulated=simulated,
        groups=groups,
        sources=sources,
        evidence=evidence,
    )


def difficulty_correlation(
    questions: Sequence[Sequence[tuple[str, bool]]], strengths: Mapping[str, float]
) -> tuple[float, int] | None:
    """(ρ, pairs): the copula correlation at which the expected count of honest pairs both
    right at round 0 equals the observed count (see the module docstring); ``None`` without a
    pair or when a group is always or never right (no information on ρ).

    ``questions``: per question, each honest agent's (group, right at round 0).
    """
    from scipy.stats import multivariate_normal

    observed = 0
    counts: dict[tuple[str, str], int] = {}
    for agents in questions:
        for i in range(len(agents)):
            for j in range(i + 1, len(agents)):
                (gi, ri), (gj, rj) = agents[i], agents[j]
                key = (min(gi, gj), max(gi, gj))
                counts[key] = counts.get(key, 0) + 1
                observed += ri and rj
    if not counts or any(not 0 < strengths[g] < 1 for pair in counts for g in pair):
        return None
    normal = multivariate_normal  # Φ2 below: the bivariate normal CDF
    limits = {g: float(NormalDist().inv_cdf(strengths[g])) for pair in counts for g in pair}

    def expected(rho: float) -> float:
        return sum(
            n * float(normal.cdf([limits[a], limits[b]], mean=[0, 0], cov=[[1, rho], [rho, 1]]))
            for (a, b), n in counts.items()
        )

    low, high = 0.0, 0.99
    if observed <= expected(low):
        return 0.0, sum(counts.values())
    if observed >= expected(high):
        return high, sum(counts.values())
    for _ in range(30):  # bisection: the expected count grows with ρ
        middle = (low + high) / 2
        low, high = (middle, high) if expected(middle) < observed else (low, middle)
    return round((low + high) / 2, 4), sum(counts.values())


def simulated_twin(config: ConsensusConfig, profile: FittedProfile) -> ConsensusConfig:
    """``config`` with every honest group simulated on its fitted parameters."""
    backends = {}
    for group in _GROUPS:
        section = profile.groups.get(group) or profile.groups.get(
            "weak" if group == "strong" else "strong", {}
        )
        backends[group] = AgentBackend(backend="simulated", profile=dict(section))
    return config.model_copy(update={"agents": GroupBackends(**backends)})


def _key(record: Mapping[str, Any]) -> tuple[str, str, str, int, int]:
    return (
        str(record["protocol"]),
        str(record["topology"]),
        str(record["composition"]),
        int(record["F"]),
        int(record["T"]),
    )


def _traces(
    records: Sequence[Mapping[str, Any]],
) -> dict[tuple[Any, ...], dict[tuple[str, str], QuestionTrace]]:
    """Per configuration (:func:`_key`), each question's trace by (seed, task id)."""
    groups: dict[tuple[Any, ...], dict[tuple[str, str], QuestionTrace]] = {}
    for r in records:
        trace = r["trace"]
        trace = trace if isinstance(trace, QuestionTrace) else QuestionTrace.model_validate(trace)
        groups.setdefault(_key(r), {})[(str(r.get("seed")), trace.task_id)] = trace
    return groups


def _intervals(traces: Sequence[QuestionTrace], resamples: int) -> dict[str, Any]:
    return consensus_intervals(traces, resamples=resamples)


def compare_consensus(
    questions: Sequence[Mapping[str, Any]],
    config: ConsensusConfig,
    profile: FittedProfile,
    *,
    resamples: int = 2000,
) -> list[tuple[dict[str, Any], list[ComparisonRow]]]:
    """Real vs fitted-simulator metrics per configuration of the run (see the module doc).

    Returns, per (protocol, topology, composition, F, T), its metadata and one
    :class:`ComparisonRow` per metric of :data:`CONSENSUS_METRICS` present in both.
    """
    if profile.domain != "consensus":
        raise InputError(f"the profile was fitted on a {profile.domain} run, not a consensus one")
    # The twin plays the questions the run holds: an interrupted run (or one grown with
    # other questions) holds only some of its configured grid.
    twin = run_in_memory(
        simulated_twin(config, profile), only={question_label(q) for q in questions}
    )
    real, sim = _traces(questions), _traces(twin)
    out = []
    for key in sorted(real):
        # Like with like, should the twin miss a question the run holds.
        shared = sorted(real[key].keys() & sim.get(key, {}).keys())
        if not shared:
            continue
        a = _intervals([real[key][q] for q in shared], resamples)
        b = _intervals([sim[key][q] for q in shared], resamples)
        meta = dict(zip(("protocol", "topology", "composition", "F", "T"), key, strict=True))
        rows = [comparison_row(m, a[m], b[m]) for m in CONSENSUS_METRICS if m in a and m in b]
        out.append((meta, rows))
    return out
