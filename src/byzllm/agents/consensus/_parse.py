"""Reply parsers of LLM-backed consensus agents (the SAC paper, Appendix B).

Pure functions that read a model's reply: the receiver-side score of Eq. (2) (Appendix B.1),
the refined answer of Eq. (5) (Appendix B.2), the initial answer of Eq. (1) and the
self-reported confidence that CP-WBFT (Zheng et al. 2026) aggregates. Each falls back to the
paper's documented default when the reply holds nothing to read, and never raises. The prompts
they answer are in :mod:`byzllm.agents.consensus._prompts`.

Two forms of each parser, one implementation: ``read_*`` returns a
:class:`~byzllm.agents._parsed.Parsed` (the value and whether it is the default because nothing
could be read: what the runs count as *parse health*); ``parse_*`` returns the value alone.

Before anything is read, :func:`clean_reply` removes terminal control sequences (ANSI colour
codes and the like) and every other control character, so digits inside an escape sequence are
never read as a score or an answer.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_right
from collections.abc import Sequence

from byzllm.tasks import Task, extract_answer

from .._parsed import Parsed
from .._thinking import after_thinking, blank_thinking

__all__ = [
    "DEFAULT_CONFIDENCE",
    "DEFAULT_SCORE",
    "MAX_REPLY_CHARS",
    "clean_reply",
    "parse_confidence",
    "parse_refined_answer",
    "parse_score",
    "read_answer",
    "read_confidence",
    "read_refined_answer",
    "read_score",
    "read_yes_probability",
]

#: Longest model reply the parsers read (the score/confidence parsers read only its start).
MAX_REPLY_CHARS = 100_000

#: Score when the scoring reply holds no number (Appendix B.1: "maximally uncertain").
DEFAULT_SCORE = 0.5

#: Confidence when the confidence reply holds no number (same convention as the score).
DEFAULT_CONFIDENCE = 0.5

# Terminal control sequences (ECMA-48), then any other C0/C1 control character (tab, newline
# and carriage return are text). A sequence cut off before its final byte is still removed, and
# unterminated OSC/DCS strings end at the end of their line.
_CONTROL_RE = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]?"  # CSI: ESC [ parameters intermediates final
    r"|\x9b[0-?]*[ -/]*[@-~]?"  # 8-bit CSI
    r"|\x1b\][^\x07\x1b\n]*(?:\x07|\x1b\\)?"  # OSC ... BEL or ST
    r"|\x1b[PX^_][^\x1b\n]*(?:\x1b\\)?"  # DCS, SOS, PM, APC strings
    r"|\x1b[ -/]*[0-~]?"  # any other escape (ESC ( B, ESC 7, a lone ESC)
    r"|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]"
)

# A square bracket and what follows it, up to its closing "]" or the end of the line.
_BRACKET_RE = re.compile(r"\[[^\]\n]*\]?")
_LETTER_RE = re.compile(r"[^\W\d_]")
_ONE_NUMBER_RE = re.compile(r"\s*-?(?:[0-9]+(?:\.[0-9]+)?|\.[0-9]+)\s*")

# A number token: optional minus, ASCII digits with optional decimals or a leading-dot decimal,
# not glued to a word, a number, a dot, an entity "#" or a backslash on its left.
_NUMBER_RE = re.compile(r"(?<![\w.#\\])(-?)([0-9]+(?:\.[0-9]+)?|\.[0-9]+)")


def clean_reply(text: str) -> str:
    """``text`` with every terminal control sequence and control character replaced by a
    space, and a reasoning model's ``<think>...</think>`` blocks blanked
    (:func:`~byzllm.agents._thinking.blank_thinking`: a reply with only the closing tag was
    reasoning up to it).

    ``"\\x1b[31m0.8\\x1b[0m"`` → ``" 0.8 "``; ``"\\x1b[31m\\x1b[0m"`` → ``"  "`` (nothing to
    read). Tab, newline and carriage return are kept. The score's rule takes the *first*
    number: ``"<think>12 apples ...</think> 0.9"`` scored 1.0 (12, clipped). A block left
    open (the reply cut off while thinking) hides the rest: nothing was answered yet.
    """
    return _CONTROL_RE.sub(" ", blank_thinking(text))


def _debris(match: re.Match[str]) -> bool:
    """Whether a bracket (:data:`_BRACKET_RE` match) is markup debris rather than text."""
    body = match.group()
    if not body.endswith("]") or len(body) < 2:
        return True  # never closed on its line: "[1,2,", "[31m"
    content = body[1:-1]
    if _ONE_NUMBER_RE.fullmatch(content):
        return False  # "[0.9]"
    return _LETTER_RE.search(content) is None  # "[1, 2]" is debris, "[Score: 0.8]" is text


def _debris_spans(text: str) -> tuple[list[int], list[int]]:
    starts: list[int] = []
    ends: list[int] = []
    for match in _BRACKET_RE.finditer(text):
        if _debris(match):
            starts.append(match.start())
            ends.append(match.end())
    return starts, ends


def _strip_debris(text: str) -> str:
    """``text`` with its markup-debris brackets blanked out."""
    return _BRACKET_RE.sub(lambda m: " " * len(m.group()) if _debris(m) else m.group(), text)


def _first_number(text: str) -> float | None:
    if not isinstance(text, str):
        return None
    text = clean_reply(after_thinking(text, MAX_REPLY_CHARS))
    starts, ends = _debris_spans(text)
    for match in _NUMBER_RE.finditer(text):
        k = bisect_right(starts, match.start()) - 1
        if k >= 0 and match.start() < ends[k]:
            continue  # inside markup debris
        value = float(match.group(2))  # ASCII digits only: always a finite float
        return -value if match.group(1) else value
    return None


def _unit(text: str, default: float, what: str) -> Parsed[float]:
    value = _first_number(text)
    if value is None:
        return Parsed(default, fell_back=True, reason=f"no {what} number in the reply")
    return Parsed(min(1.0, max(0.0, value)))


def read_score(text: str) -> Parsed[float]:
    """The score in a scoring reply (Appendix B.1): first number, clipped to [0, 1], else 0.5.

    The rule, exactly:

    * terminal control sequences and control characters are removed first
      (:func:`clean_reply`): ``"\\x1b[31m\\x1b[0m"`` holds no number;
    * the **first** number *token* counts, ASCII digits only, as the paper's regular
      expression ``([0-9]+(?:\\.[0-9]+)?)`` finds it — ``"Score: 1.0"`` → 1.0,
      ``"0.85/1"`` → 0.85, ``"85%"`` → 85 → 1.0 (no percent conversion: the prompt asks for a
      decimal in [0, 1]), ``"1e-3"`` → 1.0. ``"Step 1: ..."`` → 1.0 is kept deliberately:
      the first number counts, as in the paper, even when it labels a step;
    * a *token* stands on its own on the left: digits glued to a letter, digit, ``_``, ``.``,
      ``#`` or ``\\`` (``"gpt4"``, ``"<h1>"``, ``"&#49;"``, ``"\\033"``) are not numbers;
    * numbers in **markup debris** do not count: a square bracket never closed on its line
      (``"[1,2,"``, a stray ``"[31m"``), or a closed one holding no letter and more than one
      number (``"[1, 2]"``). A bracket around exactly one number (``"[0.9]"``) or around text
      (``"[Score: 0.8]"``) is read as usual;
    * two deliberate refinements of that expression: a ``-`` directly before the digits is kept
      (``"-0.3"`` → -0.3 → clipped to 0.0, not 0.3), and a leading-dot decimal counts as one
      number (``".5"`` → 0.5, not 5 → 1.0);
    * the value is clipped to [0, 1];
    * no number token at all (empty, garbage, ``"True"``, ``"NaN"``, ``"inf"``, non-ASCII
      digits, only control sequences or debris) → :data:`DEFAULT_SCORE` (0.5, "maximally
      uncertain") with ``fell_back=True``; ``fell_back`` is false whenever a number was read.

    Only the first :data:`MAX_REPLY_CHARS` characters after a reasoning model's thinking are
    read. Never raises.
    """
    return _unit(text, DEFAULT_SCORE, "score")


def parse_score(text: str) -> float:
    """:func:`read_score`'s value: the score, or :data:`DEFAULT_SCORE` when there is none."""
    return read_score(text).value


def read_confidence(text: str) -> Parsed[float]:
    """The confidence in a confidence reply: the rule of :func:`read_score` (first number token,
    clipped to [0, 1], :data:`DEFAULT_CONFIDENCE` = 0.5 with ``fell_back=True`` when there is
    none). Never raises."""
    return _unit(text, DEFAULT_CONFIDENCE, "confidence")


def parse_confidence(text: str) -> float:
    """:func:`read_confidence`'s value."""
    return read_confidence(text).value


def read_answer(task: Task, text: str) -> Parsed[str | None]:
    """The final answer in a reply, or ``None`` with ``fell_back=True`` when there is none.

    After :func:`clean_reply`, the task's answer extractor (:func:`byzllm.tasks.extract_answer`:
    the ``Answer:`` label, ``\\boxed{}``, ...; a huge reply is read from its tail) looks for a
    located answer first, taken as written (``"Answer: [1, 2]"`` stays an interval). Only a
    reply with no box and no label is scanned whole (a label holding no answer is a fall-back),
    and then without its markup debris (the brackets :func:`read_score` ignores): ``"[1,2,"``
    holds no answer rather than ``"2"``.
    """
    if not isinstance(text, str):
        return Parsed(None, fell_back=True, reason="the reply is not text")
    cleaned = clean_reply(text)
    answer = extract_answer(task, cleaned, scan=False)
    if answer is None:
        answer = extract_answer(task, _strip_debris(cleaned))
    if answer is None:
        return Parsed(None, fell_back=True, reason="no answer could be extracted")
    return Parsed(answer)


def read_refined_answer(task: Task, text: str, fallback: str) -> Parsed[str]:
    """The answer in a refine reply (:func:`read_answer`), or ``fallback`` (the current answer)
    with ``fell_back=True`` when there is none; Appendix B.2: "if extraction fails, the update
    defaults to r_i^(t+1) = r_i^(t)"."""
    found = read_answer(task, text)
    if found.value is None:
        return Parsed(fallback, fell_back=True, reason=found.reason)
    return Parsed(found.value)


def parse_refined_answer(task: Task, text: str, fallback: str) -> str:
    """:func:`read_refined_answer`'s value: the refined answer, or ``fallback``."""
    return read_refined_answer(task, text, fallback).value


_YES_NO_RE = re.compile(r"\b(yes|no)\b", re.IGNORECASE)


def _yes_no_word(token: str) -> str | None:
    """``"yes"``/``"no"`` when a token is that word (any case, spacing or trailing
    punctuation, e.g. ``" Yes"``, ``"NO."``), else ``None``."""
    word = clean_reply(token).strip().strip(".,!:;\"'*").lower()
    return word if word in ("yes", "no") else None


def read_yes_probability(
    top: Sequence[tuple[str, float]] | None, text: str, default: float = DEFAULT_SCORE
) -> Parsed[float]:
    """P(Yes) of an anchored judging reply (the anchored scores and confidences).

    ``top`` is the first generated token's top-k ``(token, logprob)`` list. The probability
    mass of every alternative that is the word "yes" and of every one that is "no" is summed
    (``" Yes"``, ``"yes"`` and ``"YES"`` are one answer); the value is
    P(yes) / (P(yes) + P(no)), so it lies in [0, 1] whatever mass other tokens take. When
    neither word is among the alternatives (no log-probabilities, or a reply that starts
    elsewhere), the first ``yes``/``no`` word of ``text`` decides (1.0 / 0.0); with none,
    ``default`` (0.5) with ``fell_back=True``. Non-finite log-probabilities are ignored.
    """
    mass = {"yes": 0.0, "no": 0.0}
    for token, logprob in top or ():
        word = _yes_no_word(str(token))
        if word is None or not isinstance(logprob, int | float) or not math.isfinite(logprob):
            continue
        mass[word] += math.exp(min(0.0, float(logprob)))
    total = mass["yes"] + mass["no"]
    if total > 0.0:
        return Parsed(mass["yes"] / total)
    found = _YES_NO_RE.search(clean_reply(after_thinking(text, MAX_REPLY_CHARS)))
    if found is not None:
        return Parsed(1.0 if found.group(1).lower() == "yes" else 0.0)
    return Parsed(default, fell_back=True, reason="no Yes or No in the reply")
