"""Tasks with ground truth, answer extraction and equivalence, dataset loaders."""

from ._types import Task, TaskKind

__all__ = ["Task", "TaskKind"]
