"""dataset_digest: what a data-set file holds, not how it is written."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from byzllm.errors import InputError
from byzllm.tasks import dataset_digest

ROWS = [
    {"question": "What is 1 plus 1?", "answer": "1+1=2\n#### 2"},
    {"question": "What is 2 plus 2?", "answer": "2+2=4\n#### 4"},
]


def _jsonl(
    path: Path, rows: list[dict[str, str]], separators: tuple[str, str] | None = None
) -> str:
    lines = (json.dumps(r, separators=separators) + "\n" for r in rows)
    path.write_text("".join(lines), encoding="utf-8")
    return dataset_digest("gsm8k", path)


def test_the_digest_is_of_the_records_compact_and_key_sorted(tmp_path: Path) -> None:
    # Written out by hand: each record compact, keys sorted, one line each.
    text = (
        '{"answer":"1+1=2\\n#### 2","question":"What is 1 plus 1?"}\n'
        '{"answer":"2+2=4\\n#### 4","question":"What is 2 plus 2?"}\n'
    )
    expected = hashlib.sha256(text.encode()).hexdigest()[:16]
    assert _jsonl(tmp_path / "g.jsonl", ROWS) == expected
    assert dataset_digest("math500", tmp_path / "g.jsonl") == expected  # the same records
    assert dataset_digest("synthetic", tmp_path / "absent.jsonl") == ""


def test_a_reformatted_file_is_the_same_data(tmp_path: Path) -> None:
    path = tmp_path / "g.jsonl"
    digest = _jsonl(path, ROWS)
    # Keys in another order, other spacing: the same records.
    assert _jsonl(path, [dict(reversed(r.items())) for r in ROWS]) == digest
    assert _jsonl(path, ROWS, separators=(" , ", " : ")) == digest
    # Blank lines and Windows line breaks; the same file compressed.
    lines = [json.dumps(r) for r in ROWS]
    path.write_bytes(("\r\n\r\n".join(lines) + "\r\n\r\n").encode())
    assert dataset_digest("gsm8k", path) == digest
    packed = tmp_path / "g.jsonl.gz"
    with gzip.open(packed, "wt", encoding="utf-8") as fh:
        fh.write("\n".join(lines))
    assert dataset_digest("gsm8k", packed) == digest


def test_an_edited_added_or_removed_question_is_other_data(tmp_path: Path) -> None:
    path = tmp_path / "g.jsonl"
    digest = _jsonl(path, ROWS)
    edits = [
        [ROWS[0], {**ROWS[1], "answer": "2+2=5\n#### 5"}],  # an answer
        [{**ROWS[0], "question": "What is 1 plus one?"}, ROWS[1]],  # a question's text
        ROWS[:1],  # a question removed
        [*ROWS, ROWS[0]],  # one added
        ROWS[::-1],  # the order: sampling draws positions
    ]
    digests = {_jsonl(path, rows) for rows in edits}
    assert len(digests) == len(edits) and digest not in digests


def test_commonsense_files_and_folders(tmp_path: Path) -> None:
    items = [{"instruction": "Q? Answer format: true/false", "input": "", "answer": "true"}]
    folder = tmp_path / "cs"
    folder.mkdir()
    (folder / "boolq.json").write_text(json.dumps(items))
    (folder / "piqa.json").write_text(json.dumps(items * 2))
    digest = dataset_digest("commonsense", folder)
    (folder / "boolq.json").write_text(json.dumps(items, indent=4))
    assert dataset_digest("commonsense", folder) == digest
    # A file's name is its questions' data set and ids: renamed, other data.
    (folder / "boolq.json").rename(folder / "arc.json")
    assert dataset_digest("commonsense", folder) != digest
    one = dataset_digest("commonsense", folder / "piqa.json")
    (folder / "piqa.json").write_text(json.dumps([{**items[0], "answer": "false"}] * 2))
    assert dataset_digest("commonsense", folder / "piqa.json") != one


def test_a_file_that_does_not_read_raises_the_loaders_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"question": "Q", "answer": "#### 1"}\n{not json\n')
    with pytest.raises(InputError, match=r"bad\.jsonl:2: not valid JSON"):
        dataset_digest("gsm8k", path)
    with pytest.raises(InputError, match="a folder, not a file"):
        dataset_digest("gsm8k", tmp_path)


# Written raw, a control character or line separator breaks a JSON-lines file for the
# loaders too (str.splitlines): the texts hold none.
_TEXT = st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), max_size=12)
_ROW = st.dictionaries(st.sampled_from(["question", "answer", "id", "x"]), _TEXT, min_size=1)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    rows=st.lists(_ROW, min_size=1, max_size=5),
    indent_keys=st.booleans(),
    ascii_only=st.booleans(),
    blank=st.sampled_from(["", "\n", "  \n"]),
    edit=st.data(),
)
def test_layout_never_moves_the_digest_and_a_changed_value_always_does(
    tmp_path: Path,
    rows: list[dict[str, str]],
    indent_keys: bool,
    ascii_only: bool,
    blank: str,
    edit: st.DataObject,
) -> None:
    path = tmp_path / "p.jsonl"
    digest = _jsonl(path, rows)
    ordered = [dict(sorted(r.items(), reverse=indent_keys)) for r in rows]
    lines = [json.dumps(r, ensure_ascii=ascii_only, separators=(", ", ": ")) for r in ordered]
    path.write_text("".join(f"{line}\n{blank}" for line in lines), encoding="utf-8")
    assert dataset_digest("gsm8k", path) == digest
    at = edit.draw(st.integers(0, len(rows) - 1))
    key = edit.draw(st.sampled_from(sorted(rows[at])))
    changed = [dict(r) for r in rows]
    changed[at][key] += "!"
    assert _jsonl(path, changed) != digest
