"""Tasks with ground truth, answer extraction and equivalence, dataset loaders.
May import: the bottom layer only (byzllm.errors, _process, _figures, _lazy, _files).

>>> from byzllm.tasks import synthetic_tasks, extract_answer, is_correct
>>> task = synthetic_tasks(1, seed=0)[0]
>>> is_correct(task, extract_answer(task, f"... so the total is {task.answer}."))
True
"""

from ._answers import answers_equivalent, extract_answer, is_correct, normalize_answer
from ._code import (
    CodeProblem,
    CodeSplits,
    IOTest,
    load_humaneval,
    load_livecodebench,
    problem_file_digest,
    split_problems,
)
from ._files import records_digest
from ._lines import TaskLines
from ._loaders import (
    TaskSpec,
    dataset_digest,
    gsm8k_lines,
    load_commonsense,
    load_gsm8k,
    load_math500,
    load_tasks,
    sample_tasks,
)
from ._synthetic import MAX_TASKS, synthetic_tasks
from ._types import Task, TaskKind

__all__ = [
    "MAX_TASKS",
    "CodeProblem",
    "CodeSplits",
    "IOTest",
    "Task",
    "TaskKind",
    "TaskLines",
    "TaskSpec",
    "answers_equivalent",
    "dataset_digest",
    "extract_answer",
    "gsm8k_lines",
    "is_correct",
    "load_commonsense",
    "load_gsm8k",
    "load_humaneval",
    "load_livecodebench",
    "load_math500",
    "load_tasks",
    "normalize_answer",
    "problem_file_digest",
    "records_digest",
    "sample_tasks",
    "split_problems",
    "synthetic_tasks",
]
