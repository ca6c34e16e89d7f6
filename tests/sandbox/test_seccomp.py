"""The seccomp filter's program is well formed for each supported architecture."""

from __future__ import annotations

import struct

import pytest

from byzllm.sandbox._seccomp import filter_program


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
