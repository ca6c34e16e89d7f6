"""The ``byzllm`` command starts without the heavy libraries: they are imported by the commands
that use them, so ``byzllm --help`` stays instant (its speed is measured by
benchmarks/cli_startup.py, not here)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
import typer

HEAVY = (
    "numpy",
    "scipy",
    "pandas",
    "pyarrow",
    "sklearn",
    "matplotlib",
    "networkx",
    "openai",
    "httpx",
    "httpx2",
    "ray",
    "llama_cpp",
    "numba",
    "torch",
    "transformers",
    "tenacity",
    "yaml",
    "asyncio",
)


Probe = Callable[[str, Sequence[str]], list[str]]


def test_importing_the_cli_pulls_in_no_heavy_library(loaded_after: Probe) -> None:
    assert loaded_after("import byzllm.cli", HEAVY) == []


def test_importing_the_cli_leaves_typer_and_rich_to_the_commands() -> None:
    """The typer app is built on first use of ``byzllm.cli.app`` (or by ``main``)."""
    probe = (
        "import sys, byzllm.cli\n"
        "before = sorted(m for m in ('typer', 'rich', 'click') if m in sys.modules)\n"
        "from byzllm.cli import app\n"
        "print(before, 'typer' in sys.modules, type(app).__name__)"
    )
    assert _printed(probe) == ["[]", "True", "Typer"]


def test_the_version_is_read_only_when_asked_for() -> None:
    probe = (
        "import byzllm, byzllm.cli\n"
        "before = '__version__' in vars(byzllm)\n"
        "from byzllm import __version__\n"
        "print(before, __version__ == byzllm.__version__ != '')"
    )
    assert _printed(probe) == ["False", "True"]


def _printed(code: str) -> list[str]:
    """The words ``code`` prints, run in a fresh process."""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    return done.stdout.split()


@pytest.mark.parametrize("argv", [["--help"], ["graph", "--help"], ["consensus", "run", "--help"]])
def test_help_pulls_in_no_heavy_library(argv: list[str], loaded_after: Probe) -> None:
    code = (
        f"sys.argv = ['byzllm', *{argv!r}]\n"
        "from byzllm.cli import main\n"
        "try:\n"
        "    main()\n"
        "except SystemExit:\n"
        "    pass"
    )
    assert loaded_after(code, HEAVY) == []


def test_version_flag_prints_the_installed_version() -> None:
    from typer.testing import CliRunner

    import byzllm
    from byzllm.cli import app

    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"byzllm {byzllm.__version__}"


def test_a_small_command_starts_without_the_numeric_libraries(
    tmp_path: Path, loaded_after: Probe
) -> None:
    """``byzllm runs list`` reads stores only: the runner and its executors (asyncio), the
    configs (YAML), the intervals (numpy) and the other commands' modules stay unimported
    (benchmarks/cli_startup.py measures its start)."""
    code = (
        f"sys.argv = ['byzllm', 'runs', 'list', {str(tmp_path)!r}]\n"
        "from byzllm.cli import main\n"
        "try:\n"
        "    main()\n"
        "except SystemExit:\n"
        "    pass\n"
        "assert 'byzllm.cli.consensus' not in sys.modules"
    )
    assert loaded_after(code, HEAVY) == []


@pytest.mark.parametrize("as_json", [True, False])
def test_checking_a_small_graph_loads_neither_networkx_nor_numpy(
    tmp_path: Path, loaded_after: Probe, as_json: bool
) -> None:
    """``byzllm graph check`` reads the file into the solvers' bitmask view, and the subset DP
    runs on Python lists up to 12 nodes: networkx and numpy are left to larger graphs."""
    from byzllm.graphs import build, save_graph

    path = save_graph(build("merg", n=9), tmp_path / "g.json")
    argv = ["byzllm", "graph", "check", str(path), *(["--json"] if as_json else [])]
    code = (
        f"sys.argv = {argv!r}\n"
        "from byzllm.cli import main\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as stop:\n"
        "    assert not stop.code, stop.code"
    )
    assert loaded_after(code, HEAVY) == []


def test_a_command_is_run_from_a_root_that_holds_only_it() -> None:
    from byzllm.cli._app import COMMANDS, app, app_for

    def names(root: typer.Typer) -> list[str | None]:
        return [g.name for g in root.registered_groups] + [c.name for c in root.registered_commands]

    assert names(app_for(["runs", "list"])) == ["runs"]
    assert names(app_for(["demo", "--json"])) == ["demo"]
    # The root's own options, and a word that is no command, get every command.
    for argv in ([], ["--help"], ["--version"], ["nope"]):
        assert app_for(argv) is app
    assert sorted(str(name) for name in names(app)) == sorted(COMMANDS)


def test_the_lazy_run_engine_names_resolve_to_their_modules() -> None:
    import byzllm.runs as runs
    from byzllm.runs import _intervals

    for name in ("BOOTSTRAP_METHOD", "Interval", "bootstrap_interval", "weighted_mean_intervals"):
        assert getattr(runs, name) is getattr(_intervals, name)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = runs.nope  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "argv",
    [["runs", "--help"], ["consensus", "matrix", "--help"], ["runs", "list", "--bogus"]],
)
def test_a_root_holding_one_command_answers_as_the_whole_app(argv: list[str]) -> None:
    from typer.testing import CliRunner

    from byzllm.cli._app import app, app_for

    whole = CliRunner().invoke(app, argv, prog_name="byzllm")
    alone = CliRunner().invoke(app_for(argv), argv, prog_name="byzllm")
    assert (alone.exit_code, alone.output) == (whole.exit_code, whole.output)


def test_preload_imports_in_the_background_and_skips_what_fails(tmp_path: Path) -> None:
    # The matrix command loads its drawing library while the units run: a module that fails
    # to import there is left for its user to report, and nothing reaches stderr.
    (tmp_path / "preloaded_mod.py").write_text("VALUE = 1\n")
    (tmp_path / "broken_mod.py").write_text("raise RuntimeError('broken')\n")
    code = (
        "import sys, threading; sys.path.insert(0, sys.argv[1])\n"
        "from byzllm.cli import _common\n"
        "_common.preload('broken_mod', 'preloaded_mod')\n"
        "[t.join() for t in threading.enumerate() if t.name == 'byzllm-preload']\n"
        "print('preloaded_mod' in sys.modules, 'broken_mod' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == ["True", "False"] and done.stderr == ""
