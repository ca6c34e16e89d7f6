"""What a sandboxed run may use, and what came of it."""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from byzllm._strict import StrictNumbers

__all__ = ["LimitName", "SandboxLimits", "SandboxResult", "Status", "TestOutcome"]

#: The outcome of one run, one word each (see :class:`SandboxResult`).
Status = Literal["passed", "failed", "timed_out", "crashed", "rejected"]
#: The limit that rejected a run.
LimitName = Literal["memory", "processes", "output", "files", "disk"]


class SandboxLimits(StrictNumbers):
    """Resource limits of one sandboxed run.

    ``memory_mb`` bounds the address space of each process (``RLIMIT_AS``), ``cpu_s`` the CPU
    time of each process (``RLIMIT_CPU``, which counts whole seconds: ``cpu_s`` must be one,
    and defaults to ``timeout_s`` rounded up); ``timeout_s`` is the wall time of the whole run,
    after which everything the program started is killed. ``disk_mb`` is the size of the
    private working folder (and of each single file written there); ``max_inodes`` the number
    of files, folders and links it may hold (each of the work folder and ``/dev/shm``).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    timeout_s: float = Field(10.0, gt=0, le=3600)
    cpu_s: float | None = Field(None, gt=0, le=3600)
    memory_mb: int = Field(512, ge=32, le=1_048_576)
    max_processes: int = Field(32, ge=1, le=4096)
    max_open_files: int = Field(64, ge=16, le=65_536)
    max_output_bytes: int = Field(1_000_000, ge=0, le=1_000_000_000)
    disk_mb: int = Field(64, ge=1, le=65_536)
    max_inodes: int = Field(4096, ge=64, le=1_000_000)

    @field_validator("cpu_s")
    @classmethod
    def _whole_seconds(cls, value: float | None) -> float | None:
        # The kernel enforces RLIMIT_CPU in whole seconds: a fractional limit would silently
        # be the next whole second.
        if value is not None and not float(value).is_integer():
            raise ValueError(f"cpu_s must be a whole number of seconds, got {value!r}")
        return value

    @model_validator(mode="after")
    def _default_cpu(self) -> SandboxLimits:
        if self.cpu_s is None:
            object.__setattr__(self, "cpu_s", float(math.ceil(self.timeout_s)))
        return self

    @property
    def effective_cpu_s(self) -> float:
        """The CPU-time limit in force (``cpu_s``, or ``timeout_s`` rounded up to a whole
        second when not given)."""
        return self.cpu_s if self.cpu_s is not None else float(math.ceil(self.timeout_s))


class TestOutcome(BaseModel):
    """How one test of :func:`~byzllm.sandbox.run_test_cases` ended (statuses as for a run;
    ``not_run`` when the solution never loaded)."""

    model_config = ConfigDict(frozen=True)

    status: Literal["passed", "failed", "timed_out", "crashed", "rejected", "not_run"]
    detail: str = ""
    limit: LimitName | None = None


class SandboxResult(BaseModel):
    """One clear result per run.

    * ``passed``: the program ran to the end and exited 0 (for :func:`run_tests`: and every
      test ran);
    * ``failed``: an assertion failed (``detail`` shows the assertion), or the tests did not
      run to the end;
    * ``timed_out``: the wall-time or CPU-time limit ran out;
    * ``crashed``: any other abnormal end: an uncaught exception (``detail``: its last line and
      where), a signal (its name), a non-zero exit status;
    * ``rejected``: the run broke a resource limit (``limit`` says which).

    ``isolated`` is False for a run made without any isolation (``allow_unsafe=True`` where
    the sandbox is unavailable): the program shared the caller's network and file system.
    ``limits_not_held`` names each limit that did not bind the program, with why: empty for
    every isolated run; without isolation, ``processes`` where byzllm runs as root and the
    run's own uids cannot reach the interpreter (the program then keeps root's uid, which
    ``RLIMIT_NPROC`` does not bind).
    """

    model_config = ConfigDict(frozen=True)

    status: Status
    detail: str
    exit_code: int | None
    stdout: str
    stderr: str
    duration_s: float
    limit: LimitName | None = None
    #: One outcome per test (:func:`~byzllm.sandbox.run_test_cases`); None for a program.
    tests: list[TestOutcome] | None = None
    isolated: bool = True
    limits_not_held: dict[LimitName, str] = Field(default_factory=dict)

    @property
    def passed(self) -> bool:
        """True when the program passed."""
        return self.status == "passed"
