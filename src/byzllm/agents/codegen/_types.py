"""Plain data the CodeGen roles see and produce (the rogue-agents paper, §4.1, App. C).

CodeGen is a debate on one programming problem: four coders (the coding roles of the debate
framework the paper builds on, DyLAN: ``PythonAssistant``, ``AlgorithmDeveloper``,
``ComputerScientist``, ``Programmer``), a judge and a test writer. Round 1: every coder writes
a solution ``s_i^0``. Round ``j >= 2``: the judge reads the previous solutions ``S^{j-1}`` and
writes feedback ``F^j``; the tester writes unit tests ``T^j``, which the environment runs
against each previous solution; the coders receive ``(S^{j-1}, F^j, T^j)`` with the test
results, write a new solution and say how helpful ``F^j`` and ``T^j`` were.

These types sit below the environment (``byzllm.envs.codegen``): the environment builds a
:class:`CoderView` or :class:`ReviewView`, an agent answers with a :class:`Solution`,
:class:`Feedback` or :class:`TestSuite`. Solutions are numbered **1-based** wherever an agent
sees them.
"""

from __future__ import annotations

from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from byzllm.tasks import IOTest

from ._parse import format_stdin_test

__all__ = [
    "CODER_ROLES",
    "CodeGenCoder",
    "CodeGenJudge",
    "CodeGenTester",
    "CoderRole",
    "CoderView",
    "Feedback",
    "ReviewView",
    "SimCode",
    "SimTests",
    "Solution",
    "TestResult",
    "TestSuite",
    "TopLogprobs",
]

#: ``(token, logprob)`` alternatives at one generated position (``byzllm.envs.TopLogprobs``).
TopLogprobs = list[tuple[str, float]]

#: The four coding roles of App. C, in seat order.
CoderRole = Literal["PythonAssistant", "AlgorithmDeveloper", "ComputerScientist", "Programmer"]
CODER_ROLES: tuple[CoderRole, ...] = (
    "PythonAssistant",
    "AlgorithmDeveloper",
    "ComputerScientist",
    "Programmer",
)


class SimCode(BaseModel):
    """A simulated coder's own account of the code it wrote.

    ``correct``: it wrote the reference solution; otherwise ``bug`` names the injected fault
    and ``coverage`` the share of inputs on which it shows. Only the coders and the
    environment's *simulated execution* read it: the environment strips it from every
    solution the judge and the tester see (:class:`ReviewView`), so they act on what the code
    observably does (``ReviewView.visible``), never on this account.
    """

    model_config = ConfigDict(frozen=True)

    correct: bool
    bug: str | None = None
    coverage: float = Field(default=1.0, ge=0.0, le=1.0)


class Solution(BaseModel):
    """One coder's solution at one round.

    ``code`` is the code as written (``""`` when there was none); ``fallback`` is true when the
    reply held no usable code block and the coder's previous solution was kept (round 1: no
    code). ``helpful_feedback`` / ``helpful_tests`` are the coder's ratings (1-5) of the
    feedback and tests it received (``None`` in round 1 or when unreadable).
    """

    coder: str
    role: str
    round: int = Field(ge=1)
    code: str = ""
    fallback: bool = False
    parse_errors: list[str] = Field(default_factory=list)
    helpful_feedback: int | None = Field(default=None, ge=1, le=5)
    helpful_tests: int | None = Field(default=None, ge=1, le=5)
    rating_fallback: bool = False
    replies: list[str] = Field(default_factory=list)
    sim: SimCode | None = None
    simulated: bool = False


class TestResult(BaseModel):
    """The generated tests ``T^j`` run against one solution.

    ``status``: ``"ran"`` (every test ran; ``failed`` counts assertion failures and errors),
    ``"aborted"`` (the program timed out, crashed or was refused before the tests finished:
    every test counts as failed), ``"no_tests"``. ``errors`` shows the first failures, each
    with the failing test's source.
    """

    passed: int = 0
    failed: int = 0
    status: Literal["ran", "aborted", "no_tests"] = "ran"
    errors: list[str] = Field(default_factory=list)
    simulated: bool = False

    @property
    def total(self) -> int:
        return self.passed + self.failed


class SimTests(BaseModel):
    """A simulated tester's own account of its (real) tests, kept for analysis.

    Test ``k`` checks the prompt's example call ``calls[k]`` (on a stdin problem: the input of
    the prompt's sample ``k``); ``sound[k]`` says whether its expected value is the prompt's
    (an unsound test expects a wrong value). Nothing reads it to run the tests: they run in
    the sandbox, or simulated execution reads their text.
    """

    calls: list[str]
    sound: list[bool]


class TestSuite(BaseModel):
    """The tester's unit tests ``T^j``: one ``assert`` statement each, or, on a problem whose
    program reads standard input (:attr:`ReviewView.stdin`), ``cases``: an input the program
    reads and the output it should print, each.

    ``distributions`` are the top-k distributions at the tests' decision positions (the tokens
    of each expected value or output). ``fallback``: no usable test was found (the suite is
    empty). ``sim`` is set for a simulated tester.
    """

    tests: list[str] = Field(default_factory=list)
    cases: list[IOTest] = Field(default_factory=list)
    distributions: list[TopLogprobs] = Field(default_factory=list)
    fallback: bool = False
    parse_errors: list[str] = Field(default_factory=list)
    dropped: int = Field(default=0, description="candidate tests that did not parse")
    replies: list[str] = Field(default_factory=list)
    noise: list[str] = Field(default_factory=list)
    sim: SimTests | None = None
    simulated: bool = False

    @property
    def size(self) -> int:
        """How many tests the suite holds, asserts and stdin cases."""
        return len(self.tests) + len(self.cases)

    def text(self) -> str:
        """The tests as the coders read them: each assert on its line, each stdin case as its
        input and expected-output blocks (:func:`~._parse.format_stdin_test`)."""
        parts = ["\n".join(self.tests)] if self.tests else []
        return "\n\n".join(parts + [format_stdin_test(c) for c in self.cases])


class Feedback(BaseModel):
    """The judge's feedback ``F^j``.

    ``verdicts[i]`` is the judge's verdict on previous solution ``i + 1`` (``True``: correct,
    ``None``: not given); ``pick`` is the 1-based solution it rates best. ``distributions``
    are the top-k distributions at the decision positions (every verdict word and the pick).
    ``fallback``: no verdict and no pick could be read (the text is still passed on).
    """

    text: str = ""
    verdicts: list[bool | None] = Field(default_factory=list)
    pick: int | None = Field(default=None, ge=1)
    distributions: list[TopLogprobs] = Field(default_factory=list)
    fallback: bool = False
    parse_errors: list[str] = Field(default_factory=list)
    replies: list[str] = Field(default_factory=list)
    noise: list[str] = Field(default_factory=list)
    simulated: bool = False


class ReviewView(BaseModel):
    """What the judge and the tester see in round ``round``: the problem and ``S^{j-1}``.

    ``attempt`` counts how often this round's feedback was discarded by an intervention (0 on
    the first writing), so a rewrite is a fresh draw. ``key`` identifies the debate (problem
    and repeat) for reproducible simulated draws. ``visible[i]`` is what solution ``i + 1``
    observably does: its result on the examples the prompt shows, run by the environment
    (``status="no_tests"`` when the prompt shows none). The solutions carry no simulated
    account (``sim`` is ``None``): reviewers see code and behaviour, not correctness.
    ``stdin``: the solutions are programs that read standard input and print their answer
    (LiveCodeBench's stdin problems), so the tester writes input / expected-output cases, not
    asserts.
    """

    model_config = ConfigDict(frozen=True)

    problem_id: str
    prompt: str
    entry_point: str | None = None
    round: int = Field(ge=2)
    attempt: int = Field(default=0, ge=0)
    solutions: tuple[Solution, ...]
    visible: tuple[TestResult, ...] = ()
    key: str = ""
    stdin: bool = False


class CoderView(BaseModel):
    """What a coder sees in round ``round``: the problem, and from round 2 on
    ``(S^{j-1}, F^j, T^j)`` with the test results of every previous solution."""

    model_config = ConfigDict(frozen=True)

    problem_id: str
    prompt: str
    entry_point: str | None = None
    round: int = Field(ge=1)
    seat: int = Field(ge=0, description="0-based index of this coder among the coders")
    solutions: tuple[Solution, ...] = ()
    feedback: Feedback | None = None
    tests: TestSuite | None = None
    results: tuple[TestResult, ...] = ()
    key: str = ""


class CodeGenCoder(Protocol):
    """A coder: LLM-backed or simulated."""

    name: str
    role: str

    async def write(self, view: CoderView) -> Solution:
        """This round's solution."""
        ...


class CodeGenJudge(Protocol):
    """The judge: reads the previous solutions, writes feedback."""

    name: str

    async def review(self, view: ReviewView) -> Feedback:
        """Feedback ``F^j`` on ``view.solutions``."""
        ...


class CodeGenTester(Protocol):
    """The test writer: reads the previous solutions, writes unit tests."""

    name: str

    async def write_tests(self, view: ReviewView) -> TestSuite:
        """Unit tests ``T^j`` for ``view.prompt``."""
        ...
