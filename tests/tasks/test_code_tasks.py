"""HumanEval and LiveCodeBench loaders, the seeded 70/30 split (the rogue-agents paper, §4.1)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from byzllm.errors import InputError
from byzllm.tasks import load_humaneval, load_livecodebench, split_problems


def humaneval_file(path: Path, n: int = 10, *, gz: bool = False) -> Path:
    """``n`` tiny HumanEval-format problems: ``add_k(x)`` returns ``x + k``."""
    lines = []
    for k in range(n):
        lines.append(
            json.dumps(
                {
                    "task_id": f"Tiny/{k}",
                    "prompt": f'def add_{k}(x: int) -> int:\n    """Return x plus {k}."""\n',
                    "canonical_solution": f"    return x + {k}\n",
                    "test": f"def check(candidate):\n    assert candidate(1) == {1 + k}\n"
                    f"    assert candidate(-3) == {k - 3}\n",
                    "entry_point": f"add_{k}",
                }
            )
        )
    text = "\n".join(lines) + "\n"
    if gz:
        with gzip.open(path, "wt", encoding="utf-8") as fh:
            fh.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def test_humaneval_fields_and_reference(tmp_path: Path) -> None:
    problems = load_humaneval(humaneval_file(tmp_path / "he.jsonl.gz", 3, gz=True))
    assert [p.id for p in problems] == ["Tiny/0", "Tiny/1", "Tiny/2"]
    p = problems[2]
    assert p.entry_point == "add_2" and p.source == "humaneval"
    assert p.reference == p.prompt + "    return x + 2\n"
    assert "check(candidate)" in (p.hidden_test or "")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("not json", "not valid JSON"),
        ("[1, 2", r"bad\.jsonl:\d+: not valid JSON"),
        (json.dumps({"task_id": "x"}), "'prompt' must be a string"),
        (
            json.dumps(
                {
                    "task_id": "x",
                    "prompt": "",
                    "canonical_solution": "",
                    "test": "",
                    "entry_point": "not a name",
                }
            ),
            "not a Python name",
        ),
    ],
)
def test_humaneval_malformed(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=message):
        load_humaneval(path)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        load_humaneval(tmp_path / "nope.jsonl")


def test_split_is_seeded_and_70_30(tmp_path: Path) -> None:
    problems = load_humaneval(humaneval_file(tmp_path / "he.jsonl", 20))
    a, b = split_problems(problems, seed=1), split_problems(problems, seed=1)
    assert [p.id for p in a.train] == [p.id for p in b.train]
    assert (len(a.train), len(a.validation)) == (14, 6)
    assert not {p.id for p in a.train} & {p.id for p in a.validation}
    other = split_problems(problems, seed=2)
    assert [p.id for p in other.train] != [p.id for p in a.train]


def test_duplicate_ids_are_refused(tmp_path: Path) -> None:
    # A repeated HumanEval line fell in both halves of the split with seed 2 (train and
    # validation shared a problem); question ids 7 and "7" name one LiveCodeBench problem.
    path = humaneval_file(tmp_path / "he.jsonl", 10)
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text("\n".join([*lines, lines[0]]) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"he\.jsonl:11: id 'Tiny/0' already used at .*:1$"):
        load_humaneval(path)
    lcb = tmp_path / "lcb.jsonl"
    row = {"question_content": "Print 1.", "public_test_cases": []}
    lcb.write_text(
        json.dumps({**row, "question_id": 7}) + "\n" + json.dumps({**row, "question_id": "7"}),
        encoding="utf-8",
    )
    with pytest.raises(InputError, match=r"lcb\.jsonl:2: id '7' already used"):
        load_livecodebench(lcb)


def test_livecodebench_stdin_and_functional(tmp_path: Path) -> None:
    rows = [
        {
            "question_id": "abc001_a",
            "question_title": "Sum",
            "question_content": "Read two integers and print their sum.",
            "starter_code": "",
            "platform": "atcoder",
            "contest_date": "2024-09-01T00:00:00",
            "difficulty": "easy",
            "public_test_cases": json.dumps(
                [{"input": "1 2\n", "output": "3\n", "testtype": "stdin"}]
            ),
            "private_test_cases": "eJzLSM3JyQcABiwCFQ==",  # compressed: never unpickled
            "metadata": "{}",
        },
        {
            "question_id": 7,
            "question_content": "Return the double of n.",
            "starter_code": "class Solution:\n    def double(self, n: int) -> int:\n",
            "public_test_cases": [{"input": "4", "output": "8", "testtype": "functional"}],
            "private_test_cases": [{"input": "5", "output": "10", "testtype": "functional"}],
            "metadata": {"func_name": "double"},
        },
    ]
    path = tmp_path / "lcb.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    first, second = load_livecodebench(path)
    assert first.hidden_from == "public" and first.io_tests[0].output == "3\n"
    assert first.metadata["platform"] == "atcoder"
    assert "standard input" in first.prompt
    assert first.reads_stdin and not second.reads_stdin  # a program, and a method to call
    assert second.id == "7" and second.entry_point == "double"
    assert second.hidden_from == "hidden" and second.io_tests[0].input == "5"
    assert "class Solution" in second.prompt


def test_livecodebench_functional_needs_func_name(tmp_path: Path) -> None:
    path = tmp_path / "lcb.json"
    path.write_text(
        json.dumps(
            [
                {
                    "question_id": "q",
                    "question_content": "x",
                    "public_test_cases": [{"input": "1", "output": "1", "testtype": "functional"}],
                }
            ]
        ),
        encoding="utf-8",
    )
    with pytest.raises(InputError, match="func_name"):
        load_livecodebench(path)


@pytest.mark.shared_data
def test_public_humaneval(shared_data: Path) -> None:
    problems = load_humaneval(shared_data / "HumanEval.jsonl.gz")
    assert len(problems) == 164
    splits = split_problems(problems, seed=0)
    assert (len(splits.train), len(splits.validation)) == (115, 49)
