"""Fit the simulated CodeGen roles to a run, and compare the two (``byzllm sim``).

:func:`fit_codegen` estimates :class:`~byzllm.agents.codegen.CodeGenSimParams` (the
profile's one group, ``sim``) from the ``codegen_problem`` records of a ``byzllm codegen
collect`` or ``run`` (the rogue-agents paper's CodeGen debate, §4.1, App. C). It reads only
what a run with LLM roles records: per round the solutions' code, fall-back flags and
helpfulness ratings, the judge's verdicts, the tester's tests, the generated tests' results
and what each solution did on the examples its prompt shows (``visible``, run by the
environment); per judge and tester turn (discarded ones included) the written output and the
top-k distributions at its decision positions; per debate the hidden tests' verdict on the
final answer (``passed``); and the problem's prompt and function name from the stored unit.
It never reads a simulated coder's or tester's own account (``sim``), the judge's or
tester's ``noise`` labels, ``sim_params``, or the problem's reference solution and hidden
tests, so fitting a simulated run is an honest test.

Conditions share their draws (common random numbers: the same problem and repeat meet the
same draws), so an observation repeated verbatim under several conditions (a round-1
solution, a first judgement) is counted once.

**Statistics and estimates.**

* *Coders' replies*: ``no_code_rate`` is the share of replies without a code block (the
  solution's ``fallback``); ``syntax_error_rate`` the share of the others whose code compiles
  neither alone nor after the prompt.
* *Round-1 solutions on the prompt's examples* (code that compiles, on prompts with an
  example): a correct solution passes every example, a wrong one fails each with probability
  ``bug_coverage``. ``bug_coverage`` is the maximum likelihood of the failed counts of the
  solutions that fail at least one of ``k >= 2`` examples (a binomial truncated at 0: one
  example says nothing of it); where each of them fails exactly one, the likelihood peaks at
  0, where wrong code fails no example, and it keeps ``base``. Then ``coder_skill``,
  ``difficulty_sd`` and ``skill_spread`` are the maximum likelihood of whether each
  solution passes all its ``k`` examples,
  ``P = σ(skill + spread · offset_seat − d) + (1 − σ(·)) (1 − bug_coverage)^k``, with the
  problem's difficulty ``d ~ N(0, difficulty_sd²)`` shared by every seat and repeat of a
  problem (integrated by Gauss-Hermite quadrature). The passes identify them only in part
  (:func:`fit_coders`): ``coder_skill`` needs passes and fails (all passing, the likelihood
  rises with the skill without end and is flat in the other two: all three keep ``base``),
  ``difficulty_sd`` a problem with more than one solution, ``skill_spread`` more than one
  seat. An estimate at the top of its search range (``difficulty_sd`` 10, ``skill_spread``
  5), or a ``coder_skill`` at ``±10``, is where the likelihood still rose, not a value: it
  keeps ``base`` and its source says why (the others are fitted again with it held); one at
  the bottom (0.01 and 0, the parameters' own 0) is written, and its source says so. A run
  without debates but with zero-shot debates gives ``coder_skill`` alone from their Pass@1
  (hidden tests), through the same difficulty integral; a Pass@1 that no skill of
  ``[−10, 10]`` gives (0 or 1) leaves it at ``base``, saying why.
* *The judge*: on every solution the prompt's examples judged (``visible``), a verdict
  *disagrees* when it contradicts what they showed. A faulty turn (``judge_error_rate``)
  contradicts all of them; a clean one each with probability ``verdict_noise``: the two are
  the maximum likelihood of each turn's (disagreements, judged solutions) under that
  mixture (EM). ``unseen_correct_rate``: the clean turns' share of CORRECT verdicts on
  solutions without an example, ``u (1 − v) + (1 − u) v``, solved for ``u``.
* *The tester*: a test is *unsound* when it calls the function as one of the prompt's
  examples does and expects another value (tests of other calls are not checked). A faulty
  turn writes unsound tests with probability ``faulty_unsound_rate``, a clean one with
  ``unsound_test_rate``: ``tester_error_rate`` and ``unsound_test_rate`` are the maximum
  likelihood of each turn's (unsound, checked) counts, given ``faulty_unsound_rate`` (suites
  of a few tests do not tell the three apart).
* *Ratings*: a coder rates feedback and tests 4 when the judge's verdict on its code agreed
  with what the generated tests showed, 2 when not, 3 without both; ``rating_noise`` is the
  share of ratings off that value.
* *Reported confidences*: at each decision position the top token's probability; its logit
  averaged over the judge's positions, each turn weighted by its posterior of being clean
  (the judge's mixture), gives ``verdict_confidence``, their weighted s.d.
  ``confidence_jitter``, and the faulty-weighted mean ``fault_signal`` (the shift towards
  ``faulty_confidence``, which is kept: only their product shows); the tester's clean-weighted
  positions give ``test_confidence``.
* *Top-k*: ``top_k`` is the run's own k, the most alternatives a judge's or tester's
  decision position reports (:func:`~byzllm.experiments._fitting.put_top_k`), so the twin's
  monitor features are computed over as many as the run's. The simulated judge and tester
  have only a few tokens to offer at a position (four or five; a pick one per solution), so
  a k above that reports no more.

**Not identified** (they keep ``base``; their sources say why): what coders do after round 1
(``fix_rate``, ``fix_rate_unflagged``, ``break_rate``, ``break_rate_unflagged``,
``follow_pick_rate``: a later solution's correctness shows only through the examples, which
wrong code passes at ``(1 − bug_coverage)^k``, and the records do not tell fixing, breaking
and copying the pick apart), ``zero_shot_seat`` (a choice of the baseline),
``tests_per_round`` (a cap of the tester's prompt), ``faulty_unsound_rate`` and
``faulty_confidence`` (fixed for the fit, above). A wrong solution's examples are hashed
per bug kind, so wrong solutions of one problem share their failures: a little extra
agreement within a problem that the fitted ``difficulty_sd`` absorbs. Recovery on
simulated runs (``tests/experiments/test_codegen_fit.py``, ``docs/codegen.md``) states the
tolerances.

:func:`compare_codegen_run` replays every debate of the run (the stored units: the same
problems, conditions, monitors and repeats) with simulated roles on the fitted parameters
and returns Pass@1 and the interventions per debate of both, per split and condition, each
with a percentile bootstrap interval over problems (a problem's repeats averaged first).
"""

from __future__ import annotations

import ast
import json
import math
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy.optimize import minimize
from scipy.special import expit, logsumexp

from byzllm.agents.codegen import (
    CODER_ROLES,
    SEAT_OFFSETS,
    CodeGenSimParams,
    visible_examples,
)
from byzllm.envs.codegen import syntax_error
from byzllm.errors import InputError
from byzllm.monitor.dataset import game_flag
from byzllm.runs import Store

from .._fitting import (
    ComparisonRow,
    Estimates,
    FittedProfile,
    bisect_increasing,
    profile_params,
    put_top_k,
    run_name,
    sim_profile,
)
from .._twin import Metric, grouped_comparison, replay_units
from .config import CODEGEN_CONDITIONS
from .experiment import work
from .records import CodeGenProblemRecord

__all__ = [
    "CODEGEN_METRICS",
    "CODEGEN_RATES",
    "CodeGenEvidence",
    "collect_evidence",
    "compare_codegen_run",
    "fit_bug_coverage",
    "fit_codegen",
    "fit_codegen_run",
    "fit_judge",
    "fit_tester",
    "simulate_twin",
    "unsound_tests",
]

#: The metrics compared (the rogue-agents paper, §5 Table 1: Pass@1), per debate.
CODEGEN_METRICS: dict[str, Metric] = {
    "Pass@1": lambda r: float(game_flag(r, "passed")),
    "Interventions": lambda r: float(int(r["resets"]) + int(r["resamples"])),
}
#: The metrics that are rates (a debate passes or not); interventions are a count.
CODEGEN_RATES = frozenset({"Pass@1"})

_AFTER_ROUND_ONE = (
    "after round 1 a coder's correctness shows only through the prompt's examples, which "
    "wrong code passes at (1 - bug_coverage)^k, and the records do not tell fixing, breaking "
    "and copying the judge's pick apart"
)
#: Why the parameters no CodeGen run identifies keep their value.
_UNSEEN = {
    "fix_rate": _AFTER_ROUND_ONE,
    "fix_rate_unflagged": _AFTER_ROUND_ONE,
    "break_rate": _AFTER_ROUND_ONE,
    "break_rate_unflagged": _AFTER_ROUND_ONE,
    "follow_pick_rate": _AFTER_ROUND_ONE,
    "zero_shot_seat": "a choice of the baseline's coder, not a behaviour",
    "tests_per_round": "a cap of the tester's prompt, not a behaviour",
    "faulty_unsound_rate": "fixed for the fit: suites of a few tests do not tell it apart "
    "from tester_error_rate and unsound_test_rate",
    "faulty_confidence": "fixed for the fit: only its product with fault_signal shows",
}
#: Bounds of the maximum-likelihood coder parameters.
_SKILL = (-10.0, 10.0)
_SD = (0.01, 10.0)
_SPREAD = (0.0, 5.0)
#: The coder parameters of the round-1 passes' likelihood (:func:`fit_coders`).
_CODERS = ("coder_skill", "difficulty_sd", "skill_spread")
#: Why the three keep their defaults when the round-1 solutions show one outcome only.
_ONE_OUTCOME = (
    "all {n} round-1 solutions {what}: the likelihood keeps rising as coder_skill {way} "
    "without end, and there it is flat in difficulty_sd and skill_spread (it needs passes "
    "and fails)"
)
#: Why an estimate at the top of its search range keeps its default.
_AT_THE_TOP = (
    "the fit reached the top of its range ({value:.4g} of at most {top:g}): the likelihood "
    "still rises beyond it ({why}); the other coder parameters were fitted with it at {base:g}"
)
_TOP_WHY = {
    "difficulty_sd": "a problem's solutions pass or fail together about as often as they can",
    "skill_spread": "the seats' passes lie about as far apart as they can",
}
#: Why the three keep their defaults when coder_skill reaches an end of its range.
_SKILL_END = (
    "the fit reached an end of its range ({value:.4g} of [-10, 10]): the likelihood still "
    "rises beyond it (at the bottom: fewer solutions pass than wrong code does by chance, "
    "(1 - bug_coverage)^k), and there it is flat in difficulty_sd and skill_spread"
)
#: The bottom of the search range where it is (nearly) the parameter's own, 0, and what an
#: estimate there says: written, and its source says so.
_AT_THE_BOTTOM = {
    "difficulty_sd": (_SD[0], "a problem's solutions agree no more often than chance"),
    "skill_spread": (_SPREAD[0], "the seats pass about alike"),
}
#: Why coder_skill keeps its default when the zero-shot Pass@1 lies beyond its range.
_ZERO_SHOT_END = (
    "the {n} zero-shot debates' Pass@1 {rate:.4f} lies beyond what any skill of [-10, 10] "
    "gives: the skill would run to an end of its range"
)
#: Why bug_coverage keeps its default when its likelihood peaks at 0.
_ONE_FAILED_EACH = (
    "each of the {n} round-1 solutions failing one of k >= 2 examples failed exactly one: "
    "the likelihood keeps rising as bug_coverage falls to 0, where wrong code would fail no "
    "example at all, against the failures seen"
)
#: Fewer expected faulty judge turns than this: fault_signal is not estimated.
_MIN_FAULTY = 2.0


# -- what the records show -------------------------------------------------------------------


@dataclass(frozen=True)
class JudgeTurn:
    """One judge turn: ``disagree`` of its ``seen`` verdicts contradict what the examples
    showed; ``called_correct`` of its ``unseen`` verdicts (no example) say CORRECT;
    ``logits``: the top token's logit at each decision position."""

    seen: int
    disagree: int
    unseen: int = 0
    called_correct: int = 0
    logits: tuple[float, ...] = ()


@dataclass(frozen=True)
class CheckedSuite:
    """One tester turn's suite: ``unsound`` of its ``checked`` tests expect another value than the
    prompt's example; ``logits`` as for :class:`JudgeTurn`."""

    checked: int
    unsound: int
    logits: tuple[float, ...] = ()


@dataclass(frozen=True)
class FirstSolution:
    """A round-1 solution on its prompt's ``examples`` (``failed`` of them failed), by seat
    and problem (for the shared difficulty)."""

    problem: str
    seat: int
    examples: int
    failed: int


@dataclass
class CodeGenEvidence:
    """What :func:`collect_evidence` reads from a run, each observation counted once."""

    debates: int = 0
    replies: int = 0
    no_code: int = 0
    broken: int = 0
    ratings: int = 0
    ratings_off: int = 0
    first: list[FirstSolution] = field(default_factory=list)
    zero_shot: list[tuple[str, int, bool]] = field(default_factory=list)
    judge: list[JudgeTurn] = field(default_factory=list)
    tester: list[CheckedSuite] = field(default_factory=list)
    #: Alternatives reported at each decision position of those judge and tester turns.
    widths: list[int] = field(default_factory=list)


def _key(*parts: Any) -> str:
    return json.dumps(parts, sort_keys=True, default=str)


def _seat(solution: Mapping[str, Any], index: int) -> int:
    role = solution.get("role")
    return CODER_ROLES.index(role) if role in CODER_ROLES else index


def _compiles(code: str, prompt: str) -> bool:
    """The code compiles alone or after the prompt (how the environment assembles it);
    compiled, never run."""
    return syntax_error(code) is None or syntax_error(prompt + code) is None


def _top_logits(distributions: Sequence[Sequence[Any]]) -> tuple[float, ...]:
    out = []
    for dist in distributions:
        if not dist:
            continue
        p = math.exp(max(float(lp) for _, lp in dist))
        p = min(max(p, 1e-6), 1 - 1e-6)
        out.append(math.log(p / (1 - p)))
    return tuple(out)


def _observed(result: Mapping[str, Any] | None) -> bool | None:
    """What a test result shows of a solution: passes all, fails some, or nothing."""
    if not result or result.get("status") == "no_tests":
        return None
    total = int(result.get("passed", 0)) + int(result.get("failed", 0))
    return None if total == 0 else int(result.get("failed", 0)) == 0


def _normalized_call(source: str) -> str | None:
    try:
        return ast.unparse(ast.parse(source, mode="eval").body)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None


def _literal(source: str) -> tuple[bool, Any]:
    try:
        return True, ast.literal_eval(source)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None


def unsound_tests(tests: Sequence[str], prompt: str, entry_point: str | None) -> tuple[int, int]:
    """``(unsound, checked)``: of the ``assert CALL == VALUE`` tests whose call is one of the
    prompt's examples (:func:`~byzllm.agents.codegen.visible_examples`), those expecting a
    value other than the example's."""
    expected: dict[str, Any] = {}
    for example in visible_examples(prompt, entry_point):
        call = _normalized_call(example.call)
        ok, value = _literal(example.expected)
        if call is not None and ok:
            expected.setdefault(call, value)
    unsound = checked = 0
    for line in tests:
        try:
            node = ast.parse(line.strip()).body
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            continue
        if len(node) != 1 or not isinstance(node[0], ast.Assert):
            continue
        test = node[0].test
        if not (
            isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)
        ):
            continue
        call = ast.unparse(test.left)
        if call not in expected:
            continue
        ok, value = _literal(ast.unparse(test.comparators[0]))
        if not ok:
            continue
        checked += 1
        unsound += bool(value != expected[call])
    return unsound, checked


def _rounds(record: Mapping[str, Any]) -> dict[int, Mapping[str, Any]]:
    return {int(r["round"]): r for r in record.get("transcript") or []}


def _solutions(record: Mapping[str, Any]) -> Iterator[tuple[int, int, Mapping[str, Any]]]:
    """(round, seat, solution) of every solution the record's debate wrote."""
    for rnd, r in sorted(_rounds(record).items()):
        for i, s in enumerate(r.get("solutions") or []):
            yield rnd, _seat(s, i), s


def collect_evidence(
    records: Sequence[Mapping[str, Any]], prompts: Mapping[str, tuple[str, str | None]]
) -> CodeGenEvidence:
    """Everything the fit reads (module docstring) from ``codegen_problem`` records;
    ``prompts`` maps a problem id to its prompt and function name."""
    ev = CodeGenEvidence(debates=len(records))
    seen: set[str] = set()

    def once(*parts: Any) -> bool:
        k = _key(*parts)
        if k in seen:
            return False
        seen.add(k)
        return True

    for rec in records:
        pid, rep = str(rec["problem_id"]), int(rec.get("repeat", 0))
        prompt, entry = prompts.get(pid, ("", None))
        rounds = _rounds(rec)
        if rec.get("condition") == "zero-shot":
            sols = (rounds.get(1) or {}).get("solutions") or []
            if sols and once("zero-shot", pid, rep):
                ev.zero_shot.append((pid, _seat(sols[0], 0), game_flag(rec, "passed")))
        for rnd, seat, s in _solutions(rec):
            code = str(s.get("code") or "")
            fallback = bool(s.get("fallback"))
            if once("reply", pid, rep, rnd, seat, code, fallback):
                ev.replies += 1
                ev.no_code += fallback
                ev.broken += (not fallback) and not _compiles(code, prompt)
            if rnd >= 2:
                _rating(ev, rounds[rnd], seat, s, once, pid, rep)
        if 1 in rounds and 2 in rounds:
            visible = rounds[2].get("visible") or []
            for i, s in enumerate(rounds[1].get("solutions") or []):
                seat = _seat(s, i)
                result = visible[i] if i < len(visible) else None
                ok = _observed(result)
                code = str(s.get("code") or "")
                if ok is None or s.get("fallback") or not _compiles(code, prompt):
                    continue
                if once("first", pid, rep, seat):
                    assert result is not None
                    total = int(result.get("passed", 0)) + int(result.get("failed", 0))
                    ev.first.append(FirstSolution(pid, seat, total, int(result["failed"])))
        for t in rec.get("turns") or []:
            obs = t.get("obs") or {}
            role, rnd, attempt = obs.get("role"), int(t.get("round", 0)), int(t.get("attempt", 0))
            if t.get("fallback") or rnd not in rounds:
                continue
            dists = obs.get("distributions") or []
            logits = _top_logits(dists)
            action = obs.get("action") or {}
            if role == "judge":
                visible = rounds[rnd].get("visible") or []
                if once("judge", pid, rep, rnd, attempt, action, visible):
                    ev.judge.append(_judge_turn(action.get("verdicts") or [], visible, logits))
                    ev.widths += [len(d) for d in dists]
            elif role == "tester":
                text = str(t.get("text") or "")
                if once("tester", pid, rep, rnd, attempt, text):
                    unsound, checked = unsound_tests(text.splitlines(), prompt, entry)
                    ev.tester.append(CheckedSuite(checked, unsound, logits))
                    ev.widths += [len(d) for d in dists]
    return ev


def _rating(
    ev: CodeGenEvidence,
    rnd: Mapping[str, Any],
    seat: int,
    solution: Mapping[str, Any],
    once: Callable[..., bool],
    pid: str,
    rep: int,
) -> None:
    """Count a later-round solution's ratings against the rule's value (module docstring)."""
    verdicts = (rnd.get("feedback") or {}).get("verdicts") or []
    results = rnd.get("results") or []
    verdict = verdicts[seat] if seat < len(verdicts) else None
    observed = _observed(results[seat] if seat < len(results) else None)
    rule = 3 if verdict is None or observed is None else (4 if verdict == observed else 2)
    ratings = [solution.get("helpful_feedback"), solution.get("helpful_tests")]
    if not once("rating", pid, rep, rnd.get("round"), seat, ratings, verdict, observed):
        return
    for r in ratings:
        if r is not None:
            ev.ratings += 1
            ev.ratings_off += int(r) != rule


def _judge_turn(
    verdicts: Sequence[Any], visible: Sequence[Mapping[str, Any]], logits: tuple[float, ...]
) -> JudgeTurn:
    seen = disagree = unseen = correct = 0
    for i, v in enumerate(verdicts):
        if v is None:
            continue
        ok = _observed(visible[i] if i < len(visible) else None)
        if ok is None:
            unseen += 1
            correct += bool(v)
        else:
            seen += 1
            disagree += bool(v) != ok
    return JudgeTurn(seen, disagree, unseen, correct, logits)


# -- the estimators --------------------------------------------------------------------------


def fit_judge(
    turns: Sequence[JudgeTurn], *, iterations: int = 500
) -> tuple[float, float, list[float]]:
    """``(judge_error_rate, verdict_noise, posterior faulty per turn)`` by EM on the turns
    with a judged solution (module docstring); a turn without one gets the prior."""
    data = [(t.seen, t.disagree) for t in turns]
    e, v = 0.1, 0.1
    post = [e] * len(turns)
    usable = [i for i, (n, _) in enumerate(data) if n > 0]
    if not usable:
        return e, v, post
    for _ in range(iterations):
        r = {}
        for i in usable:
            n, d = data[i]
            faulty = e if d == n else 0.0
            clean = (1 - e) * v**d * (1 - v) ** (n - d)
            r[i] = faulty / (faulty + clean) if faulty + clean > 0 else 0.0
        e_new = sum(r.values()) / len(usable)
        num = sum((1 - r[i]) * data[i][1] for i in usable)
        den = sum((1 - r[i]) * data[i][0] for i in usable)
        v_new = num / den if den > 0 else v
        done = abs(e_new - e) < 1e-10 and abs(v_new - v) < 1e-10
        e, v = e_new, v_new
        if done:
            break
    for i in range(len(turns)):
        if i not in usable:
            post[i] = e
            continue
        n, d = data[i]
        faulty = e if d == n else 0.0
        clean = (1 - e) * v**d * (1 - v) ** (n - d)
        post[i] = faulty / (faulty + clean) if faulty + clean > 0 else 0.0
    return e, v, post


def fit_tester(
    turns: Sequence[CheckedSuite], faulty_unsound: float, *, iterations: int = 500
) -> tuple[float, float, list[float]]:
    """``(tester_error_rate, unsound_test_rate, posterior faulty per turn)`` by EM on the
    turns with a checked test, given ``faulty_unsound`` (module docstring)."""
    t, u = 0.1, 0.05
    fu = faulty_unsound

    def posterior(n: int, k: int) -> float:
        faulty = t * fu**k * (1 - fu) ** (n - k)
        clean = (1 - t) * u**k * (1 - u) ** (n - k)
        return faulty / (faulty + clean) if faulty + clean > 0 else 0.0

    usable = [i for i, x in enumerate(turns) if x.checked > 0]
    if not usable:
        return t, u, [t] * len(turns)
    for _ in range(iterations):
        r = {i: posterior(turns[i].checked, turns[i].unsound) for i in usable}
        t_new = sum(r.values()) / len(usable)
        den = sum((1 - r[i]) * turns[i].checked for i in usable)
        u_new = sum((1 - r[i]) * turns[i].unsound for i in usable) / den if den > 0 else u
        # The clean part is the one with the lower rate (it names the two parts).
        u_new = min(u_new, fu)
        done = abs(t_new - t) < 1e-10 and abs(u_new - u) < 1e-10
        t, u = t_new, u_new
        if done:
            break
    post = [posterior(x.checked, x.unsound) if x.checked > 0 else t for x in turns]
    return t, u, post


def fit_bug_coverage(first: Sequence[FirstSolution]) -> tuple[float, int] | None:
    """``(bug_coverage, n)``: the maximum likelihood of the failed counts of the solutions
    failing at least one of ``k >= 2`` examples (a binomial truncated at 0), or ``None``."""
    data = [(s.examples, s.failed) for s in first if s.examples >= 2 and s.failed >= 1]
    if not data:
        return None
    total = sum(f for _, f in data)

    def expected(c: float) -> float:
        return sum(k * c / (1 - (1 - c) ** k) for k, _ in data)

    lo, hi = 1e-9, 1.0
    if total <= expected(lo):
        return lo, len(data)
    if total >= expected(hi - 1e-12):
        return 1.0, len(data)
    return bisect_increasing(expected, total, lo, hi), len(data)


_NODES, _WEIGHTS = np.polynomial.hermite.hermgauss(40)
_LOG_WEIGHTS = np.log(_WEIGHTS / math.sqrt(math.pi))


def _skill_nll(
    theta: Sequence[float],
    offsets: npt.NDArray[np.float64],
    miss: npt.NDArray[np.float64],
    passed: npt.NDArray[np.float64],
    group: npt.NDArray[np.intp],
    n_groups: int,
) -> float:
    """Minus the log likelihood of round-1 passes (module docstring)."""
    skill, sd, spread = theta
    d = math.sqrt(2.0) * sd * _NODES
    correct = expit(skill + spread * offsets[:, None] - d[None, :])
    p = correct + (1.0 - correct) * miss[:, None]
    p = np.clip(p, 1e-12, 1 - 1e-12)
    logp = np.where(passed[:, None] > 0, np.log(p), np.log1p(-p))
    per = np.zeros((n_groups, d.size))
    np.add.at(per, group, logp)
    return -float(logsumexp(per + _LOG_WEIGHTS[None, :], axis=1).sum())


def fit_coders(
    first: Sequence[FirstSolution], coverage: float, base: CodeGenSimParams
) -> tuple[dict[str, float], dict[str, str]]:
    """``(fitted, unseen)``: ``coder_skill``, ``difficulty_sd`` and ``skill_spread`` where
    the round-1 passes identify them, the maximum likelihood of which round-1 solutions pass
    all their examples (module docstring); ``unseen`` says why the others keep ``base``.

    The likelihood identifies ``coder_skill`` only when some solutions pass and some fail
    (all passing, it rises with the skill without end, and is flat in the other two);
    ``difficulty_sd`` needs a problem with more than one solution, ``skill_spread`` more
    than one seat. An estimate that reaches the top of its search range (``difficulty_sd``
    10, ``skill_spread`` 5: a problem's solutions or a seat's agreeing about as much as they
    can) is where the likelihood still rose, not a value: it keeps ``base``, and the others
    are fitted again with it. A ``coder_skill`` at an end of ``±10`` (fewer passes than
    wrong code makes by chance, ``(1 − bug_coverage)^k``) is withheld with the other two,
    which the likelihood no longer sees there.
    """
    passes = sum(s.failed == 0 for s in first)
    if passes in (0, len(first)):
        why = _ONE_OUTCOME.format(
            n=len(first),
            what="pass all their prompt's examples" if passes else "fail one or more of them",
            way="rises" if passes else "falls",
        )
        return {}, dict.fromkeys(_CODERS, why)
    index: dict[str, int] = {}
    for s in first:
        index.setdefault(s.problem, len(index))
    offsets = np.array([SEAT_OFFSETS[s.seat % len(SEAT_OFFSETS)] for s in first])
    miss = np.array([(1.0 - coverage) ** s.examples for s in first])
    passed = np.array([1.0 if s.failed == 0 else 0.0 for s in first])
    group = np.array([index[s.problem] for s in first], dtype=np.intp)
    unseen: dict[str, str] = {}
    if not (np.bincount(group) >= 2).any():
        unseen["difficulty_sd"] = "no problem's examples ran more than one solution"
    if len({s.seat % len(SEAT_OFFSETS) for s in first}) < 2:
        unseen["skill_spread"] = "the examples ran one seat's solutions only"
    # A parameter not free is held at its base value (a bound of zero width).
    held = {"difficulty_sd": base.difficulty_sd, "skill_spread": base.skill_spread}
    while True:
        bounds = [_SKILL, _SD, _SPREAD]
        for i, name in enumerate(held, start=1):
            if name in unseen:
                bounds[i] = (held[name], held[name])
        result = minimize(
            lambda th: _skill_nll(list(th), offsets, miss, passed, group, len(index)),
            np.array([base.coder_skill, base.difficulty_sd, base.skill_spread]),
            method="L-BFGS-B",
            bounds=bounds,
        )
        skill, sd, spread = (float(v) for v in result.x)
        ran = {
            name: _AT_THE_TOP.format(value=value, top=top, why=_TOP_WHY[name], base=held[name])
            for name, value, top in (
                ("difficulty_sd", sd, _SD[1]),
                ("skill_spread", spread, _SPREAD[1]),
            )
            if name not in unseen and value >= top * (1 - 1e-3)
        }
        if not ran:
            break
        # The others moved with it: fitted again with it held at base.
        unseen |= ran
    if min(skill - _SKILL[0], _SKILL[1] - skill) < 1e-3:
        why = _SKILL_END.format(value=skill)
        return {}, {name: unseen.get(name, why) for name in _CODERS}
    fitted = {"coder_skill": skill, "difficulty_sd": sd, "skill_spread": spread}
    return {k: v for k, v in fitted.items() if k not in unseen}, unseen


def _zero_shot_skill(zero: Sequence[tuple[str, int, bool]], base: CodeGenSimParams) -> float | None:
    """``coder_skill`` whose expected zero-shot Pass@1 (over the difficulty) is the run's, or
    ``None`` where no skill of its range gives it (a Pass@1 of 0 or 1: the skill would run
    to an end of its range, which says only that it lies beyond)."""
    rate = sum(p for _, _, p in zero) / len(zero)
    offsets = [base.skill_spread * SEAT_OFFSETS[s % len(SEAT_OFFSETS)] for _, s, _ in zero]
    d = math.sqrt(2.0) * base.difficulty_sd * _NODES
    w = np.exp(_LOG_WEIGHTS)

    def expected(skill: float) -> float:
        return float(np.mean([(w * expit(skill + o - d)).sum() for o in offsets]))

    if not expected(_SKILL[0]) < rate < expected(_SKILL[1]):
        return None
    return bisect_increasing(expected, rate, *_SKILL)


def _weighted(values: Sequence[tuple[float, Sequence[float]]]) -> tuple[float, float, float]:
    """(weighted mean, weighted s.d., total weight) of logits, each turn's positions
    weighted by its weight."""
    w = sum(weight * len(xs) for weight, xs in values)
    if w <= 0:
        return float("nan"), float("nan"), 0.0
    mean = sum(weight * sum(xs) for weight, xs in values) / w
    var = sum(weight * sum((x - mean) ** 2 for x in xs) for weight, xs in values) / w
    return mean, math.sqrt(var), sum(weight for weight, xs in values if xs)


# -- the fit ---------------------------------------------------------------------------------


def fit_codegen(
    records: Sequence[Mapping[str, Any]],
    prompts: Mapping[str, tuple[str, str | None]],
    *,
    run: str,
    base: CodeGenSimParams | None = None,
) -> FittedProfile:
    """Estimate :class:`CodeGenSimParams` from one run's ``codegen_problem`` records and its
    problems' prompts (``problem id -> (prompt, function name)``); see the module docstring.

    ``base`` holds every parameter the run cannot identify (default: the declared defaults).
    Raises InputError without a debate.
    """
    if not records:
        raise InputError(f"{run} has no CodeGen debates to fit a profile from")
    base = base or CodeGenSimParams()
    ev = collect_evidence(records, prompts)
    fit = Estimates(f"fitted from {run} on {ev.debates} debates", dict(_UNSEEN))
    _fit_replies(ev, fit)
    _fit_first_round(ev, base, fit)
    judge_post = _fit_judging(ev, fit)
    tester_post = _fit_testing(ev, base, fit)
    _fit_confidences(ev, base, judge_post, tester_post, fit)
    put_top_k(fit, CodeGenSimParams, ev.widths, "the judge's and tester's positions")
    return sim_profile("codegen", base, fit, run, records)


def _fit_replies(ev: CodeGenEvidence, fit: Estimates) -> None:
    fit.evidence["coders"] = {
        "replies": ev.replies,
        "no_code": ev.no_code,
        "syntax_errors": ev.broken,
        "ratings": ev.ratings,
        "ratings_off_rule": ev.ratings_off,
    }
    if ev.replies:
        fit.put(
            "no_code_rate", ev.no_code / ev.replies, "share of replies without code", ev.replies
        )
    else:
        fit.unseen["no_code_rate"] = "the run holds no coder reply"
    written = ev.replies - ev.no_code
    if written:
        fit.put(
            "syntax_error_rate",
            ev.broken / written,
            "share of written code that compiles neither alone nor after the prompt",
            written,
        )
    else:
        fit.unseen["syntax_error_rate"] = "the run holds no written code"
    if ev.ratings:
        fit.put(
            "rating_noise",
            ev.ratings_off / ev.ratings,
            "share of helpfulness ratings off 4 (verdict agreed with the tests' result), 2 "
            "(disagreed) or 3 (either missing)",
            ev.ratings,
        )
    else:
        fit.unseen["rating_noise"] = "the run holds no helpfulness rating (no debate past round 1)"


def _fit_first_round(
    ev: CodeGenEvidence,
    base: CodeGenSimParams,
    fit: Estimates,
) -> None:
    first = ev.first
    passing = sum(s.failed == 0 for s in first)
    fit.evidence["coders"] |= {
        "first_round_solutions": len(first),
        "first_round_pass_examples": passing,
        "first_round_problems": len({s.problem for s in first}),
        "first_round_shared_problems": sum(
            n >= 2 for n in Counter(s.problem for s in first).values()
        ),
        "first_round_seats": len({s.seat % len(SEAT_OFFSETS) for s in first}),
        "zero_shot_debates": len(ev.zero_shot),
        "zero_shot_pass": sum(p for _, _, p in ev.zero_shot),
    }
    coverage = base.bug_coverage
    fitted = fit_bug_coverage(first)
    if fitted is None:
        fit.unseen["bug_coverage"] = (
            "no round-1 solution fails one of two or more examples (one example says nothing of it)"
        )
    elif round(fitted[0], 4) == 0.0:
        # The truncated likelihood's supremum at 0 (as the profile rounds it) is no value: at
        # 0 a wrong solution fails no example, so the coder fit saw every solution pass with
        # probability 1 (a flat likelihood that left the coders' parameters at their starting
        # values, written as fitted).
        fit.unseen["bug_coverage"] = _ONE_FAILED_EACH.format(n=fitted[1])
    else:
        coverage, n = fitted
        fit.put(
            "bug_coverage",
            coverage,
            "maximum likelihood of the examples failed by round-1 solutions failing at least "
            "one of k >= 2 (a binomial truncated at 0)",
            n,
        )
        coverage = float(round(coverage, 4))
    skill_why = "no round-1 solution was run on its prompt's examples and no zero-shot debate"
    if first:
        fitted_coders, unseen = fit_coders(first, coverage, base)
        what = (
            "maximum likelihood of which round-1 solutions pass all their prompt's examples "
            "(difficulty shared by a problem's seats and repeats, given bug_coverage "
            f"{coverage:g})"
        )
        # The difficulty's spread is seen only in problems with more than one solution.
        shared = fit.evidence["coders"]["first_round_shared_problems"]
        for name, value in fitted_coders.items():
            low, why = _AT_THE_BOTTOM.get(name, (-math.inf, ""))
            note = f" (at the bottom of its range, {low:g}: {why})" if value <= low + 1e-3 else ""
            if name == "difficulty_sd":
                fit.put(
                    name,
                    value,
                    f"{what}; its spread seen in the problems whose examples ran two or more "
                    f"solutions{note}",
                    shared,
                )
            else:
                fit.put(name, value, what + note, len(first))
        fit.unseen |= unseen
    elif ev.zero_shot:
        fit.unseen["difficulty_sd"] = fit.unseen["skill_spread"] = "the run holds no debate"
        skill = _zero_shot_skill(ev.zero_shot, base)
        if skill is None:
            fit.unseen["coder_skill"] = _ZERO_SHOT_END.format(
                rate=_zero_shot_rate(ev), n=len(ev.zero_shot)
            )
            return
        fit.put(
            "coder_skill",
            skill,
            "the skill whose expected zero-shot Pass@1 over the difficulty (difficulty_sd "
            f"{base.difficulty_sd:g}) is the run's {_zero_shot_rate(ev):.4f}",
            len(ev.zero_shot),
        )
    else:
        for name in _CODERS:
            fit.unseen[name] = skill_why


def _zero_shot_rate(ev: CodeGenEvidence) -> float:
    """The zero-shot debates' Pass@1 (NaN without any)."""
    if not ev.zero_shot:
        return float("nan")
    return sum(p for _, _, p in ev.zero_shot) / len(ev.zero_shot)


def _fit_judging(ev: CodeGenEvidence, fit: Estimates) -> list[float]:
    turns = ev.judge
    judged = [t for t in turns if t.seen > 0]
    e, v, post = fit_judge(turns)
    fit.evidence["judge"] = {
        "turns": len(turns),
        "judged_solutions": sum(t.seen for t in turns),
        "disagreements": sum(t.disagree for t in turns),
        "unseen_verdicts": sum(t.unseen for t in turns),
        "unseen_called_correct": sum(t.called_correct for t in turns),
    }
    why = "no judge verdict on a solution the prompt's examples ran"
    if not judged:
        fit.unseen["judge_error_rate"] = fit.unseen["verdict_noise"] = why
    else:
        n = sum(t.seen for t in judged)
        fit.put(
            "judge_error_rate",
            e,
            "share of judge turns contradicting every example-checked verdict, EM of the "
            "mixture with verdict_noise",
            len(judged),
        )
        fit.put(
            "verdict_noise",
            v,
            "share of a clean turn's verdicts contradicting the examples (the same EM)",
            n,
        )
    # A verdict without an example says CORRECT with probability r (1 - u) + (1 - r) (u (1 - v)
    # + (1 - u) v) in a turn faulty with probability r: linear in u, solved over all of them.
    said = sum(t.called_correct for t in turns)
    fixed = sum(t.unseen * (r + (1 - r) * v) for r, t in zip(post, turns, strict=True))
    slope = sum(t.unseen * ((1 - r) * (1 - 2 * v) - r) for r, t in zip(post, turns, strict=True))
    n_unseen = sum(t.unseen for t in turns)
    if n_unseen and slope > 1e-6:
        fit.put(
            "unseen_correct_rate",
            min(1.0, max(0.0, (said - fixed) / slope)),
            f"CORRECT share {said / n_unseen:.4f} of the verdicts on solutions without an "
            "example, through the judge's mixture",
            n_unseen,
        )
    else:
        fit.unseen["unseen_correct_rate"] = "no verdict on a solution without an example"
    return post


def _fit_testing(
    ev: CodeGenEvidence,
    base: CodeGenSimParams,
    fit: Estimates,
) -> list[float]:
    turns = ev.tester
    checked = [t for t in turns if t.checked > 0]
    t, u, post = fit_tester(turns, base.faulty_unsound_rate)
    fit.evidence["tester"] = {
        "turns": len(turns),
        "checked_tests": sum(x.checked for x in turns),
        "unsound_tests": sum(x.unsound for x in turns),
    }
    if not checked:
        why = "no test of the run calls the function as one of the prompt's examples"
        fit.unseen["tester_error_rate"] = fit.unseen["unsound_test_rate"] = why
        return post
    given = f"given faulty_unsound_rate {base.faulty_unsound_rate:g}"
    fit.put(
        "tester_error_rate",
        t,
        f"EM of the tester turns' unsound counts as a two-rate mixture, {given}",
        len(checked),
    )
    fit.put(
        "unsound_test_rate",
        u,
        f"share of a clean turn's checked tests expecting another value than the prompt "
        f"(the same EM, {given})",
        sum(x.checked for x in checked),
    )
    return post


def _fit_confidences(
    ev: CodeGenEvidence,
    base: CodeGenSimParams,
    judge_post: Sequence[float],
    tester_post: Sequence[float],
    fit: Estimates,
) -> None:
    # Only turns whose posterior the verdicts inform: a turn without a checked verdict would
    # add its prior's mixture of clean and faulty confidences to both means.
    judged = [(r, t) for r, t in zip(judge_post, ev.judge, strict=True) if t.seen > 0]
    mean_c, sd_c, _ = _weighted([(1 - r, t.logits) for r, t in judged])
    mean_f, _, mass_f = _weighted([(r, t.logits) for r, t in judged])
    positions = sum(len(t.logits) for _, t in judged)
    fit.evidence["judge"] |= {
        "positions": positions,
        "clean_logit_mean": None if math.isnan(mean_c) else round(mean_c, 4),
        "faulty_logit_mean": None if math.isnan(mean_f) else round(mean_f, 4),
    }
    if math.isnan(mean_c):
        why = "the judge's turns report no distributions"
        fit.unseen["verdict_confidence"] = fit.unseen["confidence_jitter"] = why
        fit.unseen["fault_signal"] = why
    else:
        confidence = min(0.999, max(0.501, float(expit(mean_c))))
        fit.put(
            "verdict_confidence",
            confidence,
            "the judge's top-token probability, its logit averaged over the positions of "
            "turns with an example-checked verdict, weighted by their posterior of being clean",
            positions,
        )
        fit.put(
            "confidence_jitter",
            sd_c,
            "s.d. of those logits (the same weights)",
            positions,
        )
        target = float(expit(mean_f)) if mass_f >= _MIN_FAULTY else float("nan")
        step = base.faulty_confidence - confidence
        if math.isnan(target) or abs(step) < 1e-6:
            fit.unseen["fault_signal"] = (
                f"fewer than {_MIN_FAULTY:g} judge turns look faulty in expectation"
            )
        else:
            fit.put(
                "fault_signal",
                min(1.0, max(0.0, (target - confidence) / step)),
                f"faulty-weighted top-token probability {target:.4f} of the judge's turns, "
                f"as a shift from verdict_confidence towards faulty_confidence "
                f"{base.faulty_confidence:g}",
                round(mass_f),
            )
    checked = [(r, t) for r, t in zip(tester_post, ev.tester, strict=True) if t.checked > 0]
    mean_t, _, _ = _weighted([(1 - r, t.logits) for r, t in checked])
    tpositions = sum(len(t.logits) for _, t in checked)
    fit.evidence["tester"] |= {
        "positions": tpositions,
        "clean_logit_mean": None if math.isnan(mean_t) else round(mean_t, 4),
    }
    if math.isnan(mean_t):
        fit.unseen["test_confidence"] = "the tester's turns report no distributions"
    else:
        fit.put(
            "test_confidence",
            min(0.999, max(0.501, float(expit(mean_t)))),
            "the tester's top-token probability, its logit averaged over the positions of "
            "turns with a checked test, weighted by their posterior of being clean",
            tpositions,
        )


def _read(run_dir: str | Path) -> tuple[list[dict[str, Any]], dict[str, tuple[str, str | None]]]:
    """The run's debates (without their payloads), each checked against its record class
    (:meth:`Store.records`: an edited or damaged one is an :class:`InputError` naming it),
    and its problems' prompts."""
    with Store.open(run_dir) as store:
        rows = store.records(CodeGenProblemRecord, with_payload=True)
    if not rows:
        raise InputError(f"{run_dir} holds no CodeGen debates")
    prompts: dict[str, tuple[str, str | None]] = {}
    records = []
    for row in rows:
        problem = (row.pop("payload") or {}).get("problem") or {}
        # Only what every role reads: the prompt and the function's name.
        prompts[str(row["problem_id"])] = (
            str(problem.get("prompt") or ""),
            problem.get("entry_point"),
        )
        records.append(row)
    return records, prompts


def fit_codegen_run(run_dir: str | Path, *, base: CodeGenSimParams | None = None) -> FittedProfile:
    """:func:`fit_codegen` on the records and units stored in ``run_dir``."""
    records, prompts = _read(run_dir)
    return fit_codegen(records, prompts, run=run_name(run_dir), base=base)


# -- the comparison --------------------------------------------------------------------------

#: Config keys the twin keeps: how the debate is played, not who plays it.
_DEBATE_KEYS = (
    "rounds",
    "coders",
    "final_rule",
    "sandbox_timeout_s",
    "sandbox_memory_mb",
    "renormalize",
)


def simulate_twin(
    run_dir: str | Path, params: CodeGenSimParams, *, repeats: int = 1
) -> list[dict[str, Any]]:
    """Replay every debate ``run_dir`` played (the same problems, conditions, monitors and
    repeats; ``repeats`` passes) with simulated roles on ``params``, in the sandbox when
    it runs here (simulated execution where the run used it). Returns the twin's
    ``codegen_problem`` records as dicts."""
    sim = params.model_dump(mode="json")

    def twin(conf: Mapping[str, Any]) -> dict[str, Any]:
        out = {k: conf[k] for k in _DEBATE_KEYS if k in conf}
        execution = "simulated" if conf.get("execution") == "simulated" else "auto"
        return {**out, "agents": "simulated", "sim": sim, "execution": execution}

    return replay_units(
        run_dir,
        twin,
        work,
        kinds={"codegen_problem"},
        repeats=repeats,
        accept=lambda p: {"config", "problem", "repeat", "condition"} <= set(p),
        what="CodeGen debates",
    )


def _order(key: tuple[Any, ...]) -> tuple[str, int]:
    split, condition = str(key[0]), str(key[1])
    rank = CODEGEN_CONDITIONS.index(condition) if condition in CODEGEN_CONDITIONS else 99
    return split, rank


def compare_codegen_run(
    run_dir: str | Path,
    profile: FittedProfile,
    *,
    repeats: int = 1,
    resamples: int = 2000,
) -> list[tuple[dict[str, Any], list[ComparisonRow]]]:
    """Pass@1 and interventions per debate of ``run_dir`` beside its simulated twin on
    ``profile``, per split and condition, with 95% bootstrap intervals over problems (a
    problem's repeats averaged first)."""
    params = profile_params(profile, "codegen", "CodeGen", CodeGenSimParams)
    real, _ = _read(run_dir)
    twin = simulate_twin(run_dir, params, repeats=repeats)
    return grouped_comparison(
        real,
        twin,
        CODEGEN_METRICS,
        unit=lambda r: str(r["problem_id"]),
        group=("split", "condition"),
        order=_order,
        rates=CODEGEN_RATES,
        resamples=resamples,
    )
