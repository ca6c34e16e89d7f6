"""Running one program in the sandbox: the host side.

Each run starts ``unshare`` (util-linux) with fresh mount, network, PID, IPC and UTS
namespaces around :mod:`byzllm.sandbox._bootstrap`, which prepares the file system and starts
the program as an unprivileged uid of its own. This module feeds stdin, keeps at most
``max_output_bytes`` of output, enforces the wall-time limit a second time from outside, kills
the whole process group on timeout or excess output, and turns what happened into one
:class:`SandboxResult` (:mod:`byzllm.sandbox._verdict`).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import io
import marshal
import os
import secrets
import shutil
import signal
import stat
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from . import _cgroup, _warm
from ._errors import SandboxError, SandboxUnavailableError
from ._limits import LimitName, SandboxLimits
from ._seccomp import filter_program, signal_calls
from ._support import USER_NAMESPACE_FLAGS, Support, support

__all__ = ["Execution", "execute"]

_BOOTSTRAP = Path(__file__).with_name("_bootstrap.py")
_HARNESS = Path(__file__).with_name("_harness.py")
#: The program's working folder (a private tmpfs), HOME and TMPDIR inside the sandbox.
WORK = "/tmp"
PROGRAM_NAME = "main.py"
#: Extra wall time the host allows beyond ``timeout_s`` for starting the namespaces and the
#: interpreters; the bootstrap's own timer starts only when the program does.
_SETUP_GRACE_S = 5.0
#: How long the host waits for output pipes to close once the sandbox is gone.
_DRAIN_S = 1.0
#: Bytes of reports kept from a run (the bootstrap sends at most 4 MB of test outcomes).
_MAX_REPORT = 8_000_000
#: How long a killed run may take to be torn down by the kernel before the run returns
#: anyway (milliseconds normally; seconds on a machine loaded many times over).
_TEARDOWN_S = 10.0
#: Sandboxed programs run as uids from this range, one per concurrent run: no such user
#: exists, the uid owns no file on the host, and RLIMIT_NPROC (counted per uid) becomes a
#: limit per run.
_UID_BASE = 1_900_000_000
_UID_SPAN = 100_000_000
_uids_in_use: set[int] = set()
#: Whether isolated runs are forked by the zygote (:mod:`byzllm.sandbox._warm`) rather than
#: started with ``unshare`` one by one (:func:`use_zygote`).
_zygote_enabled = True
#: What a killed run waits for without root, instead of a uid: the sandbox's PID 1, which
#: ends only once every other process of its PID namespace has (uids are never negative).
_UNTIL_INIT_GONE = -1


@dataclass
class Execution:
    """What the host observed of one run, before it is judged."""

    report: dict[str, Any]
    stdout: bytes
    stderr: bytes
    duration_s: float
    output_exceeded: bool = False
    host_timed_out: bool = False
    isolated: bool = True
    notes: list[str] = field(default_factory=list)
    #: The limit the run's cgroup enforced (:mod:`byzllm.sandbox._cgroup`), what the kernel
    #: did, and which cgroup held it; None when none was hit or the run had no cgroup.
    cgroup_hit: tuple[LimitName, str, str] | None = None
    #: The limits that did not bind the program, each with why (:func:`limits_not_held`).
    limits_not_held: dict[LimitName, str] = field(default_factory=dict)


def use_zygote(enabled: bool) -> None:
    """Fork isolated runs from the zygote (the default) or start each with ``unshare``
    (the same isolation; ``benchmarks/sandbox.py --no-zygote`` compares the two)."""
    global _zygote_enabled
    _zygote_enabled = enabled


def _allocate_uid() -> int:
    while True:
        uid = _UID_BASE + secrets.randbelow(_UID_SPAN)
        if uid not in _uids_in_use:
            _uids_in_use.add(uid)
            return uid


def python_roots() -> list[str]:
    """The folders the interpreter needs: the new root shows them, read-only."""
    executable = os.path.realpath(sys.executable)
    roots = {
        sys.prefix,
        sys.exec_prefix,
        sys.base_prefix,
        sys.base_exec_prefix,
        os.path.dirname(executable),
        os.path.dirname(os.path.abspath(sys.executable)),
    }
    return sorted({os.path.realpath(r) for r in roots} | roots)


def _reached_by_others(paths: Iterable[str]) -> bool:
    """Whether a uid that owns no file and is in no group reaches each of ``paths``: its
    access is the "other" permission bits alone, which must grant search on every folder on
    the way (along each path as given and as resolved), search on the path itself, and read
    too where that is a folder."""
    for given in paths:
        for path in {given, os.path.realpath(given)}:
            parts = [part for part in path.split("/") if part]
            for depth in range(len(parts) + 1):
                try:
                    mode = os.stat("/" + "/".join(parts[:depth])).st_mode
                except OSError:
                    return False
                needed = stat.S_IXOTH
                if depth == len(parts) and stat.S_ISDIR(mode):
                    needed |= stat.S_IROTH
                if mode & needed != needed:
                    return False
    return True


def unsafe_runs_drop_root() -> bool:
    """Whether a run without isolation starts the program as the run's unused uids (as an
    isolated run with root does) instead of byzllm's own.

    Only root needs to: the kernel exempts root's uid from ``RLIMIT_NPROC``, so a program
    keeping it would ignore ``max_processes``. Those uids must reach the interpreter, though:
    where it lies in a folder closed to others (root's home folder, say), the program keeps
    root's uid, and ``max_processes`` does not hold.
    """
    return os.geteuid() == 0 and _reached_by_others([sys.executable, *python_roots()])


def limits_not_held(isolated: bool, drop_root: bool) -> dict[LimitName, str]:
    """The limits that do not bind a run's program here, each with why (the run's result
    says so: its limits would otherwise read as held).

    One only: a run without isolation, as root, whose uids cannot reach the interpreter
    (``drop_root`` False, :func:`unsafe_runs_drop_root`) keeps root's uid, which the kernel
    exempts from ``RLIMIT_NPROC``. Every other limit holds there as anywhere.
    """
    if isolated or drop_root or os.geteuid() != 0:
        return {}
    return {
        "processes": (
            "the program ran as root, whom RLIMIT_NPROC does not bind: the run's own uids "
            f"cannot reach the interpreter {sys.executable} (it, or a folder on its way, is "
            "closed to others)"
        )
    }


def program_env(work: str) -> dict[str, str]:
    """The program's whole environment: nothing from the host's (no API keys, no proxies)."""
    return {
        "PATH": f"{os.path.dirname(sys.executable)}:/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "HOME": work,
        "TMPDIR": work,
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONIOENCODING": "utf-8",
        "PYTHONUNBUFFERED": "1",
    }


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


class _Output:
    """stdout and stderr, kept up to one shared budget."""

    def __init__(self, budget: int) -> None:
        self.remaining = budget
        self.exceeded = asyncio.Event()

    def take(self, data: bytes, into: bytearray) -> None:
        keep = min(len(data), self.remaining)
        into += data[:keep]
        self.remaining -= keep
        if keep < len(data):
            self.exceeded.set()


class _Capture(asyncio.Protocol):
    """Reads one output pipe to its end, keeping what the budget allows.

    It never pauses reading: past the budget it reads and drops, so a program blocked on a
    full pipe cannot keep the run alive, and the end of the pipe is always seen.
    """

    def __init__(self, output: _Output, into: bytearray) -> None:
        self.output = output
        self.into = into
        self.closed = asyncio.get_running_loop().create_future()

    def data_received(self, data: bytes) -> None:
        self.output.take(data, self.into)

    async def connect(self, reader: Any) -> asyncio.BaseTransport:
        loop = asyncio.get_running_loop()
        transport, _ = await loop.connect_read_pipe(lambda: self, reader)
        return transport

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)


class _Pipes:
    """The program's stdin, stdout and stderr: plain pipes that this module reads and writes.

    Not asyncio's subprocess pipes: with those, waiting for the process also waits for its
    pipes to close, which a process that escaped the kill (possible without isolation) could
    put off forever.
    """

    def __init__(self) -> None:
        self._open: set[int] = set()
        try:
            self.stdin_read, self.stdin_write = self._pipe()
            self.stdout_read, self.stdout_write = self._pipe()
            self.stderr_read, self.stderr_write = self._pipe()
        except OSError:  # out of descriptors: none of those made may stay open
            self.close_all()
            raise

    def _pipe(self) -> tuple[int, int]:
        ends = os.pipe()
        self._open.update(ends)
        return ends

    def close(self, fd: int) -> None:
        if fd in self._open:
            self._open.discard(fd)
            os.close(fd)

    def release(self, fd: int) -> int:
        """Hand ``fd`` to a transport, which closes it from then on."""
        self._open.discard(fd)
        return fd

    def close_all(self) -> None:
        for fd in list(self._open):
            self.close(fd)


class _StatusPipe:
    """The pipe on which the bootstrap reports how the program ended (one JSON line).

    Each end is closed exactly once: a file descriptor number closed twice could by then
    belong to another concurrent run. While the run goes on, :meth:`watch` reads the reports
    as they come: a report larger than the pipe's buffer (the outcomes of many failing tests)
    blocked its writer until the run's deadline, and the run was called timed out.
    """

    def __init__(self) -> None:
        self.read_fd, self.write_fd = os.pipe()
        self._open = {self.read_fd, self.write_fd}
        self._data = bytearray()
        self._loop: asyncio.AbstractEventLoop | None = None

    def _close(self, fd: int) -> None:
        if fd in self._open:
            self._open.discard(fd)
            os.close(fd)

    def close_write(self) -> None:
        self._close(self.write_fd)

    def close(self) -> None:
        self._unwatch()
        self._close(self.write_fd)
        self._close(self.read_fd)

    def watch(self, loop: asyncio.AbstractEventLoop) -> None:
        """Read the reports as they are written, on ``loop``, until the writer is gone."""
        os.set_blocking(self.read_fd, False)
        self._loop = loop
        loop.add_reader(self.read_fd, self._drain)

    def _unwatch(self) -> None:
        if self._loop is not None:
            self._loop.remove_reader(self.read_fd)
            self._loop = None

    def _drain(self) -> None:
        """Read what the pipe holds; beyond :data:`_MAX_REPORT` bytes it is read and dropped,
        so that the writer never waits on this side."""
        with contextlib.suppress(BlockingIOError):
            while chunk := os.read(self.read_fd, 65_536):
                if len(self._data) < _MAX_REPORT:
                    self._data += chunk
            self._unwatch()  # end of file: every writer is gone

    def read_report(self) -> dict[str, Any]:
        """What the bootstrap reported, or ``{}`` when it reported nothing (it was killed)."""
        os.set_blocking(self.read_fd, False)
        self._drain()
        data = bytes(self._data)
        reports: list[dict[str, Any]] = []
        stream = io.BytesIO(data)
        # Only the bootstrap, and the program's process before exec, hold the pipe: the
        # records are trusted (marshal is not safe on hostile input).
        with contextlib.suppress(EOFError, ValueError, TypeError):
            while stream.tell() < len(data):
                report = marshal.load(stream)
                if isinstance(report, dict):
                    reports.append(report)
        # A failure to start the program (written by the program's process before exec)
        # outranks the exit the bootstrap reports afterwards.
        for report in reports:
            if report.get("event") == "setup":
                return report
        return reports[-1] if reports else {}


async def execute(
    source: str,
    *,
    stdin: str,
    limits: SandboxLimits,
    allow_unsafe: bool,
    tests: str | None = None,
) -> Execution:
    """Run ``source`` as a Python program in the sandbox and observe it (see module doc).

    ``tests``: run ``source`` as a solution against tests instead (:mod:`._harness`; the JSON
    the tests' process reads); their outcomes come back in ``report["tests"]``.
    """
    found = support()
    isolated = found.available
    if not isolated and not allow_unsafe:
        raise SandboxUnavailableError(
            f"refusing to run model-generated code: {found.reason}. "
            "Pass allow_unsafe=True (byzllm sandbox run --unsafe) to run it without isolation."
        )
    try:
        return await _execute(source, stdin, limits, tests, found)
    except OSError as error:
        # The host's own resources ran out (descriptors, typically, with many runs at once):
        # a failure of the sandbox, never a result of the program.
        hint = ""
        if error.errno in (errno.EMFILE, errno.ENFILE):
            hint = f" (each run holds about {_FDS_PER_RUN} of this process's descriptors)"
        raise SandboxError(f"the sandbox could not run the program: {error}{hint}") from error


#: Descriptors the host holds for one run while it goes (pipes, sockets, a pidfd).
_FDS_PER_RUN = 12


async def _execute(
    source: str, stdin: str, limits: SandboxLimits, tests: str | None, found: Support
) -> Execution:
    isolated = found.available
    rootless = isolated and found.rootless
    # Forked by the zygote: no interpreter starts, so no harness source travels. Either way
    # the tests reach only the tests' process, on a pipe of their own (see _observe).
    forked = isolated and _zygote_enabled and _warm.available()
    drop_root = not isolated and unsafe_runs_drop_root()
    uid = _allocate_uid()
    tester_uid = _allocate_uid()
    status: _StatusPipe | None = None
    cgroup: _cgroup.RunCgroup | None = None
    host_dir: str | None = None
    try:
        # Only a run started with unshare (or without isolation) needs a folder on the host:
        # for its configuration file and, without isolation, as the program's working folder.
        if not forked:
            host_dir = tempfile.mkdtemp(prefix="byzllm-sandbox-")
        status = _StatusPipe()
        if isolated:
            try:
                found_cgroup = _cgroup.probe()
                cgroup = _cgroup.create(
                    found_cgroup, limits.memory_mb, limits.disk_mb, limits.max_processes
                )
            except OSError as error:
                raise SandboxError(f"cannot make the run's cgroup: {error}") from error
        work = WORK
        if not isolated and host_dir is not None:
            # A folder of its own within the run's folder: with root's uid dropped, the
            # run's folder stays root's (its owner could rename it in the shared temporary
            # folder and leave a link there, through which the host would remove files).
            work = os.path.join(host_dir, "work")
            os.mkdir(work, 0o700)
            if drop_root:
                os.chmod(host_dir, 0o711)
                os.chown(work, uid, uid)
        config = {
            "status_fd": status.write_fd,
            "source": source.encode("utf-8", "surrogatepass"),
            "isolate": isolated,
            "work": work,
            "program_name": PROGRAM_NAME,
            # Without root the user namespace maps one uid, the caller's, as its root: the
            # program runs as that uid with every capability dropped (see _bootstrap).
            "rootless": rootless,
            "uid": 0 if rootless else uid,
            # Without isolation, as root: the program and the tests' process take the uids
            # (unsafe_runs_drop_root), so that RLIMIT_NPROC holds.
            "drop_root": drop_root,
            "keep": python_roots(),
            "python": sys.executable,
            "env": program_env(work),
            "timeout_s": limits.timeout_s,
            "cpu_s": limits.effective_cpu_s,
            "memory_mb": limits.memory_mb,
            "max_processes": limits.max_processes,
            "max_open_files": limits.max_open_files,
            "disk_mb": limits.disk_mb,
            "max_inodes": limits.max_inodes,
            "seccomp": filter_program() if isolated else None,
            "signal_calls": signal_calls() if isolated else None,
            # Not the tests themselves: they come on their own pipe (the bootstrap learns its
            # number), never in a file or on a command line.
            "tests": None if tests is None else "",
            "tester_uid": 0 if rootless else tester_uid,
            "harness": None if forked or tests is None else _HARNESS.read_text("utf-8"),
            "cgroup_procs": cgroup.procs if cgroup is not None else [],
        }
        if forked:
            user = USER_NAMESPACE_FLAGS if rootless else ()
            zygote = _warm.zygote_argv(sys.executable, user, found.unshare)

            async def fork(fds: list[int]) -> _Sandbox:
                forked = await _warm.start(zygote, program_env(WORK), config, fds)
                return _Forked(forked)

            return await _observe(fork, status, stdin, limits, tests, cgroup=cgroup)
        assert host_dir is not None
        config_path = os.path.join(host_dir, "config")
        bootstrap = [sys.executable, "-S", "-s", "-E", str(_BOOTSTRAP), config_path]
        argv = [found.unshare, *found.namespace_flags, *bootstrap] if isolated else bootstrap
        # What must be gone before a killed run returns: the run's uid, or without root
        # (where the uid is the caller's own) the sandbox's PID 1.
        gone = (_UNTIL_INIT_GONE if rootless else uid) if isolated else None

        async def spawn(fds: list[int]) -> _Sandbox:
            if tests is not None:
                config["tests_fd"] = fds[4]  # the same number in the child (pass_fds)
            # Its owner's alone: the run's folder may be open to others (see work above).
            fd = os.open(config_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with open(fd, "wb") as handle:
                handle.write(marshal.dumps(config))
            return await _Spawned.start(argv, fds, gone)

        execution = await _observe(
            spawn, status, stdin, limits, tests, isolated=isolated, cgroup=cgroup
        )
        execution.limits_not_held = limits_not_held(isolated, drop_root)
        return execution
    finally:
        if drop_root:
            # No namespace ends with the program: what it left running (a child it detached
            # from its process group) is found by the uids, the run's alone, and ended.
            await _end_processes_of(uid, tester_uid)
        if cgroup is not None:
            cgroup.remove()
        _uids_in_use.discard(uid)
        _uids_in_use.discard(tester_uid)
        if status is not None:
            status.close()
        if host_dir is not None:
            _remove_folder(host_dir)


def _remove_folder(folder: str) -> None:
    """Remove the run's folder on the host. Its configuration file alone (an isolated run)
    goes without a descriptor, so even when many runs at once have used them all up; the
    files a program left there without isolation need :func:`shutil.rmtree`, which needs
    some."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(os.path.join(folder, "config"))
    try:
        os.rmdir(folder)
    except FileNotFoundError:
        pass
    except OSError:
        shutil.rmtree(folder, ignore_errors=True)


class _Sandbox(Protocol):
    """A started sandbox, as :func:`_observe` drives it."""

    @property
    def running(self) -> bool: ...

    async def wait(self) -> None:
        """Return once the sandbox has ended (without isolation: its first process)."""

    def kill(self) -> None:
        """Kill the whole sandbox now."""

    async def settle(self) -> None:
        """After :meth:`kill`: return once nothing of the run runs any more."""

    def close(self) -> None:
        """Release the handle."""


class _Spawned:
    """A sandbox started as a child process: ``unshare`` around the bootstrap (or, without
    isolation, the bootstrap alone), in a process group of its own."""

    def __init__(self, process: asyncio.subprocess.Process, gone: int | None) -> None:
        self.process = process
        self.gone = gone
        self.init: list[int] = []

    @classmethod
    async def start(cls, argv: list[str], fds: list[int], gone: int | None) -> _Spawned:
        stdin, stdout, stderr, *passed = fds  # the status pipe, and the tests' pipe if any
        try:
            process = await asyncio.create_subprocess_exec(
                *argv,
                stdin=stdin,
                stdout=stdout,
                stderr=stderr,
                pass_fds=passed,
                start_new_session=True,  # one process group to kill, apart from the host's
                env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"},
            )
        except OSError as error:
            raise SandboxError(f"cannot start the sandbox: {error}") from error
        return cls(process, gone)

    @property
    def running(self) -> bool:
        return self.process.returncode is None

    async def wait(self) -> None:
        await self.process.wait()

    def kill(self) -> None:
        if self.process.returncode is None:
            self.init = _children(self.process.pid)
            _kill_group(self.process.pid)

    async def settle(self) -> None:
        with contextlib.suppress(BaseException):
            await asyncio.shield(self.process.wait())
        if self.gone is not None:
            await _until_gone(None if self.gone == _UNTIL_INIT_GONE else self.gone, self.init)

    def close(self) -> None:
        pass


class _Forked:
    """A sandbox forked by the zygote (:mod:`byzllm.sandbox._warm`)."""

    def __init__(self, run: _warm.ForkedRun) -> None:
        self.run = run

    @property
    def running(self) -> bool:
        return not self.run.ended

    async def wait(self) -> None:
        await self.run.wait()

    def kill(self) -> None:
        self.run.kill()

    async def settle(self) -> None:
        # PID 1's pidfd turns readable only once every process of its namespace is gone.
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(asyncio.shield(self.run.wait()), _TEARDOWN_S)

    def close(self) -> None:
        self.run.close()


async def _observe(
    start: Callable[[list[int]], Awaitable[_Sandbox]],
    status: _StatusPipe,
    stdin: str,
    limits: SandboxLimits,
    tests: str | None,
    *,
    isolated: bool = True,
    cgroup: _cgroup.RunCgroup | None = None,
) -> Execution:
    """Start the sandbox with ``start`` (given its stdin, stdout, stderr, status and, when
    ``tests`` is not None, tests descriptors), feed it, read it, and end it (module doc)."""
    loop = asyncio.get_running_loop()
    pipes = _Pipes()
    transports: list[asyncio.BaseTransport] = []
    tests_pipe: tuple[int, int] | None = None
    started = time.monotonic()
    sandbox: _Sandbox | None = None
    try:
        tests_pipe = os.pipe() if tests is not None else None
        fds = [pipes.stdin_read, pipes.stdout_write, pipes.stderr_write, status.write_fd]
        sandbox = await start(fds + ([tests_pipe[0]] if tests_pipe else []))
        try:
            # Only the sandbox holds these ends now: their readers see EOF once it is gone.
            for fd in (pipes.stdin_read, pipes.stdout_write, pipes.stderr_write):
                pipes.close(fd)
            status.close_write()
            status.watch(loop)
            output = _Output(limits.max_output_bytes)
            stdout, stderr = bytearray(), bytearray()
            captures = [_Capture(output, stdout), _Capture(output, stderr)]
            for capture, fd in zip(captures, (pipes.stdout_read, pipes.stderr_read), strict=True):
                transports.append(await capture.connect(os.fdopen(pipes.release(fd), "rb", 0)))
            writer = os.fdopen(pipes.release(pipes.stdin_write), "wb", buffering=0)
            stdin_transport, _ = await loop.connect_write_pipe(asyncio.Protocol, writer)
            transports.append(stdin_transport)
            # The program may exit (or never read) before taking all of stdin: the transport
            # then drops the rest, which is not an error.
            if stdin:
                stdin_transport.write(stdin.encode("utf-8", "replace"))
            stdin_transport.close()
            if tests_pipe is not None and tests is not None:
                os.close(tests_pipe[0])
                tests_writer = os.fdopen(tests_pipe[1], "wb", buffering=0)
                tests_pipe = None
                tests_transport, _ = await loop.connect_write_pipe(asyncio.Protocol, tests_writer)
                transports.append(tests_transport)
                tests_transport.write(tests.encode("utf-8", "surrogateescape"))
                tests_transport.close()
            host_timed_out = await _wait(sandbox, output, limits, cgroup)
        except BaseException:
            # Cancelled (or failed) before _wait took charge: the sandbox must not outlive
            # the run any more than it does there.
            await _stop(sandbox)
            raise
        # Output written just before the end may still be in the pipes; a process that kept
        # them open (possible only without isolation) is not waited for beyond _DRAIN_S.
        await asyncio.wait([c.closed for c in captures], timeout=_DRAIN_S)
        hit = cgroup.hit() if cgroup is not None else None
        report = status.read_report()
        # The program cannot end the sandbox's PID 1 (nor the zygote that forked it), and
        # neither did the host: something outside did, e.g. the host's OOM killer. Not a
        # result of the program.
        killed_by_host = host_timed_out or output.exceeded.is_set() or hit is not None
        if not report and isolated and not killed_by_host:
            raise SandboxError(
                "the sandbox was ended from outside before it could say how the program "
                "ended (its zygote or first process was killed)"
            )
        return Execution(
            cgroup_hit=(*hit, cgroup.support.name) if hit and cgroup is not None else None,
            report=report,
            stdout=bytes(stdout),
            stderr=bytes(stderr),
            duration_s=time.monotonic() - started,
            output_exceeded=output.exceeded.is_set(),
            host_timed_out=host_timed_out,
            isolated=isolated,
        )
    finally:
        for each in transports:
            each.close()
        pipes.close_all()
        if tests_pipe is not None:
            for fd in tests_pipe:
                os.close(fd)
        if sandbox is not None:
            sandbox.close()


def _processes_of(*uids: int) -> Iterator[int]:
    """The pids of the processes that run as one of ``uids`` (a run's own: its processes and
    no other)."""
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                if os.stat(f"/proc/{entry}").st_uid in uids:
                    yield int(entry)


def _has_processes(uid: int) -> bool:
    """True while any process runs as ``uid`` (a run's own uid: its processes and no other)."""
    return next(_processes_of(uid), None) is not None


async def _end_processes_of(*uids: int) -> None:
    """Kill every process that runs as one of ``uids``, again until none is left (one may
    fork meanwhile, within its run's process limit), or :data:`_TEARDOWN_S` has passed."""
    deadline = time.monotonic() + _TEARDOWN_S
    while time.monotonic() < deadline:
        pids = list(_processes_of(*uids))
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        await asyncio.sleep(0.01)


def _children(pid: int) -> list[int]:
    """The host pids of ``pid``'s children (``unshare``'s: the sandbox's PID 1)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as handle:
            return [int(child) for child in handle.read().split()]
    except (OSError, ValueError):
        return []


def _alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie has finished: its PID namespace is empty)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False


async def _until_gone(uid: int | None, init: list[int]) -> None:
    # Killing ``unshare`` returns at once, while the kernel is still tearing the namespace
    # down (its PID 1 killed, the rest being killed): wait until it has, so that a run that
    # returned has nothing left running. A PID 1 ends only once every other process of its
    # namespace has.
    deadline = time.monotonic() + _TEARDOWN_S
    while time.monotonic() < deadline:
        if uid is not None and not _has_processes(uid):
            return
        if uid is None and not any(_alive(pid) for pid in init):
            return
        await asyncio.sleep(0.01)


async def _stop(sandbox: _Sandbox) -> None:
    """Kill the sandbox now, and return once it is gone (as :func:`_wait` does)."""
    if not sandbox.running:
        return
    sandbox.kill()
    await sandbox.settle()


#: How often the host looks at a run's cgroup for a limit the kernel enforced.
_CGROUP_POLL_S = 0.05


async def _until_limit_hit(cgroup: _cgroup.RunCgroup) -> None:
    while cgroup.hit() is None:
        await asyncio.sleep(_CGROUP_POLL_S)


async def _wait(
    sandbox: _Sandbox,
    output: _Output,
    limits: SandboxLimits,
    cgroup: _cgroup.RunCgroup | None = None,
) -> bool:
    """Wait for the sandbox to end, killing it on excess output, on a limit its cgroup
    enforced (a process killed for memory, a fork refused), or when time is up.

    Returns True when the host's own deadline killed it (the bootstrap's did not act). A
    killed sandbox is waited for until nothing of it runs (:meth:`_Sandbox.settle`).
    """
    exited = asyncio.ensure_future(sandbox.wait())
    exceeded = asyncio.ensure_future(output.exceeded.wait())
    stops = {exited, exceeded}
    if cgroup is not None:
        limit_hit = asyncio.ensure_future(_until_limit_hit(cgroup))
        stops.add(limit_hit)
    killed = False
    try:
        done, _ = await asyncio.wait(
            stops,
            timeout=limits.timeout_s + _SETUP_GRACE_S,
            return_when=asyncio.FIRST_COMPLETED,
        )
        if exited not in done:
            killed = True
            sandbox.kill()
            await exited
        return not done
    finally:
        # Whatever happened (cancellation of this task included), nothing of the run survives.
        if not exited.done():
            killed = True
            sandbox.kill()
            with contextlib.suppress(BaseException):
                await asyncio.shield(exited)
        exceeded.cancel()
        if cgroup is not None:
            limit_hit.cancel()
        if killed:
            await sandbox.settle()
