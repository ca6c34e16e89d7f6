"""Command-line input that a run must refuse with one line (or say something about), never
ignore, act on too broadly or answer with a traceback."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from byzllm.cli import app
from byzllm.runs import Store

RUNNER = CliRunner()


def _invoke(*args: str) -> tuple[int, str, str]:
    result = RUNNER.invoke(app, list(args))
    assert "Traceback" not in result.output, result.output
    return result.exit_code, result.stdout, result.stderr


def _error_line(stderr: str) -> str:
    (line,) = [line for line in stderr.splitlines() if line.startswith("error:")]
    return line


def _closed_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@pytest.mark.parametrize(
    "command",
    [
        ["whodunit", "run", "--set", "n_games=1"],
        ["consensus", "run", "--set", "dataset.n=1"],
        ["consensus", "matrix", "-n", "1"],
        ["govsim", "play"],
        ["whodunit", "play"],
    ],
)
def test_base_url_without_a_model_is_refused(tmp_path: Path, command: list[str]) -> None:
    runs = ["-o", str(tmp_path / "run")] if command[-1] != "play" else []
    code, _, err = _invoke(*command, *runs, "--base-url", "http://127.0.0.1:9/v1")
    assert code == 2
    assert _error_line(err) == (
        "error: --base-url needs --model, the model to run there (e.g. --model openai/gpt-4o-mini)"
    )
    assert not (tmp_path / "run").exists()


def test_a_config_model_on_simulated_agents_is_a_warning(tmp_path: Path) -> None:
    config = tmp_path / "wd.yaml"
    config.write_text("n_games: 1\nmodel: openai/x\nbase_url: http://127.0.0.1:9/v1\n")
    code, _, err = _invoke("whodunit", "run", str(config), "-o", str(tmp_path / "run"))
    assert code == 0
    (warning,) = [line for line in err.splitlines() if line.startswith("warning:")]
    assert "model openai/x" in warning and "agents is simulated" in warning
    assert "agents=llm" in warning


def test_a_refused_model_leaves_the_folder_as_it_was(tmp_path: Path) -> None:
    run = tmp_path / "run"
    code, _, err = _invoke(
        "whodunit", "run", "--set", "n_games=1", "-o", str(run),
        "--model", "openai/typo", "--base-url", _closed_url(),
    )  # fmt: skip
    assert code == 2 and "before the first unit" in _error_line(err)
    assert not run.exists()
    code, _, err = _invoke("whodunit", "run", "--model", "nosuch/model", "-o", str(run))
    assert code == 2 and "unknown model provider" in _error_line(err)
    assert not run.exists()
    # The corrected command runs there without --force.
    code, _, _ = _invoke("whodunit", "run", "--set", "n_games=1", "-o", str(run))
    assert code == 0


def test_a_refused_model_keeps_an_earlier_run_under_force(tmp_path: Path) -> None:
    run = tmp_path / "run"
    assert _invoke("whodunit", "run", "--set", "n_games=2", "-o", str(run))[0] == 0
    with Store.open(run) as store:
        before = (store.counts(), len(store.runs()), store.latest_config())
    code, _, _ = _invoke(
        "whodunit", "run", "--set", "n_games=1", "-o", str(run), "--force",
        "--model", "openai/typo", "--base-url", _closed_url(),
    )  # fmt: skip
    assert code == 2
    with Store.open(run) as store:
        assert (store.counts(), len(store.runs()), store.latest_config()) == before


@pytest.mark.parametrize(
    "command",
    [
        ["graph", "build", "merg", "-n", "7", "--out"],
        ["govsim", "generate", "-o"],
    ],
)
def test_a_folder_as_output_file_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    for folder in (".", str(tmp_path)):
        code, _, err = _invoke(*command, folder)
        assert code == 2
        assert _error_line(err).startswith("error: Is a directory, not a file name: ")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("flag", ["--attacks", "--protocols", "--topologies"])
def test_an_empty_matrix_list_is_refused(tmp_path: Path, flag: str) -> None:
    code, _, err = _invoke("consensus", "matrix", flag, " , ", "-o", str(tmp_path / "m"))
    assert code == 2
    expected = f"error: {flag} needs at least one value (comma-separated), got ' , '"
    assert _error_line(err) == expected
    assert not (tmp_path / "m").exists()


def test_a_composition_without_honest_agents_is_refused(tmp_path: Path) -> None:
    code, _, err = _invoke(
        "consensus", "run", "-o", str(tmp_path / "c"),
        "--set", "compositions=[{strong: 0, weak: 0, byzantine: 2}]",
    )  # fmt: skip
    assert code == 2
    assert "compositions.0: a composition needs at least one honest agent" in _error_line(err)


@pytest.mark.parametrize(
    ("area", "setting"),
    [
        ("consensus", "F=[true]"),
        ("consensus", "T=[false]"),
        ("consensus", "dataset.n=true"),
        ("consensus", "compositions=[{strong: true}]"),
        ("consensus", "agents.strong.temperature=true"),
        # Sections that are not experiment configs: a model's retry policy, a simulator's
        # parameters, a game's rules.
        ("consensus", "agents.strong.retry.max_attempts=true"),
        ("whodunit", "sim.rogue_rate=true"),
        ("govsim", "govsim.lake.collapse_below=true"),
        ("whodunit", "n_games=true"),
        ("whodunit", "max_concurrency=true"),
        ("govsim", "repeats=true"),
    ],
)
def test_true_or_false_for_a_number_is_refused(tmp_path: Path, area: str, setting: str) -> None:
    code, _, err = _invoke(area, "run", "--set", setting, "-o", str(tmp_path / "r"))
    assert code == 2
    assert "expects a number, not true or false" in _error_line(err)
    assert not (tmp_path / "r").exists()


def test_bools_stay_bools() -> None:
    from byzllm.experiments.whodunit.config import WhoDunitRunConfig

    # A bool field and a number field side by side: only the number refuses true.
    fields = WhoDunitRunConfig.model_fields
    flag = next(name for name, f in fields.items() if f.annotation is bool)
    assert getattr(WhoDunitRunConfig.model_validate({flag: True}), flag) is True


def test_demo_fresh_leaves_another_experiment_alone(tmp_path: Path) -> None:
    run = tmp_path / "run"
    assert _invoke("whodunit", "run", "--set", "n_games=1", "-o", str(run))[0] == 0
    code, _, err = _invoke("demo", "-o", str(run), "--fresh", "--questions", "1")
    assert code == 2
    assert "holds a WhoDunitRunConfig run" in _error_line(err)
    with Store.open(run) as store:
        assert store.kinds().keys() >= {"whodunit_game"}


def test_demo_fresh_deletes_the_store_only(tmp_path: Path) -> None:
    run = tmp_path / "run"
    assert _invoke("demo", "-o", str(run), "--questions", "1")[0] == 0
    kept = run / "report" / "notes.txt"
    kept.parent.mkdir()
    kept.write_text("mine")
    code, _, _ = _invoke("demo", "-o", str(run), "--fresh", "--questions", "2", "--seed", "1")
    assert code == 0 and kept.read_text() == "mine"
    with Store.open(run) as store:
        assert len(store.runs()) == 1


def test_an_empty_run_dir_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for command in (["whodunit", "run"], ["demo"], ["consensus", "matrix"]):
        result = RUNNER.invoke(app, [*command, "-o", ""])
        assert result.exit_code == 2
        assert "give a folder, not an empty string" in result.output
    assert list(tmp_path.iterdir()) == []


def test_codegen_says_what_it_cannot_do(
    tmp_path: Path, humaneval_file: Callable[..., Path]
) -> None:
    problems = humaneval_file(tmp_path / "he.jsonl", 20)
    collect = tmp_path / "collect"
    code, _, err = _invoke(
        "codegen", "collect", "--set", f"problems={problems}", "--set", "n_train=30",
        "--set", "n_validation=1", "-o", str(collect),
    )  # fmt: skip
    assert code == 0
    (short,) = [line for line in err.splitlines() if line.startswith("warning:")]
    assert short.startswith("warning: n_train=30, but the train split of ")
    assert short.endswith("holds 10 problems: running 10")
    code, _, err = _invoke("codegen", "report", str(collect))
    assert code == 2
    line = _error_line(err)
    assert "nothing to report" in line and f"byzllm codegen train {collect}" in line
    code, _, err = _invoke(
        "codegen", "run", "--set", f"problems={problems}", "--set", "n_test=1",
        "-o", str(tmp_path / "run"),
    )  # fmt: skip
    assert code == 0
    hint = next(line for line in err.splitlines() if "no --monitors" in line)
    assert "`byzllm codegen train RUN_DIR`" in hint


def test_a_train_command_on_another_run_names_the_command_it_needs(
    tmp_path: Path, humaneval_file: Callable[..., Path]
) -> None:
    """`monitor train` on a `codegen collect` run (and the reverse) named `byzllm monitor
    collect` as the missing step, and `codegen train` on a `codegen run` run did too."""
    problems = humaneval_file(tmp_path / "he.jsonl", 20)
    cg_collect, cg_run = tmp_path / "cg-collect", tmp_path / "cg-run"
    mon_collect = tmp_path / "mon-collect"
    for command in (
        ["codegen", "collect", "--set", f"problems={problems}", "-o", str(cg_collect)],
        ["codegen", "run", "--set", f"problems={problems}", "--set", "n_test=1",
         "--set", "conditions=[none]", "-o", str(cg_run)],
        ["monitor", "collect", "--set", "n_train=4", "--set", "n_validation=2",
         "-o", str(mon_collect)],
    ):  # fmt: skip
        assert _invoke(*command)[0] == 0
    code, _, err = _invoke("monitor", "train", str(cg_collect))
    assert code == 2
    assert _error_line(err) == (
        f"error: {cg_collect} holds CodeGen turns, not WhoDunit or GovSim ones: train its "
        f"monitors with `byzllm codegen train {cg_collect}`"
    )
    code, _, err = _invoke("codegen", "train", str(mon_collect))
    assert code == 2
    assert _error_line(err) == (
        f"error: {mon_collect} holds WhoDunit or GovSim turns, not CodeGen ones: train its "
        f"monitors with `byzllm monitor train {mon_collect}`"
    )
    code, _, err = _invoke("codegen", "train", str(cg_run))
    assert code == 2
    assert _error_line(err) == "error: no train turns collected: run `byzllm codegen collect` first"
    empty = tmp_path / "consensus"
    assert _invoke("consensus", "run", "--set", "dataset.n=1", "-o", str(empty))[0] == 0
    code, _, err = _invoke("monitor", "train", str(empty))
    assert code == 2
    assert _error_line(err) == (
        f"error: {empty} holds no collected WhoDunit or GovSim turns (it has: "
        "consensus_question, consensus_round): run `byzllm monitor collect` first"
    )


def test_a_codegen_report_over_fewer_problems_than_n_test_says_so(
    tmp_path: Path, humaneval_file: Callable[..., Path]
) -> None:
    problems = humaneval_file(tmp_path / "he.jsonl", 20)  # a test split of 6
    for n_test, warned in ((40, True), (6, False)):
        run = tmp_path / f"run-{n_test}"
        code, _, _ = _invoke(
            "codegen", "run", "--set", f"problems={problems}", "--set", f"n_test={n_test}",
            "--set", "conditions=[zero-shot]", "-o", str(run),
        )  # fmt: skip
        assert code == 0
        for json_flag in ([], ["--json"]):
            code, out, err = _invoke("codegen", "report", str(run), *json_flag)
            assert code == 0
            warnings = [line for line in err.splitlines() if line.startswith("warning:")]
            expected = f"warning: n_test={n_test}, but the table's rows hold 6 test problems"
            assert [w.startswith(expected) for w in warnings] == ([True] if warned else [])
        assert json.loads(out)["n_test"] == n_test


def test_every_section_a_user_fills_in_refuses_a_bool_for_a_number() -> None:
    from pydantic import ValidationError

    from byzllm.envs.whodunit import GameConfig
    from byzllm.llm import RetryPolicy
    from byzllm.sandbox import SandboxLimits

    sections = (
        (RetryPolicy, "max_attempts"),
        (SandboxLimits, "timeout_s"),
        (GameConfig, "n_suspects"),
    )
    for section, number in sections:
        with pytest.raises(ValidationError, match="not true or false"):
            section.model_validate({number: True})
        assert getattr(section.model_validate({number: 5}), number) == 5


def test_a_model_a_simulated_section_never_calls_is_named(tmp_path: Path) -> None:
    from byzllm.experiments.consensus.config import ConsensusConfig
    from byzllm.runs._model_config import idle_models

    config = ConsensusConfig.model_validate({"agents": {"strong": {"model": "openai/x"}}})
    assert idle_models(config) == [
        "agents.strong names model openai/x but agents.strong.backend is simulated: that "
        "model is not called; set agents.strong.backend=llm to run on it"
    ]
    code, _, err = _invoke(
        "whodunit", "run", "--set", "model=openai/x", "--set", "n_games=1",
        "-o", str(tmp_path / "w"),
    )  # fmt: skip
    assert code == 0
    assert (
        "warning: the config names model openai/x but agents is simulated: that model is not "
        "called; set agents=llm to run on it" in err
    )
    llm = ConsensusConfig.model_validate(
        {"agents": {"strong": {"model": "openai/x", "backend": "llm"}}}
    )
    assert idle_models(llm) == []


def test_a_data_set_path_that_is_a_folder_is_named_a_folder(tmp_path: Path) -> None:
    code, _, err = _invoke(
        "consensus", "run", "-o", str(tmp_path / "run"), "--set", "dataset.name=gsm8k",
        "--set", f"dataset.path={tmp_path}", "--set", "dataset.n=1", "--set", "T=[1]",
    )  # fmt: skip
    assert code == 2
    assert _error_line(err) == f"error: {tmp_path}: a folder, not a file"


def test_only_the_synthetic_data_set_is_limited_in_size(tmp_path: Path) -> None:
    from byzllm.experiments.consensus.config import DatasetConfig
    from byzllm.tasks import MAX_TASKS

    assert DatasetConfig(n=MAX_TASKS).n == MAX_TASKS
    # A file's n is bounded by the file: sampling more than it holds is its own error.
    data = tmp_path / "gsm8k.jsonl"
    data.write_text("")
    big = DatasetConfig(name="gsm8k", path=str(data), n=MAX_TASKS + 1)
    assert big.n == MAX_TASKS + 1


@pytest.mark.parametrize(
    ("command", "problem"),
    [
        # A field validator's message, the value once, as written ([3, 1], not (3, 1)).
        (
            ["consensus", "run", "-s", "dataset.steps=[3,1]"],
            "dataset.steps: steps must be 1-8 or a range [low, high] within it (got [3, 1])",
        ),
        # A profile checked against the simulated profile: named from the section, and the
        # section (every backend setting) not dumped after it.
        (
            ["consensus", "run", "-s", "agents.strong.profile.strength=.nan"],
            "agents: strong.profile.strength: Input should be less than or equal to 1 (got nan)",
        ),
        # A field of two types: what it takes, once.
        (
            ["consensus", "run", "-s", "dataset.steps=abc"],
            "dataset.steps: expects an integer or a list of 2 integers (got 'abc')",
        ),
        # The synthetic family builds every question first: a huge n is refused up front.
        (
            ["consensus", "run", "-s", "dataset.n=100000000"],
            "dataset.n: the synthetic data set makes at most 100,000 questions (got 100000000)",
        ),
        # A section's own validator: its message, not the section.
        (
            ["consensus", "run", "-s", "dataset.name=gsm8k"],
            "dataset: dataset 'gsm8k' needs a path to its local file",
        ),
        (
            ["consensus", "run", "-s", "compositions.0.placement=given"],
            "compositions.0: placement 'given' needs 1 distinct byzantine_nodes, got []",
        ),
        (
            ["consensus", "run", "-s", "agents.weak.backend=llm"],
            "agents.weak: an llm backend needs a model, e.g. openai/gpt-4o-mini",
        ),
        # A validator that quotes what it refuses; a list names its item.
        (
            ["consensus", "run", "-s", "compositions.0.attack=bribe"],
            "compositions.0.attack: unknown attack 'bribe'; choose one of replay, "
            "confident-wrong, equivocate, collude, inject, mimic",
        ),
        (
            ["consensus", "run", "-s", "topologies=[merg, moebius]"],
            "topologies.1: unknown topology 'moebius'; choose from merg, gg-merg, complete, "
            "preferential, erdos-renyi, k-circulant, ring-lattice, star, chain, tree, layered "
            "or file:PATH",
        ),
        (
            ["whodunit", "run", "-s", "base_url=localhost"],
            "base_url: base_url must start with http:// or https://, got 'localhost' "
            "(e.g. http://127.0.0.1:8000/v1)",
        ),
        # The whole config's validator: no "<top>", no dump of the config.
        (
            ["whodunit", "run", "-s", "final_move=accuse"],
            "final_move: accuse needs decoding: schema",
        ),
        (
            ["govsim", "run", "-s", "agents=llm"],
            "agents: llm needs a model (e.g. model: openai/gpt-4o-mini)",
        ),
        (
            ["codegen", "collect", "-s", "test_split=livecodebench"],
            "test_split: livecodebench needs livecodebench: FILE",
        ),
        # pydantic's own messages: the value once.
        (
            ["whodunit", "run", "-s", "top_logprobs=30"],
            "top_logprobs: must be at most max_top_logprobs=20 (raise that if the server "
            "allows more) (got 30)",
        ),
        (["consensus", "run", "-s", "seeds=3"], "seeds: Input should be a valid list (got 3)"),
        # A top-level key written under a section: the top-level key is suggested.
        (
            ["codegen", "collect", "-s", "dataset.problems=x.jsonl"],
            "dataset.problems: unknown key (did you mean 'problems'?)",
        ),
    ],
)
def test_a_wrong_set_value_names_the_field_and_the_value_once(
    tmp_path: Path, command: list[str], problem: str
) -> None:
    code, _, err = _invoke(*command, "-o", str(tmp_path / "run"))
    assert code == 2
    assert _error_line(err) == f"error: invalid config: {problem}"


@pytest.mark.parametrize("domain", ["consensus", "govsim"])
def test_a_wrong_profile_file_is_named_once(tmp_path: Path, domain: str) -> None:
    profile = tmp_path / "notes.yaml"
    profile.write_text("a: 1\n")
    key = "agents.weak.profile" if domain == "consensus" else "govsim.sim"
    code, _, err = _invoke(domain, "run", "-s", f"{key}={profile}", "-o", str(tmp_path / "r"))
    assert code == 2
    line = _error_line(err)
    assert f": {profile} is not a profile written by `byzllm sim fit`: " in line
    assert line.endswith("; a: unknown key"), line  # no "(got ...)" after it


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    ("command", "what"),
    [
        (["graph", "check", "{pipe}"], "cannot read"),
        (["graph", "draw", "{pipe}", "-o", "{tmp}/g.png"], "cannot read"),
        (["monitor", "evaluate", "-m", "{pipe}", "-o", "{tmp}/run"], "cannot read monitor set"),
        (["codegen", "run", "-m", "{pipe}", "-o", "{tmp}/run"], "cannot read monitor set"),
        (["sim", "compare", "{tmp}", "--profile", "{pipe}"], "cannot read profile"),
    ],
)
def test_a_named_pipe_given_as_an_input_file_is_refused(
    tmp_path: Path, command: list[str], what: str
) -> None:
    # Read whole, a pipe that nothing writes to blocked the command forever.
    pipe = tmp_path / "input.json"
    os.mkfifo(pipe)
    args = [part.format(pipe=pipe, tmp=tmp_path) for part in command]
    code, _, err = _invoke(*args)
    assert code == 2
    assert _error_line(err) == f"error: {what} {pipe}: a pipe, socket or device, not a file"
