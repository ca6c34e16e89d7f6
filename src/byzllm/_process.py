"""Child processes that never outlive the byzllm process that started them.

Two mechanisms, one per kind of child (and :func:`usable_cores`, what a pool or a model
server may size itself by; :func:`without_secrets` and :func:`secrets_hidden`, what a child
that calls no model inherits of the environment; :func:`adopt_secrets`, what a worker keeps;
:func:`release_workers`, what a process ending with ``os._exit`` does first):

* :func:`die_with_parent` -- for a child started with :mod:`subprocess` (the llama.cpp server of
  ``byzllm serve``): pass it as ``preexec_fn`` and, on Linux, the kernel sends the child a
  signal the moment its parent dies, even by SIGKILL.
* :func:`exit_with_parent` -- for :mod:`multiprocessing` workers (``--executor process``): the
  initializer of every worker. It watches the *starting* process (not the OS parent: under
  ``forkserver`` a worker's OS parent is the fork server) and exits the worker as soon as that
  process is gone. The fork server and the resource tracker then exit by themselves: each
  stops when the last holder of its pipe (the run's process and its workers) is gone.

Layer 0 (like :mod:`byzllm.errors`): it imports nothing else of byzllm, so every layer may
use it.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import sys
import threading
from collections.abc import Iterator, Mapping

__all__ = [
    "PARENT_GONE_EXIT_CODE",
    "adopt_secrets",
    "die_with_parent",
    "exit_with_parent",
    "looks_secret",
    "release_workers",
    "secrets_hidden",
    "secrets_of",
    "signal_name",
    "usable_cores",
    "without_secrets",
]

#: Words in an environment variable's name that mark it as a possible secret (API keys,
#: tokens, passwords, an agent's socket).
_SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH")


def looks_secret(name: str) -> bool:
    """Whether the environment variable ``name`` may hold a secret (``OPENAI_API_KEY``,
    ``HF_TOKEN``, ``AWS_SECRET_ACCESS_KEY``, ``SSH_AUTH_SOCK`` ...)."""
    upper = name.upper()
    return any(word in upper for word in _SECRET_WORDS)


def without_secrets(environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` less every variable that :func:`looks_secret`: the environment of a child
    that calls no model (git, the sqlite3 shell, workers of a simulated run)."""
    return {name: value for name, value in environ.items() if not looks_secret(name)}


def secrets_of(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables of ``environ`` that :func:`looks_secret`: what a worker that calls a
    model must hold (:func:`adopt_secrets`)."""
    return {name: value for name, value in environ.items() if looks_secret(name)}


def adopt_secrets(secrets: Mapping[str, str]) -> None:
    """Make ``secrets`` this process's secret-looking variables, exactly: drop the others.

    For a worker forked from a fork server, which holds the environment it started with (one
    per process, whatever run started it): a real-model run's workers get the keys the run
    has now, and a simulated run's workers none, whichever kind of run started the server.
    """
    for name in [name for name in os.environ if looks_secret(name)]:
        del os.environ[name]
    os.environ.update(secrets)


@contextlib.contextmanager
def secrets_hidden() -> Iterator[None]:
    """``os.environ`` without the variables that :func:`looks_secret` for the block, so that a
    process started in it (a fork server, which every later worker is forked from) inherits
    none; put back afterwards. Keep the block short: nothing in this process may need them
    meanwhile."""
    hidden = {name: os.environ.pop(name) for name in list(os.environ) if looks_secret(name)}
    try:
        yield
    finally:
        os.environ.update(hidden)


#: Exit status of a worker that stopped because the process that started it died.
PARENT_GONE_EXIT_CODE = 75

_PR_SET_PDEATHSIG = 1


def die_with_parent(
    sig: int = signal.SIGTERM, *, expected_parent: int | None = None
) -> None:  # pragma: no cover - runs in a child process before exec
    """Linux: have the kernel send ``sig`` to this process when its parent dies (even by SIGKILL).

    Meant as ``subprocess.Popen(..., preexec_fn=...)``; a no-op elsewhere. The signal follows
    the parent *thread* that forked the child, so start the child from a thread that lives as
    long as the child should. ``expected_parent``: the parent's pid as seen before the fork;
    if the parent died before the signal was armed, the child gets ``sig`` at once instead of
    living on as an orphan.
    """
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, int(sig))
    if expected_parent is not None and os.getppid() != expected_parent:
        os.kill(os.getpid(), sig)


def _watch(sentinel: int) -> None:  # pragma: no cover - runs in a worker process
    from multiprocessing.connection import wait

    # The sentinel is the worker's end of a pipe whose other end only the starting process
    # holds: it turns readable (EOF) when that process exits, however it died.
    wait([sentinel])
    os._exit(PARENT_GONE_EXIT_CODE)


def exit_with_parent() -> None:
    """In a :mod:`multiprocessing` child: exit at once when the process that started it dies.

    Use as ``ProcessPoolExecutor(initializer=exit_with_parent)``. Starts a daemon thread that
    waits on the parent's sentinel and ends the process with
    :data:`PARENT_GONE_EXIT_CODE` (no cleanup: nobody is left to receive its results). For the
    ``forkserver`` and ``spawn`` start methods (under ``fork``, siblings forked later inherit
    each other's sentinel pipes, so one would wait for the others); does nothing in a process
    not started by multiprocessing.
    """
    parent = multiprocessing.parent_process()
    sentinel = getattr(parent, "sentinel", None) if parent is not None else None
    if not isinstance(sentinel, int):
        return
    threading.Thread(
        target=_watch, args=(sentinel,), name="byzllm-parent-watch", daemon=True
    ).start()


def release_workers() -> None:
    """For a process about to end with ``os._exit``, which skips multiprocessing's own exit:
    SIGKILL its :mod:`multiprocessing` children still alive (a process pool's workers), then
    unlink the named semaphores its multiprocessing objects made (the locks of the pools'
    queues), as that exit does.

    Each semaphore is registered with multiprocessing's resource tracker, a process that
    outlives this one until its last worker is gone and warns at its end of every one still
    registered ("There appear to be 5 leaked semaphore objects to clean up at shutdown"),
    on the terminal after the command has ended. The workers go first: they would exit with
    this process anyway (:func:`exit_with_parent`), but one still starting opens the
    semaphores by name and, finding them gone, printed a traceback. Nothing waits here: a
    semaphore that cannot be unlinked is left to the tracker, which unlinks it anyway."""
    for child in multiprocessing.active_children():
        with contextlib.suppress(OSError, ValueError, AttributeError):
            child.kill()
    util = sys.modules.get("multiprocessing.util")
    synchronize = sys.modules.get("multiprocessing.synchronize")
    if util is None or synchronize is None:
        return  # no semaphore was made
    cleanup = getattr(getattr(synchronize, "SemLock", None), "_cleanup", None)
    registry = getattr(util, "_finalizer_registry", None)
    if cleanup is None or not isinstance(registry, dict):
        return
    for finalizer in list(registry.values()):
        # A semaphore's finalizer unlinks it and tells the tracker; it runs once (the exit's
        # own run, had there been one, skips it).
        if getattr(finalizer, "_callback", None) is cleanup:
            with contextlib.suppress(Exception):
                finalizer()


def signal_name(number: int) -> str:
    """``SIGKILL`` for 9; ``signal 64`` for a number without a name."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where the platform says)."""
    affinity = getattr(os, "sched_getaffinity", None)
    if affinity is not None:
        return len(affinity(0))
    return os.cpu_count() or 1
