"""Simulated CodeGen roles: coders that write real code, a judge and a tester with named faults.

A documented behavioural model of the rogue-agents paper's CodeGen debate (§4.1, App. C;
product brief §5), not a stub; every assumption is a named :class:`CodeGenSimParams` field
with its meaning and source (``byzllm sim show --domain codegen`` lists them). Draws are keyed
by the debate (problem, repeat), round, attempt and seat (:mod:`byzllm.agents._seeding`), so
results do not depend on scheduling and the same problem and repeat meet the same draws under
every condition (common random numbers).

**Coders** write *real code*: a correct coder writes the problem's reference solution; a wrong
one writes the reference wrapped so that its return value is perturbed (a number moved by
one, a boolean negated, a string or list lengthened or cut: :func:`wrong_variant`) on a share
``bug_coverage`` of the inputs (chosen by a hash of the arguments, :func:`bug_hits`), with the
perturbation kind as its "bug". A bug can therefore hide from the few examples a prompt shows
and still fail the hidden tests. Whether the code passes any test is decided by running it
(the sandbox), never by this module. In round 1 coder ``i`` is correct with probability
``sigmoid(coder_skill + skill_offset_i - d)``, where ``d ~ N(0, difficulty_sd)`` is the
problem's difficulty (drawn from its id). In later rounds a coder first follows the judge's
pick with probability ``follow_pick_rate`` (copying that solution); otherwise a wrong coder
fixes its code with probability ``fix_rate`` if the feedback or the tests flag it (a WRONG
verdict, a failing test) and ``fix_rate_unflagged`` otherwise, and a correct coder breaks its
code with probability ``break_rate`` if the feedback flags it, ``break_rate_unflagged`` if not.
Its helpfulness ratings are 4 when the judge's verdict agreed with what the tests showed of its
code and 2 when not (3 without both), moved by one step with probability ``rating_noise``. The
zero-shot baseline (Table 1's first row) is the coder of seat ``zero_shot_seat`` alone.

**Judge.** It sees the solutions' code and what each does on the examples the prompt shows
(``ReviewView.visible``, run by the environment), never whether a solution is correct: the
environment strips the coders' own accounts (``Solution.sim``) before the judge and the tester
see the solutions. Its *evidence* on a solution is "passes every example" (a crash or a failed
example: it does not); with no example to go by it believes a solution correct with
probability ``unseen_correct_rate``. A turn is *faulty* with probability ``judge_error_rate``
(a rogue judgement, the communication failure the paper monitors, §4.1): every verdict
contradicts the evidence and the pick is one of the solutions it calls correct, which its
evidence says are wrong (any solution when it calls none correct). A clean turn's verdict
follows the evidence except with probability ``verdict_noise`` and its pick is a solution it
calls correct. The judge's *reported* distributions at its decision positions
(each verdict word, the pick) put ``verdict_confidence`` (jittered) on the written token in a
clean turn and ``verdict_confidence + fault_signal * (faulty_confidence - verdict_confidence)``
in a faulty one: at ``fault_signal = 0`` a faulty judgement reports what a clean one would, and
a monitor can learn nothing from it.

**Tester.** Writes real ``assert`` tests from the examples the prompt shows
(:func:`~._examples.visible_examples`): up to ``tests_per_round`` of them, each expecting the
prompt's value, or a wrong value (an unsound test) with probability ``unsound_test_rate``, or
``faulty_unsound_rate`` in a faulty turn (probability ``tester_error_rate``). A prompt without
a usable example gets no test. On a LiveCodeBench functional problem the examples are the
statement's LeetCode ``Input:`` / ``Output:`` lines and each test calls ``Solution().f(...)``.
On a problem whose program reads standard input (``ReviewView.stdin``) the examples are the
statement's samples (:func:`~._examples.visible_stdin_examples`) and each test is an input
with its expected output (an unsound one expects the output with ``#`` appended), drawn by
the same parameters.
The tests run in the sandbox like an LLM tester's; its decision positions (each expected value
or output) report ``test_confidence`` (faulty turns moved towards ``faulty_confidence`` by
``fault_signal``).

Simulated coders also produce broken replies for robustness studies: no code at all with
probability ``no_code_rate`` (a counted parse fall-back) and code with a syntax error with
probability ``syntax_error_rate``. Both are 0 by default.
"""

from __future__ import annotations

import ast
import hashlib
import math
from typing import Any

from byzllm.tasks import IOTest

from .. import _seeding
from .._params import Confidence, NonNegative, Probability, SimParameters, parameter
from ._examples import is_solution_method, visible_examples, visible_stdin_examples
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
    "SEAT_OFFSETS",
    "CodeGenSimParams",
    "SimulatedCoder",
    "SimulatedJudge",
    "SimulatedTester",
    "bug_hits",
    "perturb",
    "wrong_variant",
]


def _assumed(reason: str) -> str:
    return f"assumed: {reason}"


_UNMEASURED = "no real CodeGen run has measured it yet"

#: The perturbations a wrong simulated solution applies to a return value.
BUG_KINDS: tuple[str, ...] = ("off_by_one", "truncate", "negate")

#: Seat offsets of the coders' skill, times ``skill_spread`` (seat order of CODER_ROLES).
SEAT_OFFSETS: tuple[float, ...] = (0.5, 0.17, -0.17, -0.5)


class CodeGenSimParams(SimParameters):
    """Every behavioural parameter of the simulated CodeGen roles (module docstring)."""

    coder_skill: float = parameter(
        2.0,
        meaning="logit of a coder's first-round P(correct) at difficulty 0",
        source=_assumed(
            "chosen near the rogue-agents paper's Table 1 zero-shot Pass@1 on HumanEval "
            "(80.5%, LLAMA-3.1-70B); docs/codegen.md gives what the simulator measures"
        ),
    )
    skill_spread: NonNegative = parameter(
        0.5,
        meaning="spread of the four coders' skills around coder_skill (logits): the coders "
        "sit at skill_spread x (0.5, 0.17, -0.17, -0.5), evenly spaced, in CODER_ROLES order",
        source=_assumed("the four App. C roles share one model; role prompts differ a little"),
    )
    difficulty_sd: NonNegative = parameter(
        1.5,
        meaning="standard deviation of a problem's difficulty (logits)",
        source=_assumed("problems differ more than coders do; " + _UNMEASURED),
    )
    zero_shot_seat: int = parameter(
        0,
        meaning="seat of the lone zero-shot coder (0 = PythonAssistant, the most skilled; "
        "3 = Programmer, the least)",
        source=_assumed(
            "the rogue-agents paper (Table 1) does not say which coder or prompt zero-shot "
            "uses; seat 0 is the LLM team's zero-shot coder too and the baseline's best case"
        ),
        ge=0,
        le=3,
    )
    bug_coverage: Probability = parameter(
        0.5,
        meaning="share of inputs on which a wrong solution's bug changes the result",
        source=_assumed(
            "wrong code often passes a prompt's few examples yet fails hidden tests; " + _UNMEASURED
        ),
    )
    fix_rate: Probability = parameter(
        0.35,
        meaning="P(a wrong coder fixes its code when the feedback or tests flag it)",
        source=_assumed(_UNMEASURED),
    )
    fix_rate_unflagged: Probability = parameter(
        0.05,
        meaning="P(a wrong coder fixes its code when nothing flags it)",
        source=_assumed("unprompted fixes are rare; " + _UNMEASURED),
    )
    break_rate: Probability = parameter(
        0.3,
        meaning="P(a correct coder breaks its code when the feedback calls it wrong)",
        source=_assumed("wrong feedback misleads; " + _UNMEASURED),
    )
    break_rate_unflagged: Probability = parameter(
        0.01,
        meaning="P(a correct coder breaks its code when not flagged)",
        source=_assumed("unprompted regressions are rare; " + _UNMEASURED),
    )
    follow_pick_rate: Probability = parameter(
        0.3,
        meaning="P(a coder copies the judge's pick instead of revising)",
        source=_assumed(_UNMEASURED),
    )
    rating_noise: Probability = parameter(
        0.2,
        meaning="P(a helpfulness rating moves one step from 4, 3 or 2)",
        source=_assumed("ratings are recorded, never used by the monitors"),
    )
    judge_error_rate: Probability = parameter(
        0.15,
        meaning="P(a judge turn is faulty: verdicts against its evidence, a wrong pick)",
        source=_assumed(
            "the rogue-agents paper monitors what passes through the judge (§4.1) and "
            "reports no rate of faulty judgements"
        ),
    )
    verdict_noise: Probability = parameter(
        0.1,
        meaning="P(a clean judge's verdict on one solution contradicts what the solution does "
        "on the prompt's examples)",
        source=_assumed("reading code is imperfect; " + _UNMEASURED),
    )
    unseen_correct_rate: Probability = parameter(
        0.8,
        meaning="P(a clean judge calls a solution correct when the prompt shows no example)",
        source=_assumed(
            "a reviewer without evidence mostly accepts; near the Table 1 zero-shot rate"
        ),
    )
    tests_per_round: int = parameter(
        5,
        meaning="at most this many of the prompt's examples become tests per round",
        source=_assumed(
            "HumanEval prompts show 2.3 examples on average; the 10 of 164 that show more "
            "than 5 are tested on 5 of them"
        ),
        ge=0,
        le=20,
    )
    tester_error_rate: Probability = parameter(
        0.1,
        meaning="P(a tester turn is faulty: most of its tests unsound)",
        source=_assumed(
            "the tester is monitored too (§4.1: it writes T^j with the judge's F^j); the "
            "paper reports no rate of faulty test suites"
        ),
    )
    unsound_test_rate: Probability = parameter(
        0.05,
        meaning="P(a test of a clean tester turn expects a wrong value)",
        source=_assumed("copying an example's value is rarely wrong; " + _UNMEASURED),
    )
    faulty_unsound_rate: Probability = parameter(
        0.6,
        meaning="P(a test of a faulty tester turn expects a wrong value)",
        source=_assumed(_UNMEASURED),
    )
    verdict_confidence: Confidence = parameter(
        0.92,
        meaning="probability a clean judge turn reports on each written decision token",
        source=_assumed("instruction-tuned models are confident on short answers; " + _UNMEASURED),
    )
    test_confidence: Confidence = parameter(
        0.9,
        meaning="probability a clean tester turn reports on each expected value",
        source=_assumed(_UNMEASURED),
    )
    faulty_confidence: float = parameter(
        0.62,
        meaning="the same in a faulty turn, at fault_signal = 1",
        source=_assumed(
            "the paper's premise that confused agents cause failures (§2); " + _UNMEASURED
        ),
        gt=0,
        lt=1,
    )
    confidence_jitter: NonNegative = parameter(
        0.4,
        meaning="sd of the per-position jitter of a confidence (logits)",
        source=_assumed(_UNMEASURED),
    )
    fault_signal: Probability = parameter(
        1.0,
        meaning="how far a faulty turn's reported distributions move (0 = no signal)",
        source=_assumed("the paper's premise (§2) at full strength; 0 is its null ablation"),
    )
    no_code_rate: Probability = parameter(
        0.0,
        meaning="P(a coder's reply has no code block)",
        source=_assumed("off by default: a robustness knob"),
    )
    syntax_error_rate: Probability = parameter(
        0.0,
        meaning="P(a coder's code has a syntax error)",
        source=_assumed("off by default: a robustness knob"),
    )
    top_k: int = parameter(
        5,
        meaning="alternatives reported per decision position",
        source=_assumed(
            "fewer than the 10 the LLM judge and tester ask for by default (top_logprobs, "
            "the rogue-agents paper's k: §2, footnote 2)"
        ),
        ge=2,
    )


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def _logit(p: float) -> float:
    p = min(max(p, 1e-6), 1 - 1e-6)
    return math.log(p / (1 - p))


def perturb(value: Any, bug: str) -> Any:
    """What a wrong solution with ``bug`` returns instead of ``value`` where the bug shows
    (the ``_byz_perturb`` of :func:`wrong_variant`'s code, for simulated execution)."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return -value - 1 if bug == "negate" and isinstance(value, int) else value + 1
    if isinstance(value, str):
        return value[:-1] if bug == "truncate" and value else value + "#"
    if isinstance(value, list):
        return value[:-1] if bug == "truncate" and value else [*value, None]
    if isinstance(value, tuple):
        return (*value, None)
    if isinstance(value, dict):
        return {**value, "_byz": None}
    return 0 if value is None else None


def bug_hits(bug: str, args: tuple[Any, ...], kwargs: dict[str, Any], coverage: float) -> bool:
    """Whether a wrong solution with ``bug`` changes its result on these arguments.

    A fixed hash of the bug and the arguments' ``repr``: the same inputs always meet the same
    behaviour, a share ``coverage`` of them the bug. :func:`wrong_variant`'s code computes
    exactly this; the environment's simulated execution calls it.
    """
    key = f"{bug}|{(args, kwargs)!r}".encode("utf-8", "replace")
    return int(hashlib.sha256(key).hexdigest()[:8], 16) / 4294967296 < coverage


_PERTURB = """

import hashlib as _byz_hashlib


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


def _byz_hits(args, kwargs, kind={kind!r}, coverage={coverage!r}):
    key = (kind + "|" + repr((args, kwargs))).encode("utf-8", "replace")
    return int(_byz_hashlib.sha256(key).hexdigest()[:8], 16) / 4294967296 < coverage


"""

#: The wrapper of a function (HumanEval's entry point).
_PERTURB_FUNCTION = """

_byz_reference_{name} = {name}


def {name}(*args, **kwargs):
    hit = _byz_hits(args, kwargs)
    value = _byz_reference_{name}(*args, **kwargs)
    return _byz_perturb(value) if hit else value
"""

#: The wrapper of a method of LeetCode's ``class Solution`` (a LiveCodeBench functional
#: problem, called as ``Solution().f(...)``): the arguments hashed are those after ``self``,
#: the ones its examples show (:func:`~._examples.example_arguments`).
_PERTURB_METHOD = """

_byz_reference_{name} = Solution.{name}


def _byz_wrapped_{name}(self, *args, **kwargs):
    hit = _byz_hits(args, kwargs)
    value = _byz_reference_{name}(self, *args, **kwargs)
    return _byz_perturb(value) if hit else value


Solution.{name} = _byz_wrapped_{name}
"""


def wrong_variant(reference: str, entry_point: str, bug: str, coverage: float = 1.0) -> str:
    """``reference`` with ``entry_point`` wrapped so that its return value is perturbed on the
    inputs :func:`bug_hits` selects (every input at ``coverage = 1``); a method of ``class
    Solution`` (:func:`~._examples.is_solution_method`) is wrapped in its class.

    The value changes (a number by one, a boolean negated, a string or a list lengthened or
    cut, ...), so tests comparing return values on those inputs fail; whether they do is for
    the sandbox to say.
    """
    if bug not in BUG_KINDS:
        raise ValueError(f"unknown bug kind {bug!r}")
    if not 0.0 <= coverage <= 1.0:
        raise ValueError("coverage must be in [0, 1]")
    method = is_solution_method(reference, entry_point)
    wrapper = _PERTURB_METHOD if method else _PERTURB_FUNCTION
    return (
        reference.rstrip()
        + "\n"
        + _PERTURB.format(kind=bug, coverage=coverage)
        + wrapper.format(name=entry_point)
    )


def _wrong_value(value: Any) -> Any:
    """A value other than ``value`` (an unsound test's expectation)."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1
    if isinstance(value, str):
        return value + "#"
    if isinstance(value, list):
        return [*value, None]
    if isinstance(value, tuple):
        return (*value, None)
    if isinstance(value, dict):
        return {**value, "_byz": None}
    return 0 if value is None else None


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


def _observed_ok(result: TestResult | None) -> bool | None:
    """What a test result shows of a solution: passes all, fails some, or nothing."""
    if result is None or result.total == 0:
        return None
    return result.failed == 0


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
        offset = p.skill_spread * SEAT_OFFSETS[self.seat % len(SEAT_OFFSETS)]
        return _sigmoid(p.coder_skill + offset - difficulty)

    def _code(self, state: SimCode) -> str:
        if state.correct:
            return self.reference
        bug = state.bug if state.bug in BUG_KINDS else BUG_KINDS[0]
        return wrong_variant(self.reference, self.entry_point, bug, state.coverage)

    def _wrong(self, view: CoderView) -> SimCode:
        bug = _seeding.choice(BUG_KINDS, "codegen-bug", self.salt, view.key, self.seat, view.round)
        return SimCode(correct=False, bug=bug, coverage=self.params.bug_coverage)

    def _next_state(self, view: CoderView) -> tuple[SimCode, bool | None]:
        """The new state of its code, and whether the verdict agreed with its test results."""
        p = self.params
        if view.round == 1 or view.seat >= len(view.solutions):
            ok = self._draw(view, "first") < self._p_first(view)
            return (SimCode(correct=True) if ok else self._wrong(view)), None
        mine = view.solutions[view.seat]
        state = mine.sim or SimCode(correct=False, bug=BUG_KINDS[0], coverage=p.bug_coverage)
        verdict = None
        if view.feedback is not None and view.seat < len(view.feedback.verdicts):
            verdict = view.feedback.verdicts[view.seat]
        result = view.results[view.seat] if view.seat < len(view.results) else None
        flagged = verdict is False or (result is not None and result.failed > 0)
        observed = _observed_ok(result)
        agreed = None if verdict is None or observed is None else verdict == observed
        pick = view.feedback.pick if view.feedback is not None else None
        follows = self._draw(view, "follow") < p.follow_pick_rate
        if follows and pick is not None and pick - 1 != view.seat and pick <= len(view.solutions):
            picked = view.solutions[pick - 1].sim
            if picked is not None:
                return picked, agreed
        u = self._draw(view, "revise")
        if state.correct:
            if u < (p.break_rate if verdict is False else p.break_rate_unflagged):
                return self._wrong(view), agreed
            return state, agreed
        fixes = u < (p.fix_rate if flagged else p.fix_rate_unflagged)
        return (SimCode(correct=True) if fixes else state), agreed

    def _rating(self, view: CoderView, agreed: bool | None, what: str) -> int:
        base = 3 if agreed is None else (4 if agreed else 2)
        u = self._draw(view, f"rating-{what}")
        if u < self.params.rating_noise / 2:
            return base - 1
        if u < self.params.rating_noise:
            return base + 1
        return base

    async def write(self, view: CoderView) -> Solution:
        state, agreed = self._next_state(view)
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
    """The simulated judge (module docstring): acts on ``view.visible`` and its own draws
    only, never on a solution's correctness."""

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

    def _evidence(self, view: ReviewView, i: int) -> bool:
        """Does solution ``i`` look correct from what it does on the prompt's examples?"""
        result = view.visible[i] if i < len(view.visible) else None
        observed = _observed_ok(result)
        if observed is not None:
            return observed
        return self._u(view, "unseen", i) < self.params.unseen_correct_rate

    async def review(self, view: ReviewView) -> Feedback:
        p = self.params
        n = len(view.solutions)
        faulty = self._u(view, "faulty") < p.judge_error_rate
        verdicts: list[bool | None] = []
        for i in range(n):
            looks_ok = self._evidence(view, i)
            if faulty:
                verdicts.append(not looks_ok)
            else:
                noisy = self._u(view, "verdict", i) < p.verdict_noise
                verdicts.append(looks_ok != noisy)
        favoured = [i for i, v in enumerate(verdicts) if v] or list(range(n))
        pick = None
        if n:
            pick = 1 + favoured[int(self._u(view, "pick") * len(favoured)) % len(favoured)]
        keys = ("codegen-judge-conf", self.salt, view.key, view.round, view.attempt)
        dists: list[TopLogprobs] = []
        for i, v in enumerate(verdicts):
            conf = _confidence(p.verdict_confidence, faulty, p, *keys, i)
            word, other = ("CORRECT", "WRONG") if v else ("WRONG", "CORRECT")
            dists.append(_distribution(word, [other, "INCORRECT", "PART"], conf, p.top_k))
        if pick is not None:
            conf = _confidence(p.verdict_confidence, faulty, p, *keys, "pick")
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
    """The simulated test writer (module docstring): real tests from the prompt's examples."""

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
        # An example is (what is run, what it should give): a call and the source of its
        # value, or, for a program that reads standard input, an input and its output.
        examples = (
            [(e.input, e.output) for e in visible_stdin_examples(view.prompt)]
            if view.stdin
            else [(e.call, e.expected) for e in visible_examples(view.prompt, view.entry_point)]
        )
        chosen = _seeding.stream(*base, "choose").sample(
            examples, min(p.tests_per_round, len(examples))
        )
        tests: list[str] = []
        cases: list[IOTest] = []
        calls: list[str] = []
        sound: list[bool] = []
        dists: list[TopLogprobs] = []
        for k, (call, expected) in enumerate(chosen):
            ok = _seeding.uniform(*base, "sound", k) >= rate
            if view.stdin:
                expected = expected if ok else str(_wrong_value(expected.rstrip("\n"))) + "\n"
                cases.append(IOTest(input=call, output=expected))
            else:
                if not ok:
                    expected = repr(_wrong_value(ast.literal_eval(expected)))
                tests.append(f"assert {call} == {expected}")
            calls.append(call)
            sound.append(ok)
            conf = _confidence(p.test_confidence, faulty, p, *base, "conf", k)
            written = expected[:20]
            others = [t for t in ("<other>", "None", "0", "True") if t != written]
            dists.append(_distribution(written, others, conf, p.top_k))
        return TestSuite(
            tests=tests,
            cases=cases,
            distributions=dists,
            noise=["faulty_tests"] if faulty else [],
            sim=SimTests(calls=calls, sound=sound),
            simulated=True,
        )
