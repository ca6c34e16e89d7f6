"""Which isolation mechanisms this machine offers, probed once per process."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys

from ._seccomp import filter_program

__all__ = ["NAMESPACE_FLAGS", "Support", "sandbox_support", "support"]

#: The namespaces every sandboxed run gets (util-linux ``unshare``): mount (a private file
#: system view), network (no interface but a loopback that is down), PID (the program cannot
#: see or signal host processes; all of it dies with its PID 1), IPC, UTS. ``--kill-child``
#: kills the namespace's PID 1 if ``unshare`` itself is killed.
NAMESPACE_FLAGS = (
    "--mount",
    "--net",
    "--pid",
    "--ipc",
    "--uts",
    "--fork",
    "--kill-child",
    "--mount-proc",
)


class Support:
    """The outcome of probing the machine (see :func:`sandbox_support`)."""

    def __init__(self, mechanisms: dict[str, bool], reason: str) -> None:
        self.mechanisms = mechanisms
        self.reason = reason
        self.unshare = _which_unshare() or ""

    @property
    def available(self) -> bool:
        return not self.reason


def _which_unshare() -> str | None:
    # The system folders too: util-linux lives there even when PATH is unusual.
    path = os.pathsep.join([os.environ.get("PATH", ""), "/usr/bin", "/bin", "/usr/sbin", "/sbin"])
    return shutil.which("unshare", path=path)


def _probe(unshare: str, flags: tuple[str, ...]) -> bool:
    try:
        done = subprocess.run(
            [unshare, *flags, "true"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=10,
            check=False,
            env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"},
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


@functools.cache
def support() -> Support:
    """Probe once: root, ``unshare``, and whether each namespace can actually be created."""
    linux = sys.platform.startswith("linux")
    root = linux and os.geteuid() == 0
    unshare = _which_unshare() if linux else None
    mechanisms = {
        "linux": linux,
        "root": root,
        "unshare": unshare is not None,
        "rlimits": linux,
        "seccomp": linux and filter_program() is not None,
        "netns": False,
        "mountns": False,
        "pidns": False,
    }
    if unshare is not None and root:
        mechanisms["netns"] = _probe(unshare, ("--net",))
        mechanisms["mountns"] = _probe(unshare, ("--mount",))
        mechanisms["pidns"] = _probe(unshare, ("--pid", "--fork", "--mount", "--mount-proc"))
    if not linux:
        reason = "the sandbox needs Linux namespaces; this is " + sys.platform
    elif unshare is None:
        reason = "the unshare command (util-linux) is not installed"
    elif not root:
        # Without root, the program would run as the calling user inside a user namespace,
        # with that user's write access to its own files: not isolation worth the name.
        reason = "the sandbox needs root to create its namespaces and drop to an unused uid"
    elif not all(mechanisms[m] for m in ("netns", "mountns", "pidns")):
        missing = [m for m in ("netns", "mountns", "pidns") if not mechanisms[m]]
        reason = "cannot create namespaces here: " + ", ".join(missing)
    else:
        reason = ""
    return Support(mechanisms, reason)


def sandbox_support() -> dict[str, bool | str]:
    """Which mechanisms are available here, and whether model code may run.

    Keys: ``linux``, ``root``, ``unshare``, ``rlimits``, ``netns``, ``mountns``, ``pidns``,
    ``seccomp`` (booleans), ``available`` (model code may run) and ``reason`` (why not, empty
    when available). ``seccomp`` (a system-call filter, on x86-64 and arm64) is an extra layer:
    the sandbox is available without it.
    """
    found = support()
    return {**found.mechanisms, "available": found.available, "reason": found.reason}
