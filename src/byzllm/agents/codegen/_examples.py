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
"""

from __future__ import annotations

import ast
import re
from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = ["VisibleExample", "example_arguments", "visible_examples"]

#: The separators of inline examples in HumanEval docstrings.
_INLINE = re.compile(
    r"^(?P<call>.+?\))\s*(?:==>|==|➞|=>|->|should return|returns|=)\s*(?P<value>.+?)\s*$"
)
_MAX_EXAMPLES = 20


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
