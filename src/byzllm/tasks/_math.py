"""Symbolic comparison of math answers through ``math-verify``, safe under threads and asyncio.

``math-verify`` guards its parser and comparator with ``signal.alarm`` timeouts by default.
Signals only work in the main thread and interfere with an event loop, so every call here
passes ``parsing_timeout=None`` / ``timeout_seconds=None`` and bounds the work another way:

* answers longer than :data:`MAX_MATH_CHARS` are never handed to the parser (they compare as
  strings);
* parsed expressions that would make SymPy evaluate astronomically large numbers (power
  towers such as ``9^{9^{9^9}}``, huge exponents or factorials) are rejected before
  comparison: :func:`is_tame`;
* parses are cached (:func:`parse_math`), so the ground truth of a task is parsed once.
"""

from __future__ import annotations

import importlib
import logging
from functools import lru_cache
from typing import Any

__all__ = ["MAX_MATH_CHARS", "is_tame", "math_key", "parse_math", "verify_math"]

#: Longest answer string handed to math-verify's parser.
MAX_MATH_CHARS = 200

#: Largest exponent / factorial argument we let SymPy evaluate.
_MAX_EXPONENT = 10_000
#: Largest expression tree we walk or compare.
_MAX_NODES = 2_000


class _DropTimeoutWarning(logging.Filter):
    """math-verify warns once that its timeout is off; we bound the work ourselves."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Timeout is disabled")


for _name in ("math_verify.parser", "math_verify.grader", "math_verify"):
    logging.getLogger(_name).addFilter(_DropTimeoutWarning())


def _sympy() -> Any:
    # Imported lazily (slow import) and untyped (SymPy ships no stubs).
    return importlib.import_module("sympy")


def _wrap(answer: str) -> str:
    text = answer.strip().replace("\\$", "").replace("$", "").strip()
    return f"${text}$" if text else ""


@lru_cache(maxsize=16_384)
def parse_math(answer: str) -> tuple[Any, ...]:
    """Parsed forms of a short LaTeX/plain answer (empty when unparseable or too long/wild).

    Cached: repeated answers (the ground truth, agents agreeing) are parsed once.
    """
    if len(answer) > MAX_MATH_CHARS:
        return ()
    wrapped = _wrap(answer)
    if not wrapped:
        return ()
    from math_verify import parse

    try:
        parsed = parse(wrapped, parsing_timeout=None)
    except Exception:  # math-verify raises assorted SymPy errors on odd input
        return ()
    if not parsed or not all(is_tame(item) for item in parsed):
        return ()
    return tuple(parsed)


def is_tame(expr: Any) -> bool:
    """Whether comparing ``expr`` is cheap: no power towers, huge exponents or factorials."""
    sympy = _sympy()

    if isinstance(expr, str):
        return True
    if not isinstance(expr, sympy.Basic | sympy.MatrixBase):
        return False
    for nodes, node in enumerate(sympy.preorder_traversal(expr), start=1):
        if nodes > _MAX_NODES:
            return False
        if isinstance(node, sympy.Pow):
            exponent = node.exp
            if exponent.has(sympy.Pow) and any(
                isinstance(p, sympy.Pow) and p.exp.is_Number and abs(p.exp) > 1
                for p in sympy.preorder_traversal(exponent)
            ):
                return False  # a power tower
            if exponent.is_Number and abs(exponent) > _MAX_EXPONENT:
                return False
        elif isinstance(node, sympy.factorial | sympy.gamma | sympy.factorial2):
            arg = node.args[0]
            if not arg.is_Number or abs(arg) > _MAX_EXPONENT:
                return False
    return True


def verify_math(gold: str, answer: str) -> bool:
    """Whether ``answer`` is mathematically equal to ``gold`` (math-verify's gold-first order).

    Falls back to whitespace-insensitive string equality when either side does not parse.
    """
    return _verify_cached(gold, answer)


@lru_cache(maxsize=65_536)
def _verify_cached(gold: str, answer: str) -> bool:
    if _squash(gold) == _squash(answer):
        return True
    parsed_gold = parse_math(gold)
    parsed_answer = parse_math(answer)
    if not parsed_gold or not parsed_answer:
        return False
    from math_verify import verify

    try:
        return bool(verify(list(parsed_gold), list(parsed_answer), timeout_seconds=None))
    except Exception:
        return False


def math_key(answer: str) -> str:
    """A canonical key of a math answer: SymPy's text of its parse, else the squashed string.

    Answers with equal keys are equal; equal answers usually (not always: ``x=5`` vs ``5``)
    have equal keys (``0.5`` and ``\\frac{1}{2}`` both key as ``1/2``).
    """
    sympy = _sympy()

    parsed = parse_math(answer)
    if parsed and not isinstance(parsed[0], str):
        expr = parsed[0]
        # "x = 5" answers the question "x?" with 5: key it like 5 (math-verify agrees).
        if isinstance(expr, sympy.Eq) and isinstance(expr.lhs, sympy.Symbol):
            expr = expr.rhs
        try:
            return str(expr)
        except Exception:
            pass
    return _squash(answer)


def _squash(text: str) -> str:
    return "".join(_wrap(text).strip("$").split())
