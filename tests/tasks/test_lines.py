"""A GSM8K file read on demand (TaskLines) gives what the eager loader gives, line for line,
and reads only the lines asked for."""

from __future__ import annotations

import gzip
import json
import os
import random
from pathlib import Path

import pytest

from byzllm.errors import InputError
from byzllm.tasks import TaskLines, gsm8k_lines, load_gsm8k, sample_tasks
from byzllm.tasks._lines import LineIndex


def _row(i: int) -> str:
    return json.dumps({"question": f"Q{i}: {i} + 1 = ?", "answer": f"{i} + 1\n#### {i + 1}"})


def _write(path: Path, text: str) -> Path:
    path.write_bytes(text.encode("utf-8"))
    return path


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The positions LineIndex.read is asked for, from now on."""
    read = LineIndex.read
    asked: list[int] = []

    def counted(self: LineIndex, position: int) -> tuple[int, str]:
        asked.append(position)
        return read(self, position)

    monkeypatch.setattr(LineIndex, "read", counted)
    return asked


# Blank lines (spaces, a no-break space, CRLF), Windows line ends, non-ASCII text, no final
# newline: positions, ids and line numbers must still be the eager loader's.
MESSY = (
    _row(0)
    + "\n\n   \n"
    + _row(1)
    + "\r\n\u00a0\u3000\r\n"
    + json.dumps({"question": "Ünïcode ✓ 7?", "answer": "x\n#### 7"}, ensure_ascii=False)
    + "\n"
    + "\n".join(_row(i) for i in range(2, 40))
)


def test_every_question_is_the_eager_loaders(tmp_path: Path) -> None:
    path = _write(tmp_path / "g.jsonl", MESSY)
    lazy = gsm8k_lines(path)
    assert isinstance(lazy, TaskLines)
    eager = load_gsm8k(path)
    assert len(lazy) == len(eager) == 41
    assert list(lazy) == eager
    assert lazy[-1] == eager[-1] and lazy[3:6] == eager[3:6]
    assert lazy[5] is lazy[5]  # parsed once, the same object after
    for seed in range(5):
        assert sample_tasks(lazy, 7, seed) == load_gsm8k(path, k=7, seed=seed)


def test_a_sample_reads_only_its_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(tmp_path / "g.jsonl", "\n".join(_row(i) for i in range(5000)) + "\n")
    asked = _counting(monkeypatch)
    lazy = gsm8k_lines(path)
    assert asked == []
    chosen = sample_tasks(lazy, 20, 3)
    assert sorted(asked) == sorted(random.Random(3).sample(range(5000), 20))
    assert [t.id for t in chosen] == [f"gsm8k/{p}" for p in sorted(asked)]


@pytest.mark.parametrize(
    "odd",
    ["\u2028", "\x0c", "\r", "\x1c", "\x85"],
    ids=["line-separator", "form-feed", "lone-cr", "file-separator", "next-line"],
)
def test_line_breaks_str_splitlines_honours_read_whole(tmp_path: Path, odd: str) -> None:
    # str.splitlines breaks the line before a question there (a raw U+2028 is valid JSON
    # inside a string, and splits it too).
    text = "\n".join(_row(i) for i in range(6)) + f"\n{odd}" + _row(6) + "\n"
    path = _write(tmp_path / "g.jsonl", text)
    assert LineIndex.build(path) is None
    assert gsm8k_lines(path) == load_gsm8k(path)


def test_a_compressed_file_is_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "g.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.write("\n".join(_row(i) for i in range(5)))
    lazy = gsm8k_lines(path)
    assert not isinstance(lazy, TaskLines)
    assert lazy == load_gsm8k(path)


def test_a_bad_line_is_reported_when_read(tmp_path: Path) -> None:
    rows = [_row(i) for i in range(10)]
    rows[4] = "{not json"
    rows[7] = json.dumps({"question": "Q", "answer": "no marker"})
    path = _write(tmp_path / "bad.jsonl", "\n".join(rows) + "\n")
    path.write_bytes(path.read_bytes().replace(b"Q2:", b"Q\xff:"))
    lazy = gsm8k_lines(path)
    assert lazy[3].answer == "4"
    with pytest.raises(InputError, match=r"bad\.jsonl:5: not valid JSON"):
        lazy[4]
    with pytest.raises(InputError, match=r"bad\.jsonl:8: answer has no '#### <number>'"):
        lazy[7]
    with pytest.raises(InputError, match=r"bad\.jsonl:3: not UTF-8 text"):
        lazy[2]


def test_a_file_changed_after_indexing_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path / "g.jsonl", "\n".join(_row(i) for i in range(10)))
    lazy = gsm8k_lines(path)
    _write(path, "\n".join(_row(i) for i in range(20, 30)))
    os.utime(path, ns=(1, 1))
    with pytest.raises(InputError, match="changed since this run indexed it"):
        lazy[0]


def test_a_missing_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        gsm8k_lines(tmp_path / "nope.jsonl")


def test_positions_by_id_and_views_without_some(tmp_path: Path) -> None:
    path = _write(tmp_path / "g.jsonl", "\n".join(_row(i) for i in range(10)))
    lazy = gsm8k_lines(path)
    assert isinstance(lazy, TaskLines)
    assert (lazy.kind, lazy.source, lazy.choices, lazy.dataset) == ("number", "gsm8k", (), None)
    assert [lazy.position_of(x) for x in ("gsm8k/3", "gsm8k/03", "gsm8k/10", "math/3")] == [
        3,
        None,
        None,
        None,
    ]
    view = lazy.excluding([2, 5]).excluding([0])  # positions 0, 2 and 5 of the file
    expected = [t for i, t in enumerate(lazy) if i not in (0, 2, 5)]
    assert list(view) == expected and len(view) == 7
    assert all(a is b for a, b in zip(view, expected, strict=True))
    assert [view.position_of(f"gsm8k/{i}") for i in (0, 1, 2, 6)] == [None, 0, None, 3]


def test_a_folder_is_not_called_missing(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r": a folder, not a file$"):
        gsm8k_lines(tmp_path)
