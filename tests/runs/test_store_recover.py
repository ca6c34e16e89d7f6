"""`runs repair` reads the pages SQLite's walks cannot reach with SQLite's own ``.recover``
where a working ``sqlite3`` shell is installed, and with its own page reader otherwise."""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
import sys
from pathlib import Path
from typing import Any, ClassVar

import pytest

from byzllm.runs import Record, _repair, make_unit, repair_store, run_units
from byzllm.runs._pages import read_cells

PAGE = 4096


class Note(Record):
    kind: ClassVar[str] = "note"
    q: int
    text: str


def note(payload: dict[str, Any]) -> list[Record]:
    return [Note(q=payload["q"], text=f"{payload['q']}-{step}-" * 300) for step in range(3)]


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run_dir = tmp_path_factory.mktemp("recover") / "run"
    units = [make_unit({"q": q}) for q in range(60)]
    asyncio.run(run_units(run_dir, units, note, progress=False))
    return run_dir / "results.sqlite"


def _write_shell(folder: Path, body: str) -> None:
    shell = folder / "sqlite3"
    shell.write_text(f"#!{sys.executable}\n{body}", encoding="utf-8")
    shell.chmod(0o755)


#: A stand-in for the sqlite3 shell: ``DB .recover`` prints the database as SQL (Python's own
#: dump: enough for a healthy store), and ``DB`` runs the SQL it reads from stdin.
_DUMPING_SHELL = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1])
if sys.argv[2:] == [".recover"]:
    for line in conn.iterdump():
        print(line)
else:
    conn.executescript(sys.stdin.read())
    conn.commit()
"""


def test_a_shell_whose_recover_fails_is_not_used(shell_on_path: Path) -> None:
    # As Debian 12's sqlite3 does: its library has no sqlite_dbpage table.
    _write_shell(
        shell_on_path, "import sys\nprint('sql error: SQL logic error (1)')\nsys.exit(1)\n"
    )
    assert _repair.recover_shell() is None


def test_no_shell_at_all_is_no_recover(shell_on_path: Path) -> None:
    assert shutil.which("sqlite3") is None
    assert _repair.recover_shell() is None


def test_the_recovered_rows_reach_the_repair_in_the_page_reader_s_shapes(
    pristine: Path, shell_on_path: Path
) -> None:
    """Copy, ``.recover``, loading into a scratch database, and the raw row shapes: the rows a
    (dumping) shell gives back are the rows the page reader finds on the same store."""
    _write_shell(shell_on_path, _DUMPING_SHELL)
    shell = _repair.recover_shell()
    assert shell is not None
    with sqlite3.connect(f"{pristine.resolve().as_uri()}?mode=ro", uri=True) as conn:
        tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master")}
        layout = _repair._layout(
            conn, tables, _repair.RepairReport(pristine.parent, pristine, False)
        )
    recovered = list(_repair._recovered_cells(pristine, layout, shell))

    def rows(cells: Any) -> set[tuple[bool, int | None, tuple[Any, ...]]]:
        widths = {
            len(layout.columns["records"]),
            len(layout.columns["runs"]),
            len(layout.unit_order),
        }
        return {
            (c.table_leaf, c.rowid, c.values)
            for c in cells
            if (c.table_leaf or len(c.values) == len(layout.unit_order)) and len(c.values) in widths
        }

    page_rows = {
        row for row in rows(read_cells(pristine)) if row[0] or row[2][0] in _unit_ids(pristine)
    }
    assert rows(recovered) == page_rows
    # Units, record rows (a unit's three notes are one batch), the invocation.
    assert len(recovered) == 60 + 60 + 1


def _unit_ids(store: Path) -> set[str]:
    with sqlite3.connect(f"{store.resolve().as_uri()}?mode=ro", uri=True) as conn:
        return {unit for (unit,) in conn.execute("SELECT id FROM units")}


def test_undecodable_text_drops_the_row_as_the_page_reader_does(tmp_path: Path) -> None:
    scratch = sqlite3.connect(tmp_path / "s.sqlite")
    scratch.text_factory = _repair._text
    scratch.execute("CREATE TABLE t (x TEXT)")
    scratch.execute("INSERT INTO t VALUES (CAST(X'66FF6F' AS TEXT)), ('fine')")
    values = [x for (x,) in scratch.execute("SELECT x FROM t")]
    assert isinstance(values[0], _repair._Garbled) and values[1] == "fine"


def _damage(store: Path, how: str) -> None:
    with store.open("r+b") as handle:
        size = store.stat().st_size
        if how == "truncate":
            handle.truncate(size * 6 // 10)
        else:
            handle.seek(size // PAGE // 2 * PAGE)
            handle.write(b"\xa5" * 3 * PAGE)


@pytest.mark.parametrize("how", ["overwrite", "truncate"])
def test_recover_and_the_page_reader_salvage_the_same_rows(
    pristine: Path, tmp_path: Path, how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The measurement behind keeping the page reader as the fallback only."""
    _repair.recover_shell.cache_clear()
    shell = _repair.recover_shell()
    if shell is None:
        pytest.skip("no sqlite3 shell with a working .recover (needs the sqlite_dbpage table)")
    reports = {}
    for source in ("recover", "pages"):
        run_dir = tmp_path / source
        run_dir.mkdir()
        shutil.copy(pristine, run_dir / "results.sqlite")
        _damage(run_dir / "results.sqlite", how)
        if source == "pages":
            monkeypatch.setattr(_repair, "_page_cells", lambda path, layout: read_cells(path))
        reports[source] = repair_store(run_dir).to_dict()
    for key in ("units", "records", "runs", "recovered_from_pages", "units_lost"):
        assert reports["recover"][key] == reports["pages"][key], key
