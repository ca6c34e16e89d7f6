"""Reading fishers' replies: the catch decision and the amounts an utterance mentions.

The catch prompt asks for a final line ``Answer: N tons`` (GovSim's fishers end their harvest
reasoning the same way, Piatti et al. 2024). :func:`read_catch` never raises; it reads, in
order of preference,

1. the number after the **last** ``Answer:`` (case-insensitive); a reply whose last label
   has no number after it (``"Answer: N tons"`` copied from the prompt, ``"Answer: none"``)
   is invalid, whatever numbers its reasoning wrote before the label;
2. without the label, the **last** number of the reply.

The amount is in tons; a decimal is rounded down to whole tons (GovSim counts whole tons); a
minus sign touches its digits (``"-8"``), so a Markdown list item ``"- 8 tons"`` is 8. The
action set is ``a ∈ [0, R_j]`` (the rogue-agents paper, §4.1), so a negative amount or one
above the stock now in the lake is *invalid*, as is a reply with no number at all (``"lots"``)
or an empty reply: the parser then returns the documented default, :data:`FALLBACK_CATCH` (0
tons: a fisher who gives no valid amount catches nothing that month), with ``fell_back`` set
and the reason, so that the runs count it (parse health, stage ``catch``). Only the first
:data:`MAX_REPLY_CHARS` characters of a reply after a reasoning model's thinking are read (a
1 MB reply costs no more than that).

:func:`find_amounts` lists every amount an utterance writes (integers, with the character span
of each), for the simulated fishers' reading of a discussion and for the monitor's decision
positions (§4.1: "all the positions corresponding to mentions of resource amounts"). Numbers
that name something else are not amounts: a month by its number (``"month 3"``), a count of
months or fishers (``"2 months"``, ``"5 fishers"``), a percentage (``"50%"``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from byzllm.agents._parsed import Parsed
from byzllm.agents._thinking import after_thinking

__all__ = [
    "FALLBACK_CATCH",
    "MAX_AMOUNT_DIGITS",
    "MAX_REPLY_CHARS",
    "ParsedCatch",
    "find_amounts",
    "read_catch",
]

#: The catch of a fisher whose reply gave no valid amount (tons).
FALLBACK_CATCH = 0
#: How much of a reply the parsers read.
MAX_REPLY_CHARS = 20_000
#: Longer digit runs are not amounts (an enormous number is invalid, not an overflow).
MAX_AMOUNT_DIGITS = 9

# A number: thousands groups first ("1,000" is a thousand, not 1.0: a catch far above the
# stock read as one ton, unflagged), else digits with a decimal point or comma ("2,5").
# The minus may be Unicode's (U+2212): "−5 tons" is negative, not 5. A sign touches its
# digits: a dash and a space before a number is a Markdown list item ("- 8 tons each"), whose
# amount is 8, not a negative catch.
_NUMBER = re.compile(
    r"(?<![\w.])([-\u2212])?(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:[.,]\d+)?)(?![\w])"
)
_THOUSANDS = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?")
# Numbers an utterance writes that are not amounts of fish (§4.1 reads "mentions of resource
# amounts"): a month or round named by its number ("month 3"), or a count of months, fishers
# or a percentage ("2 months", "5 fishers", "5 of us", "50%").
_NOT_AMOUNT_BEFORE = re.compile(r"\b(?:month|round|week|year|day)s?\s*#?\s*$", re.IGNORECASE)
_NOT_AMOUNT_AFTER = re.compile(
    r"^\s*(?:%|per\s*cent\b|of\s+us\b|(?:months?|rounds?|weeks?|years?|days?|fishers?|"
    r"fisherm[ae]n|people|persons?|times?)\b)",
    re.IGNORECASE,
)
# The label: the word "answer" and a colon or equals sign ("**Answer:**", "Answer ="), not
# any "answer" in the prose ("To answer this, the lake holds 100 tons").
_ANSWER = re.compile(r"\banswer[\s*]*[:=][\s*]*", re.IGNORECASE)


@dataclass(frozen=True)
class ParsedCatch:
    """A catch read from a reply: tons, and the character span of the number."""

    amount: int
    span: tuple[int, int]


def _number(match: re.Match[str]) -> tuple[float, tuple[int, int]] | None:
    text = match.group(2)
    digits = text.replace(",", "") if _THOUSANDS.fullmatch(text) else text.replace(",", ".")
    whole = digits.split(".")[0]
    if len(whole) > MAX_AMOUNT_DIGITS:
        return (math.inf, match.span(2))
    value = float(digits)
    if match.group(1):
        value = -value
    return value, match.span(2)


def find_amounts(text: str) -> list[tuple[int, tuple[int, int]]]:
    """Every non-negative whole amount in ``text`` with its span (too-long digit runs and
    negative numbers skipped, and numbers that are not amounts of fish: ``"month 3"``,
    ``"2 months"``, ``"5 fishers"``, ``"50%"``)."""
    text = text[:MAX_REPLY_CHARS]
    found: list[tuple[int, tuple[int, int]]] = []
    for match in _NUMBER.finditer(text):
        read = _number(match)
        if read is None or not math.isfinite(read[0]) or read[0] < 0:
            continue
        start, end = read[1]
        # Only the few characters around the number are looked at: linear in the reply.
        if _NOT_AMOUNT_BEFORE.search(text[max(0, start - 12) : start]) or (
            _NOT_AMOUNT_AFTER.match(text[end : end + 16])
        ):
            continue
        found.append((math.floor(read[0]), read[1]))
    return found


def read_catch(text: str, stock: int) -> Parsed[ParsedCatch]:
    """The catch a reply asks for, or :data:`FALLBACK_CATCH` with the reason (never raises).

    ``stock`` is the lake's stock now: an amount above it is outside the action set.
    """
    default = ParsedCatch(FALLBACK_CATCH, (0, 0))
    if not isinstance(text, str) or not text.strip():
        return Parsed(default, True, "the reply was empty; end with a line 'Answer: N tons'.")
    head = after_thinking(text, MAX_REPLY_CHARS)
    if not head.strip():
        return Parsed(default, True, "the reply was all reasoning; end with 'Answer: N tons'.")
    chosen: re.Match[str] | None = None
    answers = list(_ANSWER.finditer(head))
    if answers:
        chosen = _NUMBER.search(head, answers[-1].end())
        if chosen is None:
            # The reply labelled its answer and wrote no amount after it ("Answer: N tons"
            # copied, "Answer: none"): a number of the reasoning before it is not the answer.
            return Parsed(
                default, True, "no amount after 'Answer:'; end with 'Answer: N tons' (N a number)."
            )
    else:
        numbers = list(_NUMBER.finditer(head))
        chosen = numbers[-1] if numbers else None
    if chosen is None:
        return Parsed(
            default, True, "no amount found; end with a line 'Answer: N tons' (N a whole number)."
        )
    read = _number(chosen)
    assert read is not None  # _NUMBER always has digits
    value, span = read
    if value < 0:
        return Parsed(default, True, f"a catch cannot be negative ({chosen.group(0).strip()}).")
    if not math.isfinite(value) or value > stock:
        return Parsed(
            default,
            True,
            f"a catch of {chosen.group(2)[:20]} tons is more than the {stock} tons in the lake.",
        )
    return Parsed(ParsedCatch(math.floor(value), span))
