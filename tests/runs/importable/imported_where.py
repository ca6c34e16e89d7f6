"""A work function that tells whether its module was imported by the worker running it (for
the ProcessExecutor warm-up test): a fork server warmed up for it imports it once, and every
worker forked from the server has it already."""

from __future__ import annotations

import os
from typing import Any, ClassVar

from byzllm.runs import Record

#: The process that imported this module.
IMPORTED_BY = os.getpid()


class Where(Record):
    kind: ClassVar[str] = "where"
    imported_by_worker: bool


def where_imported(payload: dict[str, Any]) -> Where:
    return Where(imported_by_worker=os.getpid() == IMPORTED_BY)
