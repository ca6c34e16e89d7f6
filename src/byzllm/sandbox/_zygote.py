"""The warm zygote: a pre-started, pre-imported parent that forks one sandbox per run.

Started once per host process by :mod:`byzllm.sandbox._warm` (``python -s -P _zygote.py FD``,
without root inside ``unshare --user --map-root-user``), with the program's environment and
nothing of the host's. It imports the bootstrap (:mod:`byzllm.sandbox._bootstrap`), the test
harness (:mod:`byzllm.sandbox._harness`) and the standard-library modules solutions most often
use, then waits on its control socket (``FD``, ``SOCK_SEQPACKET``). Each message is one run:
no data, only descriptors (``SCM_RIGHTS``): the run's own socket, stdin, stdout, stderr, the
status pipe and, for tests, the pipe the tests arrive on. The zygote forks at once and reads
nothing of the run, so no run's program, tests or output is ever in the memory that later runs
are forked from. Per run:

1. the fork (the run's leader) reads the run's configuration from its socket, makes itself a
   session of its own, dies with the zygote (``PR_SET_PDEATHSIG``), and unshares fresh mount,
   network, PID, IPC and UTS namespaces (without root also a user namespace of the run's own,
   mapping its root to the caller's uid, so ``RLIMIT_NPROC`` counts per run as before), makes
   every mount private, and forks the run's PID 1;
2. PID 1 is :func:`byzllm.sandbox._bootstrap.run`, as when ``unshare`` starts the bootstrap:
   a fresh ``/proc``, the allow-list root, limits, uid, seccomp; the tests' and the solution's
   processes run the harness in the forked interpreter instead of starting one each;
3. the leader sends the host a pidfd of PID 1 (the host's handle to kill the run and to learn
   that it ended: a PID namespace's first process finishes exiting only once every other
   process in it has), waits for PID 1 and exits.

Standard library only, and no byzllm import, as for the bootstrap. The zygote ends when the
host closes its end of the control socket (the host exited); the runs in flight die with it.
"""

from __future__ import annotations

# Warm: what the harness and typical solutions import, loaded once here and not per run.
import ast  # noqa: F401
import collections  # noqa: F401
import contextlib
import ctypes
import fcntl
import functools  # noqa: F401
import hashlib  # noqa: F401
import importlib.util
import itertools  # noqa: F401
import json  # noqa: F401
import marshal
import math  # noqa: F401
import os
import re  # noqa: F401
import signal
import socket
import string  # noqa: F401
import struct
import sys
import typing  # noqa: F401
from typing import Any

# <sched.h>, <sys/prctl.h> (the mount flags are the bootstrap's).
CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
PR_SET_PDEATHSIG = 1

#: Descriptor numbers in the run's leader: 0-2 the program's stdio, then these.
STATUS_FD, TESTS_FD, RUN_FD = 3, 4, 5
#: Bytes of the length that precedes the run's configuration on its socket.
_LENGTH = struct.Struct("!Q")

_here = os.path.dirname(os.path.abspath(__file__))


def _load(name: str, filename: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, os.path.join(_here, filename))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


bootstrap = _load("_byzllm_sandbox_bootstrap", "_bootstrap.py")
bootstrap.HARNESS = _load("_byzllm_sandbox_harness", "_harness.py")
# The bootstrap's libc handle, opened once here rather than in each run's leader and PID 1.
bootstrap._libc = ctypes.CDLL(None, use_errno=True)


def _receive_config(fd: int) -> dict[str, Any]:
    def exactly(size: int) -> bytes:
        data = bytearray()
        while len(data) < size:
            chunk = os.read(fd, min(size - len(data), 1 << 20))
            if not chunk:
                raise EOFError("the host closed the run")
            data += chunk
        return bytes(data)

    (size,) = _LENGTH.unpack(exactly(_LENGTH.size))
    config: dict[str, Any] = marshal.loads(exactly(size))
    return config


def _place(fds: list[int]) -> None:
    """Put the run's descriptors at 0-5 (see STATUS_FD) and close every other one."""
    run, stdin, stdout, stderr, status, *tests = fds
    targets = {0: stdin, 1: stdout, 2: stderr, STATUS_FD: status, RUN_FD: run}
    if tests:
        targets[TESTS_FD] = tests[0]
    # Out of the way first: a received number may be one of the targets.
    high = {target: fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 100) for target, fd in targets.items()}
    for target, fd in high.items():
        os.dup2(fd, target, inheritable=target <= 2)
    bootstrap.close_all_but(list(targets))


def _lead(fds: list[int], zygote: int) -> None:  # pragma: no cover - runs in the fork
    """The run's leader (see the module doc); never returns."""
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        bootstrap._libc_call("prctl", PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != zygote:
            os._exit(1)
        _place(fds)
        config = _receive_config(RUN_FD)
        os.setsid()
        rootless = bool(config.get("rootless"))
        flags = CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS
        bootstrap._libc_call("unshare", flags | (CLONE_NEWUSER if rootless else 0))
        if rootless:
            for name, text in (("setgroups", "deny"), ("uid_map", "0 0 1"), ("gid_map", "0 0 1")):
                with open(f"/proc/self/{name}", "w", encoding="ascii") as handle:
                    handle.write(text)
        # Nothing mounted in the run's namespace may reach the host's (unshare(1) does this).
        bootstrap._mount(None, "/", None, bootstrap.MS_REC | bootstrap.MS_PRIVATE)
        config["status_fd"] = STATUS_FD
        config["fresh_proc"] = True
        if config.get("tests") is not None:
            config["tests_fd"] = TESTS_FD
        init = os.fork()
        if init == 0:
            with contextlib.suppress(OSError):
                bootstrap._libc_call("prctl", PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            os.close(RUN_FD)
            bootstrap.run(config)  # exits
            os._exit(1)
        # Only PID 1 holds the program's pipes now: the host sees them close when it ends.
        os.closerange(0, RUN_FD)
        pidfd = os.pidfd_open(init)
        run = socket.socket(fileno=RUN_FD)
        socket.send_fds(run, [b"init"], [pidfd])
        os.close(pidfd)
        os.waitpid(init, 0)
    except BaseException as error:
        try:
            message = f"the sandbox could not start: {error}".encode()
            os.write(RUN_FD, message[:4000])
        except OSError:
            pass
        os._exit(1)
    os._exit(0)


def serve(control_fd: int) -> None:
    """Fork one run per message on the control socket, until the host closes it."""
    control = socket.socket(fileno=control_fd)
    # The runs' leaders are reaped by the kernel: the zygote never waits.
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    zygote = os.getpid()
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(control, 16, 8)
        except InterruptedError:  # pragma: no cover - no handler interrupts it
            continue
        if not message:
            os._exit(0)
        if len(fds) < 5:
            for fd in fds:
                os.close(fd)
            continue
        leader = os.fork()
        if leader == 0:  # pragma: no cover - the fork never returns
            os.close(control.detach())
            _lead(fds, zygote)
        for fd in fds:
            os.close(fd)


if __name__ == "__main__":
    serve(int(sys.argv[1]))
