"""One rule for every path in a config: relative paths resolve beside the config file, then in
the working directory; a missing one names both places (docs/experiments.md, Configs)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from byzllm.cli import app
from byzllm.errors import ConfigError
from byzllm.experiments.consensus.config import ConsensusConfig
from byzllm.experiments.whodunit import WhoDunitRunConfig
from byzllm.graphs import build, save_graph
from byzllm.runs import ExistingFile, ExperimentConfig, Store, load_config, resolve_config_path

RUNNER = CliRunner()


class DataConfig(ExperimentConfig):
    data: ExistingFile


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_beside_the_config_comes_before_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    configs, cwd = tmp_path / "configs", tmp_path / "cwd"
    beside = _write(configs / "tasks.jsonl", "{}\n")
    _write(cwd / "tasks.jsonl", "{}\n")  # the same name in the working directory loses
    config = _write(configs / "c.yaml", "data: tasks.jsonl\n")
    monkeypatch.chdir(cwd)
    assert load_config(config, DataConfig).data == beside.resolve()


def test_the_working_directory_is_the_fallback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = _write(tmp_path / "configs" / "c.yaml", "data: tasks.jsonl\n")
    in_cwd = _write(tmp_path / "cwd" / "tasks.jsonl", "{}\n")
    monkeypatch.chdir(tmp_path / "cwd")
    assert load_config(config, DataConfig).data == in_cwd.resolve()
    # Without a config file (--set only), the working directory is the one place.
    assert load_config(None, DataConfig, {"data": "tasks.jsonl"}).data == in_cwd.resolve()


def test_not_found_names_both_places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    configs, cwd = tmp_path / "configs", tmp_path / "cwd"
    cwd.mkdir()
    config = _write(configs / "c.yaml", "data: nowhere.jsonl\n")
    monkeypatch.chdir(cwd)
    with pytest.raises(ConfigError) as caught:
        load_config(config, DataConfig)
    message = str(caught.value)
    assert "data: file not found: nowhere.jsonl" in message
    assert f"{configs.resolve()} (beside the config)" in message
    assert f"{cwd.resolve()} (the working directory)" in message
    # The same for every kind of path field: a data set, a graph file.
    bad = _write(
        configs / "bad.yaml",
        "topologies: ['file:g.json']\ndataset: {name: gsm8k, path: q.jsonl}\n",
    )
    with pytest.raises(ConfigError) as caught:
        load_config(bad, ConsensusConfig)
    message = str(caught.value)
    assert "topologies.0: graph file not found: g.json, looked in" in message  # the item named
    assert "dataset.path: data set not found: q.jsonl, looked in" in message
    assert message.count(f"{cwd.resolve()} (the working directory)") == 2
    assert message.count(f"{configs.resolve()} (beside the config)") == 2


def test_a_cache_resolves_like_every_other_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    configs, cwd = tmp_path / "configs", tmp_path / "cwd"
    cwd.mkdir()
    config = _write(configs / "w.yaml", "agents: llm\nmodel: openai/m\ncache: cache.sqlite\n")
    monkeypatch.chdir(cwd)
    # A new cache is created beside the config...
    assert load_config(config, WhoDunitRunConfig).cache == str(configs.resolve() / "cache.sqlite")
    # ... an existing one is found in the working directory when it is not beside the config,
    _write(cwd / "cache.sqlite", "")
    assert load_config(config, WhoDunitRunConfig).cache == str(cwd.resolve() / "cache.sqlite")
    # ... and the one beside the config wins when both exist.
    _write(configs / "cache.sqlite", "")
    assert load_config(config, WhoDunitRunConfig).cache == str(configs.resolve() / "cache.sqlite")


def test_resolved_paths_are_absolute_and_stable(tmp_path: Path) -> None:
    assert resolve_config_path(tmp_path, config_dir=None, kind="directory") == tmp_path.resolve()
    with pytest.raises(ConfigError, match=r"^path not found: /no/such/thing$"):
        resolve_config_path("/no/such/thing", config_dir=tmp_path, kind="path")
    # A resolved value validates to itself again (a unit's work re-validates its payload).
    data = _write(tmp_path / "d.jsonl", "{}\n")
    first = load_config(None, DataConfig, {"data": str(data)})
    assert DataConfig.model_validate(first.model_dump()) == first


def _project(root: Path) -> Path:
    """configs/sweep.yaml naming ../data/gsm8k.jsonl and ../graphs/k7.json, relatively."""
    rows = [
        {"question": f"What is {a} + {a}?", "answer": f"{a} and {a} make {2 * a}.\n#### {2 * a}"}
        for a in range(1, 6)
    ]
    _write(root / "data" / "gsm8k.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    (root / "graphs").mkdir(parents=True)
    save_graph(build("complete", n=7), root / "graphs" / "k7.json")
    sweep = {
        "protocols": ["sac"],
        "topologies": ["file:../graphs/k7.json"],
        "dataset": {"name": "gsm8k", "path": "../data/gsm8k.jsonl", "n": 3},
    }
    return _write(root / "configs" / "sweep.yaml", yaml.safe_dump(sweep))


@pytest.mark.parametrize("where", ["elsewhere", "configs", "project"])
def test_a_config_in_another_folder_runs_from_any_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """Acceptance: relative `dataset.path` and `file:` graph paths, any working directory."""
    project = tmp_path / "project"
    config = _project(project)
    cwd = {"elsewhere": tmp_path / "elsewhere", "configs": config.parent, "project": project}
    cwd[where].mkdir(exist_ok=True)
    monkeypatch.chdir(cwd[where])
    run_dir = tmp_path / "run"
    result = RUNNER.invoke(app, ["consensus", "run", str(config), "-o", str(run_dir), "--json"])
    assert result.exit_code == 0, result.output
    with Store.open(run_dir) as store:
        questions = store.records("consensus_question")
    assert len(questions) == 3
    assert {q["topology"] for q in questions} == {f"file:{(project / 'graphs/k7.json').resolve()}"}


def test_a_resume_from_another_working_directory_runs_nothing_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = _project(tmp_path / "project")
    run_dir = tmp_path / "run"
    monkeypatch.chdir(config.parent)
    first = RUNNER.invoke(app, ["consensus", "run", "sweep.yaml", "-o", str(run_dir), "--json"])
    assert first.exit_code == 0, first.output
    assert json.loads(first.stdout)["done"] == 3
    monkeypatch.chdir(tmp_path)
    again = RUNNER.invoke(
        app, ["consensus", "run", "project/configs/sweep.yaml", "-o", str(run_dir), "--json"]
    )
    assert again.exit_code == 0, again.output
    summary = json.loads(again.stdout)
    assert (summary["done"], summary["skipped"]) == (0, 3)


def test_a_path_of_the_wrong_kind_is_named_as_what_it_is(tmp_path: Path) -> None:
    # A folder, or a named pipe, where a file is wanted was "not found", though it is there.
    folder = tmp_path / "d.jsonl"
    folder.mkdir()
    with pytest.raises(ConfigError) as info:
        load_config(None, DataConfig, {"data": str(folder)})
    assert f"data: file {folder}: {folder} is a folder, not a file" in str(info.value)
    plain = _write(tmp_path / "plain.txt", "")
    with pytest.raises(ConfigError, match=r"plain\.txt is a file, not a folder$"):
        resolve_config_path(plain, config_dir=None, kind="directory")
    with pytest.raises(ConfigError, match=r"^config file .* is a folder, not a YAML file$"):
        load_config(folder, DataConfig)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_a_named_pipe_as_config_is_refused_as_what_it_is(tmp_path: Path) -> None:
    pipe = tmp_path / "c.yaml"
    os.mkfifo(pipe)
    with pytest.raises(ConfigError, match="is a pipe, socket or device, not a YAML file"):
        load_config(pipe, DataConfig)
