"""Low-level text helpers for locating answers in model output.

Everything here is linear in the input length (no backtracking-prone patterns), so a 1 MB
adversarial reply costs milliseconds, not minutes.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterator
from fractions import Fraction

__all__ = [
    "E_EXPONENT",
    "GROUP_SPACES",
    "MAX_NUMBER_CHARS",
    "MAX_SEGMENT_CHARS",
    "ascii_digits",
    "canonical_number",
    "clean_segment",
    "find_boxed",
    "find_labelled",
    "find_numbers",
    "has_unclear_comma",
    "last_number",
    "mixed_number",
    "parse_number",
]

#: Longest numeric literal we interpret; longer digit runs are garbage, not answers (and
#: converting them would cost quadratic time in ``int``).
MAX_NUMBER_CHARS = 64

#: Longest answer segment (after a label or inside ``\boxed{}``) we keep.
MAX_SEGMENT_CHARS = 500

#: Spaces that separate thousands ("1 000 000", as GSM8K writes "$400 000"): a space, a
#: no-break space, a thin space, a narrow no-break space.
GROUP_SPACES = " \u00a0\u2009\u202f"

#: The exponent of e-notation, glued to its number: ``1e3`` is 1000, ``1.5E-3`` is 0.0015
#: (``2e`` and ``e^{3}`` are none).
E_EXPONENT = r"[eE][-+]?\d+"

# A number: optional sign (only where it cannot be a binary minus: not after a word character
# or a closing bracket; nor are its digits after a digit and a comma: "x1,2" holds no 2), then
# an optional currency symbol ("-$5" is minus five dollars), then digits with optional
# thousands separators and decimals, or a bare ".5", then an optional exponent (e-notation,
# "1e3"; one that is no integer, "1e3.5", makes it no number, not 1), then an optional
# denominator: not one cut short ("1/23" is no 1/2) nor one that goes on as a decimal
# ("1/2.5"), but one ending a sentence ("is 3/4.", read as 3 or as 4 before); then a comma
# that separates no thousands, if any ("1,2", "1,0000", "1/2,3": a decimal comma or a list, we
# cannot tell which, so no number, not 1), with what it glues on.
# A space separates thousands only between groups of three digits after a lead of one to three
# (no leading zero), so "2 3 4" stays three numbers; not after a time ("16:30 250 people"),
# nor before a fraction's slash: "1 100/200" is the mixed number 1 1/2 ("$1 000/month" is
# 1000).
_NUMBER_RE = re.compile(
    r"(?<![\w.)\]])(?:(?P<sign>-)|(?<!\d,))(?:[$€£¥]\s?)?"
    r"(?P<body>(?:\d{1,3}(?:,\d{3})+(?!\d)"
    rf"|(?<!\d:)[1-9]\d{{0,2}}(?:[{GROUP_SPACES}]\d{{3}})+(?!\d|\s*/\s*\d)"
    r"|\d+)(?:\.\d+)?|\.\d+)"
    rf"(?P<exp>{E_EXPONENT}(?:\.\d+)?)?"
    r"(?:\s*/\s*(?P<den>\d+)(?!\d|\.\d))?"
    r"(?P<comma>(?:,\d+(?:\.\d+)?(?:/\d+)?)+)?"
)
#: Deletes thousands separators from a number's body.
_NO_SEPARATORS = str.maketrans("", "", "," + GROUP_SPACES)

_MAX_BOX_ATTEMPTS = 8

_BOXED_RE = re.compile(r"\\(?:boxed|fbox)\s*\{")

# "Final answer: X", "the correct answer is X", "Answer: X". The label must be followed by a
# colon or "is", so "Answer format: ..." and "answer1" are not labels.
_LABEL_RE = re.compile(
    r"(?P<final>final\s+answer)\s*(?:is\b)?\s*[:：]?"
    r"|\banswer\s*(?:is\b\s*[:：]?|[:：])",
    re.IGNORECASE,
)

#: A verb of checking and its object's determiner, just before a label: "We may check our
#: answer: 17 x 44 = 748", "Let's verify the answer:" begin a check of the answer, not the
#: answer ("Verified answer: 44" is a label).
_CHECKING_RE = re.compile(
    r"\b(?:re)?(?:check(?:s|ed|ing)?|verif(?:y|ies|ied|ying)|confirm(?:s|ed|ing)?"
    r"|validat(?:e|es|ed|ing)|test(?:s|ed|ing)?)\s+(?:our|my|the|this|that|your|its|their)\s+\Z",
    re.IGNORECASE,
)

#: A line that only opens a display formula or a block (``$$``, ``\\[``, ``\\begin{equation}``,
#: a code fence): the answer after a label is on the lines below it.
_OPENING_LINE_RE = re.compile(r"\$\$?|\\[\[(]|\\begin\{[A-Za-z]+\*?\}|`{3,}[\w+-]*")

_MINUS_SIGNS = {
    ord("\u2212"): "-",  # minus sign
    ord("\u2013"): "-",  # en dash
    ord("\ufe63"): "-",  # small hyphen-minus
    ord("\uff0d"): "-",  # full-width hyphen-minus
}


class _DigitMap(dict[int, str]):
    """``str.translate`` table filled lazily: Unicode decimal digits to ASCII, others kept."""

    def __missing__(self, code: int) -> str:
        char = chr(code)
        value = unicodedata.decimal(char, None)
        mapped = str(value) if value is not None else char
        self[code] = mapped
        return mapped


_DIGITS = _DigitMap({**_MINUS_SIGNS, ord("\u2044"): "/"})  # and the fraction slash: "1⁄2"

#: Unicode's vulgar fractions, as their compatibility text with a plain slash: "½" is "1/2".
_VULGAR = {
    ord(char): unicodedata.normalize("NFKC", char).replace("\u2044", "/")
    for char in "¼½¾⅐⅑⅒⅓⅔⅕⅖⅗⅘⅙⅚⅛⅜⅝⅞↉"
}
# Where a vulgar fraction follows a digit or a word, a space goes: "2½" is the mixed number
# "2 1/2", not 21/2 (a sign or a currency symbol stays glued: "-½").
_VULGAR_GLUED_RE = re.compile(f"(?<=[^\\s\\-$€£¥])(?=[{''.join(map(chr, _VULGAR))}])")


def ascii_digits(text: str) -> str:
    """Map Unicode decimal digits (Arabic-Indic, full-width, ...), minus signs and vulgar
    fractions (``"2½"`` -> ``"2 1/2"``, ``"¾"`` -> ``"3/4"``) to ASCII."""
    if text.isascii():
        return text
    return _VULGAR_GLUED_RE.sub(" ", text.translate(_DIGITS)).translate(_VULGAR)


def _number_from_match(match: re.Match[str], fraction: Fraction | None = None) -> Fraction | None:
    """The number ``match`` found, plus ``fraction`` when it is a mixed number's whole."""
    body = match.group("body").translate(_NO_SEPARATORS)
    if len(body) > MAX_NUMBER_CHARS or match.group("comma") is not None:
        return None
    value = Fraction(body) + (fraction or 0)
    exponent = match.group("exp")
    if exponent is not None:
        # Read as "1 \times 10^{3}" is: an integer exponent, bounded as a power's is.
        power = _exact_power("10", exponent[1:])
        if power is None:
            return None
        value *= power
    den = match.group("den")
    if den is not None:
        if len(den) > MAX_NUMBER_CHARS or int(den) == 0:
            return None
        value /= int(den)
    return -value if match.group("sign") else value


# Between a mixed number's whole and its fraction: spaces, as GSM8K's solutions write "3 1/2
# hours". Not a line break ("5000\n3/5 of"), nor a hyphen: GSM8K writes a subtraction so
# ("4-1.5"), never a mixed number.
_MIXED_GAP_RE = re.compile(r"[ \t]+")


def _mixed_fraction(text: str, whole: re.Match[str], part: re.Match[str]) -> Fraction | None:
    """The proper fraction ``part`` when it ends a mixed number begun by the integer ``whole``
    (``"2 1/2"``: 1/2), else ``None`` (``"2 3/2"``, ``"2.5 1/2"``, the minutes of ``"16:00
    2/3 of them"``)."""
    body, num, den = whole.group("body"), part.group("body"), part.group("den")
    start = whole.start()
    if (
        den is None
        or whole.group("den") is not None
        or any(m.group(g) is not None for m in (whole, part) for g in ("exp", "comma"))
        or not body.translate(_NO_SEPARATORS).isdigit()
        or part.start() != part.start("body")  # a sign or a currency: a number of its own
        or not num.isdigit()
        or max(len(body), len(num), len(den)) > MAX_NUMBER_CHARS
        or (start >= 2 and text[start - 1] == ":" and text[start - 2].isdigit())
        or _MIXED_GAP_RE.fullmatch(text, whole.end(), part.start()) is None
    ):
        return None
    numerator, denominator = int(num), int(den)
    return Fraction(numerator, denominator) if 0 < numerator < denominator else None


def _numbers(text: str) -> Iterator[tuple[re.Match[str], Fraction | None]]:
    """The number matches of ``text`` (ASCII digits) in order, each with the fraction that
    makes it a mixed number's whole, if any; that fraction is then no number of its own."""
    held: re.Match[str] | None = None
    for match in _NUMBER_RE.finditer(text):
        if held is not None:
            fraction = _mixed_fraction(text, held, match)
            yield held, fraction
            held = None
            if fraction is not None:
                continue
        held = match
    if held is not None:
        yield held, None


def find_numbers(text: str) -> list[Fraction]:
    """All numbers in ``text`` in order (commas as thousands separators, simple fractions,
    mixed numbers: ``"2 1/2"`` is 2.5; LaTeX's as :func:`parse_number` reads them)."""
    out: list[Fraction] = []
    for match, fraction in _numbers(ascii_digits(latex_digits(text))):
        value = _number_from_match(match, fraction)
        if value is not None:
            out.append(value)
    return out


def last_number(text: str) -> Fraction | None:
    """The last number in ``text`` (only that one is converted: cheap on huge inputs).

    LaTeX numbers are read as :func:`parse_number` reads a boxed or labelled answer
    (:func:`latex_digits`): a reply ending "the probability is $\\frac{1}{2}$." ends with
    1/2, not with the denominator 2.
    """
    text = ascii_digits(latex_digits(text))
    before: re.Match[str] | None = None
    last: re.Match[str] | None = None
    for match in _NUMBER_RE.finditer(text):
        if len(match.group("body")) <= MAX_NUMBER_CHARS:
            before, last = last, match
    if last is None:
        return None
    # A fraction ends a mixed number begun by the number before it: "1 1/2" is 1.5.
    if before is not None:
        fraction = _mixed_fraction(text, before, last)
        if fraction is not None:
            return _number_from_match(before, fraction)
    return _number_from_match(last)


def mixed_number(text: str) -> Fraction | None:
    """``text`` as a mixed number when it is one and nothing else (``"137 1/2"`` = 137.5,
    ``"-3 1/4"`` = -3.25; ``"2 3/2"`` is none)."""
    matches = _NUMBER_RE.finditer(text)
    whole, part = next(matches, None), next(matches, None)
    if whole is None or part is None or whole.start() != 0 or part.end() != len(text):
        return None
    fraction = _mixed_fraction(text, whole, part)
    return _number_from_match(whole, fraction) if fraction is not None else None


#: LaTeX between digit groups: thin, negative thin, medium and thick spaces, a control space,
#: a tie ("1\\,000", "1~000"), or a braced comma ("1{,}000", MATH's "1,\\!000"), which is a
#: comma, whatever follows: before digits other than a group of three ("1{,}5", LaTeX's
#: decimal comma) it makes no number, as "1,5" does, not 1.
_LATEX_GROUP_SPACE = re.compile(r"(?<=\d)(?:\\[,!;: ]|~)(?=\d{3}(?!\d))")
_LATEX_GROUP_COMMA = re.compile(r"(?<=\d)(?:\{,\}|,\\!)(?=\d)")
# Not after a brace ("x^{2}\\frac{1}{2}" is a product); after a digit with a space, as a mixed
# number: "2\\frac{1}{4}" is two and a quarter, not 21/4. An argument without braces is one
# digit, as TeX reads it: "\\frac12" and "\\frac{1}2" are 1/2; "\\frac123" is (1/2)3, no
# number, so a bare denominator followed by a digit is left alone.
_LATEX_FRACTION = re.compile(
    r"(?<!\})\\[dt]?frac\s*(?:\{\s*(-?\d+)\s*\}|(\d))\s*(?:\{\s*(\d+)\s*\}|(\d)(?!\d))"
)
# A fraction's argument: a braced group (three levels deep, each at most 500 characters, so
# that no input costs more than linear time), a control word or one character.
_LATEX_ARGUMENT = (
    r"(?:\{(?:[^{}]|\{(?:[^{}]|\{[^{}]{0,500}\}){0,500}\}){0,500}\}|\\[A-Za-z]+|[^\s{}\\])"
)
#: A fraction :data:`_LATEX_FRACTION` left, so no number (``\\frac{\\pi}{2}``), unless a digit
#: follows its last one-character argument (``\\frac123``, TeX's (1/2)3, is left alone).
_OTHER_FRACTION = re.compile(rf"\\[dt]?frac\s*{_LATEX_ARGUMENT}\s*{_LATEX_ARGUMENT}(?!\d)")


#: A number written as a power's base or before "\\times 10^n": digits (thousands separated by
#: commas or not) with their decimals, not the tail of a longer number or of a word.
_NUMERAL = r"(?<![\w.,])(?:(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+)"
#: A superscript or subscript: a bare digit run, as plain text writes powers ("10^6"), else
#: a TeX argument.
_SCRIPT = rf"(?:[-+]?\d+(?:\.\d+)?|{_LATEX_ARGUMENT})"
#: A root with its coefficient (``3\\sqrt{2}``, ``\\sqrt[3]{9}``, ``\\sqrt2``): no rational
#: number, so none of its digits is one.
_LATEX_ROOT = re.compile(
    r"(?:(?<![\w.,/])\d+(?:\.\d+)?(?:[ \t]*/[ \t]*\d+)?[ \t]*)?"
    rf"\\sqrt\s*(?:\[[^\[\]]{{0,500}}\]\s*)?(?:\d+(?:\.\d+)?|{_LATEX_ARGUMENT})"
)
#: A subscript (``x_{10}``, ``a_{n+1}``): an index, never a value. A numeral's base
#: (``1011_{2}``) goes with it and the numeral stays, as math-verify reads it (1011). No
#: space after the ``_``: ``_Total:_ 42`` closes an emphasis before the number.
_LATEX_SUBSCRIPT = re.compile(rf"_(?:\d+|{_LATEX_ARGUMENT})")
#: Scientific notation, ``1.5 \\times 10^{3}``: the number 1500, not 1.5 and 1000.
_SCIENTIFIC = re.compile(
    rf"(?P<mantissa>{_NUMERAL})\s*(?:\\times|\\cdot|[×·*x])\s*"
    rf"10[ \t]{{0,3}}\^[ \t]*(?P<exp>{_SCRIPT})"
)
#: A power: a number's (``2^{10}``, ``(-2)^3``, ``{2}^{10}``; not a function's value,
#: ``f(2)^2``) is its value when the exponent is an integer, ``90^\\circ`` is 90 degrees; any
#: other exponent lends no digit (``x^2``, ``e^{-2}``, ``2^{x}``), nor does the number under
#: it (``2^{1/2}``).
_LATEX_POWER = re.compile(
    rf"(?:(?P<base>{_NUMERAL}(?:{E_EXPONENT})?)|(?:\\left\s*|(?<![A-Za-z]))\(\s*(?P<round>-?{_NUMERAL})\s*"
    r"(?:\\right\s*)?\)"
    rf"|\{{\s*(?P<braced>-?{_NUMERAL})\s*\}})?[ \t]{{0,3}}\^[ \t]*(?P<exp>{_SCRIPT})"
)
_INTEGER_EXPONENT = re.compile(r"\{\s*([-+]?\d{1,4})\s*\}|([-+]?\d{1,4})")
_DEGREES = re.compile(r"\\circ|\{\s*\\circ\s*\}")
#: A product's factor: a number (with e-notation, maybe a fraction: ``\\frac{1}{2}`` is ``1/2``
#: by now), or a negative one in round brackets (``(-3)``, ``(-1/2)``; not a function's
#: value, ``f(3)``).
_FACTOR = (
    rf"(?:{_NUMERAL}(?:{E_EXPONENT})?(?:[ \t]*/[ \t]*{_NUMERAL})?"
    rf"|(?:\\left\s*|(?<![A-Za-z]))\(\s*-?{_NUMERAL}(?:[ \t]*/[ \t]*{_NUMERAL})?\s*"
    r"(?:\\right\s*)?\))"
)
#: A multiplication sign on one line (a ``*`` that begins the next line is a bullet).
_TIMES = r"[ \t]*(?:\\times(?![A-Za-z])|\\cdot(?![A-Za-z])|[×*])[ \t]*"
#: A product of plain numbers (``3 \\cdot 5``, ``3\\times2^{10}`` once the power is 1024,
#: ``3 × 5``, ``3 * 5``) with its sign (``-1 \\cdot (-1)`` is 1; a minus that is no sign, as
#: :data:`_NUMBER_RE` tells, stays: ``x - 3 \\cdot 5``), not begun by a fraction's denominator
#: (``x/2 \\cdot 3``) nor by a mixed number's or spaced thousands' last part (``2 1/2 \\cdot
#: 4``), nor ending in a factor cut short (``3 \\cdot 5x``, ``3 \\cdot 4/x``, ``3 \\times 1 500``).
_PRODUCT = re.compile(
    rf"(?<![\d/][{GROUP_SPACES}])(?<!/)(?:(?<![\w.)\]])-)?{_FACTOR}(?:{_TIMES}-?{_FACTOR})+"
    rf"(?![\w^/]|[.,]\d|[{GROUP_SPACES}]+\d)"
)
_TIMES_RE = re.compile(_TIMES)
#: A factor's brackets and spaces, dropped to read it as a number.
_FACTOR_MARKUP = re.compile(r"\\left|\\right|[()\s]")
#: Where a :data:`_PRODUCT` may be: a quick look that spares most replies the full one.
_TIMES_BETWEEN_NUMBERS = re.compile(r"[\d.)][ \t]*(?:\\times|\\cdot|[×*])[ \t]*(?:[-(\d.]|\\left)")
#: ``\\cdot`` or ``\\times`` glued to the factor after it (``3\\cdot2^{10}``, ``2\\cdot(-1)``):
#: TeX's control word ends before the digit or bracket, so the number is a power's base, and
#: the bracket no function's, all the same.
_GLUED_TIMES = re.compile(r"\\(?:cdot|times)(?=[\d.(])")

#: Greek letters written in Unicode, and infinity: symbols, as LaTeX's ``\\pi`` is.
_GREEK = "\u0391-\u03a9\u03b1-\u03c9\u221e"
#: A named symbol: a Greek letter (LaTeX's, or Unicode's standing alone) or infinity.
_NAMED_SYMBOL = (
    r"(?:\\(?:(?:var)?(?:epsilon|theta|pi|rho|sigma|phi)|alpha|beta|gamma|delta|zeta|eta|iota"
    r"|kappa|lambda|mu|nu|xi|tau|upsilon|chi|psi|omega|Gamma|Delta|Theta|Lambda|Xi|Pi|Sigma"
    r"|Upsilon|Phi|Psi|Omega|infty|ell|hbar)(?![A-Za-z])"
    rf"|(?<![^\W\d_])[{_GREEK}](?![^\W\d_]))"
)
#: After a lone letter, no word: "I" in "12 - I think so" and "a" in "12 - a dozen" are words of
#: prose, not symbols.
_NOT_BEFORE_A_WORD = r"(?![ \t]+[A-Za-z]{2})"
#: A term of an expression: a number, maybe with a symbol it multiplies (``2\\pi``, ``2 π``,
#: ``2x``: one Latin letter glued to it; ``2 x`` and ``2nd`` are a number and a word), or a
#: symbol (a named one, or a Latin letter standing alone: ``x``, not ``\\cdot``'s letters).
_TERM = (
    rf"(?:{_NUMERAL}(?:{E_EXPONENT})?(?:(?:[ \t~]|\\[,;:! ])*{_NAMED_SYMBOL}"
    r"|[A-Za-z](?![A-Za-z\d]))?"
    rf"|{_NAMED_SYMBOL}|(?<![\\A-Za-z])[A-Za-z](?![A-Za-z]){_NOT_BEFORE_A_WORD})"
)
_OPERATOR_COMMAND = r"\\(?:cdot|times|div|pm|mp)(?![A-Za-z])"
#: An arithmetic operator between two terms, on one line; not a sign after a space ("a -8" is
#: a word and a negative number, as :data:`_NUMBER_RE` reads it; "x - 8" and "x-8" are no 8).
_OPERATOR = rf"(?:[ \t]*(?:[*/×÷]|{_OPERATOR_COMMAND})[ \t]*|[-+][ \t]*|[ \t]+[-+](?![\d.])[ \t]*)"
#: Terms joined by operators: ``x/2``, ``2\\pi``, ``x + 1``, ``2/x``, ``2x``, ``\\pi r``
#: (once ``r^2`` is blanked), ``n = 2k``'s ``2k``; with a number and a symbol, it is no number.
_EXPRESSION = re.compile(rf"{_TERM}(?:{_OPERATOR}{_TERM})*")
#: Where an :data:`_EXPRESSION` may hold a number and a symbol: a digit glued to a letter or
#: before a named symbol, or an operator between a digit and a letter, one way or the other.
#: A quick look that spares most replies the full one.
_SYMBOL_NEAR_NUMBER = re.compile(
    rf"\d(?:[A-Za-z]|(?:[ \t~]|\\[,;:! ])*(?:\\[A-Za-z]|[{_GREEK}])|{_OPERATOR}[A-Za-z{_GREEK}\\])"
    rf"|[A-Za-z{_GREEK}]{_OPERATOR}[\d.]"
)
#: An expression's numbers and operator commands: what is left of it besides are its symbols.
_NUMBER_OR_OPERATOR = re.compile(rf"\d+(?:\.\d+)?(?:{E_EXPONENT})?|{_OPERATOR_COMMAND}")
_SYMBOL_CHAR = re.compile(rf"[A-Za-z{_GREEK}]")
#: A number with a unit's letter glued to it and nothing else (``5m``, ``10s``, ``2h``): the
#: one-letter units math-verify drops from an answer's end (``2x``, ``2e``, ``5L`` are
#: products to it, as they are here).
_NUMBER_AND_UNIT = re.compile(rf"{_NUMERAL}(?:{E_EXPONENT})?[cdghlmost]")


def latex_digits(text: str) -> str:
    """``text`` with LaTeX's digit-group separators made plain (``"1\\,000"``,
    ``"1{,}000"`` -> ``"1000"``, ``"1,000"``) and numeric fractions written ``a/b``
    (``"\\frac{2000}{2}"`` -> ``"2000/2"``, ``"2\\frac{1}{4}"`` -> ``"2 1/4"``, braceless
    ``"\\frac12"`` -> ``"1/2"``), other fractions blanked (``"\\frac{\\pi}{2}"``: no number):
    read as they were, "1\\,000" was the number 1 (and 1 × 0 to math-verify), "\\frac{\\pi}{2}"
    the number 2. Likewise a number's power with an integer exponent is its value
    (``"2^{10}"`` -> ``"1024"``, ``"1.5 \\times 10^{3}"`` -> ``"1500"``), and roots,
    subscripts and other exponents are blanked (``"\\sqrt{2}"``, ``"x_{10}"``, ``"x^2"``: no
    number), while ``"90^\\circ"`` is 90. A product of plain numbers is its value, LaTeX's or
    plain text's (``"3 \\cdot 5"``, ``"3 \\times 5"``, ``"3 × 5"``, ``"3 * 5"`` -> ``"15"``,
    ``"3\\cdot2^{10}"`` -> ``"3072"``), not its first factor; one whose factors together
    exceed :data:`MAX_NUMBER_CHARS` characters, or whose value does, is blanked. Last, an
    expression with a symbol and a number is blanked, as math-verify reads it a product or sum
    with the symbol: a coefficient (``"2\\pi"``, ``"2 π"``, ``"2x"``), a denominator
    (``"x/2"``), a term (``"x + 1"``); a Latin letter is a symbol standing alone or glued
    to a number, but not a one-letter unit glued to one and nothing else (``"10s"``, ``"5m"``,
    which math-verify drops) nor a word (``"2 apples"``, ``"2nd"``, ``"2 x"``)."""
    if any(mark in text for mark in "\\~{^_"):
        text = _latex_numbers(text)
    # After the powers: "3\\cdot2^{10}" is 3 × 1024, not 3 (nor 1024).
    if _TIMES_BETWEEN_NUMBERS.search(text) is not None:
        text = _PRODUCT.sub(_product, text)
    # A number in an expression with a symbol lends no digits, as one in "\\frac{\\pi}{2}"
    # does not: "2\\pi", "x/2" and "2x" are no 2.
    if _SYMBOL_NEAR_NUMBER.search(text) is None:
        return text
    return _EXPRESSION.sub(_expression, text)


def _latex_numbers(text: str) -> str:
    """:func:`latex_digits`' LaTeX part: digit groups, fractions, roots, scripts, powers."""
    text = _LATEX_GROUP_COMMA.sub(",", _LATEX_GROUP_SPACE.sub("", text))
    text = _LATEX_FRACTION.sub(_plain_fraction, text)
    # The digits of a fraction that is no number are none of the text's numbers: "$\\frac{\\pi}
    # {2}$" is no 2, as "$\\frac{1}{2}$" is no 2.
    if "frac" in text:
        text = _OTHER_FRACTION.sub(" ", text)
    # Nor are those of a root, a subscript or an exponent: "$x_{10}$" and "$\\sqrt{2}$" are
    # no 10 and no 2, and "$2^{10}$" is 1024, not 10.
    if "sqrt" in text:
        text = _LATEX_ROOT.sub(" ", text)
    if "_" in text:
        text = _LATEX_SUBSCRIPT.sub(" ", text)
    text = _GLUED_TIMES.sub(r"\g<0> ", text)
    if "^" in text:
        text = _LATEX_POWER.sub(_power, _SCIENTIFIC.sub(_scientific, text))
    return text


def _exact_power(base: str, exponent: str) -> Fraction | None:
    """``base`` (a numeral) to the power ``exponent`` when that is an integer (braced or not)
    whose magnitude times the base's characters is at most :data:`MAX_NUMBER_CHARS` (so the
    value is short to read, known before computing it: ``2^{100}`` is ``None``), else
    ``None``."""
    match = _INTEGER_EXPONENT.fullmatch(exponent)
    if match is None:
        return None
    power = int(match.group(1) or match.group(2))
    # The value has at most |power| times the base's digits: checked before computing it.
    if abs(power) * len(base) > MAX_NUMBER_CHARS:
        return None
    value = _numeral(base)
    if value == 0 and power < 0:
        return None
    return value**power


def _numeral(text: str) -> Fraction:
    """A :data:`_NUMERAL` (with a sign, maybe) as a number: ``"1,500.5"`` is 1500.5."""
    return Fraction(text.replace(",", ""))


def _written(match: re.Match[str], value: Fraction | None) -> str:
    """``value`` in place of ``match`` (a space if it is ``None`` or too long to read), apart
    from a word or a digit on either side: "x(-2)^3" is no "x-8", "2^{3}4" no 84."""
    text = canonical_number(value) if value is not None else ""
    if not text or len(text) > MAX_NUMBER_CHARS:
        return " "
    string, start, end = match.string, match.start(), match.end()
    left = " " if start > 0 and (string[start - 1].isalnum() or string[start - 1] == "_") else ""
    right = " " if end < len(string) and string[end].isdigit() else ""
    return f"{left}{text}{right}"


def _scientific(match: re.Match[str]) -> str:
    power = _exact_power("10", match.group("exp"))
    # "1.5 \\times 10^{x}" is no number: neither 1.5 nor 10 is lent.
    return _written(match, None if power is None else _numeral(match.group("mantissa")) * power)


def _expression(match: re.Match[str]) -> str:
    """An :data:`_EXPRESSION` as is, or blanked when it holds a number and a symbol."""
    text = match.group()
    if not any(char.isdigit() for char in text) or _NUMBER_AND_UNIT.fullmatch(text):
        return text  # a symbol alone ("x"; "3 x" is no product), a number and its unit
    if _SYMBOL_CHAR.search(_NUMBER_OR_OPERATOR.sub(" ", text)) is None:
        return text  # numbers alone: "1/2", "10 - 4"
    return _written(match, None)


def _product(match: re.Match[str]) -> str:
    factors = [_FACTOR_MARKUP.sub("", factor) for factor in _TIMES_RE.split(match.group())]
    # The value has at most as many digits as its factors together, e-notation's aside (bounded
    # as a power is, :func:`_exact_power`): bounded before computing it.
    if sum(len(factor) for factor in factors) > MAX_NUMBER_CHARS:
        return _written(match, None)
    value: Fraction | None = Fraction(1)
    for factor in factors:
        number = _NUMBER_RE.fullmatch(factor)
        read = _number_from_match(number) if number is not None else None
        value = None if read is None or value is None else value * read
    return _written(match, value)


def _power(match: re.Match[str]) -> str:
    base = match.group("base") or match.group("round") or match.group("braced")
    if base is None or "e" in base.lower():
        # A symbol's or a group's exponent ("x^2", "(x+1)^{2}", "e^{i\\pi}"); one of e-notation
        # ("1e3^2") goes with it, not read as 1e3.
        return " "
    if _DEGREES.fullmatch(match.group("exp")):
        return _written(match, _numeral(base))
    return _written(match, _exact_power(base, match.group("exp")))


def _plain_fraction(match: re.Match[str]) -> str:
    glued = match.start() > 0 and match.string[match.start() - 1].isdigit()
    numerator = match.group(1) or match.group(2)
    denominator = match.group(3) or match.group(4)
    return f"{' ' if glued else ''}{numerator}/{denominator}"


def parse_number(text: str) -> Fraction | None:
    """The first number in a short answer such as ``"$1,234.50"``, ``"-3/4"``, ``"18 eggs"``,
    ``"1\\,000"`` (:func:`latex_digits`), ``"2 1/2 hours"`` (a mixed number: 2.5), ``"1.5e3"``
    (e-notation: 1500).

    ``None`` when that number's comma separates no thousands (``"1,2"``, ``"-2,3"``,
    ``"1,0000"``; :func:`has_unclear_comma`), not its first digits.
    """
    for match, fraction in _numbers(ascii_digits(latex_digits(text))):
        if match.group("comma") is not None:
            return None
        value = _number_from_match(match, fraction)
        if value is not None:
            return value
    return None


def has_unclear_comma(text: str) -> bool:
    """Whether a number in ``text`` has a comma that separates no thousands (``"1,2"``,
    ``"1,23"``, ``"-2,3"``, ``"1,0000"``, LaTeX's ``"1{,}5"``): a decimal comma or a list of
    numbers, which cannot be told apart (``"1,500"`` is 1500), so no one number."""
    text = ascii_digits(latex_digits(text))
    return any(match.group("comma") is not None for match in _NUMBER_RE.finditer(text))


def canonical_number(value: Fraction) -> str:
    """Shortest exact text of a number: ``"18"``, ``"-2.5"``, ``"1/3"``."""
    if value.denominator == 1:
        return str(value.numerator)
    den = value.denominator
    twos = fives = 0
    while den % 2 == 0:
        den //= 2
        twos += 1
    while den % 5 == 0:
        den //= 5
        fives += 1
    if den != 1:
        return f"{value.numerator}/{value.denominator}"
    places = max(twos, fives)
    scaled = abs(value.numerator) * (10**places // value.denominator)
    digits = str(scaled).rjust(places + 1, "0")
    sign = "-" if value < 0 else ""
    return f"{sign}{digits[:-places]}.{digits[-places:]}".rstrip("0").rstrip(".")


def find_boxed(text: str) -> tuple[int, str] | None:
    """The last complete ``\\boxed{...}`` (or ``\\fbox{...}``): its position and content.

    Braces nest (``\\boxed{\\frac{1}{2}}``); an unclosed box, e.g. a reply cut off by
    ``max_tokens``, is skipped in favour of an earlier complete one.
    """
    starts = [m.end() for m in _BOXED_RE.finditer(text)]
    # Only the last few boxes are tried: a flood of unclosed boxes must not cost
    # (boxes x scan length).
    for start in reversed(starts[-_MAX_BOX_ATTEMPTS:]):
        depth = 1
        index = start
        limit = min(len(text), start + 4 * MAX_SEGMENT_CHARS)
        while index < limit:
            char = text[index]
            if char == "\\":
                index += 2  # skip escaped characters such as \{ and \}
                continue
            if char == "{":
                depth += 1
            elif char == "}":
                depth -= 1
                if depth == 0:
                    return start, text[start:index]
            index += 1
    return None


def find_labelled(
    text: str, *, final: bool = True, prose: Callable[[str], bool] | None = None
) -> tuple[int, str] | None:
    """The text after the last answer label (``Final answer:`` wins over ``Answer:``; with
    ``final=False``, the last label that is not a ``Final answer``).

    Returns the label's position and the rest of its line, or the next non-empty line when
    the label ends its line (``"Answer:\\n42"``); a line that only opens a display formula or a
    block is passed over (``"Answer:\\n$$\\n42\\n$$"``: 42, not ``"$$"``). A label after a verb
    of checking (``"We may check our answer: ..."``) is prose, no label, and so is one whose
    text ``prose`` calls prose (a verdict on an answer: ``"so our answer is correct"``): the
    label before it is read.
    """
    finals: list[re.Match[str]] = []
    plains: list[re.Match[str]] = []
    for match in _LABEL_RE.finditer(text):
        (finals if match.group("final") else plains).append(match)
    for matches in (finals, plains) if final else (plains,):
        for match in reversed(matches):
            start = match.start()
            if _CHECKING_RE.search(text[max(0, start - 40) : start]):
                continue
            segment = _label_segment(text, match.end())
            if prose is None or not prose(segment):
                return start, segment
    return None


def _label_segment(text: str, end: int) -> str:
    """The answer after a label ending at ``end``: the rest of its line, else the next line
    that is not empty nor only opens a formula or a block (see :func:`find_labelled`)."""
    rest = text[end : end + 4 * MAX_SEGMENT_CHARS]
    for line in rest.split("\n"):
        # The emphasis that closes a bold label ("**Answer:** 1/2") is not the answer's.
        line = line.strip().lstrip("*_").strip()
        if line and not _OPENING_LINE_RE.fullmatch(line):
            return line[:MAX_SEGMENT_CHARS]
    return ""


_WRAPPERS = (
    ("$", "$"),
    ("\\(", "\\)"),
    ("\\[", "\\]"),
    ("**", "**"),
    ("*", "*"),
    ("`", "`"),
)


def clean_segment(segment: str) -> str:
    """Strip markup around an answer: ``$...$``, ``**...**``, ``*...*``, ``\\(...\\)``,
    emphasis left open at one end, trailing dots."""
    text = segment.strip()[:MAX_SEGMENT_CHARS]
    changed = True
    while changed and text:
        changed = False
        stripped = text.rstrip(" .;,。").strip()
        if stripped != text:
            text, changed = stripped, True
        # Emphasis left open at one end ("**Answer: 5**" leaves "5**").
        unpaired = text.strip("*").strip()
        superscript = text.endswith(("^*", "_*"))  # a conjugate or dual: x^*, not emphasis
        if (
            unpaired != text
            and text.startswith("*") != text.endswith("*")
            and unpaired
            and not superscript
        ):
            text, changed = unpaired, True
        for left, right in _WRAPPERS:
            if (
                len(text) >= len(left) + len(right)
                and text.startswith(left)
                and text.endswith(right)
            ):
                inner = text[len(left) : len(text) - len(right)].strip()
                if inner:
                    text, changed = inner, True
        # "[42]" echoes the prompt's "[your answer]" placeholder; "[1, 2]" is an interval.
        if text.startswith("[") and text.endswith("]") and "," not in text:
            inner = text[1:-1].strip()
            if inner:
                text, changed = inner, True
    return text
