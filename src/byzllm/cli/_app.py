"""The ``byzllm`` typer app: every command and sub-app, registered on one root.

Each area has its own module with a ``typer.Typer`` sub-app; heavy library imports happen
inside the commands. Imported by :func:`byzllm.cli.main` only when a command runs (a help
page it has shown before is replayed without it: :mod:`byzllm.cli._help_cache`), which runs
it on a root that holds only the command named (:func:`app_for`); :data:`app` holds them all.
"""

from __future__ import annotations

import functools
import importlib
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import typer
from typer.core import TyperGroup

from ._unfinished import json_option_given, usage_error_document

if TYPE_CHECKING:
    app: typer.Typer

__all__ = ["app", "app_for"]

#: Where the root keeps the words it was given (its ``ctx.meta`` key).
_ARGV = "byzllm.argv"


class _RootGroup(TyperGroup):
    """The root command: a usage error (an unknown option, a missing argument, a bad value),
    found before a command reads its own ``--json``, still gives ``--json`` its one JSON
    document on stdout (:mod:`byzllm.cli._unfinished`); the usage text stays on stderr."""

    def make_context(
        self, info_name: str | None, args: list[str], parent: Any = None, **extra: Any
    ) -> Any:
        argv = list(args)
        try:
            ctx = super().make_context(info_name, args, parent, **extra)
        except Exception as exc:
            _usage_document(exc, argv)
            raise
        ctx.meta[_ARGV] = argv
        return ctx

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except Exception as exc:
            _usage_document(exc, ctx.meta.get(_ARGV, ()))
            raise


def _usage_document(exc: Exception, argv: Sequence[str]) -> None:
    # By class name: typer raises its bundled click's UsageError, older typer click's own.
    if any(kind.__name__ == "UsageError" for kind in type(exc).__mro__):
        usage_error_document(argv, getattr(exc, "exit_code", 2), exc.format_message())  # type: ignore[attr-defined]


_HELP = (
    "Multi-agent LLM systems that stay correct when some agents are wrong or malicious.\n\n"
    "Start with `byzllm demo` (simulated agents, no API key needed). Every command that "
    "talks to models takes --model/--base-url to run the same experiment on real LLMs."
)


def _version_callback(value: bool) -> None:
    if value:
        from byzllm import __version__  # read on demand: the metadata lookup is slow

        typer.echo(f"byzllm {__version__}")
        raise typer.Exit()


def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version_callback, is_eager=True, help="Print the version."
    ),
) -> None:
    """byzllm: Byzantine-robust multi-agent LLM toolkit."""
    # Each command starts with no --json seen: a command without the option, invoked after one
    # with it in the same process, must not print an interrupted-JSON document.
    json_option_given(False)


#: The root's commands, in the order its help lists them: name -> (module of byzllm.cli,
#: its attribute, "group" for a sub-app or "command" for a single command).
COMMANDS: dict[str, tuple[str, str, str]] = {
    "consensus": ("consensus", "app", "group"),
    "demo": ("consensus", "demo", "command"),
    "serve": ("serve", "serve", "command"),
    "view": ("view", "view", "command"),
    "reproduce": ("reproduce", "reproduce", "command"),
    "metrics": ("metrics", "metrics", "command"),
    "graph": ("graph", "app", "group"),
    "models": ("models", "app", "group"),
    "runs": ("runs", "app", "group"),
    "whodunit": ("whodunit", "app", "group"),
    "govsim": ("govsim", "app", "group"),
    "monitor": ("monitor", "app", "group"),
    "codegen": ("codegen", "app", "group"),
    "sim": ("sim", "app", "group"),
    "sandbox": ("sandbox", "app", "group"),
}


def _new_root(names: Sequence[str]) -> typer.Typer:
    root = typer.Typer(
        cls=_RootGroup,
        name="byzllm",
        help=_HELP,
        no_args_is_help=True,
        rich_markup_mode="rich",
        pretty_exceptions_show_locals=False,
    )
    root.callback()(_root)
    for name in names:
        module, attribute, kind = COMMANDS[name]
        target = getattr(importlib.import_module(f"{__package__}.{module}"), attribute)
        if kind == "group":
            root.add_typer(target, name=name)
        else:
            root.command(name)(target)
    return root


def app_for(argv: Sequence[str]) -> typer.Typer:
    """The root with only the command ``argv`` names (its first word), else every command.

    Running a command builds the click command of everything on the root, each option's
    annotations evaluated: with all commands that was half of a small command's start
    (``byzllm runs list``). The root's own options, its help, and a word that names no
    command (which gets the full list's error and suggestions) keep the whole app.
    """
    first = argv[0] if argv else ""
    if first in COMMANDS:
        return _new_root([first])
    return _whole_app()


@functools.cache
def _whole_app() -> typer.Typer:
    return _new_root(list(COMMANDS))


def __getattr__(name: str) -> Any:
    """``app``: the root with every command (what ``byzllm --help`` lists), built on first
    use (PEP 562), so that :func:`app_for` builds only what a command needs."""
    if name != "app":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return _whole_app()


#: ``[`` that rich would read as the start of a markup tag (``[default: x]``, ``[sac, b]``).
_TAG_START = re.compile(r"(?<!\\)\[(?=[a-z#/@])")


#: A line that starts an item of a list in a help text ("- ", "* ", "1. ").
_ITEM = re.compile(r"^(?:[-*•]|\d+[.)])\s")


def _unwrapped(text: str) -> str:
    """``text`` with the line breaks of its prose paragraphs joined: docstrings are wrapped
    at the source's width, and typer's rich mode keeps every break, so at 80 columns a help
    page broke sentences after two words. Indented lines (examples), paragraphs marked with
    ``\\b`` and the items of lists keep their own lines."""
    paragraphs = []
    for paragraph in text.split("\n\n"):
        lines = paragraph.split("\n")
        if paragraph.startswith("\b") or any(line[:1].isspace() for line in lines):
            paragraphs.append(paragraph)
            continue
        joined: list[str] = []
        for line in lines:
            if joined and not _ITEM.match(line):
                joined[-1] = f"{joined[-1]} {line.strip()}"
            else:
                joined.append(line)
        paragraphs.append("\n".join(joined))
    return "\n\n".join(paragraphs)


def _literal_help() -> None:
    """Show help text as written: rich markup would swallow ``[default: all six]`` (leaving
    "attacks .") and ``--set 'protocols=[sac, debate]'``, so every ``[`` that could open a
    tag is escaped before typer renders a help text (option help and docstrings alike), and
    the line breaks of prose paragraphs are joined (:func:`_unwrapped`)."""
    import typer.rich_utils as rich_utils

    make = getattr(rich_utils, "_make_rich_text", None)
    if make is None or getattr(make, "_byzllm_literal", False):
        return

    def make_rich_text(*, text: str, style: str = "", markup_mode: Any) -> Any:
        if markup_mode == "rich":
            text = _TAG_START.sub(r"\\[", _unwrapped(text))
        return make(text=text, style=style, markup_mode=markup_mode)

    make_rich_text._byzllm_literal = True  # type: ignore[attr-defined]
    rich_utils._make_rich_text = make_rich_text


def _flags_without_type() -> None:
    """``--json`` rather than ``--json <bool>``: a flag takes no value, so its help shows no
    type (newer typer prints the type of every option)."""
    from typer.core import TyperOption

    shown = getattr(TyperOption, "display_type_rich", None)
    if shown is None or getattr(shown, "_byzllm_flags", False):
        return

    def display_type_rich(self: TyperOption, ctx: Any) -> str | None:
        if self.is_flag and self.metavar is None:
            return None
        return shown(self, ctx)  # type: ignore[no-any-return]

    display_type_rich._byzllm_flags = True  # type: ignore[attr-defined]
    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]


def _literal_help_when_rendered() -> None:
    """Apply :func:`_literal_help` when a help text is first rendered rather than at import:
    typer's rich renderer takes about 100 ms to import, which commands other than ``--help``
    need not pay."""
    from typer.core import TyperCommand, TyperGroup

    for cls in (TyperCommand, TyperGroup):
        rendered = cls.format_help
        if getattr(rendered, "_byzllm_literal", False):
            continue

        def format_help(self: Any, ctx: Any, formatter: Any, _rendered: Any = rendered) -> None:
            _literal_help()
            _rendered(self, ctx, formatter)

        format_help._byzllm_literal = True  # type: ignore[attr-defined]
        cls.format_help = format_help  # type: ignore[method-assign]


_literal_help_when_rendered()
_flags_without_type()
