"""The first process inside the sandbox's namespaces: prepares the file system, starts the program.

Run by :mod:`byzllm.sandbox._run` as ``unshare --mount --net --pid ... python -S -s
_bootstrap.py CONFIG_FILE`` (without root, inside a user namespace too), so this process is
PID 1 of a fresh PID namespace, alone in a fresh network namespace (only a loopback
interface, down) and a private mount namespace. It

1. sets the System V IPC limits of its IPC namespace to zero;
2. puts together a new root file system, an allow-list, and makes it ``/``: read-only binds
   of the system folders and of the Python installation, a ``/dev`` of its own with five
   device nodes, the PID namespace's own ``/proc``; nothing else of the host's exists there;
3. mounts a size-limited private ``tmpfs`` as the program's working directory (also its HOME
   and TMPDIR; a Python installation within it is bound there, read-only, at its own path)
   and writes the program there;
4. forks the program: a new session, resource limits, an unprivileged uid with no
   capabilities, ``no_new_privs``, a seccomp filter (:mod:`byzllm.sandbox._seccomp`), a
   minimal environment;
5. waits for it, reaping every orphan (PID 1's job), until it exits or the wall-time limit
   passes, then reports how it ended on the status pipe (one :mod:`marshal` record) and
   exits. The kernel kills every
   process left in a PID namespace when its PID 1 exits, so nothing the program started
   survives it.

Standard library only, and no byzllm import: it runs under ``-S`` (no site-packages) to
start fast and to depend on nothing installed. Its start-up is most of the sandbox's cost per
run, so it imports only C modules and ``os``: :mod:`marshal` rather than :mod:`json` (which
pulls in :mod:`re` and :mod:`enum`), ``_signal`` rather than :mod:`signal` (which pulls in
:mod:`enum`), :mod:`ctypes` only where a mount or ``prctl`` needs it. Any failure before the
program starts is reported as a ``setup`` event, never as a result of the program.
"""

from __future__ import annotations

import marshal
import os
import resource
import sys
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

_signal: Any = __import__("_signal")

# Mount flags from <sys/mount.h>.
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_NOATIME = 1024
MS_NODIRATIME = 2048
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MS_RELATIME = 1 << 21
MS_STRICTATIME = 1 << 24

PR_SET_NO_NEW_PRIVS = 38
PR_CAPBSET_DROP = 24
PR_SET_SECUREBITS = 28
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
#: SECBIT_NOROOT, SECBIT_NO_SETUID_FIXUP, SECBIT_KEEP_CAPS (off), SECBIT_NO_CAP_AMBIENT_RAISE,
#: each with its lock: uid 0 never regains a capability, by exec or otherwise.
SECUREBITS_NO_ROOT = 0b11101111
_LINUX_CAPABILITY_VERSION_3 = 0x20080522
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
O_PATH = 0o10000000

#: The most bytes of test outcomes read from the tests' process.
_MAX_OUTCOMES = 4_000_000
#: Exit status of the program child when it could not be started (exec failed).
EXEC_FAILED = 127

_libc: Any = None
#: The harness (:mod:`byzllm.sandbox._harness`) when it is already imported, in the zygote:
#: its roles then run in the forked process instead of a new interpreter.
HARNESS: Any = None


class SetupError(Exception):
    """The sandbox could not be prepared; reported to the host instead of running anything."""


class _Deadline(Exception):
    pass


def _libc_call(name: str, *args: Any) -> None:
    import ctypes

    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    converted = [ctypes.c_ulong(a) if isinstance(a, int) else a for a in args]
    if getattr(_libc, name)(*converted) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{name}{args!r}: {os.strerror(errno)}")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str = "") -> None:
    _libc_call(
        "mount",
        source.encode() if source is not None else None,
        target.encode(),
        fstype.encode() if fstype is not None else None,
        flags,
        data.encode() if data else None,
    )


def _is_within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


#: The system folders the new root shows (read-only, where they exist): the interpreter's
#: shared libraries and the programs a program may start. Not /home, /root, /run, /var, /srv,
#: /opt, /mnt, /media, /sys, the host's /tmp or any checkout: they are not there at all.
SYSTEM_FOLDERS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
#: Files of the shown folders that identify the machine: an empty device is bound over each.
MASKED_FILES = ("/etc/machine-id",)
#: The only device nodes of the new /dev (bound from the host's; pseudo-terminals come from a
#: devpts instance of the sandbox's own).
DEVICES = ("null", "zero", "full", "random", "urandom")
#: statvfs flags (ST_*) and the mount flags (MS_*) a read-only bind must keep: a mount made in
#: a user namespace may not drop them.
_KEPT_FLAGS = ((2, MS_NOSUID), (4, MS_NODEV), (8, MS_NOEXEC), (1024, MS_NOATIME),
               (2048, MS_NODIRATIME), (4096, MS_RELATIME))  # fmt: skip
#: pivot_root's number per machine (the C library has no wrapper for it).
_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "riscv64": 41, "ppc64le": 203, "s390x": 217}
#: Where the new root is put together, before it becomes "/": the host's /tmp (already
#: hidden from the program: the new root has its own /tmp).
_STAGE = "/tmp"


def _handle(path: str) -> int:
    """An ``O_PATH`` descriptor: reaches ``path`` after the stage's mount hides it."""
    return os.open(path, O_PATH | (os.O_DIRECTORY if os.path.isdir(path) else 0))


def _bind_read_only(handle: int, target: str, nodev: bool = True) -> None:
    """Bind what ``handle`` names at ``target``, read-only and ``nosuid`` (and ``nodev``),
    keeping the flags the source mount has."""
    _mount(f"/proc/self/fd/{handle}", target, None, MS_BIND)
    flags = MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | (MS_NODEV if nodev else 0)
    found = os.statvfs(target).f_flag
    for statvfs_flag, mount_flag in _KEPT_FLAGS:
        if found & statvfs_flag:
            flags |= mount_flag
    _mount(None, target, None, flags)


def _new_root(config: dict[str, Any]) -> None:
    """Put together the only file system the program sees, and make it "/".

    An allow-list: a read-only ``tmpfs`` holding read-only binds of :data:`SYSTEM_FOLDERS`
    (symbolic links stay links) and of the Python installation (``config["keep"]``); a
    ``/dev`` of its own with :data:`DEVICES`, a private ``/dev/shm`` and ``/dev/pts``; the
    PID namespace's own ``/proc``; the size-limited work folder, with any installation folder
    that lies within it shown on top (:func:`_show_within_work`). Nothing else of the host's.
    """
    stage, work, uid = _STAGE, config["work"], config["uid"]
    machine = os.uname().machine
    if machine not in _PIVOT_ROOT:
        raise SetupError(f"no pivot_root system call known for {machine}")
    sources: list[tuple[str, int]] = []
    inside: list[tuple[str, int]] = []  # installation folders within the work folder
    shown: list[str] = []
    for path in [*SYSTEM_FOLDERS, *config["keep"]]:
        if os.path.islink(path) and path in SYSTEM_FOLDERS:
            sources.append((path, -1))  # a merged /usr: /bin -> usr/bin
        elif os.path.isdir(path) and not any(_is_within(path, s) for s in shown):
            if _is_within(work, path):
                raise SetupError(f"the Python installation {path} holds the work folder {work}")
            # A virtual environment under /tmp: shown on top of the work folder, once mounted.
            (inside if _is_within(path, work) else sources).append((path, _handle(path)))
            shown.append(path)
    masks = [m for m in MASKED_FILES if os.path.isfile(m)]
    devices = [(d, _handle(f"/dev/{d}")) for d in DEVICES if os.path.exists(f"/dev/{d}")]
    # unshare --mount-proc already mounted the PID namespace's own /proc; from the zygote
    # (:mod:`byzllm.sandbox._zygote`) /proc is still the host's, so a fresh one is mounted.
    proc = -1 if config.get("fresh_proc") else _handle("/proc")
    _mount("tmpfs", stage, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,nr_inodes=1024,mode=0755")
    for path, handle in sorted(sources, key=lambda each: each[0].count("/")):
        target = stage + path
        if handle < 0:
            os.symlink(os.readlink(path), target)
            continue
        os.makedirs(target, exist_ok=True)
        _bind_read_only(handle, target)
        os.close(handle)
    null = devices[0][1] if devices and devices[0][0] == "null" else -1
    for mask in masks:
        if null >= 0:
            _bind_read_only(null, stage + mask, nodev=False)  # reads as empty
    _new_dev(stage, devices, config, uid)
    os.makedirs(stage + "/proc")
    if proc < 0:
        _mount("proc", stage + "/proc", "proc", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)
    else:
        _bind_read_only(proc, stage + "/proc")
        os.close(proc)
    os.makedirs(stage + work, exist_ok=True)
    # 0711 where the interpreter lies within it: the tests' process (another uid) must pass.
    mode = "0711" if inside else "0700"
    options = f"size={config['disk_mb']}m,nr_inodes={config['max_inodes']},mode={mode}"
    _mount("tmpfs", stage + work, "tmpfs", MS_NOSUID | MS_NODEV, f"{options},uid={uid},gid={uid}")
    _show_within_work(stage, work, inside)
    # pivot_root(".", "."): the old root ends up under the new one, and is detached at once.
    os.chdir(stage)
    _libc_call("syscall", _PIVOT_ROOT[machine], b".", b".")
    _libc_call("umount2", b".", 2)  # MNT_DETACH
    os.chdir("/")
    _mount(None, "/", None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)


def _show_within_work(stage: str, work: str, roots: list[tuple[str, int]]) -> None:
    """Show the installation folders that lie within the work folder (a virtual environment
    under /tmp) at their own paths, read-only, on top of the work ``tmpfs``.

    Each entry of the work folder that leads to one is a mount point, which the program can
    neither rename nor remove (``EBUSY``): the folder itself, bound read-only, or a read-only
    ``tmpfs`` of the sandbox's own holding only the folders down to it. So no path to the
    interpreter can be swapped for one the program wrote, and nothing else of the host's
    folder is there.
    """
    base = work.rstrip("/") + "/"
    tops: dict[str, list[tuple[str, int]]] = {}
    for path, handle in roots:
        tops.setdefault(base + path[len(base) :].split("/")[0], []).append((path, handle))
    for top, group in tops.items():
        os.mkdir(stage + top)
        whole = next((handle for path, handle in group if path == top), None)
        if whole is not None:  # the entry is an installation folder: it holds the others
            _bind_read_only(whole, stage + top)
            for _, handle in group:
                os.close(handle)
            continue
        _mount("tmpfs", stage + top, "tmpfs", MS_NOSUID | MS_NODEV, "size=64k,mode=0755")
        for path, handle in group:
            os.makedirs(stage + path, exist_ok=True)
            _bind_read_only(handle, stage + path)
            os.close(handle)
        _mount(None, stage + top, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)


def _new_dev(stage: str, devices: list[tuple[str, int]], config: dict[str, Any], uid: int) -> None:
    """``/dev`` of the new root: the allowed nodes, the usual links, ``shm`` and ``pts``."""
    dev = stage + "/dev"
    os.makedirs(dev)
    _mount("tmpfs", dev, "tmpfs", MS_NOSUID | MS_NOEXEC, "size=64k,nr_inodes=64,mode=0755")
    for name, handle in devices:
        with open(f"{dev}/{name}", "x"):
            pass
        _bind_read_only(handle, f"{dev}/{name}", nodev=False)
        os.close(handle)
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"),
                         ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2")):  # fmt: skip
        os.symlink(target, f"{dev}/{name}")
    os.makedirs(dev + "/shm")  # POSIX semaphores (multiprocessing) live here
    inodes = config["max_inodes"]
    options = f"size={config['disk_mb']}m,nr_inodes={inodes},mode=0700,uid={uid},gid={uid}"
    _mount("tmpfs", dev + "/shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, options)
    os.makedirs(dev + "/pts")
    try:
        _mount("devpts", dev + "/pts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666")
        os.symlink("pts/ptmx", dev + "/ptmx")
    except OSError:
        pass  # no pseudo-terminals then
    _mount(None, dev, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NOEXEC)


def _report(fd: int, report: dict[str, Any]) -> None:
    os.write(fd, marshal.dumps(report))


#: System V IPC limits of the run's own IPC namespace: none at all. Shared memory segments
#: are memory no per-process limit counts (and they outlive their creator); message queues and
#: semaphores are not needed by anything a program should do here.
_IPC_LIMITS = {
    "kernel/shmmax": "0",
    "kernel/shmall": "0",
    "kernel/shmmni": "0",
    "kernel/msgmni": "0",
    "kernel/sem": "0 0 0 0",
}


def _close_ipc() -> None:
    """Set this IPC namespace's System V limits to zero (before /proc becomes read-only)."""
    for name, value in _IPC_LIMITS.items():
        try:
            with open("/proc/sys/" + name, "w", encoding="ascii") as handle:
                handle.write(value)
        except OSError as error:
            raise SetupError(f"cannot limit System V IPC ({name}): {error}") from error


def _join_cgroups(config: dict[str, Any]) -> None:
    """Move this process into the run's cgroups (:mod:`byzllm.sandbox._cgroup`), first of
    all: every process of the run descends from it."""
    for procs in config.get("cgroup_procs") or ():
        try:
            with open(procs, "w", encoding="ascii") as handle:
                handle.write("0")
        except OSError as error:
            raise SetupError(f"cannot join the run's cgroup ({procs}): {error}") from error


def _prepare(config: dict[str, Any], source: bytes) -> None:
    _join_cgroups(config)
    _close_ipc()
    _new_root(config)
    _write_program(config, source)


def _write_program(config: dict[str, Any], source: bytes) -> None:
    path = os.path.join(config["work"], config["program_name"])
    with open(path, "wb") as handle:
        handle.write(source)
    if config["isolate"] or config.get("drop_root"):
        os.chown(path, config["uid"], config["uid"])


def _limit(kind: int, value: int) -> None:
    resource.setrlimit(kind, (value, value))


def _start_program(
    config: dict[str, Any],
    argv: list[str],
    uid: int,
    cwd: str,
    keep_fds: tuple[int, ...] = (),
    protect: tuple[int, ...] = (),
    role: Callable[[], object] | None = None,
) -> None:  # pragma: no cover - runs in the child
    """In the forked child: become the program (never returns).

    ``role``: instead of exec'ing ``argv``, run this function of the harness in this process
    (forked from the zygote, where the harness is already imported), once every step before
    exec has been taken; :func:`_run_role` then stands in for the interpreter's start and end.
    """
    try:
        if config["isolate"]:
            # Its own session and process group: kill(0, ...) cannot reach the bootstrap. (Not
            # without isolation: there the bootstrap's group, program included, is killed as
            # the run ends, by the bootstrap or the host.)
            os.setsid()
        for fd in keep_fds:
            os.set_inheritable(fd, True)
        os.chdir(cwd)
        mib = 1024 * 1024
        cpu = int(config["cpu_s"]) + (1 if config["cpu_s"] % 1 else 0)
        resource.setrlimit(resource.RLIMIT_CPU, (max(cpu, 1), max(cpu, 1) + 1))
        _limit(resource.RLIMIT_AS, config["memory_mb"] * mib)
        _limit(resource.RLIMIT_FSIZE, config["disk_mb"] * mib)
        _limit(resource.RLIMIT_NOFILE, config["max_open_files"])
        # 1, not 0: a core_pattern that pipes to a helper ignores a limit of 0, but the
        # kernel takes a limit of 1 as "never dump" for pipes and files alike.
        _limit(resource.RLIMIT_CORE, 1)
        _limit(resource.RLIMIT_MEMLOCK, 0)
        _limit(resource.RLIMIT_MSGQUEUE, 0)
        if config.get("rootless"):
            _drop_capabilities()  # the only uid there is, the caller's, stays
        elif config["isolate"] or config.get("drop_root"):
            # Without isolation too where byzllm runs as root: root's uid is exempt from
            # RLIMIT_NPROC, and would keep every other privilege.
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)  # drops every capability
        # RLIMIT_NPROC counts every process of the uid, so it is set after the uid change.
        _limit(resource.RLIMIT_NPROC, _process_limit(config))
        _libc_call("prctl", PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        if config["seccomp"]:
            _install_filter(config["seccomp"])
        if config.get("signal_calls") and protect:
            arch, calls = config["signal_calls"]
            _install_filter(signal_guard(arch, calls, protect))
        if role is None:
            os.execve(config["python"], argv, config["env"])
    except BaseException as error:  # anything here means the program never ran
        # Still this process's copy of the status pipe (closed only by exec): the host learns
        # that the sandbox, not the program, failed.
        _report(config["status_fd"], {"event": "setup", "message": f"cannot start: {error}"})
        os._exit(EXEC_FAILED)
    assert role is not None
    _run_role(config, role, argv, keep_fds)


def _process_limit(config: dict[str, Any]) -> int:
    """``RLIMIT_NPROC`` of the run's processes: ``max_processes`` of the program's own.

    With root the program has a uid of its own (and the tests' process another), so that is
    ``max_processes``. Without root every process of the run has the one uid of the run's
    user namespace, where the kernel counts them all against the limit: the run's leader (or
    ``unshare``), PID 1 and, for tests, the tests' process are added, or they would take
    that many processes from the program (and a solution's worker could not start under a
    low ``max_processes``).
    """
    if not config.get("rootless"):
        return int(config["max_processes"])
    harness = 2 + (1 if config.get("tests") is not None else 0)
    return int(config["max_processes"]) + harness


def close_all_but(keep: tuple[int, ...] | list[int]) -> None:
    """Close every descriptor of this process but ``keep`` (the zygote's run leader uses it
    too: :mod:`byzllm.sandbox._zygote`)."""
    low = 0
    for fd in sorted(set(keep)):
        if fd > low:  # closerange(n, n) would close everything from n on
            os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, 1 << 20)


def _run_role(
    config: dict[str, Any], role: Callable[[], object], argv: list[str], keep: tuple[int, ...]
) -> None:  # pragma: no cover - runs in the child
    """Run ``role`` as if ``argv`` had been exec'd, and exit as the interpreter would.

    What exec would have done is done here: every descriptor but 0, 1, 2 and ``keep`` closed
    (the status pipe included: from here on the program runs), signal handlers and timers
    back to their defaults, the environment replaced, ``sys.argv`` and ``sys.path`` as the
    command line gives them, the import system's caches of the host's folders dropped. At the
    end, as at an interpreter's: non-daemon threads joined, ``atexit`` handlers run, the
    standard streams flushed, and the exit status of an uncaught exception or ``SystemExit``.
    """
    import atexit
    import importlib

    close_all_but((0, 1, 2, *keep))
    for signum in (_signal.SIGALRM, _signal.SIGCHLD, _signal.SIGTERM, _signal.SIGINT):
        _signal.signal(signum, _signal.SIG_DFL)
    _signal.setitimer(_signal.ITIMER_REAL, 0)
    os.environ.clear()
    os.environ.update(config["env"])
    # argv: python -s [-P] -c SOURCE ROLE ...: sys.argv is ["-c", ROLE, ...]; -P (no working
    # folder on sys.path) or, without it, the working folder first, as "-c" puts it.
    sys.argv = ["-c", *argv[argv.index("-c") + 2 :]]
    sys.path[:] = [p for p in sys.path if p]
    if "-P" not in argv:
        sys.path.insert(0, "")
    sys.path_importer_cache.clear()
    importlib.invalidate_caches()
    atexit._clear()
    code: Any = 0
    try:
        role()
    except SystemExit as error:
        code = error.code
    except BaseException:
        sys.excepthook(*sys.exc_info())
        code = 1
    try:
        threading = sys.modules.get("threading")
        if threading is not None:
            threading._shutdown()
        atexit._run_exitfuncs()
    except SystemExit as error:
        code = error.code
    except BaseException:
        sys.excepthook(*sys.exc_info())
    if code is None:
        code = 0
    elif not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            code = code or 120  # as the interpreter does when flushing fails
    os._exit(code & 0xFF)


def _drop_capabilities() -> None:  # pragma: no cover - runs in the child
    """Without root: give up every capability of the user namespace, for good.

    The user namespace maps a single uid (the caller's, as its root), so there is no unused
    uid to switch to. Instead the bounding and ambient sets are emptied, the securebits make
    uid 0 an ordinary uid that no exec turns back into a privileged one, and the effective,
    permitted and inheritable sets are cleared.
    """
    import ctypes

    for capability in range(64):
        try:
            _libc_call("prctl", PR_CAPBSET_DROP, capability, 0, 0, 0)
        except OSError:  # EINVAL: past the last capability this kernel knows
            break
    _libc_call("prctl", PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    _libc_call("prctl", PR_SET_SECUREBITS, SECUREBITS_NO_ROOT, 0, 0, 0)
    header = (ctypes.c_uint32 * 2)(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable: twice 32 bits, all 0
    _libc_call("capset", ctypes.byref(header), ctypes.byref(data))


def signal_guard(arch: int, calls: tuple[int, ...], pids: tuple[int, ...]) -> bytes:
    """A seccomp filter refusing (``EPERM``) the ``calls`` whose first argument is one of
    ``pids``, minus one of them (its process group), or -1 (every process).

    Stacked on the host's filter (``byzllm.sandbox._seccomp``, which refuses other
    architectures' calls), so it only lets calls through or refuses them.
    """
    import struct

    def op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
        return struct.pack("=HBBI", code, jt, jf, k)

    ld, jeq, ret = 0x20, 0x15, 0x06  # BPF_LD|BPF_W|BPF_ABS, BPF_JMP|BPF_JEQ|BPF_K, BPF_RET
    allow, deny = 0x7FFF0000, 0x00050000 | 1  # SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO | EPERM
    values = sorted({0xFFFFFFFF} | {p & 0xFFFFFFFF for p in pids} | {-p & 0xFFFFFFFF for p in pids})
    # 0 ld arch; 1 jeq arch else ALLOW; 2 ld nr; one jeq per call -> CHECK; ALLOW;
    # CHECK: ld arg0 (low 32 bits: a pid_t); one jeq per value -> DENY; ALLOW; DENY.
    allow_at = 3 + len(calls)
    deny_at = allow_at + 2 + len(values) + 1
    ops = [op(ld, 4), op(jeq, arch, 0, allow_at - 2), op(ld, 0)]
    ops += [op(jeq, call, allow_at - (3 + i), 0) for i, call in enumerate(calls)]
    ops += [op(ret, allow), op(ld, 16)]
    ops += [op(jeq, value, deny_at - (allow_at + 2 + i) - 1, 0) for i, value in enumerate(values)]
    ops += [op(ret, allow), op(ret, deny)]
    return b"".join(ops)


def _install_filter(program: bytes) -> None:  # pragma: no cover - runs in the child
    """Install a seccomp filter (the host's, ``byzllm.sandbox._seccomp``, or a guard)."""
    import ctypes

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    instructions = ctypes.create_string_buffer(program, len(program))
    fprog = SockFprog(len(program) // 8, ctypes.addressof(instructions))
    _libc_call("prctl", PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0)


def _count_processes(isolated: bool = True, harness: tuple[int, ...] = ()) -> int:
    """The run's processes and threads (``RLIMIT_NPROC`` counts both: a thread bomb holds the
    limit with a single process) but this one and ``harness`` (the tests' process, which runs
    as a uid of its own: none of the program's process limit). Isolated, this is PID 1 of the
    run's own PID namespace: every process of /proc. Without isolation /proc is the host's:
    only the processes of this one's session (the host starts it in a new one) are the run's."""
    try:
        names = [name for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return -1
    session, own, count = os.getsid(0), os.getpid(), 0
    for name in names:
        if int(name) in harness or int(name) == own:
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue  # ended meanwhile
        # After the command's closing parenthesis: state, ppid, pgrp, session, ...; the 18th
        # is num_threads (a zombie's may be 0: it still holds its process slot until reaped).
        if len(fields) > 17 and (isolated or int(fields[3]) == session):
            count += max(1, int(fields[17]))
    return count


def _on_alarm(signum: int, frame: object) -> None:
    raise _Deadline


def _supervise(config: dict[str, Any]) -> dict[str, Any]:
    """Fork the program and wait for it (and reap orphans) until it ends or time is up."""
    started = time.monotonic()
    if config.get("tests") is not None:
        return _supervise_tests(config, started)
    child = os.fork()
    if child == 0:  # pragma: no cover - the child execs
        argv = [config["python"], "-s", config["program_name"]]
        _start_program(config, argv, config["uid"], config["work"], protect=(1,))
    _signal.signal(_signal.SIGALRM, _on_alarm)
    _signal.setitimer(_signal.ITIMER_REAL, config["timeout_s"])
    try:
        report = {"event": "exit", "timed_out": False, "pid": child}
        return _wait_for(child, started, report, config["isolate"])
    finally:
        _signal.setitimer(_signal.ITIMER_REAL, 0)


def _supervise_tests(config: dict[str, Any], started: float) -> dict[str, Any]:
    """The tests and the solution in two processes (:mod:`byzllm.sandbox._harness`).

    The tests' process runs as a second uid, started first (it makes itself non-dumpable
    before the solution exists); its outcomes come back on a pipe only it holds, and the run
    ends when it does.
    """
    _socket: Any = __import__("_socket")
    pair = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_STREAM)
    tests_end, solution_end = pair[0].detach(), pair[1].detach()
    result_read, result_write = os.pipe()
    # Without root both processes have the same uid: only the tests' process being
    # non-dumpable keeps the solution out of its /proc files, so the solution starts once it is.
    ready_read, ready_write = os.pipe() if config.get("rootless") else (-1, -1)
    python, harness = config["python"], config["harness"]
    # The tests arrive on a pipe that only the tests' process reads (never on a command line,
    # which any process of the run may read in /proc): this process never holds them, so
    # neither does the solution's process, forked from it. From the zygote the harness is
    # already imported (HARNESS): its roles run in the forked processes.
    tests_fd: int = config["tests_fd"]
    tester = os.fork()
    if tester == 0:  # pragma: no cover - the child execs
        os.close(solution_end)
        os.close(result_read)
        argv = [python, "-s", "-P", "-c", harness, "tester", str(tests_end), str(result_write)]
        argv += [str(tests_fd), str(ready_write)]
        keep = (tests_end, result_write, tests_fd) + ((ready_write,) if ready_write >= 0 else ())
        tester_role: Callable[[], object] | None = None
        if HARNESS is not None:

            def tester_role() -> None:
                HARNESS.tester(tests_end, result_write, tests_fd, ready_write)

        # The tests are hostile too (CodeGen runs a model's generated asserts): without root
        # they share PID 1's uid, so they get the signal guard on PID 1 as the solution does.
        tester_uid = config["tester_uid"]
        _start_program(config, argv, tester_uid, "/", keep, protect=(1,), role=tester_role)
    os.close(tests_fd)
    os.close(result_write)
    os.close(tests_end)
    if ready_read >= 0:
        os.close(ready_write)
        while os.read(ready_read, 1):  # until the tests' process closes it (or ends)
            pass
        os.close(ready_read)
    solution = os.fork()
    if solution == 0:  # pragma: no cover - the child execs
        os.close(result_read)
        argv = [python, "-s", "-c", harness, "candidate", str(solution_end)]
        protect = (1, tester)
        solution_role: Callable[[], object] | None = None
        if HARNESS is not None:

            def solution_role() -> None:
                HARNESS.candidate(solution_end)

        _start_program(
            config, argv, config["uid"], config["work"], (solution_end,), protect, solution_role
        )
    os.close(solution_end)
    _signal.signal(_signal.SIGALRM, _on_alarm)
    _signal.setitimer(_signal.ITIMER_REAL, config["timeout_s"])
    report: dict[str, Any] = {"event": "exit", "timed_out": False, "pid": tester}
    outcomes = b""
    others: dict[int, tuple[int, Any]] = {}
    isolated = config["isolate"]
    try:
        # Read until the tests' process closes its end (it exits): a full pipe never blocks it.
        while len(outcomes) < _MAX_OUTCOMES and (chunk := os.read(result_read, 65_536)):
            outcomes += chunk
        report = _wait_for(tester, started, report, isolated, others, harness=(tester,))
    except _Deadline:
        report.update(timed_out=True, processes=_count_processes(isolated, (tester,)))
        report["duration_s"] = time.monotonic() - started
    finally:
        _signal.setitimer(_signal.ITIMER_REAL, 0)
        os.close(result_read)
    report["tests"] = outcomes
    if b'"SolutionEnded"' in outcomes:
        # How the solution's process ended: killed by its CPU-time limit (while it loaded,
        # say), that is the run's timeout, not the solution ending early.
        ended = others.get(solution) or _reap(solution, _REAP_S)
        if ended is not None and os.WIFSIGNALED(ended[0]):
            report["solution_signal"] = os.WTERMSIG(ended[0])
            report["solution_cpu_s"] = ended[1].ru_utime + ended[1].ru_stime
    return report


#: How long PID 1 waits for the solution's process to finish ending once the tests' side saw
#: its end (its socket closes a moment before it can be reaped).
_REAP_S = 1.0


def _reap(pid: int, wait_s: float) -> tuple[int, Any] | None:
    """``pid``'s wait status and resource usage once it has ended, within ``wait_s``."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            found, status, usage = os.wait4(pid, os.WNOHANG)
        except OSError:
            return None
        if found:
            return status, usage
        if time.monotonic() > deadline:
            return None
        time.sleep(0.005)


def _wait_for(
    child: int,
    started: float,
    report: dict[str, Any],
    isolated: bool = True,
    others: dict[int, tuple[int, Any]] | None = None,
    harness: tuple[int, ...] = (),
) -> dict[str, Any]:
    """Reap every process until ``child`` ends (``others``: how the rest ended, by pid;
    ``harness``: processes not counted as the program's, :func:`_count_processes`)."""
    try:
        while True:
            pid, status, usage = os.wait4(-1, 0)
            if pid == child:
                break
            if others is not None:
                others[pid] = (status, usage)
    except _Deadline:
        report.update(timed_out=True, processes=_count_processes(isolated, harness))
        report["duration_s"] = time.monotonic() - started
        return report
    except ChildProcessError:  # pragma: no cover - the child is always ours to wait for
        report.update(event="setup", message="lost track of the program process")
        return report
    report["duration_s"] = time.monotonic() - started
    report["processes"] = _count_processes(isolated, harness)
    report["cpu_s"] = usage.ru_utime + usage.ru_stime
    report["max_rss_kb"] = usage.ru_maxrss
    report["core_dumped"] = os.WCOREDUMP(status)
    if os.WIFSIGNALED(status):
        report.update(signal=os.WTERMSIG(status), exit_code=None)
    else:
        report.update(signal=None, exit_code=os.waitstatus_to_exitcode(status))
    return report


def main() -> None:
    with open(sys.argv[1], "rb") as handle:
        config: dict[str, Any] = marshal.load(handle)
    run(config)


def run(config: dict[str, Any]) -> None:
    """Prepare the sandbox, run the program, report, exit (PID 1 of the run's namespaces)."""
    status_fd: int = config["status_fd"]
    os.set_inheritable(status_fd, False)  # the program must not be able to forge a report
    try:
        if config["isolate"]:
            _prepare(config, config["source"])
        else:
            _write_program(config, config["source"])
    except (OSError, SetupError) as error:
        report: dict[str, Any] = {"event": "setup", "message": str(error)}
    else:
        report = _supervise(config)
    _report(status_fd, report)
    if not config["isolate"] and os.getpgrp() == os.getpid():
        # No PID namespace ends with this process: what the program left running in this
        # process group (the host made this process its leader), past its deadline or after
        # it exited, is killed here, in one call a fork cannot outrun, this process with it
        # (the report is written). Only a process that left the group is out of reach. (Only
        # as the group's leader: in a group of the caller's, this would kill the caller.)
        os.killpg(os.getpgrp(), _signal.SIGKILL)
    # Leaving PID 1 makes the kernel kill whatever the program left behind.
    os._exit(0)


if __name__ == "__main__":
    main()
