"""Which isolation mechanisms this machine offers, probed once per process."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys

from . import _cgroup, _seccomp, _warm
from ._seccomp import filter_program

__all__ = ["NAMESPACE_FLAGS", "USER_NAMESPACE_FLAGS", "Support", "sandbox_support", "support"]

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
#: Without root: a user namespace first, where the caller is root (mapped to its own uid and
#: nothing else), so the other namespaces can be made and the mounts prepared in it.
USER_NAMESPACE_FLAGS = ("--user", "--map-root-user")


class Support:
    """The outcome of probing the machine (see :func:`sandbox_support`)."""

    def __init__(self, mechanisms: dict[str, bool], reason: str) -> None:
        self.mechanisms = mechanisms
        self.reason = reason
        self.unshare = _which_unshare() or ""

    @property
    def available(self) -> bool:
        return not self.reason

    @property
    def rootless(self) -> bool:
        """True when isolation comes from a user namespace (the caller is not root)."""
        return bool(self.mechanisms.get("userns")) and not self.mechanisms.get("root")

    @property
    def namespace_flags(self) -> tuple[str, ...]:
        """The ``unshare`` options of every run on this machine."""
        return (*USER_NAMESPACE_FLAGS, *NAMESPACE_FLAGS) if self.rootless else NAMESPACE_FLAGS


def _which_unshare() -> str | None:
    # The system folders too: util-linux lives there even when PATH is unusual.
    path = os.pathsep.join([os.environ.get("PATH", ""), "/usr/bin", "/bin", "/usr/sbin", "/sbin"])
    return shutil.which("unshare", path=path)


#: How long one probe may take. Generous: on a loaded machine starting a process can take
#: seconds, and a probe that gave up early would call a working sandbox unavailable.
PROBE_TIMEOUT_S = 120.0


class _Inconclusive(Exception):
    """A probe ran out of time: nothing is known (and nothing is remembered)."""


def _probe(unshare: str, flags: tuple[str, ...]) -> bool:
    try:
        done = subprocess.run(
            [unshare, *flags, "true"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=PROBE_TIMEOUT_S,
            check=False,
            env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"},
        )
    except subprocess.TimeoutExpired as error:
        raise _Inconclusive(f"unshare {' '.join(flags)} did not finish in time") from error
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def support() -> Support:
    """:func:`_support`, remembered once it is conclusive: a probe that ran out of time on a
    busy machine says so in ``reason`` and is tried again on the next call."""
    try:
        return _remembered()
    except _Inconclusive as error:
        keys = ("rlimits", "seccomp", "userns", "netns", "mountns", "pidns", "ipcns", "cgroup")
        mechanisms = {"linux": True, "root": os.geteuid() == 0, "unshare": True}
        mechanisms.update(dict.fromkeys(keys, False))
        return Support(mechanisms, f"could not tell whether namespaces work here: {error}")


@functools.cache
def _remembered() -> Support:
    """Probe once: root, ``unshare``, and whether each namespace can actually be created.

    Without root, each namespace is probed inside a user namespace, as the runs make them.
    """
    linux = sys.platform.startswith("linux")
    root = linux and os.geteuid() == 0
    unshare = _which_unshare() if linux else None
    mechanisms = {
        "linux": linux,
        "root": root,
        "unshare": unshare is not None,
        "rlimits": linux,
        "seccomp": linux and filter_program() is not None,
        "userns": False,
        "netns": False,
        "mountns": False,
        "pidns": False,
        "ipcns": False,
    }
    if unshare is not None and linux:
        user: tuple[str, ...] = ()
        if not root:
            mechanisms["userns"] = _probe(unshare, USER_NAMESPACE_FLAGS)
            user = USER_NAMESPACE_FLAGS
        if root or mechanisms["userns"]:
            mechanisms["netns"] = _probe(unshare, (*user, "--net"))
            mechanisms["mountns"] = _probe(unshare, (*user, "--mount"))
            pid = ("--pid", "--fork", "--mount", "--mount-proc")
            mechanisms["pidns"] = _probe(unshare, (*user, *pid))
            mechanisms["ipcns"] = _probe(unshare, (*user, "--ipc"))
    # What holds the limits that per-process rlimits miss (docs/sandbox.md, "Limits").
    mechanisms["sysv_ipc_closed"] = mechanisms.get("ipcns", False)
    mechanisms["memfd_refused"] = mechanisms["seccomp"]
    mechanisms["sockets_unix_only"] = mechanisms["seccomp"]
    mechanisms["inode_limit"] = mechanisms["mountns"]
    mechanisms["core_dumps_off"] = linux
    # A cgroup per run (memory, pids) where this process may make one; root, typically.
    cgroups = _cgroup.probe() if linux else None
    mechanisms["cgroup"] = cgroups is not None and cgroups.version is not None
    # Runs forked by the warm zygote (byzllm.sandbox._warm) rather than one unshare each.
    mechanisms["zygote"] = _warm.available()
    if not linux:
        reason = "the sandbox needs Linux namespaces; this is " + sys.platform
    elif unshare is None:
        reason = "the unshare command (util-linux) is not installed"
    elif not root and not mechanisms["userns"]:
        reason = "not root, and this kernel refuses unprivileged user namespaces"
    elif not all(mechanisms[m] for m in ("netns", "mountns", "pidns", "ipcns")):
        missing = [m for m in ("netns", "mountns", "pidns", "ipcns") if not mechanisms[m]]
        reason = "cannot create namespaces here: " + ", ".join(missing)
    else:
        reason = _installation_clash()
    return Support(mechanisms, reason)


def _installation_clash() -> str:
    """Why no run could be prepared with this interpreter, or empty: a folder of the Python
    installation that holds the program's work folder (an installation at ``/tmp`` itself)
    cannot be shown read-only without hiding the private work folder, or the reverse. One
    within the work folder (a virtual environment under ``/tmp``) is shown on top of it."""
    from . import _run  # imports this module

    for root in _run.python_roots():
        # (commonpath, not a prefix test of our own: the bootstrap's runs inside the sandbox)
        if os.path.isdir(root) and os.path.commonpath([_run.WORK, root]) == os.path.normpath(root):
            return (
                f"the Python installation folder {root} holds the sandbox's work folder "
                f"{_run.WORK}: run byzllm with an interpreter installed elsewhere"
            )
    return ""


def sandbox_support() -> dict[str, bool | str]:
    """Which mechanisms are available here, and whether model code may run.

    Keys: ``linux``, ``root``, ``unshare``, ``rlimits``, ``userns`` (without root: the
    namespaces are made inside a user namespace), ``netns``, ``mountns``, ``pidns``,
    ``ipcns``, ``seccomp`` (booleans); what holds the limits rlimits miss: ``sysv_ipc_closed``
    (zero System V limits in the run's IPC namespace), ``memfd_refused`` and
    ``sockets_unix_only`` (the seccomp filter), ``inode_limit`` (sized ``tmpfs``),
    ``core_dumps_off`` (``RLIMIT_CORE`` 1), ``cgroup`` (each run gets a cgroup bounding its
    total memory and processes: :mod:`byzllm.sandbox._cgroup`), ``cgroup_version`` ("v2",
    "v1" or empty) and ``cgroup_missing`` (why not v2, and with no cgroup why not v1
    either; empty with v2); ``seccomp_filter`` ("libseccomp": the allow-list of the
    ``seccomp`` extra; "hand-built": the deny-list without it); ``zygote``
    (runs are forked from the warm zygote);
    ``rootless`` (isolation comes from a user namespace), ``available`` (model code may run)
    and ``reason`` (why not, empty when available; also a Python installation folder that
    holds the sandbox's work folder, ``/tmp``).
    ``seccomp`` (a system-call filter: with libseccomp on x86-64, arm64, riscv64, ppc64le and
    s390x, without it on x86-64 and arm64) is an extra layer: the sandbox is
    available without it, but then ``memfd_create`` and every socket family are reachable.
    A probe that runs out of time (a very busy machine) makes ``reason`` say so, and is not
    remembered: the next call probes again.
    """
    found = support()
    cgroups = _cgroup.probe() if sys.platform.startswith("linux") else None
    return {
        **found.mechanisms,
        "seccomp_filter": _seccomp.filter_source() if found.mechanisms["seccomp"] else "",
        "cgroup_version": cgroups.version or "" if cgroups is not None else "",
        "cgroup_missing": cgroups.reason if cgroups is not None else "not Linux",
        "rootless": found.rootless,
        "available": found.available,
        "reason": found.reason,
    }
