"""Every command's ``--help`` renders, and shows its text as written."""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterator
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from byzllm.cli import app

RUNNER = CliRunner()


def _subcommands(command: Any) -> dict[str, Any]:
    # Duck-typed, and no `import click`: newer typer builds its commands on a click of its own
    # (and does not install click), so the context comes from the command's own class.
    if not hasattr(command, "list_commands"):
        return {}
    ctx = command.context_class(command)
    found = {name: command.get_command(ctx, name) for name in command.list_commands(ctx)}
    return {name: sub for name, sub in found.items() if sub is not None}


def _paths(command: Any, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    yield prefix
    for name, sub in sorted(_subcommands(command).items()):
        yield from _paths(sub, (*prefix, name))


ROOT = typer.main.get_command(app)
COMMANDS = list(_paths(ROOT))


def _command(path: tuple[str, ...]) -> Any:
    command = ROOT
    for name in path:
        command = _subcommands(command)[name]
    return command


def _plain(text: str) -> str:
    """The help as one line of words (rich wraps lines and draws boxes)."""
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", text).split())


def test_every_command_is_collected() -> None:
    assert len(COMMANDS) > 40 and ("consensus", "run") in COMMANDS and ("demo",) in COMMANDS


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p) or "byzllm")
def test_help_renders_as_written(path: tuple[str, ...], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # wide enough that no cell is cut with "…"
    result = RUNNER.invoke(app, [*path, "--help"])
    assert result.exit_code == 0, result.output
    shown = _plain(result.output)
    # A flag takes no value: no "<bool>" beside it.
    assert "<bool>" not in shown
    # Markup that swallowed a "[default: ...]" leaves a space before the full stop.
    assert not re.search(r"\w \.(\s|$)", shown), shown
    # Every "[...]" of an option's help is shown (rich may wrap inside it: compare unspaced).
    unspaced = "".join(shown.split())
    for param in _command(path).params:
        help_text = getattr(param, "help", None) or ""
        for bracket in re.findall(r"(?<!\\)\[[a-z][^\]]*\]", help_text):
            assert "".join(bracket.split()) in unspaced, (param.name, bracket)


@pytest.mark.parametrize("path", [p for p in COMMANDS if p], ids=" ".join)
def test_summary_line_is_one_line(path: tuple[str, ...]) -> None:
    """A command's first paragraph is its line in its group's list: written over two lines,
    the list kept the break and showed a line cut in the middle of a sentence."""
    first = inspect.cleandoc(_command(path).help or "").split("\n\n")[0]
    assert "\n" not in first, first


def _prose(help_text: str) -> list[str]:
    """The prose paragraphs of a help text after its first (no indented line, no list)."""
    paragraphs = inspect.cleandoc(help_text).split("\n\n")[1:]
    return [
        p
        for p in paragraphs
        if not p.startswith("\b")
        and not any(line[:1].isspace() or re.match(r"[-*•] ", line) for line in p.split("\n"))
    ]


@pytest.mark.parametrize("path", [p for p in COMMANDS if p], ids=" ".join)
def test_prose_is_not_broken_where_the_source_wraps(
    path: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Docstrings are wrapped at the source's width; typer's rich mode kept every break, so
    at 80 columns a sentence broke after two words. On a wide terminal each prose
    paragraph is one line."""
    monkeypatch.setenv("COLUMNS", "2000")
    result = RUNNER.invoke(app, [*path, "--help"])
    lines = [" ".join(re.sub(r"[│╭╮╰╯─]", " ", line).split()) for line in result.output.split("\n")]
    for paragraph in _prose(_command(path).help or ""):
        words = " ".join(paragraph.split())
        assert any(words.replace("\\[", "[") in line for line in lines), paragraph


@pytest.mark.parametrize(
    ("path", "words"),
    [
        # The report writes control_gains.csv beside the two files its help named.
        (("monitor", "report"), "Write conditions.csv, ablations.csv and control_gains.csv here."),
        # Keys the config takes that `whodunit play` has as options, missing from the list.
        (("whodunit", "run"), "final_move (free | accuse, with decoding schema), redo_temperature"),
    ],
)
def test_help_names_what_the_command_takes_and_writes(
    path: tuple[str, ...], words: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "2000")
    result = RUNNER.invoke(app, [*path, "--help"])
    assert words in _plain(result.output)


def _flags(path: tuple[str, ...]) -> set[str]:
    """The options the command at ``path`` takes (every spelling)."""
    return {flag for p in _command(path).params for flag in (*p.opts, *p.secondary_opts)}


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p) or "byzllm")
def test_option_help_names_only_the_commands_own_options(path: tuple[str, ...]) -> None:
    """An option's help is shared by several commands: a flag it names must be one this
    command takes. The shared --model help told WhoDunit, GovSim, monitor and CodeGen
    commands about the consensus commands' --weak-model; the shared --executor help pointed
    `consensus matrix` to a --ray-address it lacked."""
    own = _flags(path)
    for param in _command(path).params:
        named = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", getattr(param, "help", None) or ""))
        assert named <= own, (param.name, named - own)
