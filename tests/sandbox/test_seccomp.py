"""The seccomp filter: well formed for each supported architecture; with the ``seccomp`` extra
an allow-list built by libseccomp (a call not on it is refused), without it the hand-built
deny-list."""

from __future__ import annotations

import errno
import os
import struct
import subprocess
import sys
import textwrap
from collections.abc import Callable

import pytest

from byzllm.sandbox import SandboxLimits, _seccomp, run_program, run_tests, sandbox_support
from byzllm.sandbox._bootstrap import signal_guard
from byzllm.sandbox._seccomp import filter_program, signal_calls


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_filter_is_well_formed(machine: str) -> None:
    program = filter_program(machine)
    assert program is not None and len(program) % 8 == 0
    instructions = [struct.unpack("=HBBI", program[i : i + 8]) for i in range(0, len(program), 8)]
    for index, (code, jt, jf, _) in enumerate(instructions):
        if code & 0x07 == 0x05:  # a jump: both targets inside the program
            assert index + 1 + max(jt, jf) < len(instructions)
    assert instructions[-1][0] == 0x06  # ends with a return


def test_unknown_architecture_has_no_filter() -> None:
    assert filter_program("sparc64") is None


GUARDED = """
    import errno, os
    from byzllm.sandbox import _bootstrap, _seccomp
    arch, calls = _seccomp.signal_calls()
    parent = os.getppid()
    _bootstrap._libc_call("prctl", _bootstrap.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    _bootstrap._install_filter(_bootstrap.signal_guard(arch, calls, (parent,)))
    for target in (parent, -parent, -1, os.getpid()):
        try:
            os.kill(target, 0)
            print("signalled")
        except OSError as error:
            print(errno.errorcode[error.errno])
    try:
        os.close(os.pidfd_open(parent))
        print("opened")
    except OSError as error:
        print(errno.errorcode[error.errno])
"""


@pytest.mark.skipif(signal_calls() is None, reason="no filter for this architecture")
def test_the_signal_guard_keeps_a_program_from_the_protected_processes() -> None:
    """The stacked filter: no signal, pidfd or process-group signal to a protected pid, and
    no signal to every process; the program's own process stays reachable."""
    bare = subprocess.run(
        [sys.executable, "-c", f"import os; os.kill({os.getpid()}, 0); print('signalled')"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert bare.stdout == "signalled\n"  # a plain process may signal its parent
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(GUARDED)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["EPERM", "EPERM", "EPERM", "signalled", "EPERM"]


def test_the_signal_guard_is_well_formed() -> None:
    for machine in ("x86_64", "aarch64"):
        spec = signal_calls(machine)
        assert spec is not None
        program = signal_guard(*spec, (1, 7))
        size = len(program)
        instructions = [struct.unpack("=HBBI", program[i : i + 8]) for i in range(0, size, 8)]
        for index, (code, jt, jf, _) in enumerate(instructions):
            if code & 0x07 == 0x05:
                assert index + 1 + max(jt, jf) < len(instructions)
        # 1, 7, their process groups and -1 each end in EPERM.
        denied = {k for code, _, _, k in instructions if code == 0x15} & {
            1,
            7,
            0xFFFFFFFF,
            0xFFFFFFF9,
        }
        assert denied == {1, 7, 0xFFFFFFFF, 0xFFFFFFF9}
        assert instructions[-1] == (0x06, 0, 0, 0x00050000 | errno.EPERM)
    assert signal_calls("sparc64") is None


#: personality(0xffffffff) asks for the process's execution domain: allowed to any process,
#: and on no list of calls a program needs.
PERSONALITY = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
result = libc.personality(0xFFFFFFFF)
print("personality", result, os.strerror(ctypes.get_errno()) if result < 0 else "")
"""


@pytest.fixture
def hand_built(monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs get the hand-built deny-list, as without the extra."""
    monkeypatch.setattr(_seccomp, "filter_source", lambda: "hand-built")


def test_with_the_extra_the_filter_is_libseccomps_allow_list(
    require_extra: Callable[..., None],
) -> None:
    require_extra("pyseccomp", extra="seccomp")
    assert _seccomp.filter_source() == "libseccomp"
    assert filter_program() == _seccomp._allow_list(os.uname().machine)


async def test_a_call_off_the_allow_list_is_refused(require_extra: Callable[..., None]) -> None:
    require_extra("pyseccomp", extra="seccomp")
    if not sandbox_support()["available"]:
        pytest.skip("the sandbox is unavailable here")
    bare = subprocess.run(
        [sys.executable, "-c", PERSONALITY], capture_output=True, text=True, check=True
    )
    assert bare.stdout.split()[:2] == ["personality", "0"]  # allowed to a plain process
    result = await run_program(PERSONALITY, limits=SandboxLimits(timeout_s=20))
    assert result.stdout == f"personality -1 {os.strerror(errno.ENOSYS)}\n", result


async def test_without_the_extra_the_deny_list_holds(hand_built: None) -> None:
    assert filter_program() == _seccomp._deny_list(os.uname().machine)
    if not sandbox_support()["available"]:
        pytest.skip("the sandbox is unavailable here")
    program = PERSONALITY + textwrap.dedent(
        """
        import socket
        try:
            os.memfd_create("x")
            print("MEMFD")
        except OSError as error:
            print("memfd", error.errno)
        try:
            socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            print("INET")
        except OSError as error:
            print("inet", error.errno)
        """
    )
    result = await run_program(program, limits=SandboxLimits(timeout_s=20))
    # A deny-list lets through what it does not name; it still refuses what it does.
    assert result.stdout.split("\n")[:3] == [
        "personality 0 ",
        f"memfd {errno.EPERM}",
        f"inet {errno.EAFNOSUPPORT}",
    ], result


#: pidfd_send_signal through the descriptor of a /proc/PID folder: its own process (signal 0,
#: harmless) and PID 1 (SIGINT: Python's handler, in a PID 1 of the caller's uid without root).
PIDFD_SIGNALS = """
import errno, os, signal
for target, number in (("/proc/self", 0), ("/proc/1", signal.SIGINT)):
    fd = os.open(target, os.O_RDONLY | os.O_DIRECTORY)
    try:
        signal.pidfd_send_signal(fd, number)
        print("signalled")
    except OSError as error:
        print(errno.errorcode[error.errno])
"""


async def test_no_process_is_signalled_through_a_proc_descriptor(require_sandbox: None) -> None:
    """pidfd_send_signal takes any /proc/PID folder's descriptor as its target, which no
    filter can map to a pid: refused whatever it names. Without root it reached PID 1 (whose
    SIGINT made the run a SandboxError, its SIGALRM a time-out at once) and the tests'
    process."""
    itself = PIDFD_SIGNALS.replace('("/proc/1", signal.SIGINT)', "")
    bare = subprocess.run(
        [sys.executable, "-c", itself],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert bare.stdout.split() == ["signalled"]  # a plain process may
    limits = SandboxLimits(timeout_s=20)
    result = await run_program(PIDFD_SIGNALS, limits=limits)
    assert (result.status, result.stdout.split()) == ("passed", ["EPERM", "EPERM"]), result
    killer = """
def add(a, b):
    return a - b

import os, signal
for pid in os.listdir("/proc"):
    if pid.isdigit() and int(pid) != os.getpid():
        fd = os.open(f"/proc/{pid}", os.O_RDONLY | os.O_DIRECTORY)
        try:
            signal.pidfd_send_signal(fd, signal.SIGKILL)
        except OSError:
            pass
"""
    tests = "def check(candidate):\n    assert candidate(2, 2) == 4\n"
    judged = await run_tests(killer, tests, entry_point="add", limits=limits)
    assert judged.status == "failed", judged  # the tests ran: not "killed by SIGKILL"
    assert judged.detail.startswith("AssertionError at tests line 2"), judged
