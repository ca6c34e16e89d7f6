"""`byzllm sandbox run` and `byzllm sandbox check`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from byzllm.cli import app
from byzllm.sandbox import _run, _support

runner = CliRunner()


@pytest.mark.usefixtures("require_sandbox")
def test_run_prints_the_result_and_exits_0_on_pass(tmp_path: Path) -> None:
    program = tmp_path / "ok.py"
    program.write_text("print('hello')\n")
    done = runner.invoke(app, ["sandbox", "run", str(program)])
    assert done.exit_code == 0, done.output
    assert "status: passed" in done.output and "hello" in done.output


@pytest.mark.usefixtures("require_sandbox")
def test_run_json_for_a_failing_program(tmp_path: Path) -> None:
    program = tmp_path / "bad.py"
    program.write_text("assert 1 + 1 == 3\n")
    done = runner.invoke(app, ["sandbox", "run", str(program), "--json", "--timeout", "2"])
    assert done.exit_code == 1
    result = json.loads(done.stdout)
    assert result["status"] == "failed"
    assert result["detail"] == "AssertionError at line 1: assert 1 + 1 == 3"


@pytest.mark.usefixtures("require_sandbox")
def test_run_with_limits(tmp_path: Path) -> None:
    program = tmp_path / "hog.py"
    program.write_text("x = bytearray(400_000_000)\n")
    done = runner.invoke(app, ["sandbox", "run", str(program), "--memory", "128", "--json"])
    assert done.exit_code == 1
    assert json.loads(done.stdout)["limit"] == "memory"


def test_an_unsafe_run_without_isolation_is_never_silent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = _support.support()
    unavailable = _support.Support(dict(found.mechanisms), "no namespaces here (for a test)")
    monkeypatch.setattr(_run, "support", lambda: unavailable)
    program = tmp_path / "ok.py"
    program.write_text("print('hello')\n")
    done = runner.invoke(app, ["sandbox", "run", str(program), "--unsafe", "--json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["isolated"] is False
    assert "WITHOUT isolation" in done.stderr
    text = runner.invoke(app, ["sandbox", "run", str(program), "--unsafe"])
    assert "WITHOUT isolation" in text.stderr and "status: passed" in text.stdout


@pytest.mark.parametrize("root", [True, False], ids=["root", "not-root"])
def test_an_unsafe_run_warns_of_a_limit_that_did_not_hold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, root: bool
) -> None:
    # Root, whose uid the run keeps where the run's uids cannot reach the interpreter (one in
    # root's home folder): RLIMIT_NPROC does not bind it. Without root, every limit holds.
    found = _support.support()
    unavailable = _support.Support(dict(found.mechanisms), "no namespaces here (for a test)")
    monkeypatch.setattr(_run, "support", lambda: unavailable)
    monkeypatch.setattr(_run.os, "geteuid", lambda: 0 if root else 1000)
    monkeypatch.setattr(_run, "_reached_by_others", lambda paths: False)
    program = tmp_path / "ok.py"
    program.write_text("print('hello')\n")
    done = runner.invoke(app, ["sandbox", "run", str(program), "--unsafe", "--json"])
    assert done.exit_code == 0, done.output
    not_held = json.loads(done.stdout)["limits_not_held"]
    assert list(not_held) == (["processes"] if root else [])
    warning = "warning: the processes limit did not hold: the program ran as root"
    assert (warning in done.stderr) == root, done.stderr
    text = runner.invoke(app, ["sandbox", "run", str(program), "--unsafe"])
    assert (warning in text.stderr) == root and "status: passed" in text.stdout


@pytest.mark.usefixtures("require_sandbox")
def test_a_sandboxed_run_says_it_was_isolated(tmp_path: Path) -> None:
    program = tmp_path / "ok.py"
    program.write_text("print('hello')\n")
    done = runner.invoke(app, ["sandbox", "run", str(program), "--unsafe", "--json"])
    assert json.loads(done.stdout)["isolated"] is True
    assert "WITHOUT" not in done.stderr


def test_a_missing_program_is_bad_input(tmp_path: Path) -> None:
    done = runner.invoke(app, ["sandbox", "run", str(tmp_path / "missing.py")])
    assert done.exit_code == 2
    assert "cannot read the program" in done.output


def test_check_says_whether_it_works() -> None:
    done = runner.invoke(app, ["sandbox", "check", "--json"])
    found = json.loads(done.stdout)
    assert done.exit_code == (0 if found["available"] else 3)


def test_check_says_how_the_limits_are_held() -> None:
    done = runner.invoke(app, ["sandbox", "check"])
    found = json.loads(runner.invoke(app, ["sandbox", "check", "--json"]).stdout)
    if found["cgroup"]:
        version = found["cgroup_version"]
        assert f"note: each run gets a cgroup {version} (memory with swap off, pids)" in done.output
    else:
        # Falls back, and says why.
        missing = found["cgroup_missing"]
        assert f"note: no cgroup is used ({missing}): per-process rlimits bound" in done.output
    if found["available"]:
        assert "sysv_ipc_closed, memfd_refused, inode_limit hold what" in done.output
    assert ("note: not root" in done.output) == found["rootless"]


@pytest.mark.usefixtures("require_sandbox")
def test_run_escapes_the_programs_control_characters(tmp_path: Path) -> None:
    """On a terminal the program's escape sequences would clear the screen and show a status
    line of its own: they are shown escaped, in its output and in a detail quoting it."""
    program = tmp_path / "spoof.py"
    program.write_text(
        "import sys\n"
        "print('\\x1b[2J\\x1b[H\\x1b]0;t\\x07status: passed')\n"
        "sys.exit('\\x1b[2Jstatus: passed')\n"
    )
    # color=True: escape sequences are kept, as on a terminal.
    done = runner.invoke(app, ["sandbox", "run", str(program), "--timeout", "5"], color=True)
    assert done.exit_code == 1, done.output
    assert "\x1b" not in done.output and "\x07" not in done.output, repr(done.output)
    assert done.output.startswith("status: crashed\n"), done.output
    assert "\\x1b[2J\\x1b[H\\x1b]0;t\\x07status: passed\n" in done.output
    assert "detail: exit status 1: \\x1b[2Jstatus: passed\n" in done.output
    raw = runner.invoke(app, ["sandbox", "run", str(program), "--timeout", "5", "--json"])
    assert json.loads(raw.stdout)["stdout"] == "\x1b[2J\x1b[H\x1b]0;t\x07status: passed\n"
