"""Loaders for the public benchmarks from local files (users bring their own copy).

* MATH-500 JSONL (``problem, solution, answer, subject, level, unique_id``), as in the SAC
  paper's §5.2 setup (Level-4 problems sampled with a seed);
* GSM8K JSONL (``question, answer``; the answer's last line is ``#### N``);
* the Commonsense170k JSON format of LLM-Adapters (a JSON array of ``{instruction, input,
  output, answer}``: BoolQ, PIQA, Social-IQA, WinoGrande, ARC, OpenBookQA, HellaSwag).

Sampling ``k`` tasks with a ``seed`` is deterministic and keeps file order, so the same
arguments always give the same list. Malformed files raise :class:`~byzllm.errors.InputError`
naming the file and line (or array index). :func:`dataset_digest` names what a file holds.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import ConfigDict, Field, ValidationError

from byzllm._strict import StrictNumbers
from byzllm.errors import InputError

from ._files import claim_id, json_array, json_object, read_text, records_digest
from ._lines import LineIndex, TaskLines
from ._text import canonical_number, parse_number
from ._types import Task

__all__ = [
    "TaskSpec",
    "dataset_digest",
    "gsm8k_lines",
    "load_commonsense",
    "load_gsm8k",
    "load_math500",
    "load_tasks",
    "sample_tasks",
]

_T = TypeVar("_T")

_FORMAT_RE = re.compile(r"Answer format:\s*([A-Za-z0-9/ ]+?)\s*$", re.IGNORECASE | re.MULTILINE)


def _jsonl(path: str | Path) -> Iterator[tuple[Path, int, dict[str, Any]]]:
    file, text = read_text(path)
    for lineno, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            yield file, lineno, json_object(line, f"{file}:{lineno}")


def _field(row: Mapping[str, Any], key: str, where: str) -> str:
    if key not in row:
        raise InputError(f"{where}: missing field {key!r}")
    value = row[key]
    if not isinstance(value, str):
        raise InputError(f"{where}: field {key!r} should be a string")
    return value


def sample_tasks(items: Sequence[_T], k: int | None, seed: int) -> list[_T]:
    """``k`` items drawn without replacement with ``seed``, in their original order (only
    those ``k`` are read from ``items``: a lazy sequence parses no other)."""
    if k is None:
        return list(items)
    if k < 0:
        raise InputError(f"k must be >= 0, got {k}")
    if k > len(items):
        raise InputError(f"asked for k={k} tasks but only {len(items)} are available")
    chosen = sorted(random.Random(seed).sample(range(len(items)), k))
    return [items[i] for i in chosen]


def _parse_level(value: Any, where: str) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        match = re.search(r"\d+", value)
        if match:
            return int(match.group())
    if value is None:
        return None
    raise InputError(f"{where}: field 'level' should be a number or 'Level N'")


def load_math500(
    path: str | Path, level: int | None = None, k: int | None = None, seed: int = 0
) -> list[Task]:
    """MATH-500 problems (kind ``math``), optionally only one ``level``, ``k`` sampled.

    The SAC paper (§5.2, Appendix C.1) samples 30 Level-4 problems:
    ``load_math500(path, level=4, k=30, seed=0)``.
    """
    tasks: list[Task] = []
    seen: dict[str, str] = {}
    for file, lineno, row in _jsonl(path):
        where = f"{file}:{lineno}"
        problem = _field(row, "problem", where)
        answer = _field(row, "answer", where)
        row_level = _parse_level(row.get("level"), where)
        unique_id = row.get("unique_id")
        task_id = str(unique_id) if unique_id else f"math500/{lineno}"
        claim_id(seen, task_id, where)
        if level is not None and row_level != level:
            continue
        tasks.append(
            Task(
                id=task_id,
                question=problem,
                answer=answer.strip(),
                kind="math",
                source="math500",
                meta={
                    "level": row_level,
                    "subject": row.get("subject"),
                    "solution": row.get("solution"),
                },
            )
        )
    if not tasks:  # an empty file, or no problem at that level: a run of nothing is no run
        at = "" if level is None else f" at level {level}"
        raise InputError(f"{path}: no MATH-500 problems{at}")
    return sample_tasks(tasks, k, seed)


def load_gsm8k(path: str | Path, k: int | None = None, seed: int = 0) -> list[Task]:
    """GSM8K problems (kind ``number``); the ground truth is the number after ``####``."""
    rows = enumerate(_jsonl(path))
    tasks = [_gsm8k_task(file, lineno, index, row) for index, (file, lineno, row) in rows]
    if not tasks:
        raise InputError(f"{path}: no GSM8K questions (an empty file)")
    return sample_tasks(tasks, k, seed)


def gsm8k_lines(path: str | Path) -> Sequence[Task]:
    """The questions of a GSM8K file as :func:`load_gsm8k` reads them, each parsed when first
    read (:class:`~byzllm.tasks._lines.TaskLines`: a run that samples a few questions from a
    large file does not pay for the others); the eager list where the file cannot be indexed
    line by line (compressed, unusual line breaks)."""
    index = LineIndex.build(path)
    if index is None:
        return load_gsm8k(path)
    return TaskLines(index, _gsm8k_task, _gsm8k_position, kind="number", source="gsm8k")


def _gsm8k_task(file: Path, lineno: int, index: int, row: Mapping[str, Any]) -> Task:
    """The question of one GSM8K line, the ``index``-th non-blank one of ``file``."""
    where = f"{file}:{lineno}"
    question = _field(row, "question", where)
    solution = _field(row, "answer", where)
    if "####" not in solution:
        raise InputError(f"{where}: answer has no '#### <number>' line")
    reasoning, _, final = solution.rpartition("####")
    value = parse_number(final)
    if value is None:
        raise InputError(f"{where}: no number after '####' (got {final.strip()[:40]!r})")
    return Task(
        id=f"gsm8k/{index}",
        question=question,
        answer=canonical_number(value),
        kind="number",
        source="gsm8k",
        meta={"line": lineno, "solution": reasoning.strip()},
    )


def _gsm8k_position(task_id: str) -> int | None:
    """The position a GSM8K id names (``gsm8k/12`` -> 12), ``None`` for any other id."""
    prefix, _, number = task_id.partition("/")
    if prefix != "gsm8k" or not (number.isascii() and number.isdigit()):
        return None
    if str(int(number)) != number:
        return None
    return int(number)


def _answer_format(instruction: str) -> list[str] | None:
    matches = _FORMAT_RE.findall(instruction)
    if not matches:
        return None
    labels = [part.strip() for part in matches[-1].split("/") if part.strip()]
    return labels or None


def _choice_texts(instruction: str, labels: list[str]) -> dict[str, str]:
    """``{"answer1": "flower", ...}`` from "Answer1: flower Answer2: seed ..." in the question."""
    parts = [re.fullmatch(r"([a-z]+)(\d+)", label) for label in labels]
    prefixes = {m.group(1) for m in parts if m is not None}
    if None in parts or len(prefixes) != 1:
        return {}
    prefix = prefixes.pop()
    body = _FORMAT_RE.sub("", instruction)
    pattern = re.compile(
        rf"\b{prefix}(\d+)\s*:\s*(.*?)(?=\s*\b{prefix}\d+\s*:|\Z)", re.IGNORECASE | re.DOTALL
    )
    texts: dict[str, str] = {}
    for match in pattern.finditer(body):
        label, text = f"{prefix}{int(match.group(1))}", match.group(2).strip()
        if label in labels and text:
            texts.setdefault(label, text)
    return texts


def load_commonsense(path: str | Path, k: int | None = None, seed: int = 0) -> list[Task]:
    """Commonsense170k-format questions: ``boolean`` for true/false, ``choice`` otherwise.

    ``path`` is one JSON file, or a folder whose ``*.json`` files are read in name order and
    sampled from together (the paper's mix of BoolQ, multiple-choice and completion items).
    The labels come from the question's ``Answer format: a/b/c`` line (falling back to the
    answer's own prefix and the ``PrefixN:`` options in the text; fewer than two labels is an
    :class:`~byzllm.errors.InputError`); choice texts go to ``meta["choice_texts"]``.
    Accepts every LLM-Adapters test set, including HellaSwag's ``ending1..4``.
    """
    tasks = [task for file in _commonsense_files(path) for task in _commonsense_file(file)]
    return sample_tasks(tasks, k, seed)


def _commonsense_files(path: str | Path) -> list[Path]:
    """The Commonsense files at ``path``: itself, or a folder's ``*.json`` files by name."""
    folder = Path(path)
    if not folder.is_dir():
        return [folder]
    files = sorted(folder.glob("*.json"))
    if not files:
        raise InputError(f"{folder}: no *.json files in this folder")
    return files


def _commonsense_items(path: Path) -> tuple[Path, list[Any]]:
    file, text = read_text(path)
    return file, json_array(text, file, "a JSON array of questions")


def _commonsense_file(path: Path) -> list[Task]:
    file, data = _commonsense_items(path)
    dataset = file.stem
    tasks: list[Task] = []
    for index, row in enumerate(data):
        where = f"{file}: item {index}"
        if not isinstance(row, dict):
            raise InputError(f"{where}: expected a JSON object")
        instruction = _field(row, "instruction", where)
        extra = row.get("input") or ""
        if not isinstance(extra, str):
            raise InputError(f"{where}: field 'input' should be str")
        answer = _field(row, "answer", where).strip()
        question = instruction.strip() + (f"\n\n{extra.strip()}" if extra.strip() else "")
        tasks.append(_commonsense_task(dataset, index, question, instruction, answer, where))
    return tasks


def _commonsense_task(
    dataset: str, index: int, question: str, instruction: str, answer: str, where: str
) -> Task:
    labels = _answer_format(instruction)
    lowered = answer.lower()
    if lowered in ("true", "false") and (
        labels is None or {x.lower() for x in labels} <= {"true", "false"}
    ):
        return Task(
            id=f"{dataset}/{index}",
            question=question,
            answer=lowered,
            kind="boolean",
            choices=("true", "false"),
            source="commonsense170k",
            meta={"dataset": dataset, "index": index},
        )
    if labels is None:
        match = re.fullmatch(r"([A-Za-z]+)\d+", answer)
        if match is None:
            raise InputError(f"{where}: cannot tell the answer format of answer {answer[:40]!r}")
        prefix = match.group(1)
        numbers = sorted({int(n) for n in re.findall(rf"\b{prefix}(\d+)\s*:", instruction, re.I)})
        labels = [f"{prefix.lower()}{n}" for n in numbers]
    labels = list(dict.fromkeys(label.lower() for label in labels))
    if len(labels) < 2:
        # A question of one choice, or one whose choices were taken from its own answer, is
        # no multiple choice: every answer in its format would be the ground truth, and no
        # adversary could send a wrong one.
        found = "/".join(labels) or "none"
        raise InputError(
            f"{where}: cannot tell the choices of answer {answer[:40]!r} (found {found}): "
            "no 'Answer format: a/b' line nor two 'LabelN:' options in the question"
        )
    if lowered not in labels:
        raise InputError(f"{where}: answer {answer[:40]!r} is not one of {'/'.join(labels)}")
    return Task(
        id=f"{dataset}/{index}",
        question=question,
        answer=lowered,
        kind="choice",
        choices=tuple(labels),
        source="commonsense170k",
        meta={
            "dataset": dataset,
            "index": index,
            "choice_texts": _choice_texts(instruction, labels),
        },
    )


# --- dispatch by name ---------------------------------------------------------------------

DatasetName = Literal["math500", "gsm8k", "commonsense", "synthetic"]


def dataset_digest(name: DatasetName, path: str | Path) -> str:
    """16 hex digits of the SHA-256 of the records a data-set file holds, read as JSON: each
    line's object of a MATH-500 or GSM8K file (blank lines skipped), each Commonsense file's
    name and array (a folder: its ``*.json`` files by name); ``""`` for ``synthetic``.

    A data-set file's identity in a run (a consensus config's ``dataset.digest``, its units'
    ids): not the file's bytes, so the file re-saved with other spacing, key order, line
    breaks or compression is the same data, while an edited question or answer, or a question
    added or removed, is other data. A file that does not read raises the loaders'
    :class:`~byzllm.errors.InputError`.
    """
    if name == "synthetic":
        return ""
    if name == "commonsense":
        return records_digest(
            [file.name, items] for file, items in map(_commonsense_items, _commonsense_files(path))
        )
    return records_digest(row for _, _, row in _jsonl(path))


class TaskSpec(StrictNumbers):
    """Which tasks to load: a dataset name, its file, and how many to sample.

    YAML: ``{name: math500, path: data/math500.jsonl, level: 4, k: 30, seed: 0}``;
    ``{name: synthetic, k: 30, seed: 0, steps: 3}``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: DatasetName
    path: Path | None = None
    k: int | None = Field(default=None, ge=0)
    seed: int = 0
    #: MATH-500 only: the problems of this level.
    level: int | None = None
    #: Synthetic tasks only: operations per problem, a count or an inclusive range.
    steps: int | tuple[int, int] = 3


def load_tasks(spec: TaskSpec | Mapping[str, Any] | str) -> list[Task]:
    """Load tasks by name: a :class:`TaskSpec`, its dict, or ``"name"`` / ``"name:path"``.

    >>> len(load_tasks({"name": "synthetic", "k": 5}))
    5
    """
    if isinstance(spec, str):
        name, _, path = spec.partition(":")
        spec = {"name": name.strip(), **({"path": path.strip()} if path.strip() else {})}
    if not isinstance(spec, TaskSpec):
        try:
            spec = TaskSpec.model_validate(dict(spec))
        except ValidationError as err:
            first = err.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "spec"
            raise InputError(f"invalid task spec: {where}: {first['msg']}") from None
    if spec.level is not None and spec.name != "math500":
        # Only MATH-500 has levels: any other data set dropped the filter without a word.
        raise InputError(f"level filters MATH-500 only; dataset {spec.name!r} has no levels")
    if spec.name == "synthetic":
        from ._synthetic import synthetic_tasks

        return synthetic_tasks(30 if spec.k is None else spec.k, seed=spec.seed, steps=spec.steps)
    if spec.path is None:
        raise InputError(f"dataset {spec.name!r} needs a path to its local file")
    if spec.name == "math500":
        return load_math500(spec.path, level=spec.level, k=spec.k, seed=spec.seed)
    if spec.name == "gsm8k":
        return load_gsm8k(spec.path, k=spec.k, seed=spec.seed)
    return load_commonsense(spec.path, k=spec.k, seed=spec.seed)
