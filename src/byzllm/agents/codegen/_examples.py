"""The examples a problem's prompt shows: the only tests a simulated role can know.

HumanEval prompts (Chen et al., 2021) show worked examples in the docstring of the function to
write, as doctests (``>>> f(1, 2)`` followed by the result) or inline (``f(1, 2) == 3``,
``f(1, 2) ➞ 3``, ``f(1, 2) => 3``, ...). They are part of what every role of the
rogue-agents paper's CodeGen debate reads (§4.1, App. C), unlike the hidden tests that decide
Pass@1. The simulated judge and tester act on them only (``_sim``): the tester turns them into
unit tests, the environment runs every solution on them and shows the judge the outcome.

Only examples that are a direct call of the entry point with literal arguments and a literal
result are kept, so each becomes one ``assert`` whose outcome is fixed by the code under test.
Reading a prompt never runs code (:func:`ast.literal_eval` only).

A LiveCodeBench functional problem (a method of LeetCode's ``class Solution``, which its
hidden tests call as ``Solution().f(...)``) shows its examples as LeetCode's statements do:
``Example 1:``, a line ``Input: nums = [1,2,3], k = 2`` (the arguments by parameter name,
values in JSON or Python literal syntax: ``"abc"``, ``true``, ``null``), a line ``Output: 5``,
often an ``Explanation:`` (:func:`leetcode_examples`). Each becomes the call
``Solution().f([1, 2, 3], 2)`` with the arguments in the order of the method's parameters in
the starter code (in the statement's order when the starter code does not name them all;
hidden tests pass them positionally, and a solution may rename them) and the output as its
value. The input runs from ``Input:`` to the ``Output:`` line; the output is the rest of that
line (or the next non-blank line); values are read by :func:`json.loads` or
:func:`ast.literal_eval`, never run.

A LiveCodeBench stdin problem (a program reading standard input) shows its examples as
AtCoder's statements do: a line ``Sample Input 1``, the input, a line ``Sample Output 1``, the
output (:func:`visible_stdin_examples`), each sample's text running from the first non-blank
line after its heading to the next blank line.
"""

from __future__ import annotations

import ast
import json
import re
import textwrap
from typing import Any

from pydantic import BaseModel, ConfigDict

from byzllm.tasks import IOTest

__all__ = [
    "VisibleExample",
    "example_arguments",
    "is_solution_method",
    "leetcode_examples",
    "visible_examples",
    "visible_stdin_examples",
]

#: The separators of inline examples in HumanEval docstrings.
_INLINE = re.compile(
    r"^(?P<call>.+?\))\s*(?:==>|==|➞|=>|->|should return|returns|=)\s*(?P<value>.+?)\s*$"
)
_MAX_EXAMPLES = 20
#: The heading of a sample of a stdin problem's statement (AtCoder's: ``Sample Input 1``).
_SAMPLE = re.compile(r"^sample\s+(input|output)\s*(\d{0,3})\s*:?$", re.IGNORECASE)
#: The lines of a LeetCode example (``Input: nums = [1,2]``, ``Output: 3``), bold or not.
_LEETCODE = re.compile(r"^\**\s*(input|output)\s*:\s*\**\s*(.*)$", re.IGNORECASE)
#: The longest input or output of a LeetCode example read, and how many are looked at: a
#: statement shows a few short ones, and a huge or repetitive prompt must stay cheap to read.
_MAX_EXAMPLE_CHARS = 10_000
_MAX_CANDIDATES = 10 * _MAX_EXAMPLES


class VisibleExample(BaseModel):
    """One example of the prompt: ``call`` (source of a call of the entry point with literal
    arguments) should evaluate to ``expected`` (the source of a Python literal)."""

    model_config = ConfigDict(frozen=True)

    call: str
    expected: str

    def test(self, *, as_json: bool = False) -> str:
        """The example as one ``assert`` statement; ``as_json``: both sides compared as the
        JSON they write, as LiveCodeBench judges a method's return value (a returned
        ``(2, 1)`` is the ``[2, 1]`` it prints as, which Python's ``==`` denies)."""
        if as_json:
            return (
                f"assert (lambda json: json.loads(json.dumps({self.call})) == "
                f"json.loads(json.dumps({self.expected})))(__import__('json'))"
            )
        return f"assert {self.call} == {self.expected}"


def _literal(source: str) -> tuple[bool, Any]:
    try:
        return True, ast.literal_eval(source)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None


def _calls_entry_point(func: ast.expr, entry_point: str) -> bool:
    """Whether ``func`` is ``entry_point`` itself or ``Solution().entry_point``."""
    if isinstance(func, ast.Name):
        return func.id == entry_point
    if not (isinstance(func, ast.Attribute) and func.attr == entry_point):
        return False
    made = func.value
    return (
        isinstance(made, ast.Call)
        and isinstance(made.func, ast.Name)
        and made.func.id == "Solution"
        and not made.args
        and not made.keywords
    )


def example_arguments(call: str, entry_point: str) -> tuple[tuple[Any, ...], dict[str, Any]] | None:
    """The literal positional and keyword arguments of ``call``, or ``None`` when ``call`` is
    not a direct call of ``entry_point`` (or of ``Solution().entry_point``, a LiveCodeBench
    functional problem's method) with literal arguments."""
    try:
        tree = ast.parse(call, mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    node = tree.body
    if not (isinstance(node, ast.Call) and _calls_entry_point(node.func, entry_point)):
        return None
    args: list[Any] = []
    for arg in node.args:
        ok, value = _literal(ast.unparse(arg)) if not isinstance(arg, ast.Starred) else (False, 0)
        if not ok:
            return None
        args.append(value)
    kwargs: dict[str, Any] = {}
    for kw in node.keywords:
        ok, value = _literal(ast.unparse(kw.value))
        if not ok or kw.arg is None:
            return None
        kwargs[kw.arg] = value
    return tuple(args), kwargs


def is_solution_method(prompt: str, entry_point: str) -> bool:
    """Whether the problem's starter code makes ``entry_point`` a method of LeetCode's
    ``class Solution`` (LiveCodeBench's functional problems): their hidden tests call
    ``Solution().entry_point(...)``, and a test calling ``entry_point(...)`` alone fails on
    every solution with a ``NameError``."""
    return (
        re.search(r"^\s*class\s+Solution\b", prompt, re.MULTILINE) is not None
        and re.search(rf"\bdef\s+{re.escape(entry_point)}\s*\(\s*self\b", prompt) is not None
    )


def _method_parameters(prompt: str, entry_point: str) -> list[str] | None:
    """The parameters after ``self`` of ``def entry_point(self, ...)`` in the starter code,
    in order; ``None`` when no such signature parses. Only the signature is parsed."""
    found = re.search(rf"^[ \t]*def[ \t]+{re.escape(entry_point)}[ \t]*\(", prompt, re.MULTILINE)
    if found is None:
        return None
    lines = prompt[found.start() : found.start() + 2000].splitlines()
    for end in range(1, min(len(lines), 20) + 1):
        header = textwrap.dedent("\n".join(lines[:end]))
        try:
            tree = ast.parse(header + "\n    pass\n")
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            continue
        node = tree.body[0] if tree.body else None
        if not isinstance(node, ast.FunctionDef):
            return None
        names = [a.arg for a in (*node.args.posonlyargs, *node.args.args)]
        return names[1:] if names[:1] == ["self"] else None
    return None


def _value(text: str) -> tuple[bool, Any]:
    """A LeetCode value: JSON (``true``, ``false``, ``null``, double-quoted strings) or a
    Python literal; never run."""
    try:
        return True, json.loads(text)
    except (ValueError, RecursionError, MemoryError):
        return _literal(text)


def _split_arguments(text: str) -> list[str] | None:
    """``text`` cut at its top-level commas (outside brackets and quoted strings); ``None``
    when its brackets or quotes do not close."""
    parts: list[str] = []
    depth, start, quote, escaped = 0, 0, "", False
    for i, char in enumerate(text):
        if quote:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth < 0:
                return None
        elif char == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    if quote or depth:
        return None
    return [*parts, text[start:]]


def _leetcode_example(
    given: str, shown: str, entry_point: str, parameters: list[str] | None
) -> VisibleExample | None:
    """The example ``Input: given`` / ``Output: shown`` as a call of ``Solution().entry_point``
    (module docstring), or ``None`` when it is not one."""
    if len(given) > _MAX_EXAMPLE_CHARS or len(shown) > _MAX_EXAMPLE_CHARS:
        return None
    parts = _split_arguments(given)
    if not parts:
        return None
    named: dict[str, str] = {}
    for part in parts:
        name, equals, value = part.partition("=")
        name, value = name.strip(), value.strip()
        if not (equals and name.isidentifier() and value) or name in named:
            return None
        ok, parsed = _value(value)
        if not ok:
            return None
        named[name] = _source(parsed)
    ok, output = _value(shown.strip())
    if not ok:
        return None
    if parameters is not None and sorted(parameters) == sorted(named):
        arguments = [named[name] for name in parameters]
    elif parameters is None or len(parameters) == len(named):
        arguments = list(named.values())  # LeetCode lists them in the signature's order
    else:
        return None
    return VisibleExample(
        call=f"Solution().{entry_point}({', '.join(arguments)})", expected=_source(output)
    )


def _source(value: Any) -> str:
    """The Python source of a literal value (``""`` when it has none: the example is then
    dropped by the final check of :func:`visible_examples`)."""
    try:
        return repr(value)
    except (ValueError, RecursionError, MemoryError):
        return ""


def _leetcode_pairs(prompt: str) -> list[tuple[str, str]]:
    """The ``(input, output)`` texts of the LeetCode examples of ``prompt`` (module
    docstring), in order, without repeats, at most ``_MAX_CANDIDATES``. One pass, linear."""
    pairs: dict[tuple[str, str], None] = {}  # insertion-ordered, repeats cost nothing
    given: list[str] | None = None  # the input being read, up to its Output: line
    size = 0
    waiting: str | None = None  # an input whose Output: line held no value
    for raw in prompt.splitlines():
        line = raw.strip()
        match = _LEETCODE.match(line)
        if waiting is not None and line and match is None:
            pairs[(waiting, line)] = None
            waiting = None
        elif match is not None and match.group(1).lower() == "input":
            given, size, waiting = [match.group(2).strip()], len(match.group(2)), None
        elif match is not None and given is not None:
            text, shown, given = " ".join(p for p in given if p), match.group(2).strip(), None
            if shown:
                pairs[(text, shown)] = None
            else:
                waiting = text
        elif given is not None and line:
            size += len(line)
            if size > _MAX_EXAMPLE_CHARS:
                given = None
            else:
                given.append(line)
        if len(pairs) >= _MAX_CANDIDATES:
            break
    return list(pairs)


def leetcode_examples(prompt: str, entry_point: str) -> list[VisibleExample]:
    """The examples a LiveCodeBench functional problem's statement shows, LeetCode's
    ``Input:`` / ``Output:`` lines, each as a call of ``Solution().entry_point`` (module
    docstring), in statement order; :func:`visible_examples` keeps the usable ones."""
    parameters = _method_parameters(prompt, entry_point)
    found = (_leetcode_example(g, o, entry_point, parameters) for g, o in _leetcode_pairs(prompt))
    return [example for example in found if example is not None]


def visible_examples(prompt: str, entry_point: str | None) -> list[VisibleExample]:
    """The usable examples of ``prompt`` (module docstring), in prompt order, without repeats."""
    if not entry_point:
        return []
    if is_solution_method(prompt, entry_point):
        return _usable(leetcode_examples(prompt, entry_point), entry_point)
    lines = [line.strip() for line in prompt.splitlines()]
    found: list[tuple[str, str]] = []
    for i, line in enumerate(lines):
        if line.startswith(">>>"):
            want = lines[i + 1] if i + 1 < len(lines) else ""
            if want and not want.startswith(">>>"):
                found.append((line[3:].strip(), want))
        elif f"{entry_point}(" in line:
            match = _INLINE.match(line[line.index(f"{entry_point}(") :])
            if match:
                found.append((match["call"].strip(), match["value"].rstrip(".,;").strip()))
    return _usable([VisibleExample(call=c, expected=e) for c, e in found], entry_point)


def _usable(found: list[VisibleExample], entry_point: str) -> list[VisibleExample]:
    """The examples of ``found`` whose call has literal arguments and whose value is a
    literal, without repeats, at most ``_MAX_EXAMPLES``."""
    examples: list[VisibleExample] = []
    for example in found:
        if example_arguments(example.call, entry_point) is None:
            continue
        if not _literal(example.expected)[0] or example in examples:
            continue
        examples.append(example)
        if len(examples) == _MAX_EXAMPLES:
            break
    return examples


def _sample_text(lines: list[str], start: int) -> str:
    """The sample whose heading is ``lines[start - 1]``: its first non-blank line to the next
    blank one (module docstring)."""
    i = start
    while i < len(lines) and not lines[i].strip():
        i += 1
    taken: list[str] = []
    while i < len(lines) and lines[i].strip():
        taken.append(lines[i].rstrip())
        i += 1
    return "\n".join(taken)


def visible_stdin_examples(prompt: str) -> list[IOTest]:
    """The samples a stdin problem's ``prompt`` shows (module docstring), each an input and
    the output it should print, in prompt order, without repeats: each ``Sample Input N``
    paired with the ``Sample Output N`` of the same number."""
    lines = prompt.splitlines()
    inputs: dict[str, str] = {}
    examples: list[IOTest] = []
    for i, line in enumerate(lines):
        match = _SAMPLE.match(line.strip())
        if match is None:
            continue
        kind, number = match.group(1).lower(), match.group(2)
        text = _sample_text(lines, i + 1)
        if kind == "input":
            inputs[number] = text
            continue
        given = inputs.pop(number, None)
        if given:
            example = IOTest(input=given + "\n", output=text + "\n")
            if example not in examples:
                examples.append(example)
    return examples[:_MAX_EXAMPLES]
