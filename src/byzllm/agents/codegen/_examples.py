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

A LiveCodeBench stdin problem (a program reading standard input) shows its examples as
AtCoder's statements do: a line ``Sample Input 1``, the input, a line ``Sample Output 1``, the
output (:func:`visible_stdin_examples`), each sample's text running from the first non-blank
line after its heading to the next blank line.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from pydantic import BaseModel, ConfigDict

from byzllm.tasks import IOTest

__all__ = ["VisibleExample", "example_arguments", "visible_examples", "visible_stdin_examples"]

#: The separators of inline examples in HumanEval docstrings.
_INLINE = re.compile(
    r"^(?P<call>.+?\))\s*(?:==>|==|➞|=>|->|should return|returns|=)\s*(?P<value>.+?)\s*$"
)
_MAX_EXAMPLES = 20
#: The heading of a sample of a stdin problem's statement (AtCoder's: ``Sample Input 1``).
_SAMPLE = re.compile(r"^sample\s+(input|output)\s*(\d{0,3})\s*:?$", re.IGNORECASE)


class VisibleExample(BaseModel):
    """One example of the prompt: ``call`` (source of a call of the entry point with literal
    arguments) should evaluate to ``expected`` (the source of a Python literal)."""

    model_config = ConfigDict(frozen=True)

    call: str
    expected: str

    def test(self) -> str:
        """The example as one ``assert`` statement."""
        return f"assert {self.call} == {self.expected}"


def _literal(source: str) -> tuple[bool, Any]:
    try:
        return True, ast.literal_eval(source)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None


def example_arguments(call: str, entry_point: str) -> tuple[tuple[Any, ...], dict[str, Any]] | None:
    """The literal positional and keyword arguments of ``call``, or ``None`` when ``call`` is
    not a direct call of ``entry_point`` with literal arguments."""
    try:
        tree = ast.parse(call, mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    node = tree.body
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
        return None
    if node.func.id != entry_point:
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


def visible_examples(prompt: str, entry_point: str | None) -> list[VisibleExample]:
    """The usable examples of ``prompt`` (module docstring), in prompt order, without repeats."""
    if not entry_point:
        return []
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
    examples: list[VisibleExample] = []
    for call, expected in found:
        if example_arguments(call, entry_point) is None or not _literal(expected)[0]:
            continue
        example = VisibleExample(call=call, expected=expected)
        if example not in examples:
            examples.append(example)
    return examples[:_MAX_EXAMPLES]


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
