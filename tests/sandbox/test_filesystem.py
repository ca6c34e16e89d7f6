"""The program's file system is an allow-list (issue 25's red team found a deny-list).

It read the project checkout and its ``.git/config``, sibling checkouts, ``/etc/machine-id``
and ``/proc/self/mountinfo``, reached host Unix sockets and FIFOs in visible folders, and could
watch host folders with inotify. Each attack is shown working bare first, then stopped.
"""

from __future__ import annotations

import ast
import asyncio
import os
import secrets
import socket
import stat
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from byzllm.sandbox import SandboxLimits, SandboxResult, run_program
from byzllm.sandbox._run import python_roots

REPOSITORY = Path(__file__).resolve().parents[2]
LIMITS = SandboxLimits(timeout_s=10.0)
#: Where the interpreter lives (shown, read-only, as its folders alone).
PYTHON_TOPS = {Path(os.path.realpath(sys.executable)).parts[1], Path(sys.prefix).parts[1]}
#: Host folders that must not exist for the program (unless the interpreter lives there).
ABSENT = [f for f in ("/home", "/root", "/run", "/var", "/opt", "/srv", "/mnt", "/sys")
          if f[1:] not in PYTHON_TOPS]  # fmt: skip


def _interpreter_children(folder: Path) -> set[str] | None:
    """The names the new root shows in ``folder`` when an interpreter folder lies below it (a
    virtual environment inside the checkout, as CI makes): the folder is then the sandbox's own
    empty skeleton leading to the read-only interpreter, not the host's. ``None`` otherwise."""
    names = {
        Path(root).relative_to(folder).parts[0]
        for root in python_roots()
        if Path(root).is_relative_to(folder) and Path(root) != folder
    }
    return names or None


@pytest.fixture(scope="module")
def host_endpoints() -> Iterator[Path]:
    """A listening Unix socket and a FIFO the host holds, open to every uid, in a folder next
    to the checkout (where sibling checkouts live) or, where that is not writable, in HOME."""
    base = REPOSITORY.parent if os.access(REPOSITORY.parent, os.W_OK) else Path.home()
    folder = base / f"byzllm-sandbox-endpoints-{secrets.token_hex(4)}"
    folder.mkdir()
    folder.chmod(0o755)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(folder / "host.sock"))
    (folder / "host.sock").chmod(0o777)
    listener.listen(8)
    listener.settimeout(0.2)
    os.mkfifo(folder / "host.fifo", 0o666)
    (folder / "host.fifo").chmod(0o666)
    (folder / "secret.txt").write_text("sibling checkout\n")
    (folder / "secret.txt").chmod(0o644)
    accepted: list[int] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            accepted.append(1)
            connection.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield folder
    finally:
        stop.set()
        thread.join(timeout=2)
        listener.close()
        for name in ("host.sock", "host.fifo", "secret.txt"):
            (folder / name).unlink()
        folder.rmdir()


def _program(folder: Path) -> str:
    return textwrap.dedent(
        f"""
        import ctypes, os, socket
        folder, repository = {str(folder)!r}, {str(REPOSITORY)!r}

        def attempt(name, action):
            try:
                print("GOT", name, repr(action())[:60])
            except OSError as error:
                print("blocked:", name, error.strerror)

        def connect():
            client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            client.connect(os.path.join(folder, "host.sock"))
            return "connected"

        def fifo():
            fd = os.open(os.path.join(folder, "host.fifo"), os.O_WRONLY | os.O_NONBLOCK)
            return os.write(fd, b"hello host")

        def watch():
            libc = ctypes.CDLL(None, use_errno=True)
            fd = libc.inotify_init()
            if libc.inotify_add_watch(fd, repository.encode(), 0x100 | 0x2) < 0:
                raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
            return "watching"

        def machine_id():
            text = open("/etc/machine-id").read()
            if not text:
                raise OSError(2, "empty")
            return text

        attempt("socket", connect)
        attempt("fifo", fifo)
        attempt("sibling", lambda: open(os.path.join(folder, "secret.txt")).read())
        attempt("git_config", lambda: open(os.path.join(repository, ".git", "config")).read())
        attempt("checkouts", lambda: os.listdir(os.path.dirname(repository)))
        attempt("inotify", watch)
        attempt("machine_id", machine_id)
        for folder_name in {ABSENT!r}:
            attempt(folder_name, lambda: os.listdir(folder_name))
        print("ROOT", sorted(os.listdir("/")))
        if os.path.isdir(repository):
            print("REPO", sorted(os.listdir(repository)))
        print("DEV", sorted(os.listdir("/dev")))
        print("MOUNTS", sum(1 for _ in open("/proc/self/mountinfo")))
        """
    )


@pytest.fixture(scope="module")
def outcome(require_sandbox: None, host_endpoints: Path) -> SandboxResult:
    reader = os.open(host_endpoints / "host.fifo", os.O_RDONLY | os.O_NONBLOCK)  # as bare
    try:
        return asyncio.run(run_program(_program(host_endpoints), limits=LIMITS))
    finally:
        os.close(reader)


def test_the_attacks_work_without_the_sandbox(host_endpoints: Path) -> None:
    # FIFO: a reader must be there for a non-blocking writer; hold one open meanwhile.
    reader = os.open(host_endpoints / "host.fifo", os.O_RDONLY | os.O_NONBLOCK)
    try:
        bare = subprocess.run(
            [sys.executable, "-c", _program(host_endpoints)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        os.close(reader)
    for name in ("socket", "fifo", "sibling", "checkouts", "inotify"):
        assert f"GOT {name} " in bare.stdout, bare.stdout + bare.stderr


def test_only_the_allowed_folders_exist(outcome: SandboxResult, host_endpoints: Path) -> None:
    assert outcome.status == "passed", outcome
    got = {
        line.split(" ", 2)[1]: line.split(" ", 2)[2]
        for line in outcome.stdout.splitlines()
        if line.startswith("GOT ")
    }
    # With the interpreter inside the checkout, the checkout's path exists in the new root as an
    # empty skeleton: listing or watching it shows only the way to the interpreter.
    skeleton = {
        "checkouts": _interpreter_children(REPOSITORY.parent),
        "inotify": _interpreter_children(REPOSITORY),
    }
    for name, shown in got.items():
        assert skeleton.get(name) is not None, outcome.stdout
        if name == "checkouts":
            assert set(ast.literal_eval(shown)) <= (skeleton["checkouts"] or set()), shown
    if "inotify" in got:
        line = next(line for line in outcome.stdout.splitlines() if line.startswith("REPO "))
        assert set(ast.literal_eval(line.split(" ", 1)[1])) <= (skeleton["inotify"] or set())
    assert outcome.stdout.count("blocked:") == 7 + len(ABSENT) - len(got)
    root = next(line for line in outcome.stdout.splitlines() if line.startswith("ROOT"))
    visible = set(ast.literal_eval(root.split(" ", 1)[1]))
    # The system folders, the work folder, /dev, /proc, and where the interpreter lives.
    allowed = {"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "dev", "proc"}
    assert visible <= allowed | {"tmp"} | PYTHON_TOPS
    dev = next(line for line in outcome.stdout.splitlines() if line.startswith("DEV"))
    assert set(ast.literal_eval(dev.split(" ", 1)[1])) <= {
        "null", "zero", "full", "random", "urandom", "fd", "stdin", "stdout", "stderr",
        "shm", "pts", "ptmx",
    }  # fmt: skip
    # The host's endpoints are unchanged: the socket still listens, the FIFO is still a FIFO.
    assert stat.S_ISFIFO((host_endpoints / "host.fifo").stat().st_mode)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.connect(str(host_endpoints / "host.sock"))
