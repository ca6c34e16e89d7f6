"""Every ``byzllm`` command the README and docs/*.md show runs, as written, on the simulator.

The commands are read from the fenced blocks of each document (a ``bash`` block, or a plain
one whose lines start with ``byzllm``), one command per line (``\\`` continues a line,
``&&`` chains commands, ``#`` starts a comment). They run in document order in one scratch
folder per document, which holds a copy of ``examples/``, so a report finds the run an
earlier command made. Sizes are cut (:data:`SMALLER`: fewer questions or games, appended
after the document's own options) so the whole file takes seconds, not hours; commands that
need a server, a real model, the network or a data file byzllm does not ship are skipped
with the reason (:data:`SKIPPED`). A failing command fails its document's test with the
file, line, command, exit code and output. A command the document shows failing (a
``$ byzllm ...`` line followed by its ``error: ...`` line) must fail just so: exit 2 and that
very line on stderr.
"""

from __future__ import annotations

import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from byzllm.cli import app

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

#: (pattern, reason): a command matching the pattern is not run here.
SKIPPED: list[tuple[str, str]] = [
    (r"--model|--real\b|--base-url", "needs a model server or a downloaded model"),
    (r"^byzllm serve\b", "starts a model server"),
    (r"^byzllm models (pull|probe)\b", "needs the network or a model server"),
    (r"HumanEval|--problems", "needs the HumanEval file (not shipped)"),
    (r"--open\b", "opens a browser"),
    (r"runs/real\b|runs/cg", "reads a run made on a real model or HumanEval"),
    (
        r"^byzllm runs (list|show|export|repair) (experiments/|runs/sweep\b)",
        "a folder of the reader's own",
    ),
    (r"^byzllm reproduce (?!--list)", "runs a whole paper table (tests/reproduce covers it)"),
    (r"\bruns/whodunit\b", "a run the document does not make"),
    (r"my-sweep\.yaml", "the reader's own config, on an LLM"),
]

#: (command prefix, options appended): the same command on a small grid.
SMALLER: list[tuple[str, list[str]]] = [
    ("byzllm demo", ["--questions", "3"]),
    ("byzllm consensus run", ["--set", "dataset.n=2"]),
    (
        "byzllm consensus matrix",
        ["-n", "1", "--adversaries", "1", "--topologies", "complete", "--attacks", "replay"],
    ),
    ("byzllm whodunit run", ["--set", "n_games=2", "--set", "repeats=1"]),
    ("byzllm govsim run", ["--set", "n_games=2", "--set", "repeats=1"]),
    (
        "byzllm monitor collect",
        ["--set", "n_train=20", "--set", "n_validation=6", "--set", "collect_repeats=1"],
    ),
    ("byzllm monitor evaluate", ["--set", "n_test=2", "--set", "repeats=1"]),
]


#: Runs a document reads (``runs show``, ``view``) without making them: made first, small.
PRELUDES: dict[str, list[str]] = {
    "runs/demo": ["demo", "--questions", "3"],
    "runs/sweep": ["consensus", "run", "examples/sweep.yaml", "--set", "dataset.n=2"],
}


@dataclass(frozen=True)
class DocCommand:
    """One ``byzllm`` command of a document, where it is written."""

    document: Path
    line: int
    text: str
    #: The ``error: ...`` line the document shows the command printing (it must, exit 2).
    error: str | None = None

    @property
    def where(self) -> str:
        return f"{self.document.relative_to(ROOT)}:{self.line}"


def _logical_lines(block: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """Join ``\\`` continuations; drop prompts (``$ ``) and comments."""
    joined: list[tuple[int, str]] = []
    pending: tuple[int, str] | None = None
    for number, raw in block:
        line = raw.strip()
        if pending is not None:
            number, line = pending[0], pending[1] + " " + line
            pending = None
        if line.endswith("\\"):
            pending = (number, line[:-1].rstrip())
            continue
        joined.append((number, line.removeprefix("$ ")))
    return joined


def _commands_of(line: str) -> list[list[str]]:
    """The commands of one shell line, as argument lists (comments dropped, ``&&`` split);
    a line that is not shell (a diagram, an output) has none."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars="&")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    try:
        tokens = list(lexer)
    except ValueError:
        return []
    commands: list[list[str]] = [[]]
    for token in tokens:
        if token == "&&":
            commands.append([])
        else:
            commands[-1].append(token)
    return [c for c in commands if c]


def doc_commands(document: Path) -> list[DocCommand]:
    """Every ``byzllm`` command in the fenced command blocks of ``document``, in order."""
    commands: list[DocCommand] = []
    block: list[tuple[int, str]] | None = None
    info = ""
    for number, line in enumerate(document.read_text(encoding="utf-8").splitlines(), 1):
        fence = re.match(r"^\s*```(.*)$", line)
        if fence:
            if block is None:
                block, info = [], fence.group(1).strip()
                continue
            if info in ("bash", "sh", "console", "shell", ""):
                lines = _logical_lines(block)
                for k, (start, text) in enumerate(lines):
                    after = lines[k + 1][1] if k + 1 < len(lines) else ""
                    error = after if after.startswith("error: ") else None
                    for args in _commands_of(text):
                        if args[0] == "byzllm" and len(args) > 1:
                            commands.append(DocCommand(document, start, shlex.join(args), error))
            block = None
            continue
        if block is not None:
            block.append((number, line))
    return commands


def skip_reason(command: str) -> str | None:
    """Why ``command`` is not run here (``None``: it runs)."""
    for pattern, reason in SKIPPED:
        if re.search(pattern, command):
            return reason
    return None


def smaller(command: str) -> list[str]:
    """The command's arguments, with the options that cut its size appended."""
    args = shlex.split(command)[1:]
    for prefix, extra in SMALLER:
        if command.startswith(prefix) and "--help" not in args:
            if prefix == "byzllm demo" and "--questions" in args:
                index = args.index("--questions")
                args[index + 1] = extra[1]
                return args
            return [*args, *extra]
    return args


def test_the_documents_show_commands() -> None:
    # The collector itself: a renamed folder or a changed fence must not empty the test.
    commands = [c for doc in DOCUMENTS for c in doc_commands(doc)]
    assert len(commands) > 60
    assert any(c.text.startswith("byzllm consensus run examples/sweep.yaml") for c in commands)
    # ... and the failures they show, with the line each prints.
    assert any(c.error and "unknown key" in c.error for c in commands)


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: p.name)
def test_documented_commands_run(
    document: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    commands = doc_commands(document)
    runnable = [c for c in commands if skip_reason(c.text) is None]
    if not runnable:
        pytest.skip(f"{document.name}: no command runs without a model or the network")
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "160")
    runner = CliRunner()
    for command in runnable:
        for folder, make in PRELUDES.items():
            if folder in command.text and not Path(folder).exists():
                assert runner.invoke(app, make).exit_code == 0, f"{command.where}: {make}"
        # A failing example runs as written: cutting its size could change its error.
        args = shlex.split(command.text)[1:] if command.error else smaller(command.text)
        result = runner.invoke(app, args)
        if command.error is not None:
            assert result.exit_code == 2 and command.error in result.stderr.splitlines(), (
                f"{command.where}: `{command.text}` should print `{command.error}` and exit 2; "
                f"exited {result.exit_code}\n{result.output[-3000:]}"
            )
            continue
        assert result.exit_code == 0, (
            f"{command.where}: `{command.text}` exited {result.exit_code}\n"
            f"{result.output[-3000:]}\n{result.exception!r}"
        )
