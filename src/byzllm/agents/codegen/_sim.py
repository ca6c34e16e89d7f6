"""Simulated CodeGen roles: coders that write real code, a judge and a tester with named faults.

A documented behavioural model (product brief §5), not a stub; every assumption is a named
:class:`CodeGenSimParams` field with its meaning and source (``parameter_rows`` lists them).
Draws are keyed by the debate (problem, repeat), round, attempt and seat
(:mod:`byzllm.agents._seeding`), so results do not depend on scheduling and the same problem
and repeat meet the same draws under every condition (common random numbers).

**Coders** write *real code*: a correct coder writes the problem's reference solution; a wrong
one writes the reference wrapped so that every return value is perturbed (a number moved by
one, a boolean negated, a string or list lengthened or cut: :func:`wrong_variant`), with the
perturbation kind as its "bug". Whether the code passes the hidden tests is decided by running
it (the sandbox), never by this module. In round 1 coder ``i`` is correct with probability
``sigmoid(coder_skill + skill_offset_i - d)``, where ``d ~ N(0, difficulty_sd)`` is the
problem's difficulty (drawn from its id). In later rounds a coder first follows the judge's
pick with probability ``follow_pick_rate`` (copying that solution); otherwise a wrong coder
fixes its code with probability ``fix_rate`` if the feedback or the tests flag it (a WRONG
verdict, a failing test) and ``fix_rate_unflagged`` otherwise, and a correct coder breaks its
code with probability ``break_rate`` if the feedback flags it, ``break_rate_unflagged`` if not.
Its helpfulness ratings are 4 when the feedback agreed with its own (latent) correctness and 2
when not, moved by one step with probability ``rating_noise``.

**Judge.** A turn is *faulty* with probability ``judge_error_rate`` (a rogue judgement, the
communication failure the paper monitors, §4.1): every verdict is inverted and the pick is a
wrong solution when there is one. A clean turn gets each verdict wrong with probability
``verdict_noise`` and picks a solution it judged correct. The judge's *reported*
distributions at its decision positions (each verdict word, the pick) put
``verdict_confidence`` (jittered) on the written token in a clean turn and
``verdict_confidence + fault_signal * (faulty_confidence - verdict_confidence)`` in a faulty
one: at ``fault_signal = 0`` a faulty judgement reports what a clean one would, and a monitor
can learn nothing from it.

**Tester.** Writes ``tests_per_round`` symbolic tests; a test is unsound (a wrong expected
value) with probability ``unsound_test_rate``, or ``faulty_unsound_rate`` in a faulty turn
(probability ``tester_error_rate``). A sound test fails a wrong solution with probability
``test_sensitivity``. Its decision positions (each expected value) report ``test_confidence``
(faulty turns moved towards ``faulty_confidence`` by ``fault_signal``). Its tests are not code:
their results are simulated (:func:`simulated_test_result`, labelled ``simulated``).

Simulated coders also produce broken replies for robustness studies: no code at all with
probability ``no_code_rate`` (a counted parse fall-back) and code with a syntax error with
probability ``syntax_error_rate``. Both are 0 by default.
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict

from .. import _seeding
from .._params import parameter
from ._types import (
    CODER_ROLES,
    CoderView,
    Feedback,
    ReviewView,
    SimCode,
    SimTests,
    Solution,
    TestResult,
    TestSuite,
    TopLogprobs,
)

__all__ = [
    "BUG_KINDS",
    "CodeGenSimParams",
    "SimulatedCoder",
    "SimulatedJudge",
    "SimulatedTester",
    "simulated_test_result",
    "wrong_variant",
]

_TABLE1 = "chosen so that one coder's Pass@1 is about 80% (the rogue-agents paper, Table 1)"

#: The perturbations a wrong simulated solution applies to every return value.
BUG_KINDS: tuple[str, ...] = ("off_by_one", "truncate", "negate")

#: Seat offsets of the coders' skill, times ``skill_spread`` (seat order of CODER_ROLES).
_SEAT_OFFSETS = (0.5, 0.17, -0.17, -0.5)


class CodeGenSimParams(BaseModel):
    """Every behavioural parameter of the simulated CodeGen roles (module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    coder_skill: float = parameter(
        2.0, meaning="logit of a coder's first-round P(correct) at difficulty 0", source=_TABLE1
    )
    skill_spread: float = parameter(
        0.5, meaning="spread of the four coders' skills around coder_skill (logits)", ge=0.0
    )
    difficulty_sd: float = parameter(
        1.5, meaning="standard deviation of a problem's difficulty (logits)", ge=0.0
    )
    fix_rate: float = parameter(
        0.35, meaning="P(a wrong coder fixes its code | feedback or tests flag it)", ge=0, le=1
    )
    fix_rate_unflagged: float = parameter(
        0.05, meaning="P(a wrong coder fixes its code | nothing flags it)", ge=0, le=1
    )
    break_rate: float = parameter(
        0.3, meaning="P(a correct coder breaks its code | the feedback calls it wrong)", ge=0, le=1
    )
    break_rate_unflagged: float = parameter(
        0.01, meaning="P(a correct coder breaks its code | not flagged)", ge=0, le=1
    )
    follow_pick_rate: float = parameter(
        0.3, meaning="P(a coder copies the judge's pick instead of revising)", ge=0, le=1
    )
    rating_noise: float = parameter(
        0.2, meaning="P(a helpfulness rating moves one step from 4 or 2)", ge=0, le=1
    )
    judge_error_rate: float = parameter(
        0.15, meaning="P(a judge turn is faulty: verdicts inverted, a wrong pick)", ge=0, le=1
    )
    verdict_noise: float = parameter(
        0.1, meaning="P(one verdict of a clean judge turn is wrong)", ge=0, le=1
    )
    tests_per_round: int = parameter(5, meaning="tests the tester writes per round", ge=0, le=20)
    tester_error_rate: float = parameter(
        0.1, meaning="P(a tester turn is faulty: most of its tests unsound)", ge=0, le=1
    )
    unsound_test_rate: float = parameter(
        0.05, meaning="P(a test of a clean tester turn has a wrong expected value)", ge=0, le=1
    )
    faulty_unsound_rate: float = parameter(
        0.6, meaning="P(a test of a faulty tester turn has a wrong expected value)", ge=0, le=1
    )
    test_sensitivity: float = parameter(
        0.6, meaning="P(a sound test fails a wrong solution)", ge=0, le=1
    )
    verdict_confidence: float = parameter(
        0.92,
        meaning="probability a clean judge turn reports on each written decision token",
        gt=0.5,
        lt=1,
    )
    test_confidence: float = parameter(
        0.9,
        meaning="probability a clean tester turn reports on each expected value",
        gt=0.5,
        lt=1,
    )
    faulty_confidence: float = parameter(
        0.62, meaning="the same in a faulty turn, at fault_signal = 1", gt=0, lt=1
    )
    confidence_jitter: float = parameter(
        0.4, meaning="sd of the per-position jitter of a confidence (logits)", ge=0
    )
    fault_signal: float = parameter(
        1.0,
        meaning="how far a faulty turn's reported distributions move (0 = no signal)",
        ge=0,
        le=1,
    )
    no_code_rate: float = parameter(0.0, meaning="P(a coder's reply has no code block)", ge=0, le=1)
    syntax_error_rate: float = parameter(
        0.0, meaning="P(a coder's code has a syntax error)", ge=0, le=1
    )
    top_k: int = parameter(5, meaning="alternatives reported per decision position", ge=2)


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def _logit(p: float) -> float:
    p = min(max(p, 1e-6), 1 - 1e-6)
    return math.log(p / (1 - p))


_PERTURB = """

def _byz_perturb(value, kind={kind!r}):
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return -value - 1 if kind == "negate" and isinstance(value, int) else value + 1
    if isinstance(value, str):
        return value[:-1] if kind == "truncate" and value else value + "#"
    if isinstance(value, list):
        return value[:-1] if kind == "truncate" and value else value + [None]
    if isinstance(value, tuple):
        return value + (None,)
    if isinstance(value, dict):
        return {{**value, "_byz": None}}
    if value is None:
        return 0
    return None


_byz_reference_{name} = {name}


def {name}(*args, **kwargs):
    return _byz_perturb(_byz_reference_{name}(*args, **kwargs))
"""


def wrong_variant(reference: str, entry_point: str, bug: str) -> str:
    """``reference`` with ``entry_point`` wrapped so that every return value is perturbed.

    The value changes for every input (a number by one, a boolean negated, a string or a
    list lengthened or cut, ...), so tests comparing return values fail; whether they do is
    for the sandbox to say.
    """
    if bug not in BUG_KINDS:
        raise ValueError(f"unknown bug kind {bug!r}")
    return reference.rstrip() + "\n" + _PERTURB.format(kind=bug, name=entry_point)


def _confidence(base: float, faulty: bool, p: CodeGenSimParams, *keys: object) -> float:
    """The reported probability of a written token (module docstring)."""
    target = base
    if faulty:
        target = base + p.fault_signal * (p.faulty_confidence - base)
    return _sigmoid(_logit(target) + _seeding.gauss(p.confidence_jitter, *keys))


def _distribution(written: str, others: list[str], conf: float, top_k: int) -> TopLogprobs:
    """``conf`` on ``written``, the rest spread geometrically over ``others`` (top-k cut)."""
    rest = others[: top_k - 1]
    weights = [0.5 ** (i + 1) for i in range(len(rest))]
    total = sum(weights) or 1.0
    dist = [(written, math.log(conf))]
    dist += [(tok, math.log((1 - conf) * w / total)) for tok, w in zip(rest, weights, strict=True)]
    return sorted(dist, key=lambda kv: -kv[1])


class SimulatedCoder:
    """A simulated coder in seat ``seat`` (module docstring).

    ``reference`` and ``entry_point`` are the problem's reference solution and function name:
    the coder writes real code from them.
    """

    def __init__(
        self,
        name: str,
        seat: int,
        params: CodeGenSimParams | None = None,
        *,
        reference: str,
        entry_point: str,
        salt: str = "",
    ) -> None:
        self.name = name
        self.seat = seat
        self.role: str = CODER_ROLES[seat % len(CODER_ROLES)]
        self.params = params or CodeGenSimParams()
        self.reference = reference
        self.entry_point = entry_point
        self.salt = salt

    def _draw(self, view: CoderView, what: str) -> float:
        return _seeding.uniform("codegen-coder", self.salt, view.key, self.seat, view.round, what)

    def _p_first(self, view: CoderView) -> float:
        p = self.params
        difficulty = _seeding.gauss(
            p.difficulty_sd, "codegen-difficulty", self.salt, view.problem_id
        )
        offset = p.skill_spread * _SEAT_OFFSETS[self.seat % len(_SEAT_OFFSETS)]
        return _sigmoid(p.coder_skill + offset - difficulty)

    def _code(self, state: SimCode) -> str:
        if state.correct:
            return self.reference
        return wrong_variant(self.reference, self.entry_point, state.bug or BUG_KINDS[0])

    def _bug(self, view: CoderView) -> str:
        return _seeding.choice(BUG_KINDS, "codegen-bug", self.salt, view.key, self.seat, view.round)

    def _next_state(self, view: CoderView) -> tuple[SimCode, bool, bool | None]:
        """The new latent state; whether feedback flagged us; whether the feedback agreed."""
        p = self.params
        if view.round == 1 or view.seat >= len(view.solutions):
            ok = self._draw(view, "first") < self._p_first(view)
            return SimCode(correct=ok, bug=None if ok else self._bug(view)), False, None
        mine = view.solutions[view.seat]
        state = mine.sim or SimCode(correct=False, bug=BUG_KINDS[0])
        verdict = None
        if view.feedback is not None and view.seat < len(view.feedback.verdicts):
            verdict = view.feedback.verdicts[view.seat]
        result = view.results[view.seat] if view.seat < len(view.results) else None
        flagged = verdict is False or (result is not None and result.failed > 0)
        agreed = None if verdict is None else verdict == state.correct
        pick = view.feedback.pick if view.feedback is not None else None
        follows = self._draw(view, "follow") < p.follow_pick_rate
        if follows and pick is not None and pick - 1 != view.seat and pick <= len(view.solutions):
            picked = view.solutions[pick - 1].sim
            if picked is not None:
                return picked, flagged, agreed
        u = self._draw(view, "revise")
        if state.correct:
            breaks = u < (p.break_rate if verdict is False else p.break_rate_unflagged)
            if breaks:
                return SimCode(correct=False, bug=self._bug(view)), flagged, agreed
            return state, flagged, agreed
        fixes = u < (p.fix_rate if flagged else p.fix_rate_unflagged)
        return (SimCode(correct=True) if fixes else state), flagged, agreed

    def _rating(self, view: CoderView, agreed: bool | None, what: str) -> int:
        base = 3 if agreed is None else (4 if agreed else 2)
        u = self._draw(view, f"rating-{what}")
        if u < self.params.rating_noise / 2:
            return base - 1
        if u < self.params.rating_noise:
            return base + 1
        return base

    async def write(self, view: CoderView) -> Solution:
        state, _flagged, agreed = self._next_state(view)
        p = self.params
        ratings: dict[str, int | None] = {"helpful_feedback": None, "helpful_tests": None}
        if view.round > 1:
            ratings = {
                "helpful_feedback": self._rating(view, agreed, "feedback"),
                "helpful_tests": self._rating(view, agreed, "tests"),
            }
        if self._draw(view, "no-code") < p.no_code_rate:
            previous = view.solutions[view.seat] if view.seat < len(view.solutions) else None
            return Solution(
                coder=self.name,
                role=self.role,
                round=view.round,
                code=previous.code if previous else "",
                fallback=True,
                parse_errors=["no code block (```python ... ```) in the reply"],
                sim=previous.sim if previous else SimCode(correct=False, bug="no_code"),
                simulated=True,
                **ratings,
            )
        code = self._code(state)
        if self._draw(view, "syntax") < p.syntax_error_rate:
            code = code + "\n\ndef broken(:\n    pass\n"
            state = SimCode(correct=False, bug="syntax_error")
        return Solution(
            coder=self.name,
            role=self.role,
            round=view.round,
            code=code,
            sim=state,
            simulated=True,
            **ratings,
        )


class SimulatedJudge:
    """The simulated judge (module docstring)."""

    def __init__(
        self, params: CodeGenSimParams | None = None, *, name: str = "Judge", salt: str = ""
    ) -> None:
        self.name = name
        self.params = params or CodeGenSimParams()
        self.salt = salt

    def _u(self, view: ReviewView, *what: object) -> float:
        return _seeding.uniform(
            "codegen-judge", self.salt, view.key, view.round, view.attempt, *what
        )

    async def review(self, view: ReviewView) -> Feedback:
        p = self.params
        n = len(view.solutions)
        faulty = self._u(view, "faulty") < p.judge_error_rate
        truth = [bool(s.sim and s.sim.correct) for s in view.solutions]
        verdicts: list[bool | None] = []
        for i, ok in enumerate(truth):
            if faulty:
                verdicts.append(not ok)
            else:
                verdicts.append(ok if self._u(view, "verdict", i) >= p.verdict_noise else not ok)
        favoured = [i for i, v in enumerate(verdicts) if v] or list(range(n))
        pick = None
        if n:
            pick = 1 + favoured[int(self._u(view, "pick") * len(favoured)) % len(favoured)]
        dists: list[TopLogprobs] = []
        for i, v in enumerate(verdicts):
            conf = _confidence(
                p.verdict_confidence,
                faulty,
                p,
                "codegen-judge-conf",
                self.salt,
                view.key,
                view.round,
                view.attempt,
                i,
            )
            word, other = ("CORRECT", "WRONG") if v else ("WRONG", "CORRECT")
            dists.append(_distribution(word, [other, "INCORRECT", "PART"], conf, p.top_k))
        if pick is not None:
            conf = _confidence(
                p.verdict_confidence,
                faulty,
                p,
                "codegen-judge-conf",
                self.salt,
                view.key,
                view.round,
                view.attempt,
                "pick",
            )
            others = [str(k) for k in range(1, n + 1) if k != pick]
            dists.append(_distribution(str(pick), others, conf, p.top_k))
        lines = [f"Solution {i + 1}: {'CORRECT' if v else 'WRONG'}" for i, v in enumerate(verdicts)]
        if pick is not None:
            lines.append(f"Best: {pick}")
        return Feedback(
            text="\n".join(lines),
            verdicts=verdicts,
            pick=pick,
            distributions=dists,
            noise=["faulty_judgement"] if faulty else [],
            simulated=True,
        )


class SimulatedTester:
    """The simulated test writer (module docstring); its tests are symbolic."""

    def __init__(
        self, params: CodeGenSimParams | None = None, *, name: str = "Tester", salt: str = ""
    ) -> None:
        self.name = name
        self.params = params or CodeGenSimParams()
        self.salt = salt

    async def write_tests(self, view: ReviewView) -> TestSuite:
        p = self.params
        base = ("codegen-tester", self.salt, view.key, view.round, view.attempt)
        faulty = _seeding.uniform(*base, "faulty") < p.tester_error_rate
        rate = p.faulty_unsound_rate if faulty else p.unsound_test_rate
        sound = [_seeding.uniform(*base, "sound", k) >= rate for k in range(p.tests_per_round)]
        name = view.entry_point or "solution"
        tests = [
            f"assert {name}(<case {k + 1}>) == <expected {k + 1}>  # simulated test"
            for k in range(len(sound))
        ]
        dists = [
            _distribution(
                f"<expected {k + 1}>",
                ["<other>", "None", "0", "True"],
                _confidence(p.test_confidence, faulty, p, *base, "conf", k),
                p.top_k,
            )
            for k in range(len(sound))
        ]
        return TestSuite(
            tests=tests,
            distributions=dists,
            fallback=not sound,
            noise=["faulty_tests"] if faulty else [],
            sim=SimTests(
                sound=sound,
                sensitivity=p.test_sensitivity,
                key="/".join(str(b) for b in base),
            ),
            simulated=True,
        )


def simulated_test_result(tests: SimTests, solution: Solution) -> TestResult:
    """The simulated result of symbolic tests on a simulated solution (labelled simulated).

    A solution without a simulated account (an LLM coder's) cannot be judged by symbolic
    tests: ``status="no_tests"``.
    """
    if solution.sim is None:
        return TestResult(status="no_tests", simulated=True)
    ident = "ok" if solution.sim.correct else f"bug:{solution.sim.bug}"
    passed = failed = 0
    errors: list[str] = []
    for k, sound in enumerate(tests.sound):
        u = _seeding.uniform("codegen-test-run", tests.key, k, ident)
        # A sound test fails only a wrong solution; an unsound one fails a correct solution
        # and a wrong one half of the time.
        fails = (not sound) if solution.sim.correct else u < (tests.sensitivity if sound else 0.5)
        if fails:
            failed += 1
            if len(errors) < 3:
                errors.append(f"AssertionError: simulated test {k + 1} failed")
        else:
            passed += 1
    status = "ran" if tests.sound else "no_tests"
    return TestResult(passed=passed, failed=failed, status=status, errors=errors, simulated=True)
