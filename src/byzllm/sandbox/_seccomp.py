"""The seccomp filter for the program: an allow-list of system calls, built with libseccomp.

With the ``seccomp`` extra (``pyseccomp`` over the system's ``libseccomp2``, the library
container runtimes build their profiles with) the filter is an **allow-list**
(:func:`_allowed`): the system calls Python programs, threads, ``fork``, subprocesses and
``multiprocessing`` use, each by name (libseccomp maps names to each architecture's numbers);
anything else answers ``ENOSYS`` (a call this kernel might not have: the C library then falls
back to an older one). Among the calls left out, those that namespaces, an unprivileged uid
and read-only mounts already stop, but that exploits start from, answer ``EPERM`` as before:
making or entering namespaces, every mount call, ``ptrace`` and cross-process memory access,
the kernel keyring, ``bpf``, ``perf_event_open``, ``userfaultfd``, ``io_uring``, kernel
modules and ``kexec``, file handles by number, swap, accounting, reboot, and anonymous
memory files (``memfd_create``, ``memfd_secret``: memory that no limit of ours would count).
System V IPC is not in the list either. ``socket`` and ``socketpair`` are allowed for
``AF_UNIX`` only (any other family answers ``EAFNOSUPPORT``); ``clone`` without namespace
flags only; ``clone3`` answers ``ENOSYS``, because its flags live in memory a filter cannot
read: the C library then falls back to ``clone``. A call from another architecture's ABI
(x32 or 32-bit on x86-64) answers ``EPERM``.

The host builds the filter (:func:`filter_program`: libseccomp exports it as classic BPF)
and hands the bytes to the bootstrap, which installs them with ``prctl(PR_SET_SECCOMP)``
just before it starts the program: the library is never loaded inside the sandbox.

Without the extra, :func:`_deny_list` assembles the former filter by hand: the same refusals
(``EPERM``, ``EAFNOSUPPORT``, ``clone3`` ``ENOSYS``), everything else allowed, on x86-64 and
arm64 only. It stays only for installations without libseccomp; the allow-list costs nothing
measurable per run (built once per process, about a millisecond).

A second, stacked filter (:func:`signal_calls` names its system calls; the bootstrap builds it,
because only it knows the pids, and it runs with the standard library alone) refuses every way
to signal or limit the sandbox's PID 1 and the tests' process (``kill``, ``tkill``,
``tgkill``, ``rt_sigqueueinfo``, ``rt_tgsigqueueinfo``, ``pidfd_open``, ``prlimit64`` on those
pids, and ``kill(-1)``): with root a different uid already keeps the program from them;
without root it has the same uid. ``pidfd_send_signal`` names its target by a descriptor,
not a pid, and a descriptor of a ``/proc/PID`` folder, which any process may open, is one:
no filter can tell which process it names, so this filter refuses the call (``EPERM``)
whatever its target. Without root, a program could otherwise interrupt PID 1 (Python's
``SIGINT`` handler, or its ``SIGALRM`` deadline) or kill the tests' process. The tests'
process gets the filter too, guarding PID 1: the tests may be hostile as well (CodeGen runs
a model's generated asserts).
"""

from __future__ import annotations

import errno
import functools
import platform
import struct
import tempfile
from typing import Any

__all__ = ["filter_program", "filter_source", "signal_calls"]

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

#: The refused system calls and their numbers: (x86-64, aarch64).
# fmt: off
_REFUSED = {
    "unshare": (272, 97), "setns": (308, 268), "mount": (165, 40), "umount2": (166, 39),
    "pivot_root": (155, 41), "chroot": (161, 51), "open_tree": (428, 428),
    "move_mount": (429, 429), "fsopen": (430, 430), "fsconfig": (431, 431), "fsmount": (432, 432),
    "fspick": (433, 433), "mount_setattr": (442, 442), "ptrace": (101, 117),
    "process_vm_readv": (310, 270), "process_vm_writev": (311, 271), "keyctl": (250, 219),
    "add_key": (248, 217), "request_key": (249, 218), "bpf": (321, 280),
    "perf_event_open": (298, 241), "userfaultfd": (323, 282), "io_uring_setup": (425, 425),
    "io_uring_enter": (426, 426), "io_uring_register": (427, 427), "kexec_load": (246, 104),
    "kexec_file_load": (320, 294), "init_module": (175, 105), "finit_module": (313, 273),
    "delete_module": (176, 106), "open_by_handle_at": (304, 265), "name_to_handle_at": (303, 264),
    "swapon": (167, 224), "swapoff": (168, 225), "reboot": (169, 142), "acct": (163, 89),
    "quotactl": (179, 60), "memfd_create": (319, 279), "memfd_secret": (447, 447),
    "pidfd_send_signal": (424, 424),
}
# fmt: on
_X86_64 = {name: numbers[0] for name, numbers in _REFUSED.items()}
_AARCH64 = {name: numbers[1] for name, numbers in _REFUSED.items()}

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


#: The system calls a program may make (where its architecture has them), beyond those with
#: a condition (socket, socketpair, clone); those refused with EPERM are the keys of _REFUSED.
_ALLOWED_NAMES = """
    read write readv writev pread64 pwrite64 preadv pwritev preadv2 pwritev2 open openat
    openat2 creat close close_range lseek stat fstat lstat newfstatat statx statfs fstatfs
    access faccessat faccessat2 readlink readlinkat getdents getdents64 getcwd chdir fchdir
    mkdir mkdirat rmdir unlink unlinkat rename renameat renameat2 link linkat symlink
    symlinkat mknod mknodat chmod fchmod fchmodat fchmodat2 chown fchown fchownat lchown umask
    truncate ftruncate fallocate fsync fdatasync sync syncfs sync_file_range utime utimes
    utimensat futimesat getxattr lgetxattr fgetxattr listxattr llistxattr flistxattr setxattr
    lsetxattr fsetxattr removexattr lremovexattr fremovexattr dup dup2 dup3 pipe pipe2 fcntl
    flock ioctl poll ppoll select pselect6 epoll_create epoll_create1 epoll_ctl epoll_wait
    epoll_pwait epoll_pwait2 eventfd eventfd2 signalfd signalfd4 timerfd_create
    timerfd_settime timerfd_gettime inotify_init inotify_init1 inotify_add_watch
    inotify_rm_watch sendfile copy_file_range splice tee vmsplice fadvise64 readahead
    mmap munmap mprotect mremap madvise msync mincore mlock mlock2 munlock mlockall
    munlockall brk get_mempolicy set_mempolicy mbind rt_sigaction rt_sigprocmask
    rt_sigreturn rt_sigpending rt_sigtimedwait rt_sigsuspend sigaltstack pause kill tkill
    tgkill rt_sigqueueinfo rt_tgsigqueueinfo pidfd_open restart_syscall
    getpid getppid gettid getuid geteuid getgid getegid getresuid getresgid getgroups getpgid
    getpgrp getsid setsid setpgid setuid setgid setreuid setregid setresuid setresgid
    setgroups setfsuid setfsgid capget capset prctl arch_prctl seccomp fork vfork execve
    execveat exit exit_group wait4 waitid futex futex_waitv set_robust_list get_robust_list
    set_tid_address rseq membarrier nanosleep clock_nanosleep clock_gettime clock_getres
    gettimeofday time times getitimer setitimer alarm timer_create timer_settime
    timer_gettime timer_getoverrun timer_delete sched_yield sched_getaffinity
    sched_setaffinity sched_getparam sched_setparam sched_getscheduler sched_setscheduler
    sched_getattr sched_setattr sched_get_priority_max sched_get_priority_min
    sched_rr_get_interval getpriority setpriority ioprio_get ioprio_set getrlimit setrlimit
    prlimit64 getrusage sysinfo uname getcpu getrandom bind listen accept accept4 connect
    getsockname getpeername sendto recvfrom sendmsg recvmsg sendmmsg recvmmsg setsockopt
    getsockopt shutdown
"""
_ALLOWED = tuple(_ALLOWED_NAMES.split())


def filter_program(machine: str | None = None) -> bytes | None:
    """The filter as ``struct sock_filter`` instructions (:func:`filter_source` says which),
    or None for an architecture without one."""
    machine = machine or platform.machine()
    if filter_source() == "libseccomp":
        return _allow_list(machine)
    return _deny_list(machine)


@functools.cache
def filter_source() -> str:
    """``"libseccomp"`` (the allow-list) where the ``seccomp`` extra and the system's
    libseccomp load, else ``"hand-built"`` (the deny-list)."""
    try:
        import pyseccomp  # noqa: F401
    except (ImportError, OSError):  # not installed, or libseccomp.so.2 missing
        return "hand-built"
    return "libseccomp"


#: libseccomp's name for each architecture this module builds a filter for.
_LIBSECCOMP_ARCH = {"x86_64": "X86_64", "aarch64": "AARCH64", "riscv64": "RISCV64",
                    "ppc64le": "PPC64LE", "s390x": "S390X"}  # fmt: skip


@functools.cache
def _allow_list(machine: str) -> bytes | None:
    import pyseccomp as lib

    arch_name = _LIBSECCOMP_ARCH.get(machine)
    if arch_name is None:
        return None
    arch = getattr(lib.Arch, arch_name)
    found = lib.SyscallFilter(lib.ERRNO(errno.ENOSYS))
    if arch != lib.system_arch():
        found.remove_arch(lib.Arch.NATIVE)
        found.add_arch(arch)
    found.set_attr(lib.Attr.ACT_BADARCH, lib.ERRNO(errno.EPERM))
    found.set_attr(lib.Attr.CTL_NNP, 0)  # the bootstrap sets no_new_privs itself
    added = 0
    for name in _ALLOWED:
        added += _rule(found, lib.ALLOW, name)
    for name in _REFUSED:  # the refused calls, by name (libseccomp maps them per architecture)
        _rule(found, lib.ERRNO(errno.EPERM), name)
    for name in ("socket", "socketpair"):
        _rule(found, lib.ALLOW, name, lib.Arg(0, lib.EQ, _AF_UNIX))
        _rule(found, lib.ERRNO(errno.EAFNOSUPPORT), name, lib.Arg(0, lib.NE, _AF_UNIX))
    _rule(found, lib.ALLOW, "clone", lib.Arg(0, lib.MASKED_EQ, _CLONE_NAMESPACES, 0))
    for one in range(32):  # any namespace flag set: refused (one rule per flag)
        bit = 1 << one
        if _CLONE_NAMESPACES & bit:
            _rule(found, lib.ERRNO(errno.EPERM), "clone", lib.Arg(0, lib.MASKED_EQ, bit, bit))
    _rule(found, lib.ERRNO(errno.ENOSYS), "clone3")
    if added < len(_ALLOWED) // 2:  # pragma: no cover - a libseccomp that knows no names
        return None
    with tempfile.TemporaryFile() as out:
        found.export_bpf(out)
        out.seek(0)
        return out.read()


def _rule(found: Any, action: int, name: str, *args: Any) -> int:
    """Add one rule; 0 where this architecture has no such call."""
    try:
        found.add_rule(action, name, *args)
    except (OSError, ValueError, RuntimeError):
        return 0
    return 1


def _deny_list(machine: str) -> bytes | None:
    """The hand-assembled deny-list (without libseccomp): see the module doc."""
    spec = _ARCHES.get(machine)
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
