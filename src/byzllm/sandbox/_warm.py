"""The host's side of the warm zygote (:mod:`byzllm.sandbox._zygote`): start it, hand it runs.

One zygote per host process, started on first use (:func:`zygote`) and again if it died or
the process forked; it ends when this process does (it reads the end of its control socket).
:func:`start` hands it one run (descriptors only, then the configuration on the run's own
socket, which only the run's leader reads) and returns a :class:`ForkedRun`, a pidfd of the
run's PID 1: the handle to kill the run with, and to learn that it ended, since a PID
namespace's first process finishes exiting only once every process in it has.

Where ``pidfd_open`` does not work (:func:`available`: before Linux 5.3, or refused by a
filter), runs start one ``unshare`` each instead (:mod:`byzllm.sandbox._run`): the same
isolation, an interpreter start slower.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import marshal
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from ._errors import SandboxError

__all__ = ["ForkedRun", "start", "zygote"]

_ZYGOTE = Path(__file__).with_name("_zygote.py")
_LENGTH = struct.Struct("!Q")


class _Zygote:
    """One started zygote process and the host's end of its control socket."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        host_end, zygote_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.owner = os.getpid()
        try:
            self.process = subprocess.Popen(
                [*argv, str(_ZYGOTE), str(zygote_end.fileno())],
                pass_fds=(zygote_end.fileno(),),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                env=env,
                start_new_session=True,  # a terminal's ^C is the host's to handle, not its
            )
        except OSError as error:
            host_end.close()
            raise SandboxError(f"cannot start the sandbox's zygote: {error}") from error
        finally:
            zygote_end.close()
        self.control = host_end

    @property
    def alive(self) -> bool:
        return self.owner == os.getpid() and self.process.poll() is None

    def close(self) -> None:
        self.control.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=5)


_lock = threading.Lock()
_current: _Zygote | None = None


def zygote(argv: list[str], env: dict[str, str]) -> _Zygote:
    """The running zygote, started with ``argv + [_zygote.py, FD]`` when there is none."""
    global _current
    with _lock:
        if _current is None or not _current.alive:
            if _current is not None and _current.owner == os.getpid():
                _current.close()
            _current = _Zygote(argv, env)
        return _current


def stop() -> None:
    """End the zygote (the next run starts a new one): :func:`start` drops a dead one."""
    global _current
    with _lock:
        if _current is not None and _current.owner == os.getpid():
            _current.close()
        _current = None


class ForkedRun:
    """A run forked by the zygote: a pidfd of its PID 1."""

    def __init__(self, pidfd: int) -> None:
        self.pidfd = pidfd
        self.ended = False
        self._exited: asyncio.Future[None] | None = None

    async def wait(self) -> None:
        """Return once PID 1 has exited, and with it every process of the run (any number of
        callers may wait; one reader watches the pidfd)."""
        if self.ended:
            return
        if self._exited is None:
            loop = asyncio.get_running_loop()
            exited: asyncio.Future[None] = loop.create_future()
            self._exited = exited

            def readable() -> None:
                loop.remove_reader(self.pidfd)
                self.ended = True
                if not exited.done():
                    exited.set_result(None)

            loop.add_reader(self.pidfd, readable)
        await asyncio.shield(self._exited)

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, OSError):
            signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)

    def close(self) -> None:
        if self._exited is not None and not self.ended:
            with contextlib.suppress(Exception):
                self._exited.get_loop().remove_reader(self.pidfd)
        with contextlib.suppress(OSError):
            os.close(self.pidfd)


async def start(
    argv: list[str], env: dict[str, str], config: dict[str, Any], fds: list[int]
) -> ForkedRun:
    """Hand one run to the zygote (``fds``: stdin, stdout, stderr, status and, for tests, the
    tests' pipe: all the host's copies stay the caller's to close) and return its PID 1."""
    loop = asyncio.get_running_loop()
    for attempt in range(2):
        forked = zygote(argv, env)
        host_end, run_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            with run_end:
                try:
                    socket.send_fds(forked.control, [b"run"], [run_end.fileno(), *fds])
                except OSError as error:
                    if attempt == 0:
                        stop()  # a dead zygote: once more with a new one
                        continue
                    raise SandboxError(f"the sandbox's zygote is gone: {error}") from error
            host_end.setblocking(False)
            payload = marshal.dumps(config)
            await loop.sock_sendall(host_end, _LENGTH.pack(len(payload)) + payload)
            return await _receive_init(loop, host_end)
        except (ConnectionError, BrokenPipeError) as error:
            if attempt == 0 and not forked.alive:
                stop()
                continue
            raise SandboxError(f"the sandbox could not start: {error}") from error
        finally:
            host_end.close()
    raise SandboxError("the sandbox's zygote could not start")  # pragma: no cover


async def _receive_init(loop: asyncio.AbstractEventLoop, sock: socket.socket) -> ForkedRun:
    ready = loop.create_future()

    def readable() -> None:
        if not ready.done():
            ready.set_result(None)

    loop.add_reader(sock.fileno(), readable)
    try:
        await ready
    finally:
        loop.remove_reader(sock.fileno())
    sock.setblocking(True)
    message, fds, _, _ = socket.recv_fds(sock, 4096, 1, socket.MSG_CMSG_CLOEXEC)
    if fds:
        return ForkedRun(fds[0])
    reason = message.decode("utf-8", "replace") or "the run's leader ended without a word"
    raise SandboxError(reason)


def zygote_argv(python: str, user_namespace: tuple[str, ...], unshare: str) -> list[str]:
    """How the zygote is started: under ``unshare --user --map-root-user`` without root."""
    base = [python, "-s", "-P"]
    return [unshare, *user_namespace, *base] if user_namespace else base


#: Whether ``pidfd_open`` works here, once a probe could tell (:func:`available`).
_pidfd_works: bool | None = None


def available() -> bool:
    """Whether runs can be forked from a zygote here: ``pidfd_open`` works (Linux 5.3 or
    later). Probed on this process itself, and remembered: Python may offer
    ``os.pidfd_open`` on a kernel that answers ``ENOSYS`` (or under a container's filter
    that answers ``EPERM``), and every run forked there would fail. A probe that runs out of
    descriptors tells nothing and is not remembered."""
    global _pidfd_works
    if _pidfd_works is None:
        if not sys.platform.startswith("linux") or not hasattr(os, "pidfd_open"):
            _pidfd_works = False
        else:
            try:
                os.close(os.pidfd_open(os.getpid()))
            except OSError as error:
                if error.errno in (errno.EMFILE, errno.ENFILE, errno.ENOMEM):
                    return True
                _pidfd_works = False
            else:
                _pidfd_works = True
    return _pidfd_works
