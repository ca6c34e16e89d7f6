"""Answer comparison used by agents and protocols, delegating to :mod:`byzllm.tasks`.

Protocols group equal answers (majority votes, CP-WBFT's per-answer mean confidence) and the
simulated agents compare a response with the ground truth; both go through these helpers so
that one notion of answer equality holds everywhere.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from fractions import Fraction
from functools import lru_cache
from typing import Any, cast

from byzllm.tasks import Task

from .._object_memo import ObjectMemo

__all__ = ["answer_key", "fresh_wrong_answers", "is_right", "same_answer", "wrong_answers"]

_NUMBER = re.compile(r"^[-+]?\d+(?:\.\d+)?$")
#: A number with thousands separated by commas: the only commas a plain key drops.
_THOUSANDS = re.compile(r"[-+]?\d{1,3}(?:,\d{3})+(?:\.\d+)?")
_RATIONAL = re.compile(r"^-?\d+(?:\.\d+)?(?:/\d+)?$")


def _tasks_function(name: str) -> Callable[..., Any] | None:
    import byzllm.tasks as tasks

    fn = getattr(tasks, name, None)
    return cast("Callable[..., Any] | None", fn)


def _plain_key(kind: str, text: str) -> str:
    """Fallback normalization: trimmed, lower-cased; numbers in their shortest form.

    Only thousands lose their commas (``"1,234"`` is 1234): ``"1,2"``, which the answer checker
    reads as no number (a decimal comma or a list), was keyed 12, so W-MSR averaged it as 12
    and a vote counted it with ``"12"``.
    """
    key = text.strip().strip(".").lower()
    key = key.removeprefix("$").removesuffix("$").strip()
    if _THOUSANDS.fullmatch(key):
        key = key.replace(",", "")
    if kind in ("number", "math") and _NUMBER.match(key):
        value = float(key)
        if math.isfinite(value) and value == int(value):
            return str(int(value))
        return repr(value)
    return key


def answer_key(task: Task, answer: str | None) -> str | None:
    """A canonical key: two answers with the same key count as the same answer.

    Uses ``byzllm.tasks.normalize_answer`` when available; ``None`` means "no answer".
    """
    if answer is None or not answer.strip():
        return None
    kind = task.kind
    if kind != "choice" or answer in task.choices:
        # (Without the texts: the cache's key is then three values, as cheap as before them.)
        return _cached_key(kind, task.choices, answer)
    return _cached_key(kind, task.choices, answer, _choice_texts(task))


#: The option texts of a choice task, as a hashable key: ``(("option1", "Use a pot."), ...)``.
ChoiceTexts = tuple[tuple[str, str], ...]


def _choice_texts(task: Task) -> ChoiceTexts:
    """What ``normalize_answer`` reads of ``task`` besides its kind and choices: a choice
    task's ``meta["choice_texts"]`` (an answer that is one option's text is its label).

    Asked for only when an answer is not a label: a label, what agents exchange, is its own
    key whatever the texts, and the keys are on every protocol's hot path."""
    return _CHOICE_TEXTS.get(task, lambda: _read_choice_texts(task))


def _read_choice_texts(task: Task) -> ChoiceTexts:
    texts = task.meta.get("choice_texts") if isinstance(task.meta, dict) else None
    return tuple((str(k), str(v)) for k, v in texts.items()) if isinstance(texts, dict) else ()


#: :func:`_choice_texts` per task object: every answer key of a choice task asks for them.
_CHOICE_TEXTS: ObjectMemo[ChoiceTexts] = ObjectMemo(4096)


@lru_cache(maxsize=65_536)
def _cached_key(kind: str, choices: tuple[str, ...], answer: str, texts: ChoiceTexts = ()) -> str:
    key = _normalized(kind, choices, answer, texts)
    if isinstance(key, str) and key:
        return key
    return _plain_key(kind, answer)


#: What :func:`_normalized` gives for a text the normalizer raised on.
_RAISED = object()


@lru_cache(maxsize=65_536)
def _normalized(
    kind: str, choices: tuple[str, ...], text: str, texts: ChoiceTexts = ()
) -> str | object | None:
    """``byzllm.tasks.normalize_answer`` of ``text`` (it depends only on the task's kind,
    choices and option texts), or :data:`_RAISED`: shared by the answer keys and the non-math
    ground-truth checks, which compared two fresh normalizations per new answer (the truth's
    every time)."""
    normalize = _tasks_function("normalize_answer")
    if normalize is None:
        return None
    meta = {"choice_texts": dict(texts)} if texts else {}
    probe = Task(id="_", question="", answer=text, kind=kind, choices=choices, meta=meta)
    try:
        key: str | None = normalize(probe, text)
    except Exception:  # a normalizer must never take a protocol down
        return _RAISED
    return key


def is_right(task: Task, answer: str | None) -> bool:
    """Whether ``answer`` matches the task's ground truth (``byzllm.tasks.is_correct``)."""
    if answer is None:
        return False
    kind, labels = task.kind, task.choices
    if kind != "choice" or (answer in labels and task.answer in labels):
        return _cached_right(kind, task.answer, labels, answer)
    return _cached_right(kind, task.answer, labels, answer, _choice_texts(task))


@lru_cache(maxsize=65_536)
def _cached_right(
    kind: str, truth: str, choices: tuple[str, ...], answer: str, texts: ChoiceTexts = ()
) -> bool:
    check = _tasks_function("is_correct")
    if check is not None and kind != "math" and _tasks_function("normalize_answer") is not None:
        # is_correct outside math: the truth's normalization equals the answer's (both
        # remembered by _normalized; the truth's is asked for by every new answer).
        key = _normalized(kind, choices, truth, texts)
        if key is None or key is _RAISED:
            return False
        return key == _normalized(kind, choices, answer, texts)
    if check is not None:
        probe = Task(id="_", question="", answer=truth, kind=kind, choices=choices)
        try:
            return bool(check(probe, answer))
        except Exception:
            return False
    return _plain_key(kind, answer) == _plain_key(kind, truth)


def same_answer(task: Task, a: str | None, b: str | None) -> bool:
    """Whether two answers are the same answer to ``task`` (``None`` equals nothing)."""
    key_a, key_b = answer_key(task, a), answer_key(task, b)
    return key_a is not None and key_a == key_b


def _numeric_value(task: Task) -> Fraction | None:
    """The ground truth as an exact number, when it is one (``"-3/4"``, ``"\\frac{1}{2}"``)."""
    key: str | None = _plain_key("number", task.answer)
    if not _NUMBER.match(key or ""):
        normalize = _tasks_function("normalize_answer")
        key = None
        if normalize is not None:
            probe = Task(id="_", question="", answer=task.answer, kind="math")
            try:
                normalized = normalize(probe, task.answer)
            except Exception:
                normalized = None
            key = normalized if isinstance(normalized, str) else None
    if key is None or not _RATIONAL.match(key):
        return None
    try:
        return Fraction(key)
    except (ValueError, ZeroDivisionError):
        return None


def _number_text(value: Fraction) -> str:
    """A plain number: ``"3"``, ``"-0.75"`` (terminating decimals), else ``"1/3"``."""
    if value.denominator == 1:
        return str(value.numerator)
    den = value.denominator
    for p in (2, 5):
        while den % p == 0:
            den //= p
    if den != 1:
        return f"{value.numerator}/{value.denominator}"
    digits = 0
    while (value * 10**digits).denominator != 1:
        digits += 1
    scaled = str(abs((value * 10**digits).numerator)).rjust(digits + 1, "0")
    sign = "-" if value < 0 else ""
    return f"{sign}{scaled[:-digits]}.{scaled[-digits:]}"


def wrong_answers(task: Task) -> list[str]:
    """Plausible wrong answers: the task's distractors, else ones derived from its kind.

    Synthetic tasks list their distractors in ``meta["distractors"]`` (most plausible first);
    for other tasks: the other labels of a choice task, the flipped boolean, or, for an answer
    that is a number (``"-3/4"``, ``"0.5"``, ``"\\frac{1}{2}"``), the plain numbers at
    +1, −1, +2, +10, −2 and its negation (computed, never an expression such as ``-(-3/4)``);
    for any other answer, ``"a + 1"``, ``"-(a)"`` (only when ``a`` does not start with a minus
    sign) and ``"2*(a)"``. Never the answer itself; no two equal.
    """
    return list(_WRONG_ANSWERS.get(task, lambda: tuple(_wrong_answers(task))))


#: :func:`wrong_answers` per task object: every simulated agent that misses a task asks for
#: them, each a few answer comparisons. Tasks are frozen, so their answers never change.
_WRONG_ANSWERS: ObjectMemo[tuple[str, ...]] = ObjectMemo(4096)


def _wrong_answers(task: Task) -> list[str]:
    raw = task.meta.get("distractors") if isinstance(task.meta, dict) else None
    out: list[str] = []
    if isinstance(raw, list | tuple):
        out = [str(d) for d in raw if not is_right(task, str(d))]
    if out:
        return out
    if task.kind == "boolean":
        return ["false" if answer_key(task, task.answer) == "true" else "true"]
    if task.kind == "choice" and task.choices:
        labels = [c for c in task.choices if not is_right(task, c)]
        if labels:
            return labels
    value = _numeric_value(task)
    if value is not None:
        candidates = [_number_text(value + d) for d in (1, -1, 2, 10, -2)]
        if value != 0:
            candidates.append(_number_text(-value))
    else:
        answer = task.answer.strip()
        candidates = [f"{answer} + 1"]
        if not answer.startswith(("-", "\u2212")):
            candidates.append(f"-({answer})")
        candidates.append(f"2*({answer})")
    seen: set[str] = set()
    for candidate in candidates:
        if candidate not in seen and not is_right(task, candidate):
            seen.add(candidate)
            out.append(candidate)
    return out


def fresh_wrong_answers(task: Task, spread: int = 50) -> list[str]:
    """Wrong answers for an answer given anew: :func:`wrong_answers`, then, when the truth is
    a number, the plain numbers within ``spread`` of it (nearest first), so that a simulated
    agent rarely runs out of answers no one has given. Never the answer itself; no two equal.
    """
    out = wrong_answers(task)
    value = _numeric_value(task)
    if value is None:
        return out
    seen = set(out)
    for distance in range(1, spread + 1):
        for candidate in (_number_text(value + distance), _number_text(value - distance)):
            if candidate not in seen and not is_right(task, candidate):
                seen.add(candidate)
                out.append(candidate)
    return out
