"""Disjoint, seeded train / validation / test splits of HumanEval for CodeGen.

The rogue-agents paper (§4.1) trains and validates CodeGen's monitors on HumanEval with a
70-30 split and tests on LiveCodeBench. Where the test problems are HumanEval's too, they must
be problems the monitor never saw: a share ``test_fraction`` of the problems is held out first
(the test split), and the rest is split ``train_fraction`` / ``1 - train_fraction`` into train
and validation, the paper's 70-30. With the defaults, HumanEval's 164 problems give 80 train,
35 validation and 49 test problems. With LiveCodeBench as the test split nothing is held out:
all of HumanEval is split 70-30, as in the paper.

One shuffle with ``random.Random(seed)`` decides every split; each split keeps file order.
The same problem listed twice under two ids (a file merged from two sources) is one problem:
its copies go to the split of the copy the shuffle puts first, so a monitor is never tested on
a problem it was fitted on under another name. Problems are the same when their prompts are,
blanks aside (:func:`problem_text`). :func:`check_disjoint` refuses splits that share a
problem, by id or by prompt; :func:`codegen_splits` checks its own result.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from byzllm.errors import InputError
from byzllm.tasks import CodeProblem, CodeSplits

__all__ = ["check_disjoint", "codegen_splits", "problem_text"]


def problem_text(problem: CodeProblem) -> str:
    """What makes two problems the same problem: the prompt every role reads, its blanks
    collapsed (a copy re-indented or re-wrapped is still the same problem)."""
    return " ".join(problem.prompt.split())


def check_disjoint(splits: CodeSplits) -> None:
    """Raise :class:`~byzllm.errors.InputError` when two splits share a problem: the same id,
    or the same prompt under two ids (:func:`problem_text`)."""
    names = ("train", "validation", "test")
    ids = {name: [p.id for p in splits.get(name)] for name in names}
    for name in names:
        if len(set(ids[name])) != len(ids[name]):
            raise InputError(f"the {name} split lists a problem twice")
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            shared = sorted(set(ids[a]) & set(ids[b]))
            texts = {problem_text(p): p.id for p in splits.get(b)}
            shared += sorted(
                f"{p.id} (the prompt of {texts[problem_text(p)]})"
                for p in splits.get(a)
                if p.id not in ids[b] and problem_text(p) in texts
            )
            if shared:
                more = f" and {len(shared) - 3} more" if len(shared) > 3 else ""
                raise InputError(
                    f"the {a} and {b} splits share {len(shared)} problem(s): "
                    f"{', '.join(shared[:3])}{more}"
                )


def codegen_splits(
    problems: Sequence[CodeProblem],
    *,
    seed: int = 0,
    test_fraction: float = 0.3,
    train_fraction: float = 0.7,
) -> CodeSplits:
    """Train / validation / test (module docstring); ``test_fraction = 0`` holds nothing out."""
    if not 0.0 <= test_fraction < 1.0:
        raise InputError("test_fraction must be in [0, 1)")
    if not 0.0 < train_fraction < 1.0:
        raise InputError("train_fraction must be in (0, 1)")
    order = list(range(len(problems)))
    random.Random(seed).shuffle(order)
    n_test = round(test_fraction * len(problems))
    cut = n_test + round(train_fraction * (len(problems) - n_test))
    # The split of each position in the shuffled order; a copy of a problem already placed
    # (the same prompt under another id) joins its first copy's split.
    placed: dict[str, str] = {}
    members: dict[str, list[int]] = {"train": [], "validation": [], "test": []}
    for position, i in enumerate(order):
        split = "test" if position < n_test else "train" if position < cut else "validation"
        split = placed.setdefault(problem_text(problems[i]), split)
        members[split].append(i)
    splits = CodeSplits(
        **{name: [problems[i] for i in sorted(kept)] for name, kept in members.items()}
    )
    check_disjoint(splits)
    return splits
