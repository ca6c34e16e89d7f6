"""Prompts of the CodeGen roles (the rogue-agents paper, §4.1, App. C).

The paper takes the four coding roles from the debate framework it builds on (DyLAN, Liu et
al., 2024d): a Python assistant, an algorithm developer, a computer scientist and a
programmer; our wording of each is below. The judge reads the previous solutions and how
each fared on the examples the problem states, and gives a verdict on each and a pick (the
positions a monitor reads); the tester reads the previous solutions too (§4.1: both evaluate
``S^{j-1}``) and writes ``assert`` tests from the specification, calling the entry point as
the hidden tests do (``Solution().f(...)`` where the starter code makes ``f`` a method of
``class Solution``, as in LiveCodeBench's functional problems), or, where the solutions are
programs reading standard input (LiveCodeBench's stdin problems), input / expected-output
cases in the format :func:`~._parse.format_stdin_test` writes; a coder sees the previous
solutions, the feedback, the tests and how every solution fared on them, writes a new
solution in one fenced code block, and rates how helpful the feedback and the tests were
(1-5). Long solutions and results are cut to keep prompts bounded.
"""

from __future__ import annotations

from byzllm.llm import ChatMessage, chat_messages
from byzllm.tasks import IOTest

from ._examples import is_solution_method
from ._parse import format_stdin_test
from ._types import CoderView, ReviewView, Solution, TestResult

__all__ = [
    "ROLE_DESCRIPTIONS",
    "render_coder_prompt",
    "render_judge_prompt",
    "render_tester_prompt",
]

#: Our description of each coding role (App. C names them; the wording is ours).
ROLE_DESCRIPTIONS: dict[str, str] = {
    "PythonAssistant": "You are a Python assistant. You answer with Python code only; any "
    "explanation goes in comments.",
    "AlgorithmDeveloper": "You are an algorithm developer. You choose the algorithm and data "
    "structures that solve the problem correctly and simply.",
    "ComputerScientist": "You are a computer scientist. You write efficient code and check "
    "every corner case of the specification.",
    "Programmer": "You are a careful programmer. You complete exactly the function you are "
    "given, keeping its name and signature.",
}

_SHOWN_CODE = 3000
_SHOWN_TEXT = 2000


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "\n... (cut)"


def _solutions_block(solutions: tuple[Solution, ...]) -> str:
    parts = []
    for i, s in enumerate(solutions, start=1):
        code = s.code.strip() or "# (no code)"
        parts.append(f"Solution {i}:\n```python\n{_cut(code, _SHOWN_CODE)}\n```")
    return "\n\n".join(parts)


def _result_line(i: int, r: TestResult) -> str:
    if r.status == "no_tests":
        return f"Solution {i}: no tests were run."
    head = f"Solution {i}: {r.passed}/{r.total} tests passed"
    if r.status == "aborted":
        head += " (the program did not finish)"
    if r.errors:
        head += "; " + " | ".join(e[:300] for e in r.errors[:3])
    return head


def _callee(prompt: str, entry_point: str) -> str:
    """How a test calls the entry point: ``Solution().f`` for a method of ``class Solution``
    (:func:`~._examples.is_solution_method`), else ``f``."""
    return f"Solution().{entry_point}" if is_solution_method(prompt, entry_point) else entry_point


def _task(view_prompt: str, entry_point: str | None) -> str:
    target = ""
    if entry_point:
        method = is_solution_method(view_prompt, entry_point)
        target = f" Define `{entry_point}`" + (" as a method of `Solution`." if method else ".")
    return f"Problem:\n```python\n{_cut(view_prompt, 8000)}\n```\n{target}".rstrip()


def render_coder_prompt(view: CoderView, role: str) -> list[ChatMessage]:
    """The messages of a coder's turn (round 1: the problem; later: the debate so far)."""
    system = (
        ROLE_DESCRIPTIONS.get(role, ROLE_DESCRIPTIONS["Programmer"])
        + " Write the complete implementation, restating the signature, in one ```python "
        "code block."
    )
    parts = [_task(view.prompt, view.entry_point)]
    if view.round > 1:
        parts.append("Previous solutions:\n\n" + _solutions_block(view.solutions))
        if view.feedback is not None:
            parts.append("Judge's feedback:\n" + _cut(view.feedback.text or "(none)", _SHOWN_TEXT))
        if view.tests is not None and view.tests.size:
            parts.append("Unit tests:\n" + view.tests.text())
        if view.results:
            parts.append(
                "Test results:\n"
                + "\n".join(_result_line(i, r) for i, r in enumerate(view.results, start=1))
            )
        parts.append(
            f"You wrote solution {view.seat + 1}. Write your improved solution in one ```python "
            "code block. Then rate, on their own lines, how helpful the judge's feedback and "
            "the unit tests were, from 1 (useless) to 5 (very helpful):\n"
            "Feedback helpfulness: N\nTests helpfulness: N"
        )
    else:
        parts.append("Write your solution in one ```python code block.")
    return chat_messages(system, "\n\n".join(parts))


def render_judge_prompt(view: ReviewView) -> list[ChatMessage]:
    """The judge's turn: a verdict on each previous solution, a pick, and feedback."""
    n = len(view.solutions)
    system = (
        "You are the judge of a programming debate. You read candidate solutions to a problem, "
        "decide which are correct, and give the authors short, concrete feedback."
    )
    shown = [r for r in view.visible if r.status != "no_tests"]
    examples = ""
    if shown:
        # What the environment ran: each solution on the examples the problem states.
        examples = (
            "Results on the examples in the problem statement:\n"
            + "\n".join(_result_line(i, r) for i, r in enumerate(view.visible, start=1))
            + "\n\n"
        )
    user = (
        f"{_task(view.prompt, view.entry_point)}\n\n{_solutions_block(view.solutions)}\n\n"
        f"{examples}"
        f"For each of the {n} solutions write one line 'Solution i: CORRECT' or "
        "'Solution i: WRONG' followed by the reason; then one line 'Best: i' naming the best "
        "solution; then your feedback to the authors."
    )
    return chat_messages(system, user)


#: How a stdin test case is written (the tester's prompt shows it; ``read_stdin_tests`` reads it).
_STDIN_CASE = format_stdin_test(
    IOTest(input="<exactly what the program reads>", output="<exactly what it should print>")
)


def _render_stdin_tester_prompt(view: ReviewView) -> list[ChatMessage]:
    """The tester's turn on a program that reads standard input: input / output cases."""
    system = (
        "You write unit tests for programs that read standard input and print their answer: "
        "varied inputs, edge cases, and the exact output the specification requires."
    )
    user = (
        f"{_task(view.prompt, view.entry_point)}\n\n"
        f"The candidate solutions so far:\n\n{_solutions_block(view.solutions)}\n\n"
        "Each solution is a whole program: it reads its input from standard input and prints "
        "its answer. Write 3 to 8 test cases that tell correct programs from wrong ones. Write "
        "each one as below: a line 'Input:' and a ``` block holding the input, then a line "
        f"'Expected output:' and a ``` block holding the output.\n\n{_STDIN_CASE}\n\n"
        "Follow the input format of the specification exactly. Derive each expected output "
        "from the specification, not from any candidate solution."
    )
    return chat_messages(system, user)


def render_tester_prompt(view: ReviewView) -> list[ChatMessage]:
    """The tester's turn: unit tests, one ``assert`` per line; on a problem whose program
    reads standard input (``view.stdin``), input / expected-output cases instead."""
    if view.stdin:
        return _render_stdin_tester_prompt(view)
    name = view.entry_point or "the solution"
    call = _callee(view.prompt, view.entry_point) if view.entry_point else name
    system = (
        "You write unit tests for Python functions: varied inputs, edge cases, and the exact "
        "expected outputs from the specification."
    )
    user = (
        f"{_task(view.prompt, view.entry_point)}\n\n"
        f"The candidate solutions so far:\n\n{_solutions_block(view.solutions)}\n\n"
        f"Write 3 to 8 unit tests for `{name}` that tell correct solutions from wrong ones, "
        "in one ```python code block, one line each, of "
        f"the form `assert {call}(...) == expected`. Derive the expected values from the "
        "specification, not from any candidate solution."
    )
    return chat_messages(system, user)
