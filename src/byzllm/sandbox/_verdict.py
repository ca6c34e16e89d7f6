"""Judging one run: what the host observed becomes one :class:`SandboxResult`.

Everything read from the program's output is hostile input (it can print a fake traceback or
a fake limit message). That only ever lets a program describe its own failure wrongly: a run
passes on the exit status and the bootstrap's report, never on what the program printed.
"""

from __future__ import annotations

import json
import re
import signal
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from byzllm._process import signal_name

from ._errors import SandboxError
from ._limits import LimitName, SandboxLimits, SandboxResult, Status, TestOutcome
from ._run import PROGRAM_NAME, Execution
from ._traceback import Frame, ProgramError, last_error

__all__ = ["LineNamer", "judge", "judge_tests", "signal_name"]

#: Names a line of the program for a message ("line 4", "tests line 2").
LineNamer = Callable[[int], str]

#: errno values (Linux) of the exceptions a limit produces inside the program.
_LIMIT_ERRNOS: dict[int, LimitName] = {
    11: "processes",  # EAGAIN from fork()/clone() at RLIMIT_NPROC
    12: "memory",  # ENOMEM
    24: "files",  # EMFILE at RLIMIT_NOFILE
    27: "disk",  # EFBIG at RLIMIT_FSIZE
    28: "disk",  # ENOSPC: the work folder is full
}
_ERRNO = re.compile(r"^\[Errno (\d{1,4})\]")


def _decode(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def _in_program(frame: Frame) -> bool:
    return frame.file == PROGRAM_NAME or frame.file.endswith("/" + PROGRAM_NAME)


def _describe(error: ProgramError, name_line: LineNamer) -> str:
    """``Type: message at line N: source``, at the innermost line of the program itself."""
    head = error.type + (f": {error.message}" if error.message else "")
    frame = error.innermost_in(_in_program) or error.frame
    if frame is None:
        return head
    ours = _in_program(frame)
    place = name_line(frame.line) if ours else f"{frame.file}, line {frame.line}"
    return f"{head} at {place}" + (f": {frame.source.strip()}" if frame.source else "")


def _thread_failed(error: ProgramError) -> bool:
    """A new thread could not start: the process limit (threads count as processes) or the
    memory limit (its stack is address space) refused it, and the message does not say
    which."""
    return error.short_type == "RuntimeError" and "can't start new thread" in error.message


def _limit_of(error: ProgramError) -> LimitName | None:
    if error.short_type == "MemoryError":
        return "memory"
    if _thread_failed(error):
        return "processes"
    if match := _ERRNO.match(error.message):
        return _LIMIT_ERRNOS.get(int(match.group(1)))
    return None


_LIMIT_TEXT: dict[LimitName, str] = {
    "memory": "memory limit ({limits.memory_mb} MB of address space per process)",
    "processes": "process limit ({limits.max_processes} processes)",
    "files": "open-file limit ({limits.max_open_files} per process)",
    "disk": "disk limit ({limits.disk_mb} MB in the work folder)",
    "output": "output limit ({limits.max_output_bytes} bytes of stdout and stderr)",
}


@dataclass(frozen=True)
class _Outcome:
    """What every result of one run shares; ``result`` and ``rejected`` add the verdict."""

    limits: SandboxLimits
    exit_code: int | None
    stdout: str
    stderr: str
    duration_s: float
    isolated: bool = True
    limits_not_held: dict[LimitName, str] = field(default_factory=dict)

    def result(self, status: Status, detail: str) -> SandboxResult:
        return SandboxResult(
            status=status,
            detail=detail,
            exit_code=self.exit_code,
            stdout=self.stdout,
            stderr=self.stderr,
            duration_s=self.duration_s,
            isolated=self.isolated,
            limits_not_held=self.limits_not_held,
        )

    def rejected(self, limit: LimitName, why: str, *, thread: bool = False) -> SandboxResult:
        detail = "rejected by the " + _LIMIT_TEXT[limit].format(limits=self.limits)
        if thread:  # the two limits a thread can hit (``limit`` names the first)
            memory = _LIMIT_TEXT["memory"].format(limits=self.limits)
            detail = f"{detail} or the {memory}: a new thread could not start"
        result = self.result("rejected", f"{detail}: {why}" if why else detail)
        return result.model_copy(update={"limit": limit})


def judge(
    execution: Execution,
    limits: SandboxLimits,
    *,
    sentinel: str | None = None,
    name_line: LineNamer = lambda line: f"line {line}",
) -> SandboxResult:
    """The result of one run. ``sentinel``: the line the test harness prints after the last
    test; a run that exits 0 without it did not run every test (``failed``)."""
    report = execution.report
    if report.get("event") == "setup":
        raise SandboxError(f"the sandbox could not be prepared: {report.get('message', '?')}")
    stdout, stderr = _decode(execution.stdout), _decode(execution.stderr)
    finished = False
    if sentinel is not None:
        marker = f"\n{sentinel}\n"
        at = stdout.rfind(marker)
        if at >= 0:
            finished = True
            stdout = stdout[:at] + stdout[at + len(marker) :]
    exit_code = report.get("exit_code")
    outcome = _Outcome(
        limits=limits,
        exit_code=exit_code if isinstance(exit_code, int) else None,
        stdout=stdout,
        stderr=stderr,
        duration_s=execution.duration_s,
        isolated=execution.isolated,
        limits_not_held=execution.limits_not_held,
    )
    if execution.output_exceeded:
        return outcome.rejected("output", "the program was stopped")
    if execution.cgroup_hit is not None:
        return _cgroup_rejection(outcome, execution.cgroup_hit)
    if report.get("timed_out") or execution.host_timed_out:
        # A process limit that did not bind the program (root's uid kept) held nothing.
        held = "processes" not in execution.limits_not_held
        if held and _held_at_process_limit(report, limits):
            return outcome.rejected("processes", "still at the limit when time ran out")
        return outcome.result("timed_out", f"wall-time limit of {limits.timeout_s:g} s reached")
    if not report:
        return outcome.result("crashed", "the sandbox ended without saying how the program ended")
    error = last_error(stderr)
    number = report.get("signal")
    if isinstance(number, int):
        return _judge_signal(number, report, error, outcome)
    if exit_code == 0:
        if sentinel is not None and not finished:
            return outcome.result("failed", "the program exited (status 0) before every test ran")
        return outcome.result("passed", "")
    if error is None:
        last = stderr.strip().splitlines()[-1:] or [""]
        tail = f": {last[0][:300]}" if last[0] else ""
        return outcome.result("crashed", f"exit status {exit_code}{tail}")
    if (limit := _limit_of(error)) is not None:
        return outcome.rejected(limit, _describe(error, name_line), thread=_thread_failed(error))
    if error.short_type == "AssertionError":
        return outcome.result("failed", _describe(error, name_line))
    return outcome.result("crashed", _describe(error, name_line))


def _held_at_process_limit(report: dict[str, Any], limits: SandboxLimits) -> bool:
    """Whether a run that ran out of time was at its process limit, with processes the
    program started itself: the processes a run holds before it starts any (the program's
    first; for tests the solution's process and the worker of the running test) are no sign
    of a fork refused, even where they alone reach a low ``max_processes``."""
    processes = report.get("processes")
    before_any = 2 if "tests" in report else 1
    return (
        isinstance(processes, int) and processes >= limits.max_processes and processes > before_any
    )


def _cgroup_rejection(outcome: _Outcome, hit: tuple[LimitName, str, str]) -> SandboxResult:
    """A limit the run's cgroup enforced: the run ended there (the host killed it)."""
    limit, what, held_by = hit
    text = _LIMIT_TEXT[limit].format(limits=outcome.limits)
    result = outcome.result("rejected", f"rejected by the {text}, held by {held_by}: {what}")
    return result.model_copy(update={"limit": limit})


def _judge_signal(
    number: int, report: dict[str, Any], error: ProgramError | None, outcome: _Outcome
) -> SandboxResult:
    cpu = report.get("cpu_s")
    used = float(cpu) if isinstance(cpu, float | int) else 0.0
    limit = outcome.limits.effective_cpu_s
    # RLIMIT_CPU sends SIGXCPU at the soft limit and SIGKILL at the hard one (a second later).
    if number == signal.SIGXCPU or (number == signal.SIGKILL and used >= limit * 0.99):
        return outcome.result("timed_out", f"CPU-time limit of {limit:g} s reached")
    if number == signal.SIGXFSZ:
        return outcome.rejected("disk", "a file grew past the limit")
    if error is not None and error.short_type == "MemoryError":
        return outcome.rejected("memory", f"killed by {signal_name(number)}")
    # A core dump should be impossible (RLIMIT_CORE 1): say so loudly if one was made.
    dumped = " (core dumped)" if report.get("core_dumped") else ""
    return outcome.result("crashed", f"killed by {signal_name(number)}{dumped}")


def _outcome_text(raw: dict[str, Any]) -> str:
    """``Type: message at tests line N: source`` from one outcome of the tests' process."""
    kind, message = str(raw.get("type", "?")), str(raw.get("message", ""))
    head = kind + (f": {message}" if message else "")
    line = raw.get("line")
    if isinstance(line, int):
        where = "solution" if raw.get("side") == "solution" else "tests"
        head += f" at {where} line {line}"
        if raw.get("source"):
            head += f": {raw['source']}"
    return head


def _test_outcome(raw: object, test_timeout_s: float, cpu_limit: str = "") -> TestOutcome:
    """One test's outcome; ``cpu_limit``: the solution's process was killed by its CPU-time
    limit (what to say of a test that saw it end)."""
    if not isinstance(raw, dict):
        return TestOutcome(status="crashed", detail="the tests' process gave no outcome")
    status, kind = raw.get("status"), raw.get("type")
    if status == "passed":
        return TestOutcome(status="passed")
    if status == "timed_out":
        why = str(raw.get("message") or f"the test ran past its limit of {test_timeout_s:g} s")
        return TestOutcome(status="timed_out", detail=why)
    if status == "not_run":
        return TestOutcome(status="not_run", detail="not run: the solution did not load")
    if raw.get("side") == "solution":
        if kind == "SolutionEnded":
            if cpu_limit:
                return TestOutcome(status="timed_out", detail=cpu_limit)
            why = "the solution ended its process before every test ran"
            return TestOutcome(status="failed", detail=why)
        if kind == "ProtocolError":
            why = f"the solution answered with malformed data: {raw.get('message', '')}"
            return TestOutcome(status="failed", detail=why)
        if kind == "NotPlainData":
            why = f"the solution returned a value that is not plain data: {raw.get('message')}"
            return TestOutcome(status="failed", detail=why)
        error = ProgramError(str(kind), str(raw.get("message", "")), ())
        if (limit := _limit_of(error)) is not None:
            return TestOutcome(status="rejected", detail=_outcome_text(raw), limit=limit)
    detail = _outcome_text(raw)
    return TestOutcome(status="failed" if status == "failed" else "crashed", detail=detail)


def _solution_cpu_limit(report: dict[str, Any], limits: SandboxLimits) -> str:
    """What to say when the solution's process (not a test's worker, which the tests' side
    asks about) was killed by its CPU-time limit, as PID 1 saw it; empty otherwise."""
    number, cpu = report.get("solution_signal"), report.get("solution_cpu_s")
    used = float(cpu) if isinstance(cpu, float | int) else 0.0
    limit = limits.effective_cpu_s
    if number == signal.SIGXCPU or (number == signal.SIGKILL and used >= limit * 0.99):
        return f"CPU-time limit of {limit:g} s reached"
    return ""


def judge_tests(
    execution: Execution, limits: SandboxLimits, tests: list[str], test_timeout_s: float
) -> SandboxResult:
    """The result of a solution run against ``tests`` (:mod:`byzllm.sandbox._harness`).

    The verdict comes only from the outcomes the tests' process wrote on its own pipe; what
    either process printed is kept as output and never read for the verdict.
    """
    report = execution.report
    if report.get("event") == "setup":
        raise SandboxError(f"the sandbox could not be prepared: {report.get('message', '?')}")
    raw: object = None
    data = report.get("tests")
    if isinstance(data, bytes) and data:
        try:
            raw = json.loads(data)
        except (ValueError, RecursionError):
            raw = None
    if isinstance(raw, list) and len(raw) == len(tests):
        cpu_limit = _solution_cpu_limit(report, limits)
        outcomes = [_test_outcome(each, test_timeout_s, cpu_limit) for each in raw]
    else:
        # The tests' process did not finish: judge the run as a whole (time, output, crash).
        whole = judge(execution, limits)
        if whole.status == "passed":
            whole = whole.model_copy(
                update={"status": "crashed", "detail": "the tests ended without outcomes"}
            )
        return whole
    exit_code = report.get("exit_code")
    result = SandboxResult(
        status="passed",
        detail="",
        exit_code=exit_code if isinstance(exit_code, int) else None,
        stdout=_decode(execution.stdout),
        stderr=_decode(execution.stderr),
        duration_s=execution.duration_s,
        tests=outcomes,
        isolated=execution.isolated,
        limits_not_held=execution.limits_not_held,
    )
    if execution.output_exceeded:
        detail = "rejected by the " + _LIMIT_TEXT["output"].format(limits=limits)
        return result.model_copy(update={"status": "rejected", "detail": detail, "limit": "output"})
    if execution.cgroup_hit is not None:
        run = _Outcome(
            limits,
            result.exit_code,
            result.stdout,
            result.stderr,
            result.duration_s,
            result.isolated,
            result.limits_not_held,
        )
        rejected = _cgroup_rejection(run, execution.cgroup_hit)
        return rejected.model_copy(update={"tests": outcomes})
    for index, outcome in enumerate(outcomes):
        if outcome.status != "passed":
            prefix = f"test {index + 1}: " if len(outcomes) > 1 else ""
            status = "failed" if outcome.status == "not_run" else outcome.status
            update = {"status": status, "detail": prefix + outcome.detail, "limit": outcome.limit}
            return result.model_copy(update=update)
    return result
