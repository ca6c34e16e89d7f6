"""Memory, files and kernel surfaces that per-process limits do not count (issue 25's red team).

Each hostile program below got past the address-space limit, filled the kernel with inodes,
reached the host through a socket family, or could dump core to a pipe helper. Each test
shows the attack working bare first (where that is safe), then stopped in the sandbox, with
the host unchanged.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from byzllm.sandbox import SandboxLimits, SandboxResult, run_program, sandbox_support

LIMITS = SandboxLimits(timeout_s=5.0, memory_mb=256, disk_mb=16, max_inodes=1000)

PROGRAMS = {
    # 1 GB of System V shared memory: not in any process's address space until attached.
    "sysv_shm": """
        import ctypes, os
        libc = ctypes.CDLL(None, use_errno=True)
        shmid = libc.shmget(0, ctypes.c_size_t(1 << 30), 0o1600)  # IPC_PRIVATE, IPC_CREAT
        print("SHMGET", shmid, os.strerror(ctypes.get_errno()) if shmid < 0 else "")
        if shmid >= 0:
            libc.shmctl(shmid, 0, None)  # IPC_RMID
    """,
    # An anonymous file in memory: counted by no rlimit.
    "memfd": """
        import os
        try:
            fd = os.memfd_create("hold")
            print("MEMFD", fd)
        except OSError as error:
            print("blocked:", error)
    """,
    # Fills the work folder with empty files: inodes, not bytes.
    "inodes": """
        import os
        made = 0
        try:
            for i in range(100_000):
                open(f"f{i}", "w").close()
                made += 1
        except OSError as error:
            print("stopped:", made, error)
        else:
            print("MADE", made)
    """,
    # Socket families that reach the host or the kernel, and a TCP socket for comparison.
    "families": """
        import socket
        for name in ("AF_VSOCK", "AF_NETLINK", "AF_PACKET", "AF_INET", "AF_INET6"):
            try:
                socket.socket(getattr(socket, name), socket.SOCK_DGRAM).close()
                print("OPENED", name)
            except OSError as error:
                print("blocked:", name, error.errno)
        a, b = socket.socketpair()
        a.sendall(b"unix ok")
        print(b.recv(10).decode())
    """,
    # Raises its core limit and aborts: a core_pattern pipe helper would get the memory image.
    "core_dump": """
        import os, resource
        soft, hard = resource.getrlimit(resource.RLIMIT_CORE)
        print("CORE", soft, hard, flush=True)
        try:
            resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY,) * 2)
            print("RAISED", flush=True)
        except (ValueError, OSError) as error:
            print("blocked:", error, flush=True)
        os.abort()
    """,
    # Looks for a capability left over, and tries what one would allow: another uid, a file
    # given away, the IPC namespace's limits raised again.
    "privileges": """
        import os
        for line in open("/proc/self/status"):
            if line.startswith(("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")):
                print(line.split()[0], int(line.split()[1], 16))
        attempts = {
            "setuid": lambda: os.setuid(12345),
            "chown": lambda: os.chown("main.py", 12345, 12345),
            "shmmax": lambda: open("/proc/sys/kernel/shmmax", "w").write("1000000000"),
        }
        for name, attempt in attempts.items():
            try:
                attempt()
                print("DID", name)
            except OSError as error:
                print("blocked:", name, error.strerror)
    """,
}


def _host_segments() -> int:
    return Path("/proc/sysvipc/shm").read_text().count("\n")


HOST_SEGMENTS = _host_segments()


@pytest.fixture(scope="module")
def outcomes(require_sandbox: None) -> dict[str, SandboxResult]:
    sources = {name: textwrap.dedent(source) for name, source in PROGRAMS.items()}

    async def run_all() -> list[SandboxResult]:
        return await asyncio.gather(*(run_program(s, limits=LIMITS) for s in sources.values()))

    return dict(zip(sources, asyncio.run(run_all()), strict=True))


def _bare(name: str, cwd: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(PROGRAMS[name])],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=cwd,
    )


def test_system_v_shared_memory_is_refused(outcomes: dict[str, SandboxResult]) -> None:
    bare = _bare("sysv_shm")  # creates and removes the segment at once: safe bare
    assert bare.stdout.startswith("SHMGET ") and int(bare.stdout.split()[1]) >= 0
    result = outcomes["sysv_shm"]
    assert result.status == "passed", result
    assert int(result.stdout.split()[1]) < 0, result.stdout
    # Nothing was left behind in the host's IPC namespace by the sandboxed run.
    assert _host_segments() == HOST_SEGMENTS


def test_memfd_create_is_refused(outcomes: dict[str, SandboxResult]) -> None:
    assert "MEMFD" in _bare("memfd").stdout
    result = outcomes["memfd"]
    assert "MEMFD" not in result.stdout and "blocked:" in result.stdout, result


def test_the_work_folder_holds_a_bounded_number_of_files(
    outcomes: dict[str, SandboxResult],
) -> None:
    result = outcomes["inodes"]
    assert "MADE" not in result.stdout, result
    made = int(result.stdout.split()[1])
    assert made < LIMITS.max_inodes
    assert "No space left on device" in result.stdout


def _kernel_inodes() -> int:
    """Inodes the kernel holds, of every file system (``/proc/sys/fs/inode-nr``)."""
    return int(Path("/proc/sys/fs/inode-nr").read_text().split()[0])


def _slab_kb() -> int:
    """Kernel slab memory (``Slab`` of ``/proc/meminfo``), where inodes and dentries live."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("Slab:"):
            return int(line.split()[1])
    raise AssertionError("no Slab line in /proc/meminfo")


def test_the_host_keeps_no_inode_or_slab_of_the_run(require_sandbox: None) -> None:
    # Bare, the 100,000 files and their kernel inodes and slab stay once the program ends.
    # (Other processes of the machine move both a little: the run's share must be small.)
    with tempfile.TemporaryDirectory() as folder:
        inodes, slab = _kernel_inodes(), _slab_kb()
        bare = _bare("inodes", cwd=folder)
        assert "MADE 100000" in bare.stdout, bare.stderr
        bare_inodes, bare_slab = _kernel_inodes() - inodes, _slab_kb() - slab
    assert bare_inodes > 50_000 and bare_slab > 10_000, (bare_inodes, bare_slab)
    # Sandboxed, the files live in the run's own tmpfs (max_inodes of them), gone with it.
    inodes, slab = _kernel_inodes(), _slab_kb()
    result = asyncio.run(run_program(textwrap.dedent(PROGRAMS["inodes"]), limits=LIMITS))
    assert "No space left on device" in result.stdout, result
    kept_inodes, kept_slab = _kernel_inodes() - inodes, _slab_kb() - slab
    assert kept_inodes < bare_inodes / 10, (kept_inodes, bare_inodes)
    assert kept_slab < bare_slab / 4, (kept_slab, bare_slab)


def test_only_unix_sockets_can_be_made(outcomes: dict[str, SandboxResult]) -> None:
    bare = _bare("families")
    assert "OPENED AF_INET" in bare.stdout  # the host lets a plain process open these
    result = outcomes["families"]
    assert result.status == "passed", result
    assert "OPENED" not in result.stdout
    assert result.stdout.count("blocked:") == 5
    assert "unix ok" in result.stdout


def test_no_core_dump_can_be_made(outcomes: dict[str, SandboxResult]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        bare = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(PROGRAMS["core_dump"])],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            cwd=folder,
            preexec_fn=_allow_cores,
        )
        assert "RAISED" in bare.stdout and bare.returncode < 0
    result = outcomes["core_dump"]
    assert "CORE 1 1" in result.stdout, result  # a limit of 1 stops pipe helpers too
    assert "RAISED" not in result.stdout
    assert (result.status, result.detail) == ("crashed", "killed by SIGABRT")


def _allow_cores() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_CORE, (0, resource.RLIM_INFINITY))
    os.umask(0o077)


def test_the_program_has_no_capability_and_gains_none(outcomes: dict[str, SandboxResult]) -> None:
    """With root the program runs as an unused uid; without root as the user namespace's only
    uid with every capability dropped for good (bounding set included)."""
    result = outcomes["privileges"]
    assert result.status == "passed", result
    caps = dict(line.split() for line in result.stdout.splitlines() if line.startswith("Cap"))
    assert caps["CapEff:"] == caps["CapPrm:"] == caps["CapAmb:"] == caps["CapInh:"] == "0"
    if sandbox_support()["rootless"]:
        assert caps["CapBnd:"] == "0"
    assert "DID" not in result.stdout
    assert result.stdout.count("blocked:") == 3
