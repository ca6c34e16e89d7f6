"""Every ``byzllm`` command the README and docs/*.md show runs, as written.

The commands are read from the fenced blocks of each document (a ``bash`` block, or a plain
one whose lines start with ``byzllm``), one command per line (``\\`` continues a line,
``&&`` chains commands, ``#`` starts a comment). They run in document order in one scratch
folder per document, which holds a copy of ``examples/`` and a HumanEval-format file of
HumanEval's size (``HumanEval.jsonl.gz``, tiny problems: byzllm does not ship HumanEval), so
a report finds the run an earlier command made. Sizes are cut (:data:`SMALLER`: fewer
questions or games, appended after the document's own options) so the whole file takes
minutes, not hours. Commands on a model server (``--model provider/name``, ``--base-url``,
``models probe``) run against :class:`~byzllm.testing.FakeOpenAIServer`: their ``--base-url``
is pointed at it (added where the document relies on the provider's default URL); a
browser that ``--open`` would start is replaced by a stub that records the page. Only what
CI cannot have is skipped, each with its reason (:data:`SKIPPED`: the shipped real models on
CPU, a server that runs until stopped, the reader's own data); the number skipped is
asserted (:data:`EXPECTED_SKIPPED`), so a new skip is a visible change. A failing command
fails its document's test with the file, line, command, exit code and output. A command the
document shows failing (a ``$ byzllm ...`` line followed by its ``error: ...`` line) must
fail just so: exit 2 and that very line on stderr.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from byzllm.cli import app
from byzllm.testing import FakeOpenAIServer

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

#: (pattern, reason): a command matching the pattern is not run here, for want of what CI
#: does not have.
SKIPPED: list[tuple[str, str]] = [
    (
        r"--model local\b",
        "runs the shipped Qwen2.5-Coder-0.5B in process: several minutes on 2 CPU cores "
        "(tests/real_model/test_local_model.py runs it on 1 question)",
    ),
    (
        r"--real\b",
        "starts llama.cpp servers on the shipped models: an hour or more on CPU "
        "(tests/real_model/test_reproduce_real.py runs sac-table1 --real on SmolLM2)",
    ),
    (
        r"^byzllm serve\b",
        "serves the shipped Qwen 0.5B on port 8000 until stopped "
        "(tests/real_model serves SmolLM2 through the same LocalServer)",
    ),
]

#: How many documented commands :data:`SKIPPED` leaves out; a change is a visible decision.
EXPECTED_SKIPPED = 9

#: The data files a document's configs read that byzllm does not ship, written in their
#: format (a few problems) into the scratch folder: MATH-500 (``dataset: {name: math500}``).
READER_DATA: dict[str, list[dict[str, object]]] = {
    "data/math500.jsonl": [
        {"problem": f"What is {k} + 7 - {k}?", "answer": "7", "level": 4, "unique_id": f"t/{k}"}
        for k in range(3)
    ],
}

#: The model every fake-server command gets: SAC's scoring prompts are answered with a
#: score, every other prompt with a final answer (games then fall back, as documented).
FAKE_ANSWER, FAKE_SCORE = "Answer: 7", "0.8"

#: One seed, and the strong group on the fake model server.
_SERVED = ["--set", "seeds=[0]", "--set", "agents.strong.base_url={base_url}"]

#: (command prefix, options appended): the same command on a small grid.
SMALLER: list[tuple[str, list[str]]] = [
    ("byzllm demo", ["--questions", "3"]),
    # Fewer training problems leave the monitors one outcome to learn from.
    ("byzllm reproduce ra-table1", ["-n", "10"]),
    ("byzllm reproduce --list", []),
    ("byzllm reproduce", ["-n", "1"]),
    ("byzllm codegen collect", ["--set", "n_train=20", "--set", "n_validation=6"]),
    ("byzllm codegen run", ["--set", "n_test=4"]),
    # The config's own model, on the fake server ({base_url}, as in PRELUDES).
    ("byzllm consensus run my-sweep.yaml", ["--set", "dataset.n=1", *_SERVED]),
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


#: Runs a document reads (``runs show``, ``view``, ``sim fit``) without making them: made
#: first, small (``{base_url}``: the fake model server's).
PRELUDES: dict[str, list[str]] = {
    "runs/demo": ["demo", "--questions", "3"],
    "runs/sweep": ["consensus", "run", "examples/sweep.yaml", "--set", "dataset.n=2"],
    "runs/real": [
        "demo", "--model", "openai/qwen0.5b", "--base-url", "{base_url}", "-o", "runs/real",
        "--questions", "3",
    ],
    "experiments/": ["demo", "--questions", "3", "-o", "experiments/demo"],
}  # fmt: skip


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


def on_server(args: list[str], base_url: str) -> list[str]:
    """``args`` with every model server pointed at ``base_url``: a ``--base-url`` replaced, and
    one added to a ``--model provider/name`` that relies on the provider's default URL."""
    args = list(args)
    if "--base-url" in args:
        args[args.index("--base-url") + 1] = base_url
        return args
    models = [args[k + 1] for k, arg in enumerate(args[:-1]) if arg in ("--model", "-m")]
    if any("/" in model and not model.endswith(".json") for model in models):
        args += ["--base-url", base_url]
    return args


def _fake_model(request: dict[str, object]) -> str:
    return FAKE_SCORE if "Score" in str(request.get("messages")) else FAKE_ANSWER


def doc_configs(document: Path) -> dict[str, str]:
    """The config files ``document`` shows: each fenced ``yaml`` block whose first line names
    its file (``# my-sweep.yaml: ...``), by that name."""
    blocks = re.findall(
        r"^```ya?ml\n(# ([\w.-]+\.ya?ml)\b.*?\n.*?)^```",
        document.read_text(encoding="utf-8"),
        flags=re.M | re.S,
    )
    return {name: text for text, name in blocks}


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
    # ... and the failures they show, with the line each prints; and the configs they show.
    assert any(c.error and "unknown key" in c.error for c in commands)
    assert "my-sweep.yaml" in doc_configs(ROOT / "docs" / "consensus.md")


def test_only_what_ci_cannot_have_is_skipped() -> None:
    commands = [c for doc in DOCUMENTS for c in doc_commands(doc)]
    skipped = [(c, skip_reason(c.text)) for c in commands if skip_reason(c.text) is not None]
    run = len(commands) - len(skipped)
    print(f"documented commands: {len(commands)}; run {run}, skipped {len(skipped)}:")
    for command, reason in skipped:
        print(f"  {command.where}: {command.text}  ({reason})")
    assert len(skipped) == EXPECTED_SKIPPED, [c.where for c, _ in skipped]
    # Every pattern still matches a command: a stale one would hide the next new skip.
    for pattern, reason in SKIPPED:
        assert any(re.search(pattern, c.text) for c in commands), (pattern, reason)


@pytest.fixture(scope="module")
def model_server() -> Iterator[FakeOpenAIServer]:
    """The model server of every documented command that names one."""
    with FakeOpenAIServer(_fake_model) as server:
        yield server


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: p.name)
def test_documented_commands_run(
    document: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    model_server: FakeOpenAIServer,
    humaneval_file: Callable[..., Path],
) -> None:
    commands = doc_commands(document)
    runnable = [c for c in commands if skip_reason(c.text) is None]
    if not commands:
        pytest.skip(f"{document.name} shows no byzllm command")
    if not runnable:
        pytest.skip(f"{document.name}: every command needs what CI does not have")
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    humaneval_file(tmp_path / "HumanEval.jsonl.gz", 164)
    for name, text in doc_configs(document).items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    for name, rows in READER_DATA.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "160")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    opened: list[str] = []
    monkeypatch.setattr("webbrowser.open", lambda url, *a, **k: opened.append(url) or True)
    base_url = model_server.base_url
    runner = CliRunner()
    for command in runnable:
        for folder, make in PRELUDES.items():
            if folder in command.text and not Path(folder).exists():
                make = [arg.replace("{base_url}", base_url) for arg in make]
                made = runner.invoke(app, make)
                assert made.exit_code == 0, f"{command.where}: {make}\n{made.output[-3000:]}"
        # A failing example runs as written: cutting its size could change its error.
        args = shlex.split(command.text)[1:] if command.error else smaller(command.text)
        args = on_server([arg.replace("{base_url}", base_url) for arg in args], base_url)
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
        if "--open" in args:
            assert opened and opened[-1].startswith("file://"), command.where
