"""A seccomp filter for the program: the system calls sandboxed code never needs are refused.

Namespaces, an unprivileged uid and read-only mounts already deny what these calls would
achieve; the filter narrows the kernel surface a program can reach for an exploit, as
container runtimes' default profiles do. Refused (``EPERM``): making or entering namespaces
(``unshare``, ``setns``, ``clone``/``clone3`` with namespace flags), every mount call,
``ptrace``, the kernel keyring, ``bpf``, ``perf_event_open``, ``userfaultfd``, ``io_uring``,
loading kernel modules or kernels, file handles by number, swap, accounting, reboot,
anonymous memory files (``memfd_create``, ``memfd_secret``: memory that no limit of ours
would count); ``socket`` for any family but ``AF_UNIX`` answers ``EAFNOSUPPORT``; on
x86-64 also the x32 ABI and any other architecture's calls. ``clone3`` answers ``ENOSYS``
instead, because its flags live in memory a filter cannot read: the C library then falls back
to ``clone``, whose flags the filter checks.

The host builds the filter (:func:`filter_program`) and hands the bytes to the bootstrap,
which installs them with ``prctl(PR_SET_SECCOMP)`` just before it starts the program.

A second, stacked filter (:func:`signal_calls` names its system calls; the bootstrap builds it,
because only it knows the pids) refuses every way to signal or limit the sandbox's PID 1 and
the tests' process (``kill``, ``tkill``, ``tgkill``, ``rt_sigqueueinfo``,
``rt_tgsigqueueinfo``, ``pidfd_open``, ``prlimit64`` on those pids, and ``kill(-1)``): with
root a different uid already keeps the program from them; without root it has the same uid.
"""

from __future__ import annotations

import errno
import platform
import struct

__all__ = ["filter_program", "signal_calls"]

# BPF instruction classes and fields (linux/filter.h, linux/bpf_common.h).
_LD_W_ABS = 0x00 | 0x00 | 0x20  # BPF_LD | BPF_W | BPF_ABS
_JMP_JEQ_K = 0x05 | 0x10 | 0x00  # BPF_JMP | BPF_JEQ | BPF_K
_JMP_JGE_K = 0x05 | 0x30 | 0x00
_JMP_JSET_K = 0x05 | 0x40 | 0x00
_RET_K = 0x06 | 0x00

_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000

# Offsets in struct seccomp_data: int nr; u32 arch; u64 ip; u64 args[6].
_NR, _ARCH, _ARG0_LOW = 0, 4, 16

_CLONE_NAMESPACES = (
    0x00020000  # CLONE_NEWNS
    | 0x02000000  # CLONE_NEWCGROUP
    | 0x04000000  # CLONE_NEWUTS
    | 0x08000000  # CLONE_NEWIPC
    | 0x10000000  # CLONE_NEWUSER
    | 0x20000000  # CLONE_NEWPID
    | 0x40000000  # CLONE_NEWNET
    | 0x00000080  # CLONE_NEWTIME
)

# fmt: off
_X86_64 = {
    "unshare": 272, "setns": 308, "mount": 165, "umount2": 166, "pivot_root": 155,
    "chroot": 161, "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431,
    "fsmount": 432, "fspick": 433, "mount_setattr": 442, "ptrace": 101,
    "process_vm_readv": 310, "process_vm_writev": 311, "keyctl": 250, "add_key": 248,
    "request_key": 249, "bpf": 321, "perf_event_open": 298, "userfaultfd": 323,
    "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
    "kexec_load": 246, "kexec_file_load": 320, "init_module": 175, "finit_module": 313,
    "delete_module": 176, "open_by_handle_at": 304, "name_to_handle_at": 303,
    "swapon": 167, "swapoff": 168, "reboot": 169, "acct": 163, "quotactl": 179,
    "memfd_create": 319, "memfd_secret": 447,
}
_AARCH64 = {
    "unshare": 97, "setns": 268, "mount": 40, "umount2": 39, "pivot_root": 41,
    "chroot": 51, "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431,
    "fsmount": 432, "fspick": 433, "mount_setattr": 442, "ptrace": 117,
    "process_vm_readv": 270, "process_vm_writev": 271, "keyctl": 219, "add_key": 217,
    "request_key": 218, "bpf": 280, "perf_event_open": 241, "userfaultfd": 282,
    "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
    "kexec_load": 104, "kexec_file_load": 294, "init_module": 105, "finit_module": 273,
    "delete_module": 106, "open_by_handle_at": 265, "name_to_handle_at": 264,
    "swapon": 224, "swapoff": 225, "reboot": 142, "acct": 89, "quotactl": 60,
    "memfd_create": 279, "memfd_secret": 447,
}
# fmt: on

#: Per architecture: its AUDIT_ARCH value, the refused calls' numbers, clone, clone3, socket,
#: and the first number of a foreign ABI sharing the architecture (x32 on x86-64).
_ARCHES: dict[str, tuple[int, dict[str, int], int, int, int, int | None]] = {
    "x86_64": (0xC000003E, _X86_64, 56, 435, 41, 0x40000000),
    "aarch64": (0xC00000B7, _AARCH64, 220, 435, 198, None),
}
#: System calls whose first argument names a process (or, negative, a process group) that is
#: signalled, opened as a pidfd or has its limits changed.
_SIGNAL_CALLS = {
    "x86_64": (62, 200, 234, 129, 297, 434, 302),
    "aarch64": (129, 130, 131, 138, 240, 434, 261),
}

#: The one socket family a program may create: AF_UNIX (socket pairs, multiprocessing). The
#: network namespace has nothing to reach over AF_INET; AF_VSOCK, AF_NETLINK, AF_PACKET and
#: the rest reach the host or the kernel.
_AF_UNIX = 1


def _op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def filter_program(machine: str | None = None) -> bytes | None:
    """The filter as ``struct sock_filter`` instructions, or None for an unknown architecture."""
    spec = _ARCHES.get(machine or platform.machine())
    if spec is None:
        return None
    arch, refused, clone, clone3, socket, foreign = spec
    deny = _ret(_RET_ERRNO | errno.EPERM)
    ops: list[bytes] = []
    numbers = sorted(set(refused.values()))
    # Jumps are relative and only forward. Layout (index: instruction):
    #   0 ld arch; 1 jeq arch else -> DENY; 2 ld nr; [3 jge foreign -> DENY]
    #   then one jeq per refused number -> DENY; jeq clone -> CLONE; jeq clone3 -> ENOSYS;
    #   jeq socket -> SOCKET; ALLOW; DENY; ENOSYS; CLONE: ld arg0; jset namespaces -> DENY2
    #   else ALLOW2; ALLOW2; DENY2; SOCKET: ld arg0; jeq AF_UNIX -> ALLOW3 else NOFAMILY;
    #   ALLOW3; NOFAMILY
    checks = len(numbers) + 3
    head = 3 + (1 if foreign is not None else 0)
    allow_at = head + checks
    deny_at, enosys_at, clone_at = allow_at + 1, allow_at + 2, allow_at + 3
    socket_at = clone_at + 4

    def jump_to(target: int, at: int) -> int:
        return target - at - 1

    ops.append(_op(_LD_W_ABS, _ARCH))
    ops.append(_op(_JMP_JEQ_K, arch, 0, jump_to(deny_at, 1)))
    ops.append(_op(_LD_W_ABS, _NR))
    if foreign is not None:
        ops.append(_op(_JMP_JGE_K, foreign, jump_to(deny_at, 3), 0))
    for number in numbers:
        ops.append(_op(_JMP_JEQ_K, number, jump_to(deny_at, len(ops)), 0))
    ops.append(_op(_JMP_JEQ_K, clone, jump_to(clone_at, len(ops)), 0))
    ops.append(_op(_JMP_JEQ_K, clone3, jump_to(enosys_at, len(ops)), 0))
    ops.append(_op(_JMP_JEQ_K, socket, jump_to(socket_at, len(ops)), 0))
    assert len(ops) == allow_at
    ops.append(_ret(_RET_ALLOW))
    ops.append(deny)
    ops.append(_ret(_RET_ERRNO | errno.ENOSYS))
    ops.append(_op(_LD_W_ABS, _ARG0_LOW))
    ops.append(_op(_JMP_JSET_K, _CLONE_NAMESPACES, 1, 0))
    ops.append(_ret(_RET_ALLOW))
    ops.append(deny)
    assert len(ops) == socket_at
    ops.append(_op(_LD_W_ABS, _ARG0_LOW))
    ops.append(_op(_JMP_JEQ_K, _AF_UNIX, 0, 1))
    ops.append(_ret(_RET_ALLOW))
    ops.append(_ret(_RET_ERRNO | errno.EAFNOSUPPORT))
    return b"".join(ops)


def signal_calls(machine: str | None = None) -> tuple[int, tuple[int, ...]] | None:
    """The AUDIT_ARCH value and the numbers of the calls that reach another process by pid
    (see the module doc), or None for an unknown architecture."""
    machine = machine or platform.machine()
    spec, calls = _ARCHES.get(machine), _SIGNAL_CALLS.get(machine)
    return (spec[0], calls) if spec is not None and calls is not None else None


def _ret(value: int) -> bytes:
    return _op(_RET_K, value)
