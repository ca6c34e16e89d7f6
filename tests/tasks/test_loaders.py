"""Dataset loaders: small files written here, and the public data sets when present."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from byzllm.errors import InputError
from byzllm.tasks import (
    TaskSpec,
    extract_answer,
    is_correct,
    load_commonsense,
    load_gsm8k,
    load_math500,
    load_tasks,
)


def write_jsonl(path: Path, rows: list[object]) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def math_row(i: int, level: int) -> dict[str, object]:
    return {
        "problem": f"Problem {i}?",
        "solution": f"... \\boxed{{{i}}}",
        "answer": str(i),
        "subject": "Algebra",
        "level": level,
        "unique_id": f"test/algebra/{i}.json",
    }


# --- MATH-500 -----------------------------------------------------------------------------


def test_math500_filters_level_and_samples_deterministically(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "m.jsonl", [math_row(i, 1 + i % 5) for i in range(50)])
    level4 = load_math500(path, level=4)
    assert [t.id for t in level4] == [f"test/algebra/{i}.json" for i in range(3, 50, 5)]
    assert all(t.kind == "math" and t.meta["level"] == 4 for t in level4)
    first = load_math500(path, level=4, k=5, seed=7)
    again = load_math500(path, level=4, k=5, seed=7)
    other = load_math500(path, level=4, k=5, seed=8)
    assert [t.id for t in first] == [t.id for t in again]
    assert [t.id for t in first] != [t.id for t in other]
    assert [t.id for t in first] == sorted(
        (t.id for t in first), key=lambda s: int(s.split("/")[-1].split(".")[0])
    )


def test_math500_refuses_a_duplicate_id(tmp_path: Path) -> None:
    # Two questions under one id were loaded as two tasks that every report keyed as one
    # question; the duplicate is refused even on a line the level filter leaves out.
    rows = [math_row(1, 4), math_row(2, 3), {**math_row(3, 4), "unique_id": "test/algebra/2.json"}]
    path = write_jsonl(tmp_path / "m.jsonl", rows)
    with pytest.raises(InputError, match=r"m\.jsonl:3: id 'test/algebra/2\.json' already used"):
        load_math500(path, level=4)
    assert [t.id for t in load_math500(write_jsonl(tmp_path / "ok.jsonl", rows[:2]))] == [
        "test/algebra/1.json",
        "test/algebra/2.json",
    ]


def test_math500_reports_bad_lines(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(math_row(1, 4)) + "\n\n{not json}\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"bad\.jsonl:3: not valid JSON"):
        load_math500(path)
    write_jsonl(path, [math_row(1, 4), {"problem": "x"}])
    with pytest.raises(InputError, match=r":2: missing field 'answer'"):
        load_math500(path)
    write_jsonl(path, [[1, 2]])
    with pytest.raises(InputError, match=r":1: expected a JSON object"):
        load_math500(path)


def test_missing_file_and_oversampling(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        load_math500(tmp_path / "nope.jsonl")
    path = write_jsonl(tmp_path / "m.jsonl", [math_row(i, 4) for i in range(3)])
    with pytest.raises(InputError, match="only 3 are available"):
        load_math500(path, k=4)
    assert load_math500(path, k=0) == []


def test_math500_level_text(tmp_path: Path) -> None:
    row = math_row(1, 4) | {"level": "Level 4"}
    path = write_jsonl(tmp_path / "m.jsonl", [row])
    assert load_math500(path, level=4)[0].meta["level"] == 4


# --- GSM8K --------------------------------------------------------------------------------


def test_gsm8k_answer_after_hashes(tmp_path: Path) -> None:
    rows = [
        {"question": "Q1", "answer": "3 + 4 = <<3+4=7>>7\n#### 7"},
        {"question": "Q2", "answer": "big\n#### 1,250"},
        {"question": "Q3", "answer": "owes\n#### -3"},
    ]
    tasks = load_gsm8k(write_jsonl(tmp_path / "g.jsonl", rows))
    assert [t.answer for t in tasks] == ["7", "1250", "-3"]
    assert tasks[0].kind == "number" and tasks[0].id == "gsm8k/0"
    assert tasks[0].meta["solution"] == "3 + 4 = <<3+4=7>>7"


def test_gsm8k_without_final_number(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "g.jsonl", [{"question": "Q", "answer": "no marker"}])
    with pytest.raises(InputError, match=r"g\.jsonl:1: answer has no '#### <number>'"):
        load_gsm8k(path)
    write_jsonl(path, [{"question": "Q", "answer": "x\n#### many"}])
    with pytest.raises(InputError, match="no number after"):
        load_gsm8k(path)
    # A decimal comma or a list, not the gold 1.
    write_jsonl(path, [{"question": "Q", "answer": "x\n#### 1,2"}])
    with pytest.raises(InputError, match="no number after"):
        load_gsm8k(path)


# --- Commonsense170k ----------------------------------------------------------------------


def commonsense_row(instruction: str, answer: str) -> dict[str, str]:
    return {
        "instruction": instruction,
        "input": "",
        "output": f"the correct answer is {answer}",
        "answer": answer,
    }


BOOLQ = (
    "Please answer the following question with true or false, question: is it?\n\n"
    "Answer format: true/false"
)
WINO = (
    "Please choose the correct answer to fill in the blank: Sarah beat Maria so _ won.\n\n"
    "Option1: Sarah Option2: Maria Answer format: option1/option2"
)
HELLA = (
    "Please choose the correct ending to complete the given sentence: A man throws a javelin.\n\n"
    "Ending1: it lands. Ending2: it flies away. Ending3: he sits. Ending4: he cries.\n\n"
    "Answer format: ending1/ending2/ending3/ending4"
)


def test_commonsense_kinds_and_choices(tmp_path: Path) -> None:
    path = tmp_path / "mixed.json"
    rows = [
        commonsense_row(BOOLQ, "false"),
        commonsense_row(WINO, "option1"),
        commonsense_row(HELLA, "ending2"),
    ]
    path.write_text(json.dumps(rows), encoding="utf-8")
    boolq, wino, hella = load_commonsense(path)
    assert (boolq.kind, boolq.answer, boolq.choices) == ("boolean", "false", ("true", "false"))
    assert (wino.kind, wino.choices) == ("choice", ("option1", "option2"))
    assert wino.meta["choice_texts"] == {"option1": "Sarah", "option2": "Maria"}
    assert hella.choices == ("ending1", "ending2", "ending3", "ending4")
    assert hella.meta["choice_texts"]["ending2"] == "it flies away."
    assert hella.id == "mixed/2"
    assert is_correct(hella, extract_answer(hella, "The second ending fits: Answer: ending2"))
    assert is_correct(wino, extract_answer(wino, "Answer: Sarah"))


def test_commonsense_folder_reads_every_file(tmp_path: Path) -> None:
    (tmp_path / "b_boolq.json").write_text(json.dumps([commonsense_row(BOOLQ, "true")] * 3))
    (tmp_path / "a_wino.json").write_text(json.dumps([commonsense_row(WINO, "option2")] * 2))
    (tmp_path / "notes.txt").write_text("ignored")
    tasks = load_commonsense(tmp_path)
    assert [t.id for t in tasks] == ["a_wino/0", "a_wino/1", "b_boolq/0", "b_boolq/1", "b_boolq/2"]
    assert len(load_commonsense(tmp_path, k=2, seed=5)) == 2
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputError, match="no \\*\\.json files"):
        load_commonsense(empty)


def test_commonsense_without_answer_format_line(tmp_path: Path) -> None:
    instruction = "Pick one. Solution1: pour water Solution2: pour sand"
    path = tmp_path / "piqa.json"
    path.write_text(json.dumps([commonsense_row(instruction, "solution2")]), encoding="utf-8")
    (task,) = load_commonsense(path)
    assert task.choices == ("solution1", "solution2")


@pytest.mark.parametrize(
    "instruction",
    [
        # Options written otherwise than "Option1: ...": they were not found, and the question
        # loaded with one choice, its own answer, so "option1" was no answer rather than wrong.
        "Threading the needle, the _ was too thick. Choices: (option1) needle; (option2) floss.",
        "Only one option is listed. Option2: floss",
        "A format of one label: Option2: floss\n\nAnswer format: option2",
    ],
)
def test_commonsense_question_with_fewer_than_two_choices(tmp_path: Path, instruction: str) -> None:
    path = tmp_path / "wino.json"
    path.write_text(json.dumps([commonsense_row(instruction, "option2")]), encoding="utf-8")
    with pytest.raises(InputError, match=r"item 0: cannot tell the choices of answer 'option2'"):
        load_commonsense(path)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{}", "expected a JSON array"),
        ('[{"instruction": "x"', r"bad\.json:1: not valid JSON"),
        ("[1]", "item 0: expected a JSON object"),
        (
            json.dumps([{"instruction": "x", "input": "", "output": ""}]),
            "item 0: missing field 'answer'",
        ),
        (json.dumps([commonsense_row(WINO, "option3")]), "not one of option1/option2"),
        (json.dumps([commonsense_row("no format here", "???")]), "cannot tell the answer format"),
    ],
)
def test_commonsense_malformed(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError, match=message):
        load_commonsense(path)


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin.json"
    path.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(InputError, match="not UTF-8"):
        load_commonsense(path)


# --- dispatch -----------------------------------------------------------------------------


def test_load_tasks_dispatch(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "m.jsonl", [math_row(i, 4) for i in range(10)])
    by_spec = load_tasks(TaskSpec(name="math500", path=path, k=3, seed=1))
    by_dict = load_tasks({"name": "math500", "path": str(path), "k": 3, "seed": 1})
    assert [t.id for t in by_spec] == [t.id for t in by_dict]
    assert len(load_tasks(f"math500:{path}")) == 10
    assert len(load_tasks("synthetic")) == 30
    assert len(load_tasks({"name": "synthetic", "k": 4, "steps": 2})) == 4
    ranged = load_tasks({"name": "synthetic", "k": 20, "steps": [2, 4]})
    assert {t.meta["steps"] for t in ranged} <= {2, 3, 4}


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"name": "imagenet"}, "invalid task spec: name"),
        ({"name": "math500"}, "needs a path"),
        ({"name": "synthetic", "colour": "red"}, "invalid task spec: colour"),
        ({"name": "synthetic", "k": -1}, "invalid task spec: k"),
        ({"name": "synthetic", "steps": 9}, "steps must be between 1 and 8"),
        # Only MATH-500 has levels: the others returned every question, unfiltered.
        ({"name": "synthetic", "level": 4}, "level filters MATH-500 only; dataset 'synthetic'"),
        ({"name": "gsm8k", "path": "g.jsonl", "level": 4}, "dataset 'gsm8k' has no levels"),
        ({"name": "commonsense", "path": "c.json", "level": 4}, "'commonsense' has no levels"),
    ],
)
def test_load_tasks_bad_spec(spec: dict[str, object], message: str) -> None:
    with pytest.raises(InputError, match=message):
        load_tasks(spec)


# --- the public data sets -----------------------------------------------------------------


@pytest.mark.shared_data
def test_public_math500(shared_data: Path) -> None:
    tasks = load_math500(shared_data / "math500.jsonl")
    assert len(tasks) == 500
    level4 = load_math500(shared_data / "math500.jsonl", level=4, k=30, seed=0)
    assert len(level4) == 30 and all(t.meta["level"] == 4 for t in level4)
    # Every ground truth is correct against itself and its own worked solution's box.
    for task in level4:
        assert is_correct(task, task.answer), task.id
        assert is_correct(task, extract_answer(task, task.meta["solution"])), task.id


@pytest.mark.shared_data
def test_public_gsm8k(shared_data: Path) -> None:
    tasks = load_gsm8k(shared_data / "gsm8k_test.jsonl")
    assert len(tasks) == 1319
    assert tasks[0].answer == "18"
    assert all(is_correct(t, t.answer) for t in tasks)


@pytest.mark.shared_data
def test_public_solutions_read_their_own_answers(shared_data: Path) -> None:
    """Every worked solution answers its own question: number_theory/1000 ends "We may check
    our answer: ... so our answer is correct." and was read as "correct"."""
    for task in load_math500(shared_data / "math500.jsonl"):
        assert is_correct(task, extract_answer(task, task.meta["solution"])), task.id
    path = shared_data / "gsm8k_test.jsonl"
    rows = path.read_text(encoding="utf-8").splitlines()
    for task, row in zip(load_gsm8k(path), rows, strict=True):
        solution = json.loads(row)["answer"]  # the reasoning, then "#### <answer>"
        assert is_correct(task, extract_answer(task, solution)), task.id


@pytest.mark.shared_data
def test_public_commonsense_mix(shared_data: Path) -> None:
    tasks = load_commonsense(shared_data / "commonsense", k=30, seed=0)
    assert len(tasks) == 30
    assert {t.kind for t in tasks} == {"boolean", "choice"}


@pytest.mark.shared_data
@pytest.mark.parametrize(
    ("name", "rows", "kind"),
    [
        ("boolq", 3270, "boolean"),
        ("piqa", 1838, "choice"),
        ("social_i_qa", 1954, "choice"),
        ("winogrande", 1267, "choice"),
        ("ARC-Challenge", 1172, "choice"),
        ("ARC-Easy", 2376, "choice"),
        ("openbookqa", 500, "choice"),
    ],
)
def test_public_commonsense(shared_data: Path, name: str, rows: int, kind: str) -> None:
    tasks = load_commonsense(shared_data / "commonsense" / f"{name}.json")
    assert len(tasks) == rows
    assert {t.kind for t in tasks} == {kind}
    for task in tasks:
        assert task.answer in task.choices
        assert is_correct(task, extract_answer(task, f"the correct answer is {task.answer}"))


def test_unreadable_json_and_empty_files_are_one_clear_error(tmp_path: Path) -> None:
    """A 5,000-digit integer (past Python's conversion limit) or arrays nested 100,000 deep
    raised ValueError / RecursionError; an empty file, or a level no problem has, loaded as
    no questions at all."""
    huge = tmp_path / "huge.jsonl"
    huge.write_text('{"question": "q", "answer": "#### 1", "x": ' + "1" * 5000 + "}\n")
    with pytest.raises(InputError, match=r"huge\.jsonl:1: unreadable JSON"):
        load_gsm8k(huge)
    deep = tmp_path / "deep.jsonl"
    deep.write_text("[" * 100_000 + "\n")
    with pytest.raises(InputError, match="unreadable JSON"):
        load_math500(deep)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(InputError, match="no GSM8K questions"):
        load_gsm8k(empty)
    with pytest.raises(InputError, match="no MATH-500 problems"):
        load_math500(empty)
    one = tmp_path / "one.jsonl"
    one.write_text(json.dumps({"problem": "p", "answer": "1", "level": "Level 2"}) + "\n")
    with pytest.raises(InputError, match="no MATH-500 problems at level 9"):
        load_math500(one, level=9)


def test_a_folder_given_as_a_data_file_is_named_a_folder(tmp_path: Path) -> None:
    # Only Commonsense reads a folder; MATH-500 said "no such file" of one that exists.
    with pytest.raises(InputError, match=r": a folder, not a file$"):
        load_math500(tmp_path)
