"""A reasoning model's ``<think>…</think>`` blocks, blanked out of a reply before it is read.

Reasoning models (DeepSeek-R1 and its distills, QwQ, Qwen3) write their reasoning between
``<think>`` and ``</think>`` and their decision after it. The reasoning holds drafts, numbers
and actions the model did not commit to, so every reader of model output reads the reply with
those blocks blanked. Some chat templates open the block in the *prompt*, so the reply holds
only the closing tag: everything before a ``</think>`` with no ``<think>`` before it is
reasoning too. A block left open (the reply cut off while thinking) hides the rest: nothing was
decided yet.

Blanking keeps the reply's length and its line breaks, so the character offsets of what is
read (the decision positions a monitor reads log-probabilities at) stay offsets into the
reply the model wrote. Parsers read a bounded number of characters of a reply; they count
them from where the reasoning ends (:func:`after_thinking`), or a model that reasons at
length would have its decision cut off with the reasoning.
"""

from __future__ import annotations

import re

__all__ = ["after_thinking", "blank_thinking"]

_TAG_RE = re.compile(r"<(/?)think>", re.IGNORECASE)
_NOT_NEWLINE_RE = re.compile(r"[^\n]")


def blank_thinking(text: str) -> str:
    """``text`` with every reasoning block, tags included, replaced by spaces (newlines kept).

    >>> blank_thinking("<think>7?</think>5") == " " * 17 + "5"
    True
    >>> blank_thinking("it is 7, no</think>5").strip()
    '5'
    """
    if "think>" not in text.lower():
        return text
    hidden: list[tuple[int, int]] = []
    start: int | None = 0  # where the block being read began; 0: a close may end the prompt's
    implicit = True  # the reply may start inside a block its prompt opened
    for tag in _TAG_RE.finditer(text):
        closing = tag.group(1) == "/"
        if closing and start is not None:
            hidden.append((start, tag.end()))
            start, implicit = None, False
        elif not closing and start is None:
            start = tag.start()
        elif not closing and implicit:
            # An opening tag before any close: the reply did not start inside a block.
            start, implicit = tag.start(), False
        elif closing:
            hidden.append((tag.start(), tag.end()))  # a stray close: only the tag goes
    if start is not None and not implicit:
        hidden.append((start, len(text)))  # left open: cut off while thinking
    if not hidden:
        return text
    parts: list[str] = []
    position = 0
    for begin, end in hidden:
        parts.append(text[position:begin])
        parts.append(_NOT_NEWLINE_RE.sub(" ", text[begin:end]))
        position = end
    parts.append(text[position:])
    return "".join(parts)


def after_thinking(text: str, limit: int) -> str:
    """``text`` blanked (:func:`blank_thinking`) and cut ``limit`` characters past its leading
    blanks, the reasoning's among them: a prefix of the blanked reply, so its offsets are
    still offsets into ``text``.

    >>> after_thinking("<think>" + "7? " * 50 + "</think> 5 and more", 2).strip()
    '5'
    """
    blanked = blank_thinking(text)
    start = len(blanked) - len(blanked.lstrip())
    return blanked[: start + limit]
