"""Run folders at the edges: one writer per folder (a lock that dies with its holder, refused
in one line or waited for), finished runs read from a read-only mount (no file created
there), and one error line for a read-only folder, a name too long, a full disk."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, ClassVar

import pytest
from typer.testing import CliRunner

from byzllm.cli import app
from byzllm.runs import Record, RunBusyError, Store, make_unit, run_units
from byzllm.runs._lock import WriterLock, lock_path
from byzllm.runs._store import STORE_FILENAME, StoreError, _as_store_error

RUNNER = CliRunner()
SMALL_RUN = [
    "--set", "dataset.n=2", "--set", "protocols=[sac]", "--set", "topologies=[complete]",
    "--set", "T=[1]",
]  # fmt: skip


class Value(Record):
    kind: ClassVar[str] = "value"
    n: int


async def slow_work(payload: dict[str, Any]) -> Value:
    await asyncio.sleep(payload["sleep"])
    return Value(n=payload["n"])


def _units(n: int, sleep: float = 0.0) -> list[Any]:
    return [make_unit({"n": i, "sleep": sleep}) for i in range(n)]


def _errors(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("error:")]


HOLDER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from byzllm.runs._lock import WriterLock
    with WriterLock(Path(sys.argv[1]), argv=["byzllm", "consensus", "run", "holder"]):
        print("held", flush=True)
        sys.stdin.read()
    """
)


def _hold_lock(run_dir: Path) -> subprocess.Popen[str]:
    """Another process holding the run folder's writer lock until its stdin closes."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(run_dir / STORE_FILENAME)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "held"
    return proc


# -- one writer per run folder -------------------------------------------------------------


def test_a_second_writer_is_refused_at_once_and_the_first_finishes_undisturbed(
    tmp_path: Path,
) -> None:
    async def both() -> tuple[Any, BaseException | None]:
        first = asyncio.ensure_future(
            run_units(tmp_path, _units(6, sleep=0.05), slow_work, concurrency=2, progress=False)
        )
        while not lock_path(tmp_path / STORE_FILENAME).exists():
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)  # the first run is computing units
        second_error: BaseException | None = None
        try:
            await run_units(tmp_path, _units(6, sleep=0.05), slow_work, progress=False)
        except RunBusyError as err:
            second_error = err
        return await first, second_error

    summary, refusal = asyncio.run(both())
    assert summary.status == "finished" and summary.done == 6
    assert isinstance(refusal, RunBusyError) and refusal.exit_code == 2
    message = str(refusal)
    assert "\n" not in message and f"process {os.getpid()}" in message
    assert "--wait" in message
    with Store.open(tmp_path) as store:
        assert store.counts() == {"pending": 0, "done": 6, "failed": 0}
        assert [run["status"] for run in store.runs()] == ["finished"]  # no second run


def test_wait_runs_after_the_first_writer_ends(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    async def both() -> tuple[Any, Any]:
        first = asyncio.ensure_future(
            run_units(tmp_path, _units(4, sleep=0.05), slow_work, concurrency=1, progress=False)
        )
        while not lock_path(tmp_path / STORE_FILENAME).exists():
            await asyncio.sleep(0.01)
        second = await run_units(
            tmp_path, _units(4, sleep=0.05), slow_work, progress=False, wait=True
        )
        return await first, second

    first, second = asyncio.run(both())
    assert first.done == 4
    assert second.skipped == 4 and second.done == 0  # it ran after the first, resuming
    assert capsys.readouterr().err.count("waiting: run folder") == 1


def test_the_cli_refuses_a_second_writer_in_one_line_naming_the_process(tmp_path: Path) -> None:
    run_dir = tmp_path / "busy"
    holder = _hold_lock(run_dir)
    try:
        result = RUNNER.invoke(app, ["consensus", "run", "-o", str(run_dir), *SMALL_RUN])
        assert result.exit_code == 2, result.output
        errors = _errors(result.output)
        assert len(errors) == 1
        assert f"process {holder.pid} (byzllm consensus run holder)" in errors[0]
        assert not (run_dir / STORE_FILENAME).exists()  # refused before touching the store
    finally:
        holder.kill()
        holder.wait()


def test_the_lock_dies_with_its_holder_even_on_sigkill(tmp_path: Path) -> None:
    holder = _hold_lock(tmp_path)
    with pytest.raises(RunBusyError):
        WriterLock(tmp_path / STORE_FILENAME).acquire()
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    summary = asyncio.run(run_units(tmp_path, _units(3), slow_work, progress=False))
    assert summary.done == 3


def test_readers_are_not_writers(tmp_path: Path) -> None:
    asyncio.run(run_units(tmp_path, _units(2), slow_work, progress=False))
    with WriterLock(tmp_path / STORE_FILENAME):  # a run is writing
        result = RUNNER.invoke(app, ["runs", "show", str(tmp_path)])
        assert result.exit_code == 0, result.output
        with Store.open(tmp_path) as store:
            assert store.counts()["done"] == 2


def test_a_store_deleted_after_a_crash_starts_afresh_despite_its_wal(tmp_path: Path) -> None:
    """A run killed leaves its commits in results.sqlite-wal; deleting results.sqlite to start
    afresh left that file beside the new store, which SQLite read as the new store's: the
    rerun stopped at once with its new store "damaged", or (as here) found the deleted
    store's units in it."""
    path = tmp_path / STORE_FILENAME
    store = Store(tmp_path)
    try:
        store.register_units(_units(40))
        # What a killed run leaves: the WAL and its index, never checkpointed.
        left = {s: Path(f"{path}{s}").read_bytes() for s in ("-wal", "-shm")}
    finally:
        store.close()  # (checkpoints and deletes them)
    assert left["-wal"]
    path.unlink()
    for suffix, data in left.items():
        Path(f"{path}{suffix}").write_bytes(data)

    summary = asyncio.run(run_units(tmp_path, _units(3), slow_work, progress=False))
    assert summary.done == 3
    with Store.open(tmp_path) as store:
        assert store.counts() == {"pending": 0, "done": 3, "failed": 0}


# -- bad folders: one line, exit 2 -----------------------------------------------------------


def test_a_run_folder_name_over_255_characters_is_one_line(tmp_path: Path) -> None:
    run_dir = tmp_path / ("r" * 300)
    result = RUNNER.invoke(app, ["consensus", "run", "-o", str(run_dir), *SMALL_RUN])
    assert result.exit_code == 2, result.output
    errors = _errors(result.output)
    assert len(errors) == 1 and "too long" in errors[0].lower()
    assert "Traceback" not in result.output


def test_the_disk_full_line_says_rerunning_resumes(tmp_path: Path) -> None:
    import sqlite3

    err = sqlite3.OperationalError("database or disk is full")
    err.sqlite_errorcode = 13  # type: ignore[attr-defined]
    message = str(_as_store_error(tmp_path / STORE_FILENAME, err))
    assert "disk is full" in message and "rerun the same command to resume" in message


def test_a_disk_full_when_the_store_is_created_says_to_free_space_and_rerun(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store created on a full disk said only "cannot open results store ...: database or
    disk is full", without the line every other full disk gets."""
    import sqlite3

    def full(*args: object, **kwargs: object) -> None:
        err = sqlite3.OperationalError("database or disk is full")
        err.sqlite_errorcode = 13  # type: ignore[attr-defined]
        raise err

    monkeypatch.setattr("byzllm.runs._store._create_store_file", full)
    with pytest.raises(StoreError) as caught:
        Store(tmp_path / "run")
    message = str(caught.value)
    assert "cannot create results store" in message and "the disk is full" in message
    assert "free some space and rerun the same command" in message


# -- read-only folders ------------------------------------------------------------------------


def _read_only_shell() -> list[str] | None:
    """A command prefix that runs a shell in a private mount namespace where bind mounts can
    be made read-only (as root: ``unshare -m``; otherwise a user namespace), or ``None``."""
    if shutil.which("unshare") is None or sys.platform != "linux":
        return None
    for prefix in (["unshare", "-m"], ["unshare", "-Urm"]):
        probe = subprocess.run([*prefix, "true"], capture_output=True)
        if probe.returncode == 0:
            return prefix
    return None


def _byzllm(*args: str) -> str:
    command = " ".join(f"'{arg}'" for arg in args)
    return f"{sys.executable} -c 'from byzllm.cli import main; main()' {command}"


def test_a_finished_run_reads_from_a_read_only_mount_and_a_new_run_there_is_one_line(
    tmp_path: Path,
) -> None:
    prefix = _read_only_shell()
    if prefix is None:
        pytest.skip("no mount namespace here to make a read-only bind mount")
    archive = tmp_path / "archive"
    run_dir = archive / "run"
    made = RUNNER.invoke(app, ["consensus", "run", "-o", str(run_dir), *SMALL_RUN])
    assert made.exit_code == 0, made.output
    before = sorted(p.name for p in run_dir.iterdir())
    out = tmp_path / "out"
    steps = [
        _byzllm("runs", "show", str(run_dir)),
        _byzllm("consensus", "report", str(run_dir)),
        _byzllm("runs", "export", str(run_dir), "--out", str(out / "export")),
        _byzllm("view", str(run_dir), "--out", str(out / "view.html")),
        _byzllm("consensus", "run", "-o", str(run_dir), *SMALL_RUN),
        _byzllm("consensus", "run", "-o", str(archive / "new"), *SMALL_RUN),
    ]
    script = "\n".join(
        [
            "set -u",
            f"mount --bind '{archive}' '{archive}' || exit 97",
            f"mount -o remount,bind,ro '{archive}' || exit 97",
            f"touch '{archive}/probe' 2>/dev/null && exit 98",
            *(f"{step} > '{tmp_path}/out{i}' 2> '{tmp_path}/err{i}'; echo $?" for i, step in
              enumerate(steps)),
        ]
    )  # fmt: skip
    done = subprocess.run([*prefix, "sh", "-c", script], capture_output=True, text=True)
    if done.returncode in (97, 98):
        pytest.skip("cannot make a read-only bind mount here")
    codes = [int(line) for line in done.stdout.split()]
    errs = [(tmp_path / f"err{i}").read_text() for i in range(len(steps))]
    outs = [(tmp_path / f"out{i}").read_text() for i in range(len(steps))]
    assert codes[:4] == [0, 0, 0, 0], errs
    assert "units: 2" in outs[0] and "done: 2" in outs[0]
    assert "Table 1" in outs[1] and "--out DIR" in errs[1]  # tables, no files, one note
    assert (out / "export" / "consensus_question.csv").is_file()
    assert (out / "view.html").is_file()
    for i in (4, 5):  # a new run into the read-only folder: one line, exit 2
        assert codes[i] == 2, errs[i]
        assert len(_errors(errs[i])) == 1 and "Read-only file system" in errs[i], errs[i]
        assert "Traceback" not in errs[i]
    assert sorted(p.name for p in run_dir.iterdir()) == before  # nothing created there


def test_a_store_read_only_by_mode_opens_without_side_files(tmp_path: Path) -> None:
    """The immutable fallback as such: a reader that may not create -wal/-shm still reads a
    finished store (where chmod binds, i.e. not as root)."""
    asyncio.run(run_units(tmp_path, _units(2), slow_work, progress=False))
    tmp_path.chmod(0o555)
    try:
        if os.access(tmp_path, os.W_OK):
            pytest.skip("chmod does not stop this user writing (root)")
        with Store.open(tmp_path) as store:
            assert store.counts()["done"] == 2
        assert not Path(f"{tmp_path / STORE_FILENAME}-shm").exists()
    finally:
        tmp_path.chmod(0o755)


def test_unfinished_writes_on_a_read_only_folder_are_named_not_lost(tmp_path: Path) -> None:
    """A store whose -wal holds writes SQLite cannot open read-only is refused in one line
    instead of read without them."""
    import sqlite3

    from byzllm.runs._store import connect_read_only

    asyncio.run(run_units(tmp_path, _units(2), slow_work, progress=False))
    path = tmp_path / STORE_FILENAME
    Path(f"{path}-wal").write_bytes(b"x" * 64)

    real_connect = sqlite3.connect

    class Refusing:
        def __init__(self, conn: sqlite3.Connection) -> None:
            self.conn = conn

        def execute(self, *args: Any) -> Any:
            err = sqlite3.OperationalError("unable to open database file")
            err.sqlite_errorcode = 14  # type: ignore[attr-defined]
            raise err

        def close(self) -> None:
            self.conn.close()

    def connect(*args: Any, **kwargs: Any) -> Any:
        return Refusing(real_connect(*args, **kwargs))

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sqlite3, "connect", connect)
        with pytest.raises(StoreError, match=r"latest writes are still in results\.sqlite-wal"):
            connect_read_only(path)


def test_run_units_names_the_too_long_name_and_the_limit(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match=r"300 characters; most file systems allow 255"):
        asyncio.run(run_units(tmp_path / ("r" * 300), _units(1), slow_work, progress=False))
