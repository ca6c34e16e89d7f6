"""A cgroup per run, where the kernel lets this process make one: memory (swap off) and pids.

Per-process limits (``RLIMIT_AS``, ``RLIMIT_NPROC``) leave the run's total open: 16 processes
of 256 MB of address space each may together hold 4 GB. A cgroup bounds the whole run:
one process's ``memory_mb`` plus both ``tmpfs`` and the sandbox's own processes for all
its processes together (page cache, ``tmpfs`` pages and kernel memory charged to it included;
swap off; :func:`run_memory_mb`), and ``max_processes`` plus the sandbox's own few tasks.
Two layouts are handled:

* **cgroup v2**, where the unified hierarchy offers the ``memory`` and ``pids`` controllers
  in this process's cgroup (a delegated subtree, or root): a child ``byzllm-<token>`` with
  ``memory.max``, ``memory.swap.max`` 0, ``memory.oom.group`` 1 (an OOM kill ends the whole
  run) and ``pids.max``;
* **cgroup v1**, where ``memory`` and ``pids`` are mounted as v1 hierarchies (some machines
  mount them beside an empty v2 hierarchy): a child in each, with ``memory.limit_in_bytes``,
  ``memory.memsw.limit_in_bytes`` (where swap is accounted) and ``pids.max``.

Where neither can be written (no root and no delegation, no cgroup file system), nothing is
made and :func:`probe` says why: the per-process limits and their equivalents hold alone
(docs/sandbox.md, "Limits"). The run's PID 1 moves itself into the cgroup (``cgroup.procs``)
before anything else, so every process of the run is in it; the host reads what was hit
(:meth:`RunCgroup.hit`) while the run goes and after it, and removes the cgroup.
"""

from __future__ import annotations

import contextlib
import functools
import os
import secrets
import time
from dataclasses import dataclass

from ._limits import LimitName

__all__ = ["CgroupSupport", "RunCgroup", "create", "probe"]

_ROOT = "/sys/fs/cgroup"
#: Tasks of the sandbox itself besides the program's: PID 1, the tests' process, a worker.
_OWN_TASKS = 4
#: How long removing a run's cgroup may wait for its last task to leave (milliseconds
#: normally; a killed run's tasks are gone already when the host gets here).
_REMOVE_S = 2.0


@dataclass(frozen=True)
class CgroupSupport:
    """Where runs' cgroups go: ``version`` "v2" or "v1" and the parent folders (v2: one;
    v1: the memory hierarchy's, then the pids hierarchy's), or ``version`` None. ``reason``:
    why not v2 (and, with none, why not v1 either); empty with v2."""

    version: str | None
    parents: tuple[str, ...]
    reason: str

    @property
    def name(self) -> str:
        return f"cgroup {self.version} (memory, pids)" if self.version else "none"


def _own_paths() -> dict[str, str]:
    """This process's cgroup per hierarchy: ``{"": v2 path, "memory": ..., "pids": ...}``."""
    paths: dict[str, str] = {}
    with contextlib.suppress(OSError), open("/proc/self/cgroup", encoding="utf-8") as handle:
        for line in handle:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            for controller in controllers.split(",") if controllers else [""]:
                paths[controller] = path
    return paths


def _mounts() -> dict[str, str]:
    """Mount points of the cgroup file systems: ``{"": v2, "memory": v1 memory, ...}``."""
    found: dict[str, str] = {}
    with contextlib.suppress(OSError), open("/proc/self/mounts", encoding="utf-8") as handle:
        for line in handle:
            fields = line.split()
            if len(fields) < 4:
                continue
            if fields[2] == "cgroup2":
                found.setdefault("", fields[1])
            elif fields[2] == "cgroup":
                for option in fields[3].split(","):
                    if option in ("memory", "pids"):
                        found.setdefault(option, fields[1])
    return found


def _read(path: str) -> str:
    try:
        with open(path, encoding="ascii") as handle:
            return handle.read()
    except OSError:
        return ""


def _v2(mounts: dict[str, str], own: dict[str, str]) -> tuple[str | None, str]:
    if "" not in mounts or "" not in own:
        return None, "no cgroup v2 hierarchy is mounted"
    parent = os.path.join(mounts[""], own[""].lstrip("/"))
    offered = set(_read(os.path.join(parent, "cgroup.controllers")).split())
    if not {"memory", "pids"} <= offered:
        if "memory" in mounts and "pids" in mounts:
            return None, "cgroup v2's memory and pids controllers are bound to v1 hierarchies"
        return None, "cgroup v2 offers no memory and pids controllers to this process"
    enabled = set(_read(os.path.join(parent, "cgroup.subtree_control")).split())
    if not {"memory", "pids"} <= enabled:
        try:
            with open(os.path.join(parent, "cgroup.subtree_control"), "w") as handle:
                handle.write("+memory +pids")
        except OSError as error:
            return None, f"cannot enable memory and pids for child cgroups of {parent}: {error}"
    if not os.access(parent, os.W_OK):
        return None, f"{parent} is not delegated to this user"
    return parent, ""


def _v1(mounts: dict[str, str], own: dict[str, str]) -> tuple[tuple[str, ...] | None, str]:
    missing = [c for c in ("memory", "pids") if c not in mounts or c not in own]
    if missing:
        return None, "no cgroup v1 " + " and ".join(missing) + " hierarchy is mounted"
    parents = tuple(os.path.join(mounts[c], own[c].lstrip("/")) for c in ("memory", "pids"))
    for parent in parents:
        if not os.access(parent, os.W_OK):
            return None, f"{parent} is not writable (not root, and not delegated)"
    return parents, ""


@functools.cache
def probe() -> CgroupSupport:
    """Whether runs get a cgroup here, which kind, and otherwise why not (probed once)."""
    if not os.path.isdir(_ROOT):
        return CgroupSupport(None, (), f"no cgroup file system at {_ROOT}")
    mounts, own = _mounts(), _own_paths()
    parent, why_not_v2 = _v2(mounts, own)
    if parent is not None:
        return CgroupSupport("v2", (parent,), "")
    parents, why_not_v1 = _v1(mounts, own)
    if parents is not None:
        return CgroupSupport("v1", parents, why_not_v2)
    return CgroupSupport(None, (), f"{why_not_v2}; {why_not_v1}")


class RunCgroup:
    """The cgroup (v2) or cgroups (v1: memory, pids) of one run."""

    def __init__(self, support: CgroupSupport, folders: list[str], memory_mb: int) -> None:
        self.support = support
        self.folders = folders
        self.memory_mb = memory_mb

    @property
    def procs(self) -> list[str]:
        """The ``cgroup.procs`` files the run's PID 1 writes itself into."""
        return [os.path.join(folder, "cgroup.procs") for folder in self.folders]

    def _memory_folder(self) -> str:
        return self.folders[0]

    def _pids_folder(self) -> str:
        return self.folders[-1]

    def hit(self) -> tuple[LimitName, str] | None:
        """The limit the kernel enforced on the run, with what it did; None if none was hit."""
        memory, pids = self._memory_folder(), self._pids_folder()
        if self.support.version == "v2":
            kills = _field(_read(os.path.join(memory, "memory.events")), "oom_kill")
        else:
            kills = _field(_read(os.path.join(memory, "memory.oom_control")), "oom_kill")
        if kills:
            what = f"{kills} process{'es' if kills > 1 else ''} killed by the kernel"
            return "memory", f"{what} at {self.memory_mb} MB for the whole run"
        refused = _field(_read(os.path.join(pids, "pids.events")), "max")
        if refused:
            return "processes", f"{refused} fork{'s' if refused > 1 else ''} refused"
        return None

    def remove(self) -> None:
        """Remove the run's cgroups (its tasks have ended, or end within ``_REMOVE_S``)."""
        deadline = time.monotonic() + _REMOVE_S
        for folder in self.folders:
            while True:
                try:
                    os.rmdir(folder)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        break  # left for the kernel's own accounting; harmless but counted
                    time.sleep(0.005)


def _field(text: str, name: str) -> int:
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if key == name and value.strip().isdigit():
            return int(value)
    return 0


def _write(folder: str, name: str, value: str) -> None:
    with open(os.path.join(folder, name), "w", encoding="ascii") as handle:
        handle.write(value)


#: Memory of the sandbox's own processes (PID 1, the tests' process) beside the program's.
_OWN_MB = 64


def run_memory_mb(memory_mb: int, disk_mb: int) -> int:
    """The whole run's memory: one process's ``memory_mb``, both ``tmpfs`` full (their pages
    are memory) and the sandbox's own processes. A single process thus meets its own
    ``RLIMIT_AS`` first; several together meet this."""
    return memory_mb + 2 * disk_mb + _OWN_MB


def create(
    support: CgroupSupport, memory_mb: int, disk_mb: int, max_processes: int
) -> RunCgroup | None:
    """A new cgroup for one run with its limits, or None where runs get none here."""
    if support.version is None:
        return None
    memory_mb = run_memory_mb(memory_mb, disk_mb)
    name = f"byzllm-{secrets.token_hex(8)}"
    folders: list[str] = []
    run = RunCgroup(support, folders, memory_mb)
    memory = memory_mb * 1024 * 1024
    tasks = str(max_processes + _OWN_TASKS)
    try:
        for parent in support.parents:
            folder = os.path.join(parent, name)
            os.mkdir(folder)
            folders.append(folder)
        if support.version == "v2":
            (folder,) = folders
            _write(folder, "memory.max", str(memory))
            with contextlib.suppress(FileNotFoundError):  # no swap accounting: no swap
                _write(folder, "memory.swap.max", "0")
            with contextlib.suppress(FileNotFoundError):  # before Linux 4.19: one by one
                _write(folder, "memory.oom.group", "1")
            _write(folder, "pids.max", tasks)
        else:
            memory_folder, pids_folder = folders
            _write(memory_folder, "memory.limit_in_bytes", str(memory))
            with contextlib.suppress(FileNotFoundError):  # swap not accounted: none to use
                _write(memory_folder, "memory.memsw.limit_in_bytes", str(memory))
            _write(pids_folder, "pids.max", tasks)
    except OSError:
        run.remove()
        raise
    return run
