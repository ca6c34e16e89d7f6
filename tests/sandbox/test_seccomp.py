"""The seccomp filter's program is well formed for each supported architecture."""

from __future__ import annotations

import errno
import os
import struct
import subprocess
import sys
import textwrap

import pytest

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
