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
browser that ``--open`` would start is replaced by a stub that records the page.

The commands on the shipped real models run too, each as written with only the model
substituted (:func:`stand_in_models`), because generating with the real weights on CPU takes
minutes to hours: ``--real NAME`` gets the fake server in place of the llama.cpp server that
``LocalServer`` would start (its arguments still checked against ``LocalServer``'s
signature; no weights are read, so ``qwen1.5b`` needs no ``local-large`` extra), and
``--model local`` builds the in-process llama.cpp model as usual (the shipped file resolved
and hash-checked, its vocabulary read) but each generation is answered by the fake server
instead of the weights. tests/real_model runs the real paths (``sac-table1 --real`` on
SmolLM2, ``demo --model local`` on one question). ``byzllm serve`` is cheap enough to run
for real: in a child process, on a free port instead of 8000 (:func:`serve_briefly`: it
waits for the URL the command prints, asks ``/v1/models`` and one completion of the shipped
Qwen 0.5B, presses Ctrl-C and expects a clean exit). The fake model answers a request
constrained by a JSON schema (the WhoDunit moves) with the first value the schema allows
(:func:`schema_instance`), as a grammar-constrained server must answer something valid.

Nothing is skipped; :data:`SKIPPED` stays as the one place a skip would be declared, with its
reason, and the number skipped is asserted (:data:`EXPECTED_SKIPPED`), so a new skip is a
visible change. A failing command fails its document's test with the file, line, command,
exit code and output. A command the document shows failing (a ``$ byzllm ...`` line
followed by its ``error: ...`` line) must fail just so: exit 2 and that very line on stderr.
"""

from __future__ import annotations

import inspect
import itertools
import json
import re
import shlex
import shutil
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from byzllm.cli import app
from byzllm.testing import FakeOpenAIServer

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

#: (pattern, reason): a command matching the pattern is not run here, for want of what CI
#: does not have. Empty: every documented command runs.
SKIPPED: list[tuple[str, str]] = []

#: How many documented commands :data:`SKIPPED` leaves out; a change is a visible decision.
EXPECTED_SKIPPED = 0

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
    # The shipped model is stood in for (stand_in_models): one question shows the path.
    ("byzllm demo --model local", ["--questions", "1"]),
    ("byzllm demo", ["--questions", "3"]),
    # Any free port: 8000 may be taken on the machine that runs the tests.
    ("byzllm serve", ["--port", "0"]),
    # Three games per split: with one, every training game has the same outcome, from
    # which no monitor can learn (the command stops, as it should).
    ("byzllm reproduce ra-fig4 --real", ["-n", "3"]),
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


def _fake_model(request: dict[str, Any]) -> str:
    response_format = request.get("response_format")
    if isinstance(response_format, dict) and response_format.get("type") == "json_schema":
        return json.dumps(schema_instance(response_format["json_schema"]["schema"]))
    return FAKE_SCORE if "Score" in str(request.get("messages")) else FAKE_ANSWER


def schema_instance(schema: dict[str, Any]) -> Any:
    """The first value ``schema`` allows: its first alternative, first enum value, required
    keys only (the subset of JSON Schema that byzllm's constrained replies use)."""
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    if "anyOf" in schema:
        return schema_instance(schema["anyOf"][0])
    kind = schema.get("type")
    if kind == "object":
        properties = schema.get("properties", {})
        return {key: schema_instance(properties[key]) for key in schema.get("required", [])}
    if kind == "array":
        return [schema_instance(schema["items"])] * schema.get("minItems", 0)
    defaults = {"string": "", "integer": 0, "number": 0, "boolean": False, "null": None}
    if kind not in defaults:
        raise ValueError(f"no instance for the schema {schema}")
    return defaults[kind]


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


def makes(args: list[str], folder: str) -> bool:
    """Whether the command writes ``folder`` itself (``-o folder``): it needs no prelude."""
    return any(
        flag in ("-o", "--run-dir") and value.rstrip("/") == folder.rstrip("/")
        for flag, value in itertools.pairwise(args)
    )


def needs_local_extra(command: str) -> bool:
    """Whether ``command`` loads a shipped model's file (the ``local`` extra)."""
    return bool(re.search(r"--model local\b|^byzllm serve\b", command))


@dataclass
class StandIns:
    """What the documented commands asked of the shipped models, answered by the fake server."""

    #: The model of each llama.cpp server a ``--real`` command started.
    servers: list[str] = field(default_factory=list)
    #: The generations asked of the in-process model (``--model local``).
    generations: list[str] = field(default_factory=list)


def stand_in_models(monkeypatch: pytest.MonkeyPatch, base_url: str) -> StandIns:
    """Substitute the shipped models' generation (see the module docstring); what the commands
    then asked of them is recorded in the returned :class:`StandIns`."""
    from byzllm.llm import LocalServer, _llamacpp

    used = StandIns()

    class ServedByFake:
        """``LocalServer`` with the fake server behind it: started and stopped at once."""

        def __init__(self, model: str, *args: Any, **kwargs: Any) -> None:
            # A call LocalServer itself would refuse fails here too.
            inspect.signature(LocalServer).bind(model, *args, **kwargs)
            self.model_name, self.base_url = model, base_url
            used.servers.append(model)

        def __enter__(self) -> ServedByFake:
            return self

        def __exit__(self, *exc: object) -> None:
            return None

    def generate_on_fake(
        llama: object,
        body: dict[str, Any],
        *,
        model_name: str,
        context_tokens: int,
        abandoned: object = None,
        deadline: float | None = None,
    ) -> dict[str, Any]:
        """The loaded model's reply, asked of the fake server in the same wire format."""
        request = urllib.request.Request(
            f"{base_url}/chat/completions",
            data=json.dumps({**body, "model": model_name}).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            used.generations.append(model_name)
            reply: dict[str, Any] = json.load(response)
            return reply

    # One stand-in for the loaded weights, as one loaded model serves the whole process.
    loaded = _llamacpp._Loaded(None)
    monkeypatch.setattr("byzllm.llm.LocalServer", ServedByFake)
    monkeypatch.setattr(_llamacpp, "_load", lambda gguf: loaded)
    monkeypatch.setattr(_llamacpp, "generate_chat", generate_on_fake)
    return used


def _ctrl_c_delivered() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def serve_briefly(args: list[str]) -> tuple[int, str]:
    """``byzllm serve`` (``args``) as a reader runs it, in a child process: once it prints the
    URL it serves at, ask ``/v1/models`` and one short completion, then Ctrl-C (SIGINT); the
    command's exit code and all it printed. After a clean exit the URL answers no more."""
    command = [sys.executable, "-c", "from byzllm.cli import main; main()", *args]
    child = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        bufsize=1,
        # As in a reader's terminal: a test run started in the background (a CI job, `cmd &`)
        # inherits SIGINT ignored, and the child would never see the Ctrl-C.
        preexec_fn=_ctrl_c_delivered,
    )
    try:
        assert child.stdout is not None
        printed: list[str] = []
        for line in child.stdout:
            printed.append(line)
            serving = re.fullmatch(r"serving (\S+) at (\S+)", line.strip())
            if serving:
                break
        else:  # it stopped without serving
            return child.wait(timeout=60), "".join(printed)
        name, url = serving.groups()
        with urllib.request.urlopen(f"{url}/models", timeout=30) as response:
            assert [m["id"] for m in json.load(response)["data"]] == [name], printed
        question = {"role": "user", "content": "What is 2 + 5? Answer with the number."}
        body = {"model": name, "messages": [question], "max_tokens": 4, "temperature": 0}
        request = urllib.request.Request(
            f"{url}/chat/completions",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=120) as response:
            reply = json.load(response)
        assert reply["choices"][0]["finish_reason"] in ("stop", "length"), reply
        child.send_signal(signal.SIGINT)
        rest, _ = child.communicate(timeout=60)
        if child.returncode == 0:
            with pytest.raises(OSError):  # URLError included
                urllib.request.urlopen(f"{url}/models", timeout=5)
        return child.returncode, "".join(printed) + rest
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def test_the_documents_show_commands() -> None:
    # The collector itself: a renamed folder or a changed fence must not empty the test.
    commands = [c for doc in DOCUMENTS for c in doc_commands(doc)]
    assert len(commands) > 60
    assert any(c.text.startswith("byzllm consensus run examples/sweep.yaml") for c in commands)
    # ... and the failures they show, with the line each prints; and the configs they show.
    assert any(c.error and "unknown key" in c.error for c in commands)
    assert "my-sweep.yaml" in doc_configs(ROOT / "docs" / "consensus.md")


def test_the_fake_model_answers_a_schema_with_a_value_it_allows() -> None:
    # As a grammar-constrained server does (the WhoDunit moves); other requests as before.
    award = {
        "type": "object",
        "properties": {
            "thoughts": {"type": "string"},
            "action": {"const": 3},
            "character": {"type": "integer", "enum": [2, 3]},
            "note": {"type": "string"},
        },
        "required": ["thoughts", "action", "character"],
    }
    schema = {"anyOf": [award, {"type": "object", "properties": {}, "required": []}]}
    request = {"response_format": {"type": "json_schema", "json_schema": {"schema": schema}}}
    assert json.loads(_fake_model(request)) == {"thoughts": "", "action": 3, "character": 2}
    assert _fake_model({"messages": [{"content": "Score it"}]}) == FAKE_SCORE


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
    require_extra: Callable[..., None],
) -> None:
    commands = doc_commands(document)
    runnable = [c for c in commands if skip_reason(c.text) is None]
    if not commands:
        pytest.skip(f"{document.name} shows no byzllm command")
    if not runnable:
        pytest.skip(f"{document.name}: every command needs what CI does not have")
    if any(needs_local_extra(c.text) for c in runnable):
        require_extra("llama_cpp", extra="local")
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
    used = stand_in_models(monkeypatch, base_url)
    runner = CliRunner()
    for command in runnable:
        # A failing example runs as written: cutting its size could change its error.
        args = shlex.split(command.text)[1:] if command.error else smaller(command.text)
        args = on_server([arg.replace("{base_url}", base_url) for arg in args], base_url)
        for folder, make in PRELUDES.items():
            if folder in command.text and not Path(folder).exists() and not makes(args, folder):
                make = [arg.replace("{base_url}", base_url) for arg in make]
                made = runner.invoke(app, make)
                assert made.exit_code == 0, f"{command.where}: {make}\n{made.output[-3000:]}"
        if args[0] == "serve" and not command.error:
            code, printed = serve_briefly(args)
            assert code == 0 and printed.rstrip().endswith("stopped"), (
                f"{command.where}: `{command.text}` exited {code}\n{printed[-3000:]}"
            )
            continue
        servers, generations = len(used.servers), len(used.generations)
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
        # The stand-ins answered: the command did not reach a real model some other way.
        if "--real" in args:
            assert len(used.servers) > servers, command.where
        if "--model" in args and args[args.index("--model") + 1] == "local":
            assert len(used.generations) > generations, command.where
