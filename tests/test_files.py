"""Files written whole or not at all (byzllm._files), and the writers that use it."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from byzllm._files import atomic_path, refuse_pipe, write_text_atomic


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


def test_a_missing_folder_is_created_and_errors_name_the_asked_file(tmp_path: Path) -> None:
    """`graph build -o graphs/g.json` (and `whodunit generate --out`) failed on a missing
    folder with "No such file or directory: graphs/.g.json.<pid>.partial", where every
    other writer creates the folder."""
    target = tmp_path / "new" / "sub" / "g.json"
    assert write_text_atomic(target, "x") == target and target.read_text() == "x"
    blocker = tmp_path / "afile"
    blocker.write_text("")
    with pytest.raises(NotADirectoryError) as err:
        write_text_atomic(blocker / "g.json", "x")
    assert err.value.filename == str(blocker)
    # An error on the hidden partial file names the file the caller asked for.
    asked = tmp_path / "page.html"
    with pytest.raises(OSError) as err, atomic_path(asked) as partial:
        raise OSError(errno.EACCES, "Permission denied", str(partial))
    assert err.value.filename == str(asked)
    assert list(tmp_path.glob(".*partial")) == []


def test_graph_build_and_whodunit_generate_write_into_a_new_folder(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from byzllm.cli import app

    runner = CliRunner()
    graph, games = tmp_path / "graphs" / "g.json", tmp_path / "games" / "test.jsonl"
    result = runner.invoke(app, ["graph", "build", "merg", "-n", "7", "-o", str(graph)])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["whodunit", "generate", "-n", "2", "--out", str(games)])
    assert result.exit_code == 0, result.output
    assert graph.is_file() and len(games.read_text().splitlines()) == 2
    result = runner.invoke(app, ["graph", "build", "merg", "-n", "7", "-o", str(graph / "x")])
    assert result.exit_code == 2
    assert result.stderr.strip() == f"error: Not a directory: {graph}"


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


def test_refuse_pipe_refuses_what_a_whole_read_would_wait_on(tmp_path: Path) -> None:
    # A missing file and a folder are the read's to report; a device never ends.
    plain = tmp_path / "f.json"
    plain.write_text("{}")
    for path in (plain, tmp_path, tmp_path / "missing.json"):
        refuse_pipe(path)
    with pytest.raises(OSError) as err:
        refuse_pipe(os.devnull)
    assert (err.value.strerror, err.value.filename) == (
        "a pipe, socket or device, not a file",
        os.devnull,
    )
