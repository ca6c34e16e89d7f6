"""How the fake server turns a plain reply string into tokens with invented log-probabilities.

Real servers tokenize with the model's vocabulary; offline we only need something stable
and realistic enough to exercise the log-probability plumbing. The rules:

* **Splitting** (:func:`split_tokens`): the text is cut into pieces matching
  ``\\s*\\w+|\\s*[^\\w\\s]|\\s+`` -- a word, or a single punctuation mark, each carrying the
  whitespace that precedes it (as GPT-style BPE tokens do); trailing whitespace is its own
  piece. Concatenating the pieces gives back the text exactly.
* **Log-probabilities** (:func:`invent_top_logprobs`): for every position the chosen token
  comes first with a probability in [0.55, 0.99] derived from a hash of (position, token),
  followed by ``k - 1`` invented alternatives from a small fixed vocabulary with strictly
  smaller, decreasing probabilities. Same text, same numbers, every run.
"""

from __future__ import annotations

import hashlib
import math
import re

__all__ = ["count_tokens", "invent_top_logprobs", "split_tokens"]

_TOKEN_RE = re.compile(r"\s*\w+|\s*[^\w\s]|\s+")

#: Alternatives the fake server offers next to the chosen token.
_ALTERNATIVES: tuple[str, ...] = (
    " the",
    " a",
    " is",
    " of",
    " and",
    " to",
    " in",
    " yes",
    " no",
    " not",
    ".",
    ",",
    " 1",
    " 2",
    " 0",
    " answer",
    " it",
    " that",
    " I",
    " we",
    " maybe",
    " so",
    "\n",
    " because",
)


def split_tokens(text: str) -> list[str]:
    """Split ``text`` into word / punctuation / whitespace pieces (``"".join`` restores it)."""
    return _TOKEN_RE.findall(text)


def count_tokens(text: str) -> int:
    """Number of pieces :func:`split_tokens` makes of ``text``."""
    return sum(1 for _ in _TOKEN_RE.finditer(text))


def _unit_floats(position: int, token: str, n: int) -> list[float]:
    """``n`` deterministic pseudo-random floats in [0, 1) for one position."""
    digest = hashlib.sha256(f"{position}\x00{token}".encode("utf-8", "surrogatepass")).digest()
    out: list[float] = []
    while len(out) < n:
        for i in range(0, len(digest) - 1, 2):
            out.append(int.from_bytes(digest[i : i + 2], "big") / 65536.0)
            if len(out) == n:
                break
        digest = hashlib.sha256(digest).digest()
    return out


def invent_top_logprobs(position: int, token: str, k: int) -> tuple[float, list[tuple[str, float]]]:
    """The chosen token's log-probability and a top-``k`` list with the chosen token first.

    The alternatives' probabilities split part of the remaining mass ``1 - p`` in a
    decreasing sequence, so the top-k list is sorted by descending log-probability and its
    probabilities sum to at most 1.
    """
    u = _unit_floats(position, token, 2)
    p_chosen = 0.55 + 0.44 * u[0]
    chosen_lp = math.log(p_chosen)
    top: list[tuple[str, float]] = []
    if k <= 0:
        return chosen_lp, top
    top.append((token, chosen_lp))
    remaining = 1.0 - p_chosen
    start = int(u[1] * len(_ALTERNATIVES))
    i = 0
    while len(top) < k:
        candidate = _ALTERNATIVES[(start + i) % len(_ALTERNATIVES)]
        if i >= len(_ALTERNATIVES):
            candidate = f"{candidate}{i // len(_ALTERNATIVES)}"
        i += 1
        if candidate == token:
            continue
        remaining /= 2.0
        top.append((candidate, math.log(max(remaining, 1e-300))))
    return chosen_lp, top
