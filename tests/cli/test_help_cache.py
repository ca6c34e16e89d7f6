"""Help pages replayed without typer are typer's own pages, byte for byte, in every setting."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
from pathlib import Path

import pytest

from byzllm.cli import _help_cache

# Runs the command as the console script does, then tells (in a file, not to stdout) whether
# typer was imported.
_RUN = """
import os, sys
from byzllm.cli import main
try:
    main()
    code = 0
except SystemExit as exc:
    code = exc.code
with open(os.environ["PROBE"], "w") as probe:
    probe.write("typer" if "typer" in sys.modules else "-")
sys.exit(code)
"""


def _env(tmp_path: Path, cache: str, **extra: str) -> dict[str, str]:
    env = {
        name: value
        for name, value in os.environ.items()
        if not _help_cache.env_in_key(name) or name.startswith("PYTHON")
    }
    env.update(BYZLLM_HELP_CACHE=cache, PROBE=str(tmp_path / "probe"), **extra)
    return env


def _run(argv: list[str], env: dict[str, str]) -> tuple[int, bytes, bytes, str]:
    done = subprocess.run(
        [sys.executable, "-c", _RUN, *argv], env=env, capture_output=True, timeout=120
    )
    probe = Path(env["PROBE"]).read_text()
    return done.returncode, done.stdout, done.stderr, probe


@pytest.mark.parametrize(
    ("argv", "setting"),
    [
        ([], {"COLUMNS": "100"}),
        (["--help"], {"COLUMNS": "100"}),
        (["--help"], {"COLUMNS": "72", "FORCE_COLOR": "1", "TERM": "xterm-256color"}),
        (["graph", "--help"], {"COLUMNS": "120"}),
        (["consensus", "run", "--help"], {"COLUMNS": "90", "NO_COLOR": "1"}),
    ],
)
def test_replayed_page_is_typers_page(
    argv: list[str], setting: dict[str, str], tmp_path: Path
) -> None:
    cache = str(tmp_path / "cache")
    first = _run(argv, _env(tmp_path, cache, **setting))
    again = _run(argv, _env(tmp_path, cache, **setting))
    typer_itself = _run(argv, _env(tmp_path, "off", **setting))
    assert first[3] == "typer" and again[3] == "-"  # rendered, then replayed
    assert typer_itself[3] == "typer"
    assert again[:3] == first[:3] == typer_itself[:3]
    assert again[0] == (2 if not argv else 0) and b"Usage" in again[1]


def test_another_setting_is_another_page(tmp_path: Path) -> None:
    cache = str(tmp_path / "cache")
    narrow = _run(["--help"], _env(tmp_path, cache, COLUMNS="60"))
    wide = _run(["--help"], _env(tmp_path, cache, COLUMNS="140"))
    wide_again = _run(["--help"], _env(tmp_path, cache, COLUMNS="140"))
    assert wide[3] == "typer" and wide_again[3] == "-"
    assert narrow[1] != wide[1] == wide_again[1]
    assert len(os.listdir(cache)) == 2


def _on_a_terminal(argv: list[str], env: dict[str, str], size: tuple[int, int]) -> bytes:
    """What a terminal of ``size`` (rows, columns) shows for the command."""
    import fcntl
    import struct
    import termios

    controller, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", *size, 0, 0))
    process = subprocess.Popen(
        [sys.executable, "-c", _RUN, *argv],
        env=env,
        stdin=terminal,
        stdout=terminal,
        stderr=terminal,
    )
    os.close(terminal)
    shown = bytearray()
    while True:
        ready, _, _ = select.select([controller], [], [], 60)
        if not ready:
            break
        try:
            chunk = os.read(controller, 1 << 16)
        except OSError:  # the terminal's other end closed
            break
        if not chunk:
            break
        shown += chunk
    process.wait(timeout=60)
    os.close(controller)
    return bytes(shown)


@pytest.mark.skipif(sys.platform != "linux", reason="terminal sizes set through Linux ioctls")
def test_replayed_page_on_a_terminal_is_typers_page(tmp_path: Path) -> None:
    """In a terminal (colours, its own width): the page as typer draws it there."""
    cache = str(tmp_path / "cache")
    env = _env(tmp_path, cache, TERM="xterm-256color")
    first = _on_a_terminal(["--help"], env, (40, 96))
    again = _on_a_terminal(["--help"], env, (40, 96))
    assert Path(env["PROBE"]).read_text() == "-"
    typer_itself = _on_a_terminal(
        ["--help"], _env(tmp_path, "off", TERM="xterm-256color"), (40, 96)
    )
    assert b"\x1b[" in typer_itself  # coloured
    assert again == first == typer_itself
    resized = _on_a_terminal(["--help"], env, (40, 70))
    assert Path(env["PROBE"]).read_text() == "typer" and resized != again


def test_only_help_command_lines_are_kept() -> None:
    assert _help_cache.cacheable([])
    assert _help_cache.cacheable(["--help"])
    assert _help_cache.cacheable(["consensus", "run", "--help"])
    assert not _help_cache.cacheable(["--version"])
    assert not _help_cache.cacheable(["graph", "check", "g.edges", "--help"])
    assert not _help_cache.cacheable(["consensus", "run", "--model", "x", "--help"])
    assert not _help_cache.cacheable(["runs", "list"])


def test_a_page_with_errors_or_bytes_is_not_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("BYZLLM_HELP_CACHE", str(tmp_path))

    def warns() -> None:
        print("page")
        print("a warning", file=sys.stderr)

    def fails() -> None:
        print("page")
        raise RuntimeError("broken")

    def exits() -> None:
        print("page")
        raise SystemExit(0)

    _help_cache.run_and_keep(["--help"], warns)
    with pytest.raises(RuntimeError):
        _help_cache.run_and_keep(["--help"], fails)
    assert os.listdir(tmp_path) == []
    with pytest.raises(SystemExit):
        _help_cache.run_and_keep(["--help"], exits)
    assert len(os.listdir(tmp_path)) == 1
    capsys.readouterr()
    assert _help_cache.replay(["--help"]) == 0
    assert capsys.readouterr().out == "page\n"


def test_no_environment_value_reaches_the_disk(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    env = _env(tmp_path, str(cache), BYZLLM_SOME_KEY="sk-never-on-disk", COLUMNS="100")
    _run(["--help"], env)
    (page,) = cache.iterdir()
    assert b"sk-never-on-disk" not in page.read_bytes()
    assert "sk-never-on-disk" not in page.name


def test_code_stamp_follows_every_source_file(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    source = tmp_path / "sub" / "a.py"
    source.write_text("x = 1\n")
    before = _help_cache._code_stamp(str(tmp_path))
    os.utime(source, ns=(source.stat().st_atime_ns, source.stat().st_mtime_ns + 1))
    touched = _help_cache._code_stamp(str(tmp_path))
    (tmp_path / "b.py").write_text("")
    added = _help_cache._code_stamp(str(tmp_path))
    assert len({before, touched, added}) == 3


def _variables_read(package: str) -> set[str]:
    """The environment variables a package's source reads by literal name."""
    root = Path(__import__(package).__file__ or "").parent
    pattern = re.compile(r"""(?:environ(?:\.get)?\(?\[?|getenv\()\s*["']([A-Za-z_][A-Za-z0-9_]*)""")
    names: set[str] = set()
    for source in root.rglob("*.py"):
        names.update(pattern.findall(source.read_text(encoding="utf-8", errors="replace")))
    return names


@pytest.mark.parametrize("package", ["typer", "rich"])
def test_every_variable_typer_and_rich_read_is_in_the_key(package: str) -> None:
    """A new typer or rich that reads another variable fails here until the key has it."""
    missing = sorted(name for name in _variables_read(package) if not _help_cache.env_in_key(name))
    assert missing == [], json.dumps(missing)


def _into_a_closed_pipe(argv: list[str], env: dict[str, str]) -> tuple[int, bytes, str]:
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [sys.executable, "-c", _RUN, *argv],
            env=env,
            stdout=write_end,
            stderr=subprocess.PIPE,
            timeout=120,
        )
    finally:
        os.close(write_end)
    return done.returncode, done.stderr, Path(env["PROBE"]).read_text()


def test_a_reader_that_has_left_ends_the_replay_quietly(tmp_path: Path) -> None:
    """``byzllm --help | head -1``: exit 1 and no traceback, as typer's own page."""
    env = _env(tmp_path, str(tmp_path / "cache"), COLUMNS="100")
    _run(["--help"], env)  # kept
    replayed = _into_a_closed_pipe(["--help"], env)
    typer_itself = _into_a_closed_pipe(["--help"], _env(tmp_path, "off", COLUMNS="100"))
    assert replayed == (1, b"", "-")
    assert typer_itself == (1, b"", "typer")
