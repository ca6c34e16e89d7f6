"""Help pages replayed without importing typer: ``byzllm --help`` in a few milliseconds.

Rendering a help page takes typer, click and rich -- about 300 ms of imports on a 2-core
machine, most of the budget of an instant command. The page only depends on the command
line, the code (byzllm's, typer's, rich's) and the terminal (width, colour, encoding), so the
first time a page is shown it is rendered as usual and kept, keyed by all of those; the next
time the same page is asked for in the same setting it is written back byte for byte
without importing typer. A changed source file, library, terminal size or colour setting is
a different key: that page is rendered again. Only a page that went wholly to ``sys.stdout``
as text, with nothing on stderr, is kept.

Which command lines: ``byzllm`` alone (typer shows the help, exit status 2) and command
names followed by ``--help`` (``byzllm consensus run --help``). Where pages are kept:
``$BYZLLM_HELP_CACHE``, else ``$XDG_CACHE_HOME/byzllm/help``, else ``~/.cache/byzllm/help``;
``BYZLLM_HELP_CACHE=off`` turns it off. A cache that cannot be read or written is skipped.
Keys are digests: no environment value is written to disk.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TextIO

__all__ = ["ENV_NAMES", "cache_dir", "cacheable", "env_in_key", "key", "replay", "run_and_keep"]

#: Environment variables typer, click and rich read when they render help (checked against
#: their sources by the tests), and the locale (click's words go through gettext), besides
#: the name patterns of :func:`env_in_key`.
ENV_NAMES = frozenset(
    {
        "COLORTERM",
        "COLUMNS",
        "DATABRICKS_RUNTIME_VERSION",
        "FORCE_COLOR",
        "GITHUB_ACTIONS",
        "JUPYTER_COLUMNS",
        "JUPYTER_LINES",
        "LANG",
        "LANGUAGE",
        "LC_ALL",
        "LC_CTYPE",
        "LC_MESSAGES",
        "LINES",
        "NO_COLOR",
        "PY_COLORS",
        "PYDANTIC_DISABLE_PLUGINS",
        "TERM",
        "TERMINAL_WIDTH",
        "TTY_COMPATIBLE",
        "TTY_INTERACTIVE",
        "UNICODE_VERSION",
        "XDG_CONFIG_HOME",
    }
)
_ENV_PREFIXES = ("TYPER", "_TYPER", "COMP_", "BYZLLM", "_BYZLLM", "PYTHON", "RICH")
_MAX_PAGES = 64
_MAGIC = b"byzllm-help 1\n"
#: Libraries whose code shapes the page, fingerprinted with byzllm's own.
_LIBRARIES = ("typer", "rich", "click", "shellingham")


def env_in_key(name: str) -> bool:
    """Whether the environment variable ``name`` is part of a page's key."""
    return name in ENV_NAMES or name.startswith(_ENV_PREFIXES) or "COMPLETE" in name


def cacheable(argv: Sequence[str]) -> bool:
    """Command lines whose output is a help page: none, or command names then ``--help``."""
    if not argv:
        return True
    *names, last = argv
    return (
        last == "--help"
        and len(names) <= 3
        and all(name.replace("-", "").isalnum() and name[:1].isalpha() for name in names)
    )


def cache_dir(environ: Mapping[str, str] | None = None) -> str | None:
    """Where pages are kept; ``None`` when turned off."""
    env = os.environ if environ is None else environ
    chosen = env.get("BYZLLM_HELP_CACHE")
    if chosen is not None:
        return None if chosen.strip().lower() in ("", "off", "0", "no") else chosen
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "byzllm", "help")


def _code_stamp(root: str) -> str:
    """The ``.py`` files under ``root``: how many, and the sums of their modification times
    and sizes (any file written, added or removed changes it; cheaper than a line per file,
    which matters at ~230 files)."""
    count = mtimes = sizes = 0
    folders = [root]
    while folders:
        try:
            entries = list(os.scandir(folders.pop()))
        except OSError:
            continue
        for entry in entries:
            name = entry.name
            if name.endswith(".py"):
                try:
                    stat = entry.stat()
                except OSError:
                    continue
                count += 1
                mtimes += stat.st_mtime_ns
                sizes += stat.st_size
            elif name != "__pycache__" and "." not in name and entry.is_dir():
                folders.append(entry.path)
    return f"{root}:{count}:{mtimes}:{sizes}"


def _library_stamp(name: str) -> str:
    """Where a library is and when its main files last changed (a reinstall rewrites them)."""
    from importlib.machinery import PathFinder

    spec = PathFinder.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return f"{name}:absent"
    root = next(iter(spec.submodule_search_locations))
    stamps = [name, root]
    for file in ("__init__.py", "core.py", "main.py", "rich_utils.py", "console.py"):
        try:
            stat = os.stat(os.path.join(root, file))
        except OSError:
            continue
        stamps.append(f"{file}:{stat.st_mtime_ns}:{stat.st_size}")
    return ",".join(stamps)


def _terminal() -> list[str]:
    """What rich reads of the terminal: which streams are terminals, their size, encodings."""
    parts = []
    for fd in (0, 1, 2):
        try:
            tty = os.isatty(fd)
        except OSError:
            tty = False
        try:
            size = tuple(os.get_terminal_size(fd))
        except (OSError, ValueError):
            size = None
        parts.append(f"fd{fd}:{tty}:{size}")
    for name in ("stdin", "stdout", "stderr"):
        stream = getattr(sys, name, None)
        parts.append(
            f"{name}:{type(stream).__name__}:{getattr(stream, 'encoding', None)}:"
            f"{getattr(stream, 'errors', None)}"
        )
    return parts


def key(argv: Sequence[str], environ: Mapping[str, str] | None = None) -> str:
    """The digest of everything a help page depends on (see the module docstring)."""
    import hashlib

    env = os.environ if environ is None else environ
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parts = [
        sys.version,
        sys.platform,
        sys.executable,
        os.path.basename(sys.argv[0]) if sys.argv else "",
        "\0".join(argv),
        *(f"{name}={env[name]}" for name in sorted(env) if env_in_key(name)),
        *_terminal(),
        _code_stamp(package),
        *(_library_stamp(name) for name in _LIBRARIES),
    ]
    return hashlib.sha256("\n".join(parts).encode("utf-8", "surrogatepass")).hexdigest()


def _page_path(argv: Sequence[str]) -> tuple[str, str] | None:
    if os.name != "posix" or not cacheable(argv):
        return None
    folder = cache_dir()
    if folder is None:
        return None
    digest = key(argv)
    return os.path.join(folder, digest[:40]), digest


def replay(argv: Sequence[str]) -> int | None:
    """Write the kept page for ``argv`` to stdout and return its exit status; ``None`` when
    there is none (then the command runs as usual)."""
    where = _page_path(argv)
    if where is None:
        return None
    path, digest = where
    try:
        with open(path, "rb") as file:
            data = file.read()
    except OSError:
        return None
    head, sep, page = data.partition(b"\n\n")
    fields = head.split(b"\n")
    if not sep or len(fields) != 3 or fields[0] + b"\n" != _MAGIC:
        return None
    if fields[1].decode("ascii", "replace") != digest or not fields[2].isdigit():
        return None
    try:
        sys.stdout.write(page.decode("utf-8", "surrogatepass"))
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader left (``byzllm --help | head``): exit 1 without a traceback, as click
        # does; the interpreter's last flush goes to /dev/null.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return int(fields[2])


class _Tee:
    """A stream for one run (``sys.stdout`` or ``sys.stderr``): everything as before, and a
    copy of the text written."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self.text: list[str] = []
        self.binary = False

    def write(self, text: str) -> int:
        written = self._stream.write(text)  # first: click probes with bytes, expecting errors
        self.text.append(text)
        return written

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    @property
    def buffer(self) -> Any:
        # Bytes written past the text layer are not seen: such a page is not kept.
        self.binary = True
        return self._stream.buffer

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def run_and_keep(argv: Sequence[str], run: Callable[[], Any]) -> None:
    """Run the command (``run``), keeping its page when ``argv`` asks for help."""
    where = _page_path(argv)
    if where is None:
        run()
        return
    out, err = sys.stdout, sys.stderr
    tee, watch = _Tee(out), _Tee(err)
    sys.stdout, sys.stderr = tee, watch
    status: object = None  # stays None when the command fails with an exception
    try:
        run()
        status = 0
    except SystemExit as exc:
        status = 0 if exc.code is None else exc.code
        raise
    finally:
        sys.stdout, sys.stderr = out, err
        quiet = not watch.binary and not any(watch.text)
        if isinstance(status, int) and quiet and not tee.binary and tee.text:
            _keep(*where, status, "".join(tee.text))


def _keep(path: str, digest: str, status: int, page: str) -> None:
    folder = os.path.dirname(path)
    try:
        os.makedirs(folder, exist_ok=True)
        temporary = f"{path}.{os.getpid()}.tmp"
        with open(temporary, "wb") as file:
            file.write(_MAGIC + b"%s\n%d\n\n" % (digest.encode(), status))
            file.write(page.encode("utf-8", "surrogatepass"))
        os.replace(temporary, path)
        pages = sorted(
            (entry.stat().st_mtime_ns, entry.path)
            for entry in os.scandir(folder)
            if entry.is_file() and not entry.name.endswith(".tmp")
        )
        for _, old in pages[:-_MAX_PAGES]:
            os.unlink(old)
    except OSError:
        pass  # a cache that cannot be written is no cache
