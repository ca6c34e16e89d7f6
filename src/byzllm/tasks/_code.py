"""Code-generation problems: HumanEval and LiveCodeBench loaders, and the seeded 70/30 split.

The rogue-agents paper, §4.1 (CodeGen): monitors are trained and validated on HumanEval (Chen et
al., 2021) with a 70-30 split and tested on LiveCodeBench (Jain et al., 2024); the metric is
Pass@1 on each problem's hidden tests. Users bring their own copy of the data.

**HumanEval** (``HumanEval.jsonl`` or ``HumanEval.jsonl.gz``, one JSON object per line) with
the fields ``task_id``, ``prompt`` (imports, helpers, the signature and docstring of the
function to write), ``canonical_solution`` (the body completing ``prompt``), ``test`` (a
``check(candidate)`` function) and ``entry_point`` (the function's name).

**LiveCodeBench** (the ``code_generation_lite`` release, exported as JSON lines or a JSON
array), the fields read being:

- ``question_id`` (or ``task_id``), ``question_title`` (optional), ``question_content``;
- ``starter_code`` (``""`` for stdin/stdout problems; a ``class Solution`` stub for functional
  ones), ``platform``, ``contest_date``, ``difficulty`` (kept as metadata);
- ``public_test_cases`` and ``private_test_cases``: a list, or a JSON *string* of a list, of
  ``{"input": str, "output": str, "testtype": "stdin" | "functional"}``. The official release
  ships the private cases zlib-compressed and pickled; unpickling is never done here (a pickle
  can run arbitrary code): decompress them to JSON first, or the problem is tested on its
  public cases only (``hidden_from`` says which);
- ``metadata``: an object, or a JSON string of one, with ``func_name`` for functional
  problems (the method of ``Solution`` that the tests call, one JSON argument per input line).

Malformed files raise :class:`~byzllm.errors.InputError` naming the file and line.
:func:`problem_file_digest` names what a problem file holds.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from byzllm.errors import InputError

from ._files import claim_id, json_array, json_object, read_text, records_digest

__all__ = [
    "CodeProblem",
    "CodeSplits",
    "IOTest",
    "load_humaneval",
    "load_livecodebench",
    "problem_file_digest",
    "split_problems",
]


class IOTest(BaseModel):
    """One LiveCodeBench test case: stdin → expected stdout, or JSON arguments → JSON value."""

    model_config = ConfigDict(frozen=True)

    input: str
    output: str
    testtype: Literal["stdin", "functional"] = "stdin"


class CodeProblem(BaseModel):
    """One programming problem with hidden tests.

    ``prompt`` is what the coders see. ``reference`` is a complete program that solves the
    problem (HumanEval: ``prompt + canonical_solution``; ``None`` when the source has none).
    HumanEval problems are tested by ``hidden_test`` (the ``check`` function, called on
    ``entry_point``); LiveCodeBench problems by ``io_tests``.
    """

    model_config = ConfigDict(frozen=True)

    id: str
    source: Literal["humaneval", "livecodebench"]
    prompt: str
    entry_point: str | None = None
    reference: str | None = None
    hidden_test: str | None = None
    io_tests: tuple[IOTest, ...] = ()
    hidden_from: Literal["hidden", "public", "none"] = "hidden"
    metadata: dict[str, str] = Field(default_factory=dict)

    @property
    def reads_stdin(self) -> bool:
        """Whether a solution is a program that reads standard input and prints its answer
        (a LiveCodeBench stdin problem: no function to call), tested on inputs and outputs."""
        return self.source == "livecodebench" and self.entry_point is None


class CodeSplits(BaseModel):
    """The 70/30 train / validation split of HumanEval (§4.1), and the test problems."""

    train: list[CodeProblem]
    validation: list[CodeProblem]
    test: list[CodeProblem] = Field(default_factory=list)

    def get(self, split: str) -> list[CodeProblem]:
        if split not in ("train", "validation", "test"):
            raise InputError(f"unknown split {split!r} (train, validation or test)")
        problems: list[CodeProblem] = getattr(self, split)
        return problems


def _lines(path: str | Path) -> Iterator[tuple[Path, int, str]]:
    file, text = read_text(path)
    stripped = text.lstrip()
    if stripped.startswith("["):
        items = json_array(text, file)
        for i, item in enumerate(items, start=1):
            yield file, i, json.dumps(item)
        return
    for lineno, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            yield file, lineno, line


def _objects(path: str | Path) -> Iterator[tuple[str, dict[str, Any]]]:
    for file, lineno, line in _lines(path):
        where = f"{file}:{lineno}"
        yield where, json_object(line, where)


def problem_file_digest(path: str | Path) -> str:
    """16 hex digits of the SHA-256 of the problems a HumanEval or LiveCodeBench file holds:
    each JSON-lines line's object, or each item of a JSON array, written compact with sorted
    keys (:func:`~byzllm.tasks._files.records_digest`, as :func:`~byzllm.tasks.dataset_digest`
    does for the consensus data sets).

    A problem file's identity in a run (a CodeGen config's ``problems_digest`` and
    ``livecodebench_digest``): the file re-saved with other spacing, key order, line breaks or
    compression, or as a JSON array instead of JSON lines, is the same file, while an edited
    prompt, solution or test, or a problem added, removed or moved, is another. A file that
    does not read raises the loaders' :class:`~byzllm.errors.InputError`.
    """
    return records_digest(obj for _, obj in _objects(path))


def _text_field(obj: dict[str, Any], key: str, where: str, *, required: bool = True) -> str:
    value = obj.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise InputError(f"{where}: field {key!r} must be a string")
    return value


def load_humaneval(path: str | Path) -> list[CodeProblem]:
    """HumanEval problems from ``HumanEval.jsonl(.gz)``, in file order."""
    problems = []
    seen: dict[str, str] = {}
    for where, obj in _objects(path):
        task_id = _text_field(obj, "task_id", where)
        claim_id(seen, task_id, where)
        prompt = _text_field(obj, "prompt", where)
        canonical = _text_field(obj, "canonical_solution", where)
        test = _text_field(obj, "test", where)
        entry = _text_field(obj, "entry_point", where)
        if not entry.isidentifier():
            raise InputError(f"{where}: entry_point {entry!r} is not a Python name")
        problems.append(
            CodeProblem(
                id=task_id,
                source="humaneval",
                prompt=prompt,
                entry_point=entry,
                reference=prompt + canonical,
                hidden_test=test,
            )
        )
    if not problems:
        raise InputError(f"{path}: no problems")
    return problems


def _cases(value: Any, where: str, key: str) -> list[IOTest] | None:
    """Test cases from a list or a JSON string of one; ``None`` when not plain JSON."""
    if value is None or value == "":
        return []
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return None  # e.g. the release's compressed pickles: never unpickled
    if not isinstance(value, list):
        raise InputError(f"{where}: {key} must be a list of test cases")
    out = []
    for case in value:
        if not isinstance(case, dict):
            raise InputError(f"{where}: {key} entries must be objects")
        kind = case.get("testtype", "stdin")
        if kind not in ("stdin", "functional"):
            raise InputError(f"{where}: {key}: unknown testtype {kind!r}")
        out.append(
            IOTest(
                input=str(case.get("input", "")), output=str(case.get("output", "")), testtype=kind
            )
        )
    return out


def load_livecodebench(path: str | Path) -> list[CodeProblem]:
    """LiveCodeBench problems (the fields in the module docstring), in file order."""
    problems = []
    seen: dict[str, str] = {}
    for where, obj in _objects(path):
        qid = obj.get("question_id", obj.get("task_id"))
        if not isinstance(qid, str | int):
            raise InputError(f"{where}: needs a question_id")
        claim_id(seen, str(qid), where)
        content = _text_field(obj, "question_content", where)
        title = _text_field(obj, "question_title", where, required=False)
        starter = _text_field(obj, "starter_code", where, required=False)
        public = _cases(obj.get("public_test_cases"), where, "public_test_cases")
        private = _cases(obj.get("private_test_cases"), where, "private_test_cases")
        if public is None:
            raise InputError(f"{where}: public_test_cases must be JSON")
        hidden_from: Literal["hidden", "public", "none"] = "hidden"
        if private:
            tests = private
        elif public:
            tests, hidden_from = public, "public"
        else:
            tests, hidden_from = [], "none"
        meta_raw = obj.get("metadata") or {}
        if isinstance(meta_raw, str):
            try:
                meta_raw = json.loads(meta_raw) if meta_raw.strip() else {}
            except json.JSONDecodeError:
                raise InputError(f"{where}: metadata must be JSON") from None
        if not isinstance(meta_raw, dict):
            raise InputError(f"{where}: metadata must be an object")
        func = meta_raw.get("func_name")
        if any(t.testtype == "functional" for t in tests) and not (
            isinstance(func, str) and func.isidentifier()
        ):
            raise InputError(f"{where}: functional tests need metadata.func_name")
        parts = [f"### {title}" if title else "", content.strip()]
        if starter.strip():
            parts.append("Complete this code:\n" + starter.rstrip())
        else:
            parts.append("Read the input from standard input and print the answer.")
        keys = ("platform", "contest_date", "difficulty")
        metadata: dict[str, str] = {k: str(obj[k]) for k in keys if k in obj}
        if isinstance(func, str):
            metadata["func_name"] = func
        problems.append(
            CodeProblem(
                id=str(qid),
                source="livecodebench",
                prompt="\n\n".join(p for p in parts if p),
                entry_point=func if isinstance(func, str) else None,
                io_tests=tuple(tests),
                hidden_from=hidden_from,
                metadata=metadata,
            )
        )
    if not problems:
        raise InputError(f"{path}: no problems")
    return problems


def split_problems(
    problems: Sequence[CodeProblem], *, seed: int = 0, train_fraction: float = 0.7
) -> CodeSplits:
    """Seeded train / validation split (70/30 by default, the rogue-agents paper, §4.1).

    The problems are shuffled with ``random.Random(seed)`` and the first
    ``round(train_fraction * n)`` go to train; each split keeps file order.
    """
    if not 0.0 < train_fraction < 1.0:
        raise InputError("train_fraction must be in (0, 1)")
    order = list(range(len(problems)))
    random.Random(seed).shuffle(order)
    cut = round(train_fraction * len(problems))
    train_idx = sorted(order[:cut])
    val_idx = sorted(order[cut:])
    return CodeSplits(
        train=[problems[i] for i in train_idx], validation=[problems[i] for i in val_idx]
    )
