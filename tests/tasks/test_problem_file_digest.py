"""problem_file_digest: what a CodeGen problem file holds, not how it is written."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from byzllm.errors import InputError
from byzllm.tasks import dataset_digest, problem_file_digest

ROWS = [
    {"task_id": "T/0", "prompt": "def f():\n", "test": "def check(c):\n    pass\n"},
    {"task_id": "T/1", "prompt": "def g():\n", "test": "def check(c):\n    pass\n"},
]


def _jsonl(
    path: Path, rows: list[dict[str, str]], separators: tuple[str, str] | None = None
) -> str:
    lines = (json.dumps(r, separators=separators) + "\n" for r in rows)
    path.write_text("".join(lines), encoding="utf-8")
    return problem_file_digest(path)


def test_the_digest_is_of_the_problems_compact_and_key_sorted(tmp_path: Path) -> None:
    # Written out by hand: each problem compact, keys sorted, one line each.
    text = (
        '{"prompt":"def f():\\n","task_id":"T/0","test":"def check(c):\\n    pass\\n"}\n'
        '{"prompt":"def g():\\n","task_id":"T/1","test":"def check(c):\\n    pass\\n"}\n'
    )
    expected = hashlib.sha256(text.encode()).hexdigest()[:16]
    path = tmp_path / "he.jsonl"
    assert _jsonl(path, ROWS) == expected
    # One rule for every file of records: the consensus data sets' digest agrees.
    assert dataset_digest("gsm8k", path) == expected


def test_a_reformatted_file_is_the_same_problems(tmp_path: Path) -> None:
    path = tmp_path / "he.jsonl"
    digest = _jsonl(path, ROWS)
    assert _jsonl(path, [dict(reversed(r.items())) for r in ROWS]) == digest
    assert _jsonl(path, ROWS, separators=(" , ", " : ")) == digest
    lines = [json.dumps(r) for r in ROWS]
    path.write_bytes(("\r\n\r\n".join(lines) + "\r\n").encode())
    assert problem_file_digest(path) == digest
    # A JSON array (as LiveCodeBench exports may be) of the same problems, and a .gz file.
    array = tmp_path / "he.json"
    array.write_text(json.dumps(ROWS, indent=2), encoding="utf-8")
    assert problem_file_digest(array) == digest
    packed = tmp_path / "he.jsonl.gz"
    with gzip.open(packed, "wt", encoding="utf-8") as fh:
        fh.write("\n".join(lines))
    assert problem_file_digest(packed) == digest


def test_an_edited_added_removed_or_moved_problem_is_another_file(tmp_path: Path) -> None:
    path = tmp_path / "he.jsonl"
    digest = _jsonl(path, ROWS)
    edits = [
        [ROWS[0], {**ROWS[1], "test": "def check(c):\n    assert False\n"}],  # a test
        [{**ROWS[0], "prompt": "def f(x):\n"}, ROWS[1]],  # a prompt
        ROWS[:1],  # a problem removed
        [*ROWS, {**ROWS[0], "task_id": "T/2"}],  # one added
        ROWS[::-1],  # the order: the splits draw positions
    ]
    digests = {_jsonl(path, rows) for rows in edits}
    assert len(digests) == len(edits) and digest not in digests


def test_a_file_that_does_not_read_raises_the_loaders_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"task_id": "T/0"}\n{not json\n')
    with pytest.raises(InputError, match=r"bad\.jsonl:2: not valid JSON"):
        problem_file_digest(path)
    array = tmp_path / "bad.json"
    array.write_text('[{"task_id": "T/0"}, 3]')
    with pytest.raises(InputError, match=r"bad\.json:2: expected a JSON object"):
        problem_file_digest(array)
    with pytest.raises(InputError, match="no such file"):
        problem_file_digest(tmp_path / "absent.jsonl")


# Written raw, a control character or line separator breaks a JSON-lines file for the
# loaders too (str.splitlines): the texts hold none.
_TEXT = st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), max_size=12)
_ROW = st.dictionaries(st.sampled_from(["task_id", "prompt", "test", "x"]), _TEXT, min_size=1)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    rows=st.lists(_ROW, min_size=1, max_size=5),
    as_array=st.booleans(),
    reverse_keys=st.booleans(),
    ascii_only=st.booleans(),
    edit=st.data(),
)
def test_layout_never_moves_the_digest_and_a_changed_value_always_does(
    tmp_path: Path,
    rows: list[dict[str, str]],
    as_array: bool,
    reverse_keys: bool,
    ascii_only: bool,
    edit: st.DataObject,
) -> None:
    path = tmp_path / "p.jsonl"
    digest = _jsonl(path, rows)
    ordered = [dict(sorted(r.items(), reverse=reverse_keys)) for r in rows]
    if as_array:
        text = json.dumps(ordered, ensure_ascii=ascii_only, indent=1)
    else:
        text = "".join(json.dumps(r, ensure_ascii=ascii_only) + "\n\n" for r in ordered)
    path.write_text(text, encoding="utf-8")
    assert problem_file_digest(path) == digest
    at = edit.draw(st.integers(0, len(rows) - 1))
    key = edit.draw(st.sampled_from(sorted(rows[at])))
    changed = [dict(r) for r in rows]
    changed[at][key] += "!"
    assert _jsonl(path, changed) != digest
