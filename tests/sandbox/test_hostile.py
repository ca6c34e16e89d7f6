"""Acceptance 1: hostile programs are stopped, and none affects the host or the test run.

All hostile programs run concurrently in the sandbox once per module (``outcomes``); each test
then checks one of them, and first checks a precondition: that the same attack succeeds
without the sandbox (run in a plain subprocess where that is safe, or shown possible on the
host), so that no test here could pass with a sandbox that does nothing.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from byzllm.sandbox import SandboxLimits, SandboxResult, run_program

REPOSITORY = Path(__file__).resolve().parents[2]
SECRET = f"sk-byzllm-test-{secrets.token_hex(8)}"
#: Where a program must not write: the home folder, the host's temporary folders, the repository.
TARGETS = [Path.home(), Path(tempfile.gettempdir()), Path("/tmp"), Path("/dev/shm"), REPOSITORY]
PROBE = f"byzllm-sandbox-probe-{secrets.token_hex(6)}"
LIMITS = SandboxLimits(timeout_s=2.0, cpu_s=10, memory_mb=256, max_processes=16)


class Listener:
    """A TCP listener on 127.0.0.1 that counts the connections it accepts."""

    def __init__(self) -> None:
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.port = self.socket.getsockname()[1]
        self.accepted = 0
        self.socket.settimeout(0.2)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self.socket.accept()
            except OSError:
                continue
            self.accepted += 1
            connection.close()

    def accepted_after(self, count: int, wait_s: float = 10.0) -> int:
        """The connections accepted, once there are ``count`` or ``wait_s`` has passed: the
        kernel completes a connection before this thread's accept() returns, so a client
        may have connected and exited before it is counted (on a busy machine)."""
        deadline = time.monotonic() + wait_s
        while self.accepted < count and time.monotonic() < deadline:
            time.sleep(0.01)
        return self.accepted

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.socket.close()


def programs(port: int) -> dict[str, str]:
    return {
        "socket": f"""
            import socket
            try:
                socket.create_connection(("127.0.0.1", {port}), timeout=1).sendall(b"hi")
                print("CONNECTED")
            except OSError as error:
                print("blocked:", error)
        """,
        "write": f"""
            import os
            for folder in {[str(t) for t in TARGETS]!r}:
                try:
                    with open(os.path.join(folder, {PROBE!r}), "w") as handle:
                        handle.write("pwned")
                    print("WROTE", folder)
                except OSError as error:
                    print("blocked:", folder, error)
        """,
        "fork_bomb": """
            import os
            while True:
                try:
                    os.fork()
                except OSError:
                    pass
        """,
        "bounded_fork": """
            import os, time
            started = 0
            for _ in range(40):
                try:
                    if os.fork() == 0:
                        time.sleep(1)
                        os._exit(0)
                    started += 1
                except OSError:
                    break
            print("STARTED", started)
        """,
        "memory_bomb": """
            chunks = []
            while True:
                chunks.append(bytearray(50_000_000))
        """,
        "bounded_memory": """
            x = bytearray(600_000_000)
            print("ALLOCATED", len(x))
        """,
        "infinite_loop": """
            while True:
                pass
        """,
        "huge_output": """
            import sys
            while True:
                sys.stdout.write("y" * 65536)
        """,
        "api_key": f"""
            import glob, os
            print("ENV", os.environ.get("OPENAI_API_KEY"), os.environ.get("BYZLLM_TEST_KEY"))
            for path in glob.glob("/proc/*/environ"):
                try:
                    if {SECRET!r}.encode() in open(path, "rb").read():
                        print("LEAKED", path)
                except OSError:
                    pass
        """,
        "kill_parent": f"""
            import os, signal
            for target in (os.getppid(), 1, {os.getpid()}):
                try:
                    os.kill(target, 0)
                    print("CAN SIGNAL", target)
                except OSError as error:
                    print("blocked:", target, error)
            for target in (os.getppid(), -1):
                try:
                    os.kill(target, signal.SIGKILL)
                except OSError as error:
                    print("blocked:", target, error)
            print("survived")
        """,
        "new_namespaces": """
            import ctypes, os
            libc = ctypes.CDLL(None, use_errno=True)
            for name, flags in (("user", 0x10000000), ("mount", 0x20000), ("net", 0x40000000)):
                if libc.unshare(flags) == 0:
                    print("UNSHARED", name)
                else:
                    print("blocked:", name, os.strerror(ctypes.get_errno()))
            if libc.mount(b"none", b"/", None, ctypes.c_ulong(32 | 4096), None) == 0:
                print("REMOUNTED")
        """,
        "background_child": """
            import os, time
            if os.fork() == 0:
                os.setsid()
                if os.fork() == 0:
                    print("CHILD", os.getpid(), flush=True)
                    os.close(1)
                    os.close(2)
                    time.sleep(60)
                os._exit(0)
            time.sleep(0.2)
            print("parent exits")
        """,
    }


@pytest.fixture(scope="module")
def listener() -> Iterator[Listener]:
    server = Listener()
    yield server
    server.close()


@pytest.fixture(scope="module")
def outcomes(require_sandbox: None, listener: Listener) -> dict[str, SandboxResult]:
    os.environ["OPENAI_API_KEY"] = SECRET
    os.environ["BYZLLM_TEST_KEY"] = SECRET
    try:
        sources = {k: textwrap.dedent(v) for k, v in programs(listener.port).items()}

        async def run_all() -> list[SandboxResult]:
            runs = [run_program(source, limits=LIMITS) for source in sources.values()]
            return await asyncio.wait_for(asyncio.gather(*runs), timeout=60)

        return dict(zip(sources, asyncio.run(run_all()), strict=True))
    finally:
        del os.environ["OPENAI_API_KEY"], os.environ["BYZLLM_TEST_KEY"]


def _plain(source: str, timeout: float = 20) -> subprocess.CompletedProcess[str]:
    """The same program without the sandbox (only where that is safe)."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(source)],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env={**os.environ, "OPENAI_API_KEY": SECRET},
    )


def test_socket_to_a_local_listener_is_stopped(
    outcomes: dict[str, SandboxResult], listener: Listener
) -> None:
    before = listener.accepted
    assert "CONNECTED" in _plain(programs(listener.port)["socket"]).stdout  # the attack works
    assert listener.accepted_after(before + 1) == before + 1
    result = outcomes["socket"]
    assert "CONNECTED" not in result.stdout
    assert "blocked:" in result.stdout
    assert listener.accepted == before + 1  # nothing from the sandboxed run


def test_writes_outside_the_work_folder_are_stopped(outcomes: dict[str, SandboxResult]) -> None:
    # An unprivileged user may not write to the repository: there, only the folders it can.
    for target in TARGETS:
        assert target == REPOSITORY or os.access(target, os.W_OK), f"precondition: {target}"
    result = outcomes["write"]
    assert result.status == "passed", result
    for target in TARGETS:
        assert not (target / PROBE).exists(), f"the sandboxed program wrote into {target}"
    # The home folder and the repository are read-only; /tmp and /dev/shm are private.
    assert f"blocked: {Path.home()}" in result.stdout
    assert f"blocked: {REPOSITORY}" in result.stdout


def test_a_fork_bomb_is_stopped(
    outcomes: dict[str, SandboxResult], sandbox_processes: Callable[[], list[int]]
) -> None:
    plain = _plain(programs(0)["bounded_fork"])
    assert "STARTED 40" in plain.stdout  # without the sandbox, 40 processes start
    bounded = outcomes["bounded_fork"]
    started = int(bounded.stdout.split()[-1])
    assert started < LIMITS.max_processes
    result = outcomes["fork_bomb"]
    assert result.status in {"rejected", "timed_out"}, result
    assert result.duration_s < LIMITS.timeout_s + 5
    assert sandbox_processes() == []


def test_a_memory_bomb_is_stopped(outcomes: dict[str, SandboxResult]) -> None:
    assert "ALLOCATED" in _plain(programs(0)["bounded_memory"]).stdout  # 600 MB: fine bare
    assert outcomes["bounded_memory"].status == "rejected"
    result = outcomes["memory_bomb"]
    assert (result.status, result.limit) == ("rejected", "memory"), result
    assert "memory limit (256 MB" in result.detail


def test_an_infinite_loop_is_stopped(outcomes: dict[str, SandboxResult]) -> None:
    result = outcomes["infinite_loop"]
    assert result.status == "timed_out", result
    assert LIMITS.timeout_s <= result.duration_s < LIMITS.timeout_s + 5
    assert "wall-time limit of 2 s" in result.detail


def test_huge_output_is_a_counted_failure(outcomes: dict[str, SandboxResult]) -> None:
    result = outcomes["huge_output"]
    assert (result.status, result.limit) == ("rejected", "output"), result
    assert len(result.stdout) + len(result.stderr) <= LIMITS.max_output_bytes
    assert len(result.stdout) > LIMITS.max_output_bytes // 2  # what came is kept


def test_api_keys_in_the_environment_do_not_leak(outcomes: dict[str, SandboxResult]) -> None:
    assert SECRET in _plain(programs(0)["api_key"]).stdout  # a bare child inherits the key
    result = outcomes["api_key"]
    assert result.status == "passed", result
    assert result.stdout.startswith("ENV None None")
    assert SECRET not in result.stdout + result.stderr
    assert "LEAKED" not in result.stdout


def test_killing_the_parent_is_stopped(outcomes: dict[str, SandboxResult]) -> None:
    # Without the sandbox the program kills its parent: the shell never says "survived".
    plain = subprocess.run(
        ["sh", "-c", f"{sys.executable} -c 'import os; os.kill(os.getppid(), 9)'; echo survived"],
        capture_output=True,
        text=True,
        timeout=20,
        check=False,
    )
    assert plain.returncode == -signal.SIGKILL and "survived" not in plain.stdout
    result = outcomes["kill_parent"]
    assert result.status == "passed", result
    assert "survived" in result.stdout
    assert "CAN SIGNAL" not in result.stdout  # neither its PID 1 nor the host's test process


def test_no_background_child_outlives_the_run(
    outcomes: dict[str, SandboxResult], sandbox_processes: Callable[[], list[int]]
) -> None:
    plain = _plain(programs(0)["background_child"])
    child = int(plain.stdout.split()[1])
    try:
        os.kill(child, 0)  # without the sandbox, the child lives on after the program's exit
    finally:
        os.kill(child, signal.SIGKILL)
    result = outcomes["background_child"]
    assert result.status == "passed", result
    assert sandbox_processes() == []


def test_the_host_is_unaffected(
    outcomes: dict[str, SandboxResult], sandbox_processes: Callable[[], list[int]]
) -> None:
    assert len(outcomes) == len(programs(0))
    assert "OPENAI_API_KEY" not in os.environ or os.environ["OPENAI_API_KEY"] != SECRET
    assert sandbox_processes() == []
    for target in TARGETS:
        assert not (target / PROBE).exists()


def test_new_namespaces_and_mounts_are_refused(outcomes: dict[str, SandboxResult]) -> None:
    # A user namespace is where an unprivileged program would regain capabilities (and reach
    # more of the kernel): the host lets a bare process make one.
    bare = _plain("import ctypes; print(ctypes.CDLL(None, use_errno=True).unshare(0x10000000))")
    assert bare.stdout.strip() == "0"
    result = outcomes["new_namespaces"]
    assert result.status == "passed", result
    assert "UNSHARED" not in result.stdout and "REMOUNTED" not in result.stdout
    assert result.stdout.count("blocked:") == 3
