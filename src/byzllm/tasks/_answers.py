"""Answer extraction from model text, normalization and equivalence, per task kind.

``extract_answer`` finds *where* the answer is in a reply; ``normalize_answer`` turns a short
answer into a canonical key; ``answers_equivalent`` and ``is_correct`` compare. The rules:

* **location** — the later of the last complete ``\\boxed{...}`` and the last answer label
  (``Final answer:`` is preferred over ``Answer:`` / ``the correct answer is``), then the
  other; a box or label holding no answer is no answer (no scan), and a label whose text is
  a verdict on an answer (``"so our answer is correct"``) or that follows a verb of checking
  (``"We may check our answer: ..."``) is no label; without either, a
  kind-specific scan of the whole reply: the last number (``number``, ``math``;
  LaTeX's read as in a box: ``$\\frac{1}{2}$`` is 1/2, not 2), the last true/false/yes/no
  word (``boolean``), the last explicit choice label (``choice``);
* **number** — exact rational equality after stripping currency, thousands separators and
  units: ``"$1,234"``, ``"$1 234"``, ``"1234.0"`` and ``"1234 dollars"`` are equal (a space
  joins groups of three digits only: ``"2 3 4"`` is three numbers); a mixed number is one
  number (``"2 1/2 hours"`` is 2.5); so is e-notation (``"1e3"`` is 1000, for ``math`` too)
  and a product of numbers (``"3 \\cdot 5"`` is 15, not 3; :func:`._text.latex_digits`),
  while an expression with a symbol is no number (``"2\\pi"``, ``"x/2"``, ``"2x"``: no
  answer, not 2; a unit's letter glued to a number, ``"10s"``, stays its unit, as
  math-verify reads both); a comma between digits other than thousands (``"1,2"``: a
  decimal comma or a list) makes no answer, neither 1 nor 1.2;
* **boolean** — ``true``/``yes`` and ``false``/``no``, any case;
* **choice** — the Commonsense170k labels (``option1``, ``answer2``, ``solution1``,
  ``ending3``) written with any case or spacing, or, when the answer is nothing else, a
  bare number (``"2"``, ``"(2)"``) or letter (``"B"``) naming a choice by position;
* **math** — math-verify (see :mod:`._math`), with an exact-number fast path; a percentage
  is its number on both sides (``"50\\%"`` is 50, never 0.5: :func:`_math_text`).

Every function accepts arbitrary (hostile, huge) text and never raises on it.
"""

from __future__ import annotations

import re
from fractions import Fraction
from functools import partial

from ._math import math_key, unwrap_text, verify_math
from ._text import (
    E_EXPONENT,
    GROUP_SPACES,
    MAX_SEGMENT_CHARS,
    ascii_digits,
    canonical_number,
    clean_segment,
    find_boxed,
    find_labelled,
    has_unclear_comma,
    last_number,
    latex_digits,
    mixed_number,
    parse_number,
)
from ._types import Task

__all__ = [
    "MAX_TEXT_CHARS",
    "answers_equivalent",
    "extract_answer",
    "is_correct",
    "normalize_answer",
]

#: Longest reply tail :func:`extract_answer` reads.
MAX_TEXT_CHARS = 100_000

_BOOLEAN_WORDS = {"true": "true", "yes": "true", "false": "false", "no": "false"}
_BOOLEAN_RE = re.compile(r"\b(true|false|yes|no)\b", re.IGNORECASE)
_LABEL_RE = re.compile(r"\b([a-z]+)[\s_-]?(\d{1,2})\b", re.IGNORECASE)
_POSITION_RE = re.compile(r"^[\(\[]?\s*([0-9]{1,2}|[A-Za-z])\s*[\)\]\.:]?$")
# "2 because ...": a leading number names a position; a leading letter does not ("A person").
_LEADING_DIGIT_RE = re.compile(r"^[\(\[]?([0-9]{1,2})[\)\]\.:,]?(?:\s|$)")


# --- boolean ------------------------------------------------------------------------------


def _boolean(text: str, *, last: bool) -> str | None:
    matches = _BOOLEAN_RE.findall(text)
    if not matches:
        return None
    return _BOOLEAN_WORDS[(matches[-1] if last else matches[0]).lower()]


# --- choice -------------------------------------------------------------------------------


def _split_label(label: str) -> tuple[str, int] | None:
    match = re.fullmatch(r"([A-Za-z]+)(\d+)", label.strip())
    if match is None:
        return None
    return match.group(1).lower(), int(match.group(2))


def _choice_from_label(task: Task, prefix: str, number: int) -> str | None:
    for choice in task.choices:
        split = _split_label(choice)
        if split is not None and split == (prefix.lower(), number):
            return choice
    return None


def _choice_by_position(task: Task, token: str) -> str | None:
    """``"2"`` or ``"B"``: the choice at that (1-based) position, for numbered labels only."""
    if not task.choices or not all(_split_label(c) for c in task.choices):
        return None
    if token.isdigit():
        index = int(token)
    elif len(token) == 1 and token.isalpha() and token.isascii():
        index = ord(token.upper()) - ord("A") + 1
    else:
        return None
    for choice in task.choices:
        split = _split_label(choice)
        if split is not None and split[1] == index:
            return choice
    return None


def _choice(task: Task, text: str, *, last: bool) -> str | None:
    """A choice named in ``text``: an explicit label, else (short answers only) a position."""
    lowered = {c.lower(): c for c in task.choices}
    compact = text.strip().lower()
    if compact in lowered:
        return lowered[compact]
    found: list[str] = []
    for match in _LABEL_RE.finditer(ascii_digits(text)):
        choice = _choice_from_label(task, match.group(1), int(match.group(2)))
        if choice is not None:
            found.append(choice)
    if found:
        return found[-1] if last else found[0]
    cleaned = clean_segment(text)
    # An option's own text first: "24 hours" or "4" may be an option's words, not a position,
    # and both sides lose the same trailing dot ("Use a pot." against "use a pot").
    texts = task.meta.get("choice_texts") if isinstance(task.meta, dict) else None
    if isinstance(texts, dict):
        wanted = cleaned.lower()
        hits = [str(k) for k, body in texts.items() if clean_segment(str(body)).lower() == wanted]
        if len(hits) == 1 and hits[0] in task.choices:
            return hits[0]
    position = _POSITION_RE.match(cleaned) or _LEADING_DIGIT_RE.match(cleaned)
    if position is not None:
        token = position.group(1)
        # Letter labels ("Answer format: A/B/C/D") are their own token: "(C)" and "C." name
        # the choice c, which only the bare "C" did.
        return lowered.get(token.lower()) or _choice_by_position(task, token)
    return None


# --- per-kind interpretation of a located answer ------------------------------------------


def _interpret(task: Task, segment: str) -> str | None:
    """Canonical form of a short, located answer (``None``: not an answer of this kind)."""
    if task.kind == "number":
        # "5 + 3 = 8": the result follows the last equals sign, but not one of a remark in
        # brackets: "120 minutes (= 2 hours)" and "45 (cost = 3 x 15)" answer 120 and 45.
        outside = _outside_brackets(segment)
        # "1,2" and "5 + 3 = 1,2" are a decimal comma or a list: no answer, not 1 nor 5.
        if has_unclear_comma(outside):
            return None
        value = parse_number(outside.rsplit("=", 1)[-1]) if "=" in outside else None
        if value is None:
            value = parse_number(segment)
        return canonical_number(value) if value is not None else None
    if task.kind == "boolean":
        return _boolean(segment, last=False)
    if task.kind == "choice":
        return _choice(task, segment, last=False)
    return _math_segment(segment)


def _outside_brackets(text: str) -> str:
    """``text`` without what round or square brackets enclose (an unclosed one runs to the
    end): ``"(5 + 3) = 8 (check: 4 + 4 = 8)"`` -> ``" = 8 "``."""
    kept: list[str] = []
    depth = 0
    for char in text:
        if char in "([":
            depth += 1
        elif char in ")]" and depth:
            depth -= 1
        elif not depth:
            kept.append(char)
    return "".join(kept)


# An escaped dollar (``$\\$36$``) is money inside the formula, not its end.
_INLINE_MATH_RE = re.compile(
    r"(?<!\\)\$\$?((?:\\\$|[^$]){1,500}?)(?<!\\)\$\$?|\\\((.{1,500}?)\\\)|\\\[(.{1,500}?)\\\]"
)
# A number, then prose or a remark: "6 (or 5)", "5 (since 2+3=7)" are 6 and 5, not the
# last number math-verify would find in the remark. A mixed number is one number: "2 1/2
# hours" and "2½ hours" are 2.5 (math-verify read 1.5 and 2); so is one with spaced
# thousands: "1 000 dollars" is 1000, as for ``number`` (math-verify read 1 × 0 × dollars), and
# one in e-notation: "1e3 dollars".
_VULGAR_CHARS = "\u00bc-\u00be\u2150-\u215e"  # ¼ to ¾, ⅐ to ⅞
_NUMBER_THEN_WORDS_RE = re.compile(
    rf"^(-?(?:[\d.,/]+(?:[{GROUP_SPACES}]\d{{3}}(?!\d))*(?:\.\d+)?(?:{E_EXPONENT})?"
    rf"(?:[ \t]+\d+/\d+|[ \t]*[{_VULGAR_CHARS}])?|[{_VULGAR_CHARS}]))"
    r"\s+(?:[A-Za-z]|[(\[;]).*$",
    re.DOTALL,
)
#: Characters that are markup or punctuation, never an answer alone (``∅`` and ``∞`` are).
_MARKUP_ONLY = "$*_`~ \t.,;:!?'\"()[]{}"
#: The prompts' own placeholder, echoed back instead of an answer.
_PLACEHOLDER_RE = re.compile(r"^\[?\s*your\b[^\]]{0,40}\banswer\s*\]?$", re.IGNORECASE)


def _math_segment(segment: str) -> str | None:
    """The math in a labelled segment: its first inline formula, a number before prose, or
    the whole cleaned segment (``"$\\frac{1}{2}$ because ..."`` → ``"\\frac{1}{2}"``)."""
    inline = _INLINE_MATH_RE.search(segment)
    if inline is not None:
        formula = next(g for g in inline.groups() if g is not None).strip()
        if formula:
            return clean_segment(formula) or None
    cleaned = clean_segment(segment)
    if _PLACEHOLDER_RE.match(cleaned) or not cleaned.strip(_MARKUP_ONLY):
        return None  # "[your numerical answer]", "$", "**": nothing was answered
    words = _NUMBER_THEN_WORDS_RE.match(cleaned)
    if words is not None:
        return words.group(1).rstrip(".,") or None
    return cleaned or None


#: A label's text that judges an answer instead of giving one: a judgement word first, maybe
#: after adverbs ("so our answer is correct.", "the answer is indeed right", "Final answer:
#: **valid**").
_VERDICT_RE = re.compile(
    r"[\s*_$]*(?:(?:also|indeed|still|now|then|thus|hence|therefore|so|not|quite|very|clearly"
    r"|definitely|certainly|surely|probably|likely)\s+)*"
    r"(?P<word>(?:in)?correct|right|wrong|true|false|(?:in)?valid|(?:un)?reasonable"
    r"|(?:in)?consistent|(?:in)?accurate|plausible|confirmed|verified)(?![\w-])",
    re.IGNORECASE,
)


def _is_verdict(task: Task, segment: str) -> bool:
    """Whether a label's text is a verdict on an answer, not an answer: ``"correct"`` in
    "Answer: 44. 4 x 11 = 44, so our answer is correct." (MATH's worked solutions end so).

    A word that answers the task is no verdict: ``true`` to a ``boolean`` task, an option's own
    text to a ``choice`` task (Social IQa has options "right", "wrong", "consistent")."""
    match = _VERDICT_RE.match(segment)
    if match is None:
        return False
    return task.kind == "math" or _interpret(task, match.group("word")) is None


def _scan(task: Task, text: str) -> str | None:
    """Fallback when nothing is boxed or labelled: the last candidate in the whole text."""
    if task.kind in ("number", "math"):
        number = last_number(text)
        return canonical_number(number) if number is not None else None
    if task.kind == "boolean":
        return _boolean(text, last=True)
    return _choice_scan(task, text)


def _choice_scan(task: Task, text: str) -> str | None:
    if len(text) <= 16:  # a bare "B" or "2" reply
        return _choice(task, text, last=True)
    found: str | None = None
    for match in _LABEL_RE.finditer(ascii_digits(text)):
        choice = _choice_from_label(task, match.group(1), int(match.group(2)))
        if choice is not None:
            found = choice
    return found


# --- public API ---------------------------------------------------------------------------


def extract_answer(task: Task, text: str, *, scan: bool = True) -> str | None:
    """The final answer in a model reply, or ``None`` when there is none.

    Looks at the later of the last ``\\boxed{}`` and the last answer label, then the earlier
    one; without either (and unless ``scan=False``) scans the whole reply (see the module
    docstring). A box or label holding no answer of the task's kind is no answer (``None``),
    whatever the reasoning wrote before it, though when a ``final answer`` holds none the last
    ``Answer:`` label is read. A label whose text is a verdict on an answer (``"Answer: 44 ...
    so our answer is correct."``; :func:`_is_verdict`) is passed over for the label before
    it. A reply longer than :data:`MAX_TEXT_CHARS` is read from its tail only. ``number``,
    ``boolean`` and ``choice`` answers come back canonical (``"18"``, ``"true"``,
    ``"option2"``); ``math`` answers come back as written (LaTeX), stripped of
    ``$``/markdown wrappers and trailing punctuation.
    """
    if not isinstance(text, str) or not text.strip():
        return None
    # Final answers sit at the end of a reply; a huge reply is read from its tail only.
    text = text[-MAX_TEXT_CHARS:]
    boxed = find_boxed(text)
    # "Answer: 44. ... so our answer is correct.": the verdict is prose, not a later answer
    # overriding 44 (as "correct"; to a number task, as no answer).
    verdict = partial(_is_verdict, task)
    labelled = find_labelled(text, prose=verdict)
    candidates = sorted(
        (c for c in (boxed, labelled) if c is not None), key=lambda c: c[0], reverse=True
    )
    if labelled is not None:
        # "Answer: 42 ... This is my final answer.": a "final answer" in prose holds none, and
        # the last plain label is read after it.
        plain = find_labelled(text, final=False, prose=verdict)
        if plain is not None and plain[0] != labelled[0]:
            candidates.append(plain)
    for _, segment in candidates:
        answer = _interpret(task, segment[:MAX_SEGMENT_CHARS])
        if answer is not None:
            return answer
    # A box or label that holds no answer ("Answer: \\text{none}", the prompt's placeholder
    # echoed, a verdict with no answer before it: "The answer is correct.") is no answer,
    # which the agents count as a parse fall-back; the reasoning's last number is not what the
    # reply answered. The scan is for replies with neither.
    if not scan or candidates or find_labelled(text) is not None:
        return None
    return _scan(task, text)


def normalize_answer(task: Task, text: str | None) -> str | None:
    """A canonical key of a short answer: equal keys mean the same answer.

    ``number`` → shortest exact number (``"1,000.0"`` → ``"1000"``, ``"0.5"`` → ``"0.5"``);
    ``boolean`` → ``"true"``/``"false"``; ``choice`` → the label as listed in
    ``task.choices``, named by a label (``"Option 2"``, ``"(answer3)"``), by the text of
    exactly one option in ``task.meta["choice_texts"]`` (``{"option1": "Use a pot.", ...}``,
    as the Commonsense loader fills it: ``"use a pot"`` → ``"option1"``, case and a trailing
    dot and markup aside), else by a position (``"2"``, ``"(B)"``, ``"2 because ..."``);
    ``math`` → a number's shortest exact form when the answer evaluates to a
    rational (``"\\frac{1}{2}"``, ``"0.5"`` → ``"0.5"``; ``"2^{10}"`` → ``"1024"``; ``"50\\%"`` →
    ``"50"``), a verbal answer in lower case (``"\\text{Evelyn}"`` → ``"evelyn"``), else SymPy's
    text of math-verify's parse (``"\\sqrt{2}"`` → ``"sqrt(2)"``; ``"x = 5"`` → ``"5"``), else
    the answer without whitespace. ``None`` when the text is not an answer of the task's kind.
    Depends only on ``task.kind``, ``task.choices`` and, for ``choice``,
    ``task.meta["choice_texts"]``.
    """
    if text is None or not isinstance(text, str):
        return None
    segment = text.strip()
    if not segment or len(segment) > MAX_SEGMENT_CHARS:
        return None
    if task.kind == "math":
        cleaned = _math_text(segment)
        if not cleaned:
            return None
        number = _plain_number(cleaned)
        return canonical_number(number) if number is not None else math_key(cleaned)
    if task.kind == "choice":
        return _choice(task, segment, last=False)
    return _interpret(task, segment)


#: Spaces, LaTeX's included (``\\,``, ``\\ ``, ``~``).
_SPACES = r"(?:\s|\\[,;:! ]|~)*"
# A percent word after a number or a closing brace ("50 percent", "50\\text{ percent}",
# "50\\text{\\%}"), else a percent sign anywhere ("50\\%", "50 %", "(10\\%, 20\\%)"): the
# forms math-verify reads as a percentage.
_PERCENT_RE = re.compile(
    rf"(?<=[\d}}]){_SPACES}(?:\\(?:text|textrm|mathrm|mbox)\s*\{{\s*(?:\\?%|percent(?:age)?|pct)"
    rf"\s*\}}|(?:percent(?:age)?|pct)\b)|{_SPACES}\\?%",
    re.IGNORECASE,
)


def _math_text(text: str) -> str:
    """A math answer (or gold) as compared and keyed: markup stripped (:func:`clean_segment`)
    and its percentages read as their numbers, ``"50\\%"`` as ``"50"``.

    One rule for keys and judgements, so that two answers with one key are both right or both
    wrong: a percent sign is a unit, dropped like ``number``'s units. Not ``50\\% = 0.5``:
    every question in MATH-500 and GSM8K that asks for a percentage has the percentage's
    number as its gold (``10``, ``60``; none writes ``\\%``), and MATH's own grader strips
    ``\\%`` alike. math-verify, left alone, had ``50\\%`` right against both ``50`` and
    ``\\frac{1}{2}`` while its key was ``50``.
    """
    cleaned = clean_segment(text)
    dropped = _PERCENT_RE.sub("", cleaned)
    # "%" alone is kept: an answer of nothing but a unit stays a (wrong) answer.
    return clean_segment(dropped) if dropped != cleaned and dropped.strip() else cleaned


#: A whole, a space, a fraction (``"137 1/2"``, after :func:`latex_digits` read
#: ``"137 \\frac{1}{2}"``; ``"1 000 1/2"``): a mixed number, or nothing plain.
_MIXED_NUMBER_RE = re.compile(rf"-?(?:\d{{1,3}}(?:[,{GROUP_SPACES}]\d{{3}})+|\d+)\s+\d+/\d+")
#: A number in e-notation and nothing else, glued as written: ``1.5e-3`` (``2e - 3`` is 2e − 3).
_E_NOTATION_RE = re.compile(rf"-?(?:(?:\d{{1,3}}(?:,\d{{3}})+|\d+)(?:\.\d+)?|\.\d+){E_EXPONENT}")
#: Deletes spaces: between digits, LaTeX typesets nothing (``$1 000$`` is 1000).
_NO_SPACES = str.maketrans("", "", GROUP_SPACES)


def _plain_number(text: str) -> Fraction | None:
    """``text`` as a number when it is nothing but one (``"-3"``, ``"1,000"``, ``"2/3"``,
    LaTeX's ``"1\\,000"`` and ``"1{,}000"``, a mixed number ``"137 \\frac{1}{2}"`` = 137.5, a
    number in a text wrapper ``"\\text{0.5}"``, e-notation ``"1e3"`` = 1000, as ``number``
    reads it; math-verify read ``3e`` for ``1e3``)."""
    # math-verify parses "\text{0.5}" as a symbol named 0.5: keyed "0.5", judged wrong.
    cleaned = latex_digits(ascii_digits(unwrap_text(text.replace("\\$", "")))).strip()
    if _MIXED_NUMBER_RE.fullmatch(cleaned):
        # Without its space "137 1/2" read as 1371/2 (MATH-500's gold 137 \frac{1}{2}); "2 3/2"
        # is no mixed number (None): left to math-verify.
        return mixed_number(cleaned)
    if _E_NOTATION_RE.fullmatch(cleaned):
        return parse_number(cleaned)
    cleaned = cleaned.translate(_NO_SPACES)
    if not re.fullmatch(r"-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:/\d+)?|-?\.\d+", cleaned):
        return None
    return parse_number(cleaned)


def answers_equivalent(task: Task, a: str | None, b: str | None) -> bool:
    """Whether two (extracted) answers are the same answer to ``task``; ``None`` equals nothing.

    Symmetric. For ``math``, equal as numbers, or math-verify accepts either one as the gold
    for the other.
    """
    if a is None or b is None:
        return False
    if task.kind == "math":
        if len(a) > MAX_SEGMENT_CHARS or len(b) > MAX_SEGMENT_CHARS:
            return False
        clean_a, clean_b = _math_text(a), _math_text(b)
        if not clean_a or not clean_b:
            return False
        num_a, num_b = _plain_number(clean_a), _plain_number(clean_b)
        if num_a is not None and num_b is not None:
            return num_a == num_b
        return verify_math(clean_a, clean_b) or verify_math(clean_b, clean_a)
    key_a = normalize_answer(task, a)
    return key_a is not None and key_a == normalize_answer(task, b)


def is_correct(task: Task, answer: str | None) -> bool:
    """Whether ``answer`` (already extracted) matches the task's ground truth.

    For ``math`` the ground truth is math-verify's *gold* argument (``verify(gold, answer)``;
    the order matters for sets/intervals and equations); its parse is cached per task answer.
    """
    if answer is None:
        return False
    if task.kind != "math":
        return answers_equivalent(task, task.answer, answer)
    if len(answer) > MAX_SEGMENT_CHARS:
        return False
    gold, cleaned = _math_text(task.answer), _math_text(answer)
    if not cleaned:
        return False
    num_gold, num_answer = _plain_number(gold), _plain_number(cleaned)
    if num_gold is not None and num_answer is not None:
        return num_gold == num_answer
    return verify_math(gold, cleaned)
