"""Symbolic comparison of math answers through ``math-verify``, safe under threads and asyncio.

``math-verify`` guards its parser and comparator with ``signal.alarm`` timeouts by default.
Signals only work in the main thread and interfere with an event loop, so every call here
passes ``parsing_timeout=None`` / ``timeout_seconds=None`` and bounds the work another way:

* answers longer than :data:`MAX_MATH_CHARS`, and combinatorial operators applied to big
  literals (which SymPy evaluates while parsing), are never handed to the parser (they
  compare as strings);
* parsed expressions that would make SymPy evaluate astronomically large numbers (power
  towers such as ``9^{9^{9^9}}``, huge exponents or factorials) are rejected before
  comparison: :func:`is_tame`;
* parses are cached (:func:`parse_math`), so the ground truth of a task is parsed once.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import math
import re
from fractions import Fraction
from functools import lru_cache
from typing import Any

from ._text import canonical_number

__all__ = [
    "MAX_MATH_CHARS",
    "is_tame",
    "math_key",
    "parse_math",
    "unwrap_text",
    "verify_math",
    "word_answer",
]

#: Longest answer string handed to math-verify's parser.
MAX_MATH_CHARS = 200

#: Largest expression tree we compare.
_MAX_NODES = 500
#: Largest number (literal, or a numeric power) we let SymPy handle, in bits: about 60
#: digits. Comparisons mixing big numbers with symbols and transcendental functions get
#: slow fast (2^{1000} y \\sin 2 takes seconds).
_MAX_NUMBER_BITS = 200
#: Largest exponent of a symbol (x^{100}).
_MAX_SYMBOL_EXPONENT = 100
#: Largest exponent of a compound base, which SymPy may expand ((x+y)^{8}).
_MAX_COMPOUND_EXPONENT = 8
#: Largest argument of a factorial, Gamma or binomial (40! has 48 digits).
_MAX_FACTORIAL = 40


class _DropTimeoutWarning(logging.Filter):
    """math-verify warns once that its timeout is off; we bound the work ourselves."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Timeout is disabled")


for _name in ("math_verify.parser", "math_verify.grader", "math_verify"):
    logging.getLogger(_name).addFilter(_DropTimeoutWarning())


def _sympy() -> Any:
    # Imported lazily (slow import) and untyped (SymPy ships no stubs).
    return importlib.import_module("sympy")


#: The ``e`` of e-notation glued to its number (``1e3``, ``1.5e-3``), which math-verify reads as
#: Euler's number (``1e3`` as 3e, ``1.5e-3`` as 1.5e - 3) while it reads ``1E3`` as 1000.
_LOWER_E_NOTATION_RE = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?|\.\d+)e(?=[-+]?\d+(?!\.?\d))")


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
    # A number written 1e3 means 1000, as the number readers take it.
    wrapped = _LOWER_E_NOTATION_RE.sub(r"\1E", _wrap(answer))
    if not wrapped or _looks_explosive(wrapped):
        return ()
    from math_verify import parse

    try:
        parsed = parse(wrapped, parsing_timeout=None)
    except Exception:  # math-verify raises assorted SymPy errors on odd input
        return ()
    if not parsed or not all(is_tame(item) for item in parsed):
        return ()
    return tuple(parsed)


_EXPLOSIVE_OPS_RE = re.compile(r"!|\\[dt]?binom|\\choose|\\Gamma|\\prod|\\sum")
_BIG_LITERAL_RE = re.compile(r"\d{5,}")
#: The exponent of a number in e-notation (``1E5``, ``2.5E-3``), without its leading zeros.
_E_EXPONENT_RE = re.compile(r"(?<=[\d.])[eE][-+]?0*(\d+)")
#: Largest exponent of e-notation handed to the parser: 10^60 has about
#: :data:`_MAX_NUMBER_BITS` bits.
_MAX_E_EXPONENT = 60


def _looks_explosive(text: str) -> bool:
    """Combinatorial operators on big literals, and e-notation with a huge exponent
    (``1E100000000``), which SymPy evaluates while *parsing* (``\\binom{10^6}{...}``; the
    decimal's every digit): rejected before the parser sees them."""
    if any(
        len(digits) > 3 or int(digits) > _MAX_E_EXPONENT for digits in _E_EXPONENT_RE.findall(text)
    ):
        return True
    return bool(_EXPLOSIVE_OPS_RE.search(text) and _BIG_LITERAL_RE.search(text))


def is_tame(expr: Any) -> bool:
    """Whether comparing ``expr`` is cheap enough to hand to SymPy.

    Rejected: trees over :data:`_MAX_NODES` nodes; unevaluated sums, products, integrals,
    limits and derivatives; power towers; powers of a compound base (``(x+1)^{1000}``: SymPy
    would expand it) above :data:`_MAX_COMPOUND_EXPONENT`; numeric powers with more than
    :data:`_MAX_NUMBER_BITS` bits, and numbers that big; factorials and Gamma of arguments over
    :data:`_MAX_FACTORIAL`.
    """
    sympy = _sympy()
    if isinstance(expr, str):
        return True
    if not isinstance(expr, sympy.Basic | sympy.MatrixBase):
        return False
    unevaluated = (sympy.Sum, sympy.Product, sympy.Integral, sympy.Limit, sympy.Derivative)
    factorials = (sympy.factorial, sympy.factorial2, sympy.gamma, sympy.binomial)
    for nodes, node in enumerate(sympy.preorder_traversal(expr), start=1):
        if nodes > _MAX_NODES or isinstance(node, unevaluated):
            return False
        if isinstance(node, sympy.Rational) and (
            abs(node.p).bit_length() > _MAX_NUMBER_BITS or node.q.bit_length() > _MAX_NUMBER_BITS
        ):
            return False
        if isinstance(node, sympy.Pow) and not _tame_power(sympy, node.base, node.exp):
            return False
        if isinstance(node, factorials) and any(
            not a.is_Number or abs(a) > _MAX_FACTORIAL for a in node.args
        ):
            return False
    return True


def _tame_power(sympy: Any, base: Any, exponent: Any) -> bool:
    if exponent.has(sympy.Pow) and any(
        isinstance(p, sympy.Pow) and p.exp.is_Number and abs(p.exp) > 1
        for p in sympy.preorder_traversal(exponent)
    ):
        return False  # a power tower
    if not exponent.is_Number:
        return True  # symbolic exponents (x^n, 2^{\\pi}) stay unevaluated
    if abs(exponent) <= 1:
        return True  # roots
    if base.is_Number:
        magnitude = abs(base)
        if magnitude in (0, 1):
            return True
        try:
            scale = math.log2(float(magnitude)) if magnitude > 1 else 1.0
            bits = float(abs(exponent)) * max(1.0, scale)
        except (OverflowError, ValueError, TypeError):
            return False
        return bits <= _MAX_NUMBER_BITS
    limit = (
        _MAX_SYMBOL_EXPONENT if base.is_Symbol or base.is_NumberSymbol else _MAX_COMPOUND_EXPONENT
    )
    return bool(abs(exponent) <= limit)


def verify_math(gold: str, answer: str) -> bool:
    """Whether ``answer`` is mathematically equal to ``gold`` (math-verify's gold-first order).

    Verbal answers (:func:`word_answer`) compare as case-insensitive words; otherwise falls
    back to whitespace-insensitive string equality when either side does not parse.
    """
    return _verify_cached(gold, answer)


@lru_cache(maxsize=65_536)
def _verify_cached(gold: str, answer: str) -> bool:
    if _squash(gold) == _squash(answer):
        return True
    gold_words, answer_words = word_answer(gold), word_answer(answer)
    if gold_words is not None and answer_words is not None:
        # SymPy would read "Evelyn" as a product of symbols, equal to any anagram.
        return gold_words == answer_words
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
    have equal keys (``0.5`` and ``\\frac{1}{2}`` both key as ``0.5``).
    """
    words = word_answer(answer)
    if words is not None:
        return words
    sympy = _sympy()
    parsed = parse_math(answer)
    if parsed and not isinstance(parsed[0], str):
        expr = parsed[0]
        # "x = 5" answers the question "x?" with 5: key it like 5 (math-verify agrees).
        if isinstance(expr, sympy.Eq) and isinstance(expr.lhs, sympy.Symbol):
            expr = expr.rhs
        if isinstance(expr, sympy.Basic) and not expr.free_symbols:
            # Parsed unevaluated ("2^{10}" stays 2**10); tame, so evaluating is cheap.
            with contextlib.suppress(Exception):
                expr = expr.doit()
        if isinstance(expr, sympy.Number) and expr.is_finite:
            # "5.4 cents" parses to Float(5.40000000000000): key numbers like plain ones.
            try:
                return canonical_number(Fraction(str(expr)))
            except (ValueError, ZeroDivisionError):
                pass
        try:
            return str(expr)
        except Exception:
            pass
    return _squash(answer)


_TEXT_WRAPPER_RE = re.compile(r"\\(?:text|textbf|textit|mathrm|mbox)\s*\{([^{}]*)\}")
_WORDS_RE = re.compile(r"[A-Za-z]+(?: [A-Za-z]+)*")


def unwrap_text(answer: str) -> str:
    """``answer`` without its ``$`` and text wrappers: ``"\\text{Evelyn}"`` -> ``"Evelyn"``."""
    return _TEXT_WRAPPER_RE.sub(lambda m: m.group(1), answer.replace("$", ""))


def word_answer(answer: str) -> str | None:
    """A verbal answer (``\\text{Evelyn}``, ``(C)``, ``east``) in lower case, else ``None``."""
    text = unwrap_text(answer)
    text = " ".join(text.split()).strip(" .")
    if text.startswith("(") and text.endswith(")"):
        text = text[1:-1].strip()
    return text.lower() if _WORDS_RE.fullmatch(text) else None


def _squash(text: str) -> str:
    return "".join(_wrap(text).strip("$").split())
