"""Reading the exception that ended a program out of its stderr (hostile text)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from byzllm.sandbox._limits import LimitName, SandboxLimits
from byzllm.sandbox._run import Execution
from byzllm.sandbox._traceback import ProgramError, last_error
from byzllm.sandbox._verdict import judge


def _stderr_of(program: str, folder: Path) -> str:
    # From a file, so that the traceback shows source lines as in the sandbox.
    path = folder / "main.py"
    path.write_text(program, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(path)], capture_output=True, text=True, timeout=30, check=False
    )
    return done.stderr


def test_reads_a_real_assertion(tmp_path: Path) -> None:
    error = last_error(
        _stderr_of("def check(c):\n    assert c(1) == 2, 'one'\ncheck(abs)\n", tmp_path)
    )
    assert error is not None
    assert error.type == "AssertionError"
    assert error.message == "one"
    assert error.frame is not None
    assert (error.frame.line, error.frame.function) == (2, "check")
    assert error.frame.source.strip() == "assert c(1) == 2, 'one'"
    assert [f.function for f in error.frames] == ["<module>", "check"]


def test_reads_chained_exceptions_by_the_last_one(tmp_path: Path) -> None:
    program = "try:\n    {}['k']\nexcept KeyError:\n    raise ValueError('bad value')\n"
    error = last_error(_stderr_of(program, tmp_path))
    assert error is not None
    assert (error.type, error.message) == ("ValueError", "bad value")
    assert error.frame is not None and error.frame.line == 4


def test_reads_a_syntax_error_without_traceback_header(tmp_path: Path) -> None:
    error = last_error(_stderr_of("def f(:\n    pass\n", tmp_path))
    assert error is not None
    assert error.type == "SyntaxError"


def test_no_traceback_is_none() -> None:
    assert last_error("") is None
    assert last_error("some output\nError: not a traceback\n") is None
    assert last_error('  File "x.py", line 3, in f\n    x()\n') is None  # cut short


def test_only_the_tail_is_read() -> None:
    # A traceback buried under megabytes of later output is not found, and no work is spent
    # on the megabytes.
    fake = 'Traceback (most recent call last):\n  File "a.py", line 1, in <module>\nE: x\n'
    assert last_error(fake + "x" * 1_000_000) is None


_TRACEBACK_LINES = st.sampled_from(
    [
        "Traceback (most recent call last):",
        '  File "main.py", line 3, in <module>',
        '  File "main.py", line 99999999999999999999, in f',
        '  File "',
        "    assert x == 1",
        "    ^^^^^^^^",
        "AssertionError",
        "AssertionError: ",
        "MemoryError",
        "OSError: [Errno 24] Too many open files",
        "OSError: [Errno 99999] x",
        "BlockingIOError: [Errno 11] Resource temporarily unavailable",
        "During handling of the above exception, another exception occurred:",
        "",
        "\x00\ufffd",
        "x" * 5000,
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_TRACEBACK_LINES, st.text(max_size=200)), max_size=60))
def test_any_stderr_parses_without_raising(lines: list[str]) -> None:
    error = last_error("\n".join(lines))
    assert error is None or isinstance(error, ProgramError)
    if error is not None:
        assert len(error.message) <= 300
        assert all(len(f.source) <= 300 for f in error.frames)


@settings(max_examples=200, deadline=None)
@given(
    stderr=st.one_of(
        st.binary(max_size=3000), st.lists(_TRACEBACK_LINES).map(lambda ls: "\n".join(ls).encode())
    ),
    stdout=st.binary(max_size=500),
    exit_code=st.one_of(st.none(), st.integers(-300, 300)),
    signal_number=st.one_of(st.none(), st.integers(0, 70)),
    report_kind=st.sampled_from(["exit", "timed_out", "empty", "garbage"]),
    exceeded=st.booleans(),
)
def test_any_observation_gives_one_result(
    stderr: bytes,
    stdout: bytes,
    exit_code: int | None,
    signal_number: int | None,
    report_kind: str,
    exceeded: bool,
) -> None:
    report: dict[str, object] = {
        "exit": {"event": "exit", "exit_code": exit_code, "signal": signal_number, "cpu_s": 0.1},
        "timed_out": {"event": "exit", "timed_out": True, "processes": 3},
        "empty": {},
        "garbage": {"event": "exit", "exit_code": "zero", "signal": [], "cpu_s": None},
    }[report_kind]
    execution = Execution(
        report=report, stdout=stdout, stderr=stderr, duration_s=0.5, output_exceeded=exceeded
    )
    result = judge(execution, SandboxLimits(), sentinel="done-marker")
    assert result.status in {"passed", "failed", "timed_out", "crashed", "rejected"}
    assert (result.limit is not None) == (result.status == "rejected")
    # Passing needs the harness's marker on stdout: printed text alone never passes.
    if result.status == "passed":
        assert b"\ndone-marker\n" in stdout


def test_a_fake_traceback_cannot_turn_a_pass_into_anything_else() -> None:
    execution = Execution(
        report={"event": "exit", "exit_code": 0, "signal": None},
        stdout=b"",
        stderr=b'Traceback (most recent call last):\n  File "main.py", line 1\nMemoryError\n',
        duration_s=0.1,
    )
    assert judge(execution, SandboxLimits()).status == "passed"


def test_a_timeout_at_a_low_process_limit_names_the_limit_only_past_the_runs_own() -> None:
    def judged(report: dict[str, object], max_processes: int) -> tuple[str, str | None]:
        execution = Execution(report=report, stdout=b"", stderr=b"", duration_s=1.0)
        result = judge(execution, SandboxLimits(timeout_s=1, max_processes=max_processes))
        return result.status, result.limit

    timed_out = {"event": "exit", "timed_out": True}
    # A program's first process alone; a solution's process and its test's worker alone.
    assert judged({**timed_out, "processes": 1}, 1) == ("timed_out", None)
    assert judged({**timed_out, "processes": 2, "tests": b""}, 2) == ("timed_out", None)
    # Processes the program started, up to the limit.
    assert judged({**timed_out, "processes": 2}, 2) == ("rejected", "processes")
    assert judged({**timed_out, "processes": 3, "tests": b""}, 3) == ("rejected", "processes")


def test_a_timeout_past_a_process_limit_that_did_not_hold_is_a_timeout() -> None:
    # Without isolation, as root with root's uid kept, RLIMIT_NPROC does not bind: the
    # processes a program started past max_processes never met the limit.
    report = {"event": "exit", "timed_out": True, "processes": 21}
    not_held: dict[LimitName, str] = {"processes": "the program ran as root"}
    execution = Execution(
        report=report, stdout=b"", stderr=b"", duration_s=1.0, limits_not_held=not_held
    )
    result = judge(execution, SandboxLimits(timeout_s=1, max_processes=8))
    assert (result.status, result.limit) == ("timed_out", None), result.detail
    assert result.limits_not_held == not_held
