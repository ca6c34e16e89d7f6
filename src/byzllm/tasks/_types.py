"""The task record: a question with its ground truth."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Task", "TaskKind"]

#: How answers to a task are compared: ``math`` (symbolic, via math-verify), ``number``
#: (numeric equality), ``boolean`` (true/false) or ``choice`` (one label out of ``choices``).
TaskKind = Literal["math", "number", "boolean", "choice"]


class Task(BaseModel):
    """One question with its ground truth.

    ``answer`` is the canonical ground-truth string (for ``choice`` tasks, the label such as
    ``"option2"``; for ``boolean``, ``"true"``/``"false"``). ``meta`` carries source-specific
    extras (MATH level and subject, synthetic distractors under ``"distractors"``, ...).
    """

    model_config = ConfigDict(frozen=True)

    id: str
    question: str
    answer: str
    kind: TaskKind
    choices: tuple[str, ...] = ()
    source: str = ""
    meta: dict[str, Any] = Field(default_factory=dict)
