"""Reading the CodeGen roles' replies (the rogue-agents paper, §4.1, App. C). Never raises.

Every reader returns a :class:`~byzllm.agents.Parsed` with its documented default when the
reply holds nothing it can read, and the reason:

- :func:`read_code`: the coder's code, from a fenced code block (the last block that defines
  the entry point, else the longest block), or the whole reply when it is itself Python
  defining the entry point. Default: no code (the environment keeps the coder's previous
  solution).
- :func:`read_ratings`: the coder's ratings (1-5) of the feedback and of the tests. Default:
  ``(None, None)``.
- :func:`read_feedback`: the judge's verdict per solution (``Solution 2: WRONG``), its pick
  (``Best: 3``) and the character spans of those decision words. Default: no verdict and no
  pick (the text is still passed on as feedback).
- :func:`read_tests`: the tester's ``assert`` statements, each checked to be one valid Python
  assert, with the span of each expected value (the right-hand side of ``==``). Default: no
  test.
- :func:`read_stdin_tests`: on a problem whose program reads standard input (LiveCodeBench's
  stdin problems), the tester's test cases instead: a fenced block after a line ending in
  ``Input:`` (what the program reads), then a fenced block after a line ending in ``Expected
  output:`` (what it prints; :func:`format_stdin_test` writes one), with the span of each
  expected output. Default: no test.

Replies are cut to :data:`MAX_REPLY_CHARS` past a reasoning model's thinking before reading,
and every scan is linear in the reply's length, so a 1 MB adversarial reply costs
milliseconds.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from byzllm.tasks import IOTest

from .._parsed import Parsed
from .._thinking import after_thinking

__all__ = [
    "MAX_CODE_CHARS",
    "MAX_REPLY_CHARS",
    "MAX_TESTS",
    "ParsedFeedback",
    "ParsedTests",
    "code_blocks",
    "defines",
    "format_stdin_test",
    "read_code",
    "read_feedback",
    "read_ratings",
    "read_stdin_tests",
    "read_tests",
]

#: Longest reply read; the rest is ignored.
MAX_REPLY_CHARS = 100_000
#: Longest code kept from one reply.
MAX_CODE_CHARS = 50_000
#: Most tests kept from one tester reply; longest test kept.
MAX_TESTS = 20
MAX_TEST_CHARS = 1_000
#: Longest input, and longest expected output, kept of one stdin test case.
MAX_CASE_CHARS = 10_000

_FENCE = re.compile(r"^\s*(`{3,}|~{3,})\s*([\w+.-]*)")
# Blanks, ``#`` and ``*`` between the words are one character class each: adjacent optional
# blanks (``\s*#?\s*``) backtracked against each other, and a judge's reply with a long run
# of newlines after "Solution 1" took 40 s to read.
_VERDICT = re.compile(
    r"solution[\s#]*(\d{1,3})[\s*]*[:\-\u2013\u2014][\s*]*(correct|incorrect|wrong|right)\b",
    re.IGNORECASE,
)
_PICK = re.compile(
    r"\bbest(?:\s+solution)?[\s*]*[:=][\s*#]*(?:solution[\s#]*)?(\d{1,3})\b", re.IGNORECASE
)
_RATING = {
    "feedback": re.compile(r"feedback[^\n:=]{0,40}[:=]\s*\**\s*([1-5])\b", re.IGNORECASE),
    "tests": re.compile(r"tests?[^\n:=]{0,40}[:=]\s*\**\s*([1-5])\b", re.IGNORECASE),
}
_RATINGS_LINE = re.compile(r"helpful", re.IGNORECASE)


def code_blocks(text: str) -> list[str]:
    """The fenced code blocks of ``text`` (an unclosed last block runs to the end), in order.

    A line scan, linear in the text: no backtracking regex over the whole reply.
    """
    blocks: list[str] = []
    current: list[str] | None = None
    fence = ""
    for line in text[:MAX_REPLY_CHARS].splitlines():
        match = _FENCE.match(line)
        if current is None:
            if match:
                current, fence = [], match.group(1)[0]
            continue
        if match and match.group(1)[0] == fence and not match.group(2):
            blocks.append("\n".join(current))
            current = None
            continue
        current.append(line)
    if current:
        blocks.append("\n".join(current))
    return blocks


def defines(code: str, name: str | None) -> bool:
    """Whether ``code`` parses and defines ``name`` at top level (a function or a class).

    ``name=None`` asks only that the code parse.
    """
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    if name is None:
        return True
    return any(
        isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        and node.name == name
        for node in tree.body
    )


def read_code(text: str, entry_point: str | None = None) -> Parsed[str]:
    """The code of a coder's reply (see the module docstring); default ``""``.

    ``entry_point`` is the function (HumanEval) or method's class (``Solution``) the code
    should define; a block that defines it is preferred.
    """
    if not isinstance(text, str) or not text.strip():
        return Parsed("", True, "the reply is empty")
    # Leading blanks (the thinking's) dropped: code_blocks reads MAX_REPLY_CHARS from the start.
    text = after_thinking(text, MAX_REPLY_CHARS).lstrip()
    blocks = [b for b in code_blocks(text) if b.strip()]
    if blocks:
        wanted = "Solution" if entry_point and not _is_function_name(entry_point) else entry_point
        defining = [b for b in blocks if wanted and _mentions_def(b, wanted)]
        chosen = defining[-1] if defining else max(blocks, key=len)
        return Parsed(chosen[:MAX_CODE_CHARS])
    body = text[:MAX_REPLY_CHARS]
    if entry_point and _mentions_def(body, entry_point) and defines(body, entry_point):
        return Parsed(body[:MAX_CODE_CHARS])
    return Parsed("", True, "no code block (```python ... ```) in the reply")


def _is_function_name(name: str) -> bool:
    return name.isidentifier()


def _mentions_def(code: str, name: str) -> bool:
    """Whether ``code`` defines ``name`` itself (``def add(``, ``class Solution:``), not a
    longer name that starts with it (``def add_all``)."""
    if f"def {name}" not in code and f"class {name}" not in code:
        return False  # the cheap test first: most blocks name neither
    return re.search(rf"\b(?:async\s+def|def|class)\s+{re.escape(name)}\b", code) is not None


def read_ratings(text: str) -> Parsed[tuple[int | None, int | None]]:
    """The coder's helpfulness ratings ``(feedback, tests)``, each 1-5 or ``None``.

    Read from lines mentioning "helpful", e.g. ``Feedback helpfulness: 4/5``; default
    ``(None, None)`` when neither is found.
    """
    if not isinstance(text, str):
        return Parsed((None, None), True, "the reply is not text")
    found: dict[str, int | None] = {"feedback": None, "tests": None}
    for line in after_thinking(text, MAX_REPLY_CHARS).splitlines():
        if len(line) > 500 or not _RATINGS_LINE.search(line):
            continue
        for key, pattern in _RATING.items():
            m = pattern.search(line)
            if m and found[key] is None:
                found[key] = int(m.group(1))
    value = (found["feedback"], found["tests"])
    if value == (None, None):
        return Parsed(value, True, "no helpfulness ratings (e.g. 'Feedback helpfulness: 4')")
    return Parsed(value)


@dataclass(frozen=True)
class ParsedFeedback:
    """A judge's verdicts (1-based solution → correct?), pick and decision spans."""

    verdicts: dict[int, bool] = field(default_factory=dict)
    pick: int | None = None
    spans: tuple[tuple[int, int], ...] = ()


def read_feedback(text: str, n_solutions: int) -> Parsed[ParsedFeedback]:
    """The judge's verdicts and pick on ``n_solutions`` solutions (module docstring).

    Verdicts and picks naming a solution outside ``1..n_solutions`` are ignored; the first
    verdict per solution counts. Spans cover each verdict word and the pick's digits.
    """
    if not isinstance(text, str) or not text.strip():
        return Parsed(ParsedFeedback(), True, "the reply is empty")
    body = after_thinking(text, MAX_REPLY_CHARS)
    verdicts: dict[int, bool] = {}
    spans: list[tuple[int, int]] = []
    for m in _VERDICT.finditer(body):
        idx = int(m.group(1))
        if not 1 <= idx <= n_solutions or idx in verdicts:
            continue
        verdicts[idx] = m.group(2).lower() in ("correct", "right")
        spans.append(m.span(2))
    pick = None
    for m in _PICK.finditer(body):
        idx = int(m.group(1))
        if 1 <= idx <= n_solutions:
            pick = idx
            spans.append(m.span(1))
            break
    if not verdicts and pick is None:
        return Parsed(
            ParsedFeedback(),
            True,
            "no verdict ('Solution 1: CORRECT' or 'Solution 1: WRONG') and no 'Best: N'",
        )
    return Parsed(ParsedFeedback(verdicts, pick, tuple(sorted(spans))))


@dataclass(frozen=True)
class ParsedTests:
    """The tester's asserts (or, on a stdin problem, its input / expected-output ``cases``),
    the spans of their expected values, and the dropped ones."""

    tests: tuple[str, ...] = ()
    spans: tuple[tuple[int, int], ...] = ()
    dropped: int = 0
    cases: tuple[IOTest, ...] = ()


def _expected_span(line: str) -> tuple[int, int] | None:
    """Offsets (within ``line``) of the right-hand side of the assert's top-level ``==``."""
    try:
        tree = ast.parse(line.strip())
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.Assert):
        return None
    test = tree.body[0].test
    indent = len(line) - len(line.lstrip())
    encoded = line.strip().encode()

    def chars(byte_offset: int | None) -> int:
        # ast's column offsets count UTF-8 bytes; the spans are character offsets.
        return indent + len(encoded[: byte_offset or 0].decode(errors="ignore"))

    if (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Eq)
        and test.comparators[0].end_col_offset is not None
    ):
        rhs = test.comparators[0]
        return chars(rhs.col_offset), chars(rhs.end_col_offset or rhs.col_offset)
    return chars(test.col_offset), chars(test.end_col_offset or test.col_offset)


def _assert_lines(body: str) -> list[tuple[str, int, bool]]:
    """Each line of ``body`` that starts with ``assert``: ``(line, its offset, whether it is in
    a fenced code block)``, the fences read as :func:`code_blocks` reads them."""
    found: list[tuple[str, int, bool]] = []
    fence = ""  # the open block's fence character; "" outside blocks
    offset = 0
    for raw in body.splitlines(keepends=True):
        line = raw.rstrip("\r\n")
        start = offset
        offset += len(raw)
        match = _FENCE.match(line)
        if not fence:
            if match:
                fence = match.group(1)[0]
                continue
        elif match and match.group(1)[0] == fence and not match.group(2):
            fence = ""
            continue
        if line.lstrip().startswith("assert"):
            found.append((line, start, bool(fence)))
    return found


def read_tests(text: str) -> Parsed[ParsedTests]:
    """The tester's ``assert`` lines (from code blocks, else the whole reply); default none.

    Each kept test is one line that parses as a single ``assert``; other assert-looking
    lines are counted in ``dropped``. At most :data:`MAX_TESTS` tests are kept.
    """
    if not isinstance(text, str) or not text.strip():
        return Parsed(ParsedTests(), True, "the reply is empty")
    body = after_thinking(text, MAX_REPLY_CHARS)
    candidates = _assert_lines(body)
    if any(in_block for _, _, in_block in candidates):
        # A reply with code blocks keeps its tests there; an assert in the prose around them
        # is an example or a counter-example ("a common mistake: assert add(2, 2) == 5").
        candidates = [c for c in candidates if c[2]]
    tests: list[str] = []
    spans: list[tuple[int, int]] = []
    dropped = 0
    for line, start, _ in candidates:
        if len(tests) >= MAX_TESTS or len(line) > MAX_TEST_CHARS:
            dropped += 1
            continue
        span = _expected_span(line)
        if span is None:
            dropped += 1
            continue
        tests.append(line.strip())
        spans.append((start + span[0], start + span[1]))
    if not tests:
        reason = "no valid assert statement" + (f" ({dropped} did not parse)" if dropped else "")
        return Parsed(ParsedTests(dropped=dropped), True, reason)
    return Parsed(ParsedTests(tuple(tests), tuple(spans), dropped))


#: The labels of a stdin test's two blocks: the last word of the line before the block's fence
#: (``Input:``, ``**Expected output 2:**``, ``stdin``), markdown and a number around it aside.
_CASE_LABEL = re.compile(r"\b(input|stdin|output|stdout)(?:\s*#?\d{1,3})?$", re.IGNORECASE)
_LABEL_CHARS = 200


def format_stdin_test(case: IOTest) -> str:
    """``case`` written as :func:`read_stdin_tests` reads it (and the tester is asked to)."""
    return (
        f"Input:\n```\n{case.input.rstrip(chr(10))}\n```\n"
        f"Expected output:\n```\n{case.output.rstrip(chr(10))}\n```"
    )


def _label(line: str) -> str:
    """``"input"``, ``"output"`` or ``""``: what a line announces of the block after it."""
    if len(line) > _LABEL_CHARS:
        return ""
    match = _CASE_LABEL.search(line.strip().strip("*_#>`:.()- \t"))
    if match is None:
        return ""
    return "input" if match.group(1).lower() in ("input", "stdin") else "output"


def _labelled_blocks(body: str) -> list[tuple[str, str, int, int]]:
    """Each fenced block of ``body`` with the label of the line before its fence: ``(label,
    content, start, end)``, the content's offsets in ``body``. Fences are read as
    :func:`code_blocks` reads them (an unclosed last block runs to the end); one line scan."""
    found: list[tuple[str, str, int, int]] = []
    label = ""
    fence = ""  # the open block's fence character; "" outside blocks
    lines: list[str] = []
    start = end = offset = 0
    for raw in body.splitlines(keepends=True):
        line = raw.splitlines()[0]  # without its line break, whichever it is
        begin = offset
        offset += len(raw)
        match = _FENCE.match(line)
        if not fence:
            if match:
                fence, lines, start, end = match.group(1)[0], [], offset, offset
            elif line.strip():
                label = _label(line)
            continue
        if match and match.group(1)[0] == fence and not match.group(2):
            found.append((label, "\n".join(lines), start, end))
            fence, label = "", ""
            continue
        lines.append(line)
        end = begin + len(line)
    if fence:
        found.append((label, "\n".join(lines), start, end))
    return found


def read_stdin_tests(text: str) -> Parsed[ParsedTests]:
    """The tester's stdin test cases (module docstring); default none.

    Each ``Input:`` block is paired with the ``Expected output:`` block that follows it; an
    input without its output, an output without its input, and a case longer than
    :data:`MAX_CASE_CHARS` either side are counted in ``dropped``. At most :data:`MAX_TESTS`
    cases are kept. The spans cover each expected output's text.
    """
    if not isinstance(text, str) or not text.strip():
        return Parsed(ParsedTests(), True, "the reply is empty")
    body = after_thinking(text, MAX_REPLY_CHARS)
    cases: list[IOTest] = []
    spans: list[tuple[int, int]] = []
    dropped = 0
    pending: str | None = None  # the input waiting for its expected output
    for label, content, start, end in _labelled_blocks(body):
        if label == "input":
            dropped += pending is not None
            pending = content
            continue
        if label != "output":
            continue  # a block of code or prose: no test
        if pending is None:
            dropped += 1
            continue
        given, pending = pending, None
        if len(cases) >= MAX_TESTS or len(given) > MAX_CASE_CHARS or len(content) > MAX_CASE_CHARS:
            dropped += 1
            continue
        # A program reads whole lines: the input ends with a newline, as LiveCodeBench's do.
        cases.append(IOTest(input=given + "\n" if given else "", output=content))
        if end > start:
            spans.append((start, end))
    dropped += pending is not None
    if not cases:
        reason = "no test case (an 'Input:' block followed by an 'Expected output:' block)"
        if dropped:
            reason += f" ({dropped} incomplete or too long)"
        return Parsed(ParsedTests(dropped=dropped), True, reason)
    return Parsed(ParsedTests(spans=tuple(spans), dropped=dropped, cases=tuple(cases)))
