"""A FakeOpenAIServer script that answers like strong, weak and adversarial models.

The request's ``model`` field selects the behaviour:

* ``strong``: solves every task (answers the ground truth); scores 0.9 for a correct proposed
  answer and 0.1 otherwise; refines to the highest-scored answer listed; confidence 0.9.
* ``weak``: answers the task's first distractor; scores 0.9 when the proposed answer equals that
  distractor and 0.2 otherwise; refine keeps its current answer unless a listed answer has a
  reliability score of at least 0.85; confidence 0.8.
"""

from __future__ import annotations

import re
from typing import Any

from byzllm.tasks import Task

_RESPONSE = re.compile(r"<response>\n(.*?)\n</response>", re.S)
_SCORE_LINE = re.compile(r"reliability score: ([0-9.]+)")


def make_script(tasks: list[Task]) -> Any:
    by_question = {t.question: t for t in tasks}

    def find_task(content: str) -> Task:
        for question, task in by_question.items():
            if question in content:
                return task
        raise KeyError("unknown question")

    def script(request: dict[str, Any]) -> str:
        model = str(request["model"])
        content = str(request["messages"][-1]["content"])
        task = find_task(content)
        truth, wrong = task.answer, task.meta["distractors"][0]
        responses = _RESPONSE.findall(content)
        if "Proposed answer:" in content:  # B.1 scoring prompt
            proposed = responses[0].strip()
            if model == "strong":
                return "0.9" if proposed == truth else "0.1"
            return "0.9" if proposed == wrong else "0.2"
        if "Estimate how likely" in content:  # confidence probe
            return "0.9" if model == "strong" else "0.8"
        if "Your current answer:" in content:  # refine / debate
            own = responses[0].strip()
            scores = [float(s) for s in _SCORE_LINE.findall(content)]
            others = responses[1 : 1 + len(scores)] if scores else responses[1:]
            if model == "strong":
                best = truth if truth in [o.strip() for o in others] or own == truth else own
                return f"Answer: {best}"
            if scores and max(scores) >= 0.85:
                return f"Answer: {others[scores.index(max(scores))].strip()}"
            return f"Answer: {own}"
        # initial answer
        return f"Reasoning...\nAnswer: {truth if model == 'strong' else wrong}"

    return script
