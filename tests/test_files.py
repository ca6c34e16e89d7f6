"""Files written whole or not at all (byzllm._files), and the writers that use it."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from byzllm._files import atomic_path, write_text_atomic


def test_a_failed_write_leaves_the_old_file_and_no_partial(tmp_path: Path) -> None:
    target = tmp_path / "page.html"
    target.write_text("old, complete", encoding="utf-8")
    with pytest.raises(OSError), atomic_path(target) as partial:
        partial.write_text("new, cut o", encoding="utf-8")
        raise OSError(errno.ENOSPC, "No space left on device")
    assert target.read_text(encoding="utf-8") == "old, complete"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["page.html"]


def test_a_write_that_ends_replaces_the_file(tmp_path: Path) -> None:
    target = tmp_path / "sub.md"
    assert write_text_atomic(target, "é\n") == target
    assert target.read_text(encoding="utf-8") == "é\n"
    write_text_atomic(target, "second\n")
    assert target.read_text(encoding="utf-8") == "second\n"
    assert [p.name for p in tmp_path.iterdir()] == ["sub.md"]


def test_a_report_csv_cut_by_a_full_disk_is_not_left_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """write_csv wrote the final file directly: a full disk left a CSV cut mid-row."""
    import csv

    from byzllm.runs.reports import write_csv

    class FullDisk(csv.DictWriter):  # type: ignore[type-arg]
        def writerow(self, rowdict: object) -> object:
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(csv, "DictWriter", FullDisk)
    with pytest.raises(OSError):
        write_csv([{"a": 1}], tmp_path / "t.csv")
    assert list(tmp_path.iterdir()) == []
