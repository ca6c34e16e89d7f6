"""`byzllm <area> run` into an existing folder: the same config resumes, another is refused
(one line naming the differing keys, exit 2) unless --force."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from typer.testing import CliRunner, Result

from byzllm.cli import app

RUNNER = CliRunner()
SMALL = ["--set", "dataset.n=2", "--set", "topologies=[complete]"]


def _run(run_dir: Path, *extra: str) -> tuple[int, str, str]:
    args = ["consensus", "run", *SMALL, *extra, "-o", str(run_dir), "--json"]
    result = RUNNER.invoke(app, args)
    return result.exit_code, result.stdout, result.stderr


def test_a_changed_config_is_refused_and_the_same_one_resumes(tmp_path: Path) -> None:
    code, out, _ = _run(tmp_path, "--set", "protocols=[sac]")
    assert code == 0 and json.loads(out)["done"] == 2
    code, out, err = _run(tmp_path, "--set", "protocols=[sac, debate]", "--set", "seeds=[0, 1]")
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    assert code == 2 and json.loads(out)["error"] == lines[0].removeprefix("error: ")
    assert "differs in protocols, seeds" in lines[0] and "--force" in lines[0]
    # Nothing was run or recorded: the same config still resumes with nothing to do.
    code, out, _ = _run(tmp_path, "--set", "protocols=[sac]")
    assert code == 0 and json.loads(out)["skipped"] == 2 and json.loads(out)["done"] == 0


def test_transport_keys_are_no_difference(tmp_path: Path) -> None:
    # A resumed real-model run starts its server on a new port and may change its limits.
    first = ["--set", "protocols=[sac]", "--set", "agents.strong.timeout_s=30"]
    assert _run(tmp_path, *first)[0] == 0
    moved = ["--set", "protocols=[sac]", "--set", "agents.strong.timeout_s=60"]
    moved += ["--set", "agents.strong.max_concurrency=2"]
    code, out, _ = _run(tmp_path, *moved)
    assert code == 0 and json.loads(out)["skipped"] == 2


def test_force_replaces_the_config_keeping_shared_units(tmp_path: Path) -> None:
    assert _run(tmp_path, "--set", "protocols=[sac, debate]")[0] == 0
    code, out, err = _run(tmp_path, "--set", "protocols=[sac]", "--set", "T=[6]", "--force")
    assert code == 0, err
    summary = json.loads(out)
    assert summary["total"] == 2 and summary["skipped"] == 2
    assert "removed 2 units" in err
    report = RUNNER.invoke(app, ["consensus", "report", str(tmp_path), "--json"])
    assert {row["protocol"] for row in json.loads(report.stdout)["rows"]} == {"sac"}


def _units(run_dir: Path) -> dict[str, int]:
    from byzllm.runs import Store

    with Store.open(run_dir) as store:
        return store.counts()


def _refused(result: Result, *keys: str) -> None:
    """One line, exit 2, naming exactly the differing ``keys``; --json's stdout has the line."""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    assert result.exit_code == 2
    assert json.loads(result.stdout)["error"] == lines[0].removeprefix("error: ")
    assert f"differs in {', '.join(keys)})" in lines[0] and "--force" in lines[0]


def test_demo_binds_its_run_folder(tmp_path: Path) -> None:
    demo = ["demo", "-o", str(tmp_path), "--json"]
    assert RUNNER.invoke(app, [*demo, "--questions", "2"]).exit_code == 0
    before = _units(tmp_path)
    changed = RUNNER.invoke(app, [*demo, "--questions", "3", "--seed", "1"])
    _refused(changed, "seeds", "dataset.n", "dataset.seed")
    assert _units(tmp_path) == before  # nothing pooled
    assert RUNNER.invoke(app, [*demo, "--questions", "2"]).exit_code == 0
    assert _units(tmp_path) == before  # resumed: nothing new to run
    forced = RUNNER.invoke(app, [*demo, "--questions", "3", "--force"])
    assert forced.exit_code == 0 and _units(tmp_path)["done"] == before["done"] * 3 // 2


def test_matrix_binds_its_run_folder(tmp_path: Path) -> None:
    matrix = ["consensus", "matrix", "-o", str(tmp_path), "--attacks", "replay", "--json"]
    matrix += ["--protocols", "sac", "--topologies", "complete", "--adversaries", "1"]
    assert RUNNER.invoke(app, [*matrix, "-n", "1"]).exit_code == 0
    before = _units(tmp_path)
    _refused(RUNNER.invoke(app, [*matrix, "-n", "2", "-T", "2"]), "T", "dataset.n")
    assert _units(tmp_path) == before
    assert RUNNER.invoke(app, [*matrix, "-n", "1"]).exit_code == 0
    assert _units(tmp_path) == before


def test_reproduce_binds_its_run_folder_before_reusing_other_folders(tmp_path: Path) -> None:
    run_dir = tmp_path / "sac-table1"
    table1 = ["reproduce", "sac-table1", "-o", str(run_dir), "--json"]
    assert RUNNER.invoke(app, [*table1, "-n", "1"]).exit_code == 0
    before = _units(run_dir)
    # A sibling folder holds the units -n 2 shares: none may be copied into a refused run.
    _refused(RUNNER.invoke(app, [*table1, "-n", "2"]), "dataset.n")
    assert _units(run_dir) == before
    resumed = RUNNER.invoke(app, [*table1, "-n", "1"])
    assert resumed.exit_code == 0 and _units(run_dir) == before


def test_force_removes_nothing_while_another_process_writes(tmp_path: Path) -> None:
    """The folder is bound under the writer lock: checked before it, --force removed every
    unit of a run that another process was still writing (which then counted its units done
    into a store that no longer held them)."""
    from byzllm.runs._lock import WriterLock
    from byzllm.runs._store import resolve_store_path

    assert _run(tmp_path, "--set", "protocols=[sac, debate]")[0] == 0
    before = _units(tmp_path)
    with WriterLock(resolve_store_path(tmp_path)):  # a writer, as far as the folder can tell
        code, _, err = _run(tmp_path, "--set", "protocols=[sac]", "--force")
        assert code == 2 and "in use by process" in err and "removed" not in err
        # Without --force the config is refused at once (a check that changes nothing), and
        # checked again under the lock, against what the writer will have recorded.
        code, _, err = _run(tmp_path, "--set", "protocols=[sac]")
        assert code == 2 and "holds a run of another config" in err
    assert _units(tmp_path) == before


def _graph_run(run_dir: Path, graph: Path, *extra: str) -> Result:
    args = ["consensus", "run", "--set", "dataset.n=2", "--set", "protocols=[sac]"]
    # No adversary and F = 0: every connected graph passes the robustness checks quietly.
    args += ["--set", "compositions=[{strong: 4, weak: 3, byzantine: 0}]", "--set", "F=[0]"]
    args += ["--set", f"topologies=['file:{graph}']", *extra, "-o", str(run_dir), "--json"]
    return RUNNER.invoke(app, args)


def _question_edges(run_dir: Path) -> list[list[list[int]]]:
    from byzllm.runs import Store

    with Store.open(run_dir) as store:
        return [q["edges"] for q in store.records("consensus_question")]


def test_an_edited_graph_file_is_another_config(tmp_path: Path) -> None:
    """The units of a ``file:`` topology named only the file's path: after the file was
    edited, a rerun found every unit done and the report gave the old graph's results under
    the new file."""
    graph, run_dir = tmp_path / "g.json", tmp_path / "run"
    doc = {"n": 7, "edges": [[u, v] for u in range(7) for v in range(u + 1, 7)]}
    graph.write_text(json.dumps(doc))
    assert _graph_run(run_dir, graph).exit_code == 0
    # The same graph written otherwise (reversed pairs, another order, indented): resumed.
    same = {"edges": [[v, u] for u, v in reversed(doc["edges"])], "n": 7, "directed": False}
    graph.write_text(json.dumps(same, indent=2))
    resumed = _graph_run(run_dir, graph)
    assert resumed.exit_code == 0 and json.loads(resumed.stdout)["skipped"] == 2
    # One edge fewer: another config, refused, nothing pooled.
    graph.write_text(json.dumps({"n": 7, "edges": doc["edges"][1:]}))
    before = _units(run_dir)
    _refused(_graph_run(run_dir, graph), "graph_files")
    assert _units(run_dir) == before
    # --force: the edited graph's units are new units, the old ones and their records gone.
    forced = _graph_run(run_dir, graph, "--force")
    assert forced.exit_code == 0 and json.loads(forced.stdout)["done"] == 2
    assert "removed 2 units" in forced.stderr
    assert [len(edges) for edges in _question_edges(run_dir)] == [20, 20]
    # Another node count: refused as well, before anything runs.
    graph.write_text(json.dumps({"n": 8, "edges": doc["edges"][1:]}))
    grown = _graph_run(run_dir, graph)
    assert grown.exit_code == 2 and "has 8 nodes but the composition has 7" in grown.stderr
    assert _units(run_dir)["done"] == 2


def test_a_run_recorded_without_graph_files_is_not_resumed_into(tmp_path: Path) -> None:
    """A store written before configs recorded their graphs' digests cannot tell which graph
    its units ran: refused (the units now have other ids: they would run beside the old ones
    and the report would count each question twice); --force runs them again."""
    import asyncio
    import sqlite3

    from byzllm.experiments.consensus.config import ConsensusConfig
    from byzllm.experiments.consensus.experiment import consensus_unit, expand_units
    from byzllm.runs import load_config, make_unit, run_units

    graph, run_dir = tmp_path / "g.json", tmp_path / "run"
    graph.write_text(json.dumps({"n": 7, "edges": [[u, u + 1] for u in range(6)] + [[0, 6]]}))
    config = load_config(
        None,
        ConsensusConfig,
        {
            "protocols": ["sac"],
            "topologies": [f"file:{graph}"],
            "compositions": [{"strong": 4, "weak": 3, "byzantine": 0}],
            "F": [0],
            "dataset": {"n": 2},
        },
    )
    # The store as such a run left it: units named by the path alone, no graph_files.
    old = [
        make_unit({k: v for k, v in u.payload.items() if k != "graph_digest"}, u.label)
        for u in expand_units(config)
    ]
    asyncio.run(run_units(run_dir, old, consensus_unit, config=config, progress=False))
    with sqlite3.connect(run_dir / "results.sqlite") as db:
        db.execute("UPDATE runs SET config = json_remove(config, '$.graph_files')")
    db.close()
    _refused(_graph_run(run_dir, graph), "graph_files")
    forced = _graph_run(run_dir, graph, "--force")
    assert forced.exit_code == 0 and json.loads(forced.stdout)["done"] == 2
    assert len(_question_edges(run_dir)) == 2


def _data_run(run_dir: Path, data: Path, *extra: str) -> Result:
    args = ["consensus", "run", "--set", "dataset.name=gsm8k", "--set", f"dataset.path={data}"]
    args += ["--set", "dataset.n=2", "--set", "protocols=[sac]", "--set", "topologies=[complete]"]
    return RUNNER.invoke(app, [*args, *extra, "-o", str(run_dir), "--json"])


def _write_questions(
    data: Path, answers: list[int], separators: tuple[str, str] | None = None
) -> None:
    rows = [
        {"question": f"What is {a} - 0?", "answer": f"{a} - 0 = {a}\n#### {a}"} for a in answers
    ]
    lines = (json.dumps(r, separators=separators) + "\n" for r in rows)
    data.write_text("".join(lines), encoding="utf-8")


def _truths(run_dir: Path) -> list[str]:
    from byzllm.runs import Store

    with Store.open(run_dir) as store:
        return sorted(q["trace"]["truth"] for q in store.records("consensus_question"))


def test_an_edited_data_set_file_is_another_config(tmp_path: Path) -> None:
    """A data-set file was named by its path only: after an answer was edited, a rerun found
    every unit done and the report gave the old answers' results under the edited file."""
    data, run_dir = tmp_path / "q.jsonl", tmp_path / "run"
    _write_questions(data, [3, 5])
    assert _data_run(run_dir, data).exit_code == 0
    # The same records written otherwise (other spacing): resumed.
    _write_questions(data, [3, 5], separators=(" , ", " : "))
    resumed = _data_run(run_dir, data)
    assert resumed.exit_code == 0 and json.loads(resumed.stdout)["skipped"] == 2
    # An answer edited: another config, refused, nothing pooled.
    _write_questions(data, [3, 7])
    before = _units(run_dir)
    _refused(_data_run(run_dir, data), "dataset.digest")
    assert _units(run_dir) == before and _truths(run_dir) == ["3", "5"]
    # --force: the edited file's questions run again, the old units and records gone.
    forced = _data_run(run_dir, data, "--force")
    assert forced.exit_code == 0 and json.loads(forced.stdout)["done"] == 2
    assert "removed 2 units" in forced.stderr
    assert _truths(run_dir) == ["3", "7"]


def test_a_run_recorded_without_a_data_set_digest_is_not_resumed_into(tmp_path: Path) -> None:
    """A store written before configs recorded their data sets' digests cannot tell which
    answers its units ran with: refused (the units now have other ids: they would run beside
    the old ones and the report would count each question twice); --force runs them again.
    A synthetic run's folder, whose units have no digest, still resumes."""
    import asyncio
    import sqlite3

    from byzllm.experiments.consensus.config import ConsensusConfig
    from byzllm.experiments.consensus.experiment import consensus_unit, expand_units
    from byzllm.runs import load_config, make_unit, run_units

    data, run_dir = tmp_path / "q.jsonl", tmp_path / "run"
    _write_questions(data, [3, 5])
    sections = {"protocols": ["sac"], "topologies": ["complete"]}
    config = load_config(
        None,
        ConsensusConfig,
        {**sections, "dataset": {"name": "gsm8k", "path": str(data), "n": 2}},
    )
    # The store as such a run left it: units named by the path alone, no dataset.digest.
    old = []
    for unit in expand_units(config):
        dataset = {k: v for k, v in unit.payload["dataset"].items() if k != "digest"}
        old.append(make_unit({**unit.payload, "dataset": dataset}, unit.label))
    asyncio.run(run_units(run_dir, old, consensus_unit, config=config, progress=False))
    synthetic = tmp_path / "synthetic"
    assert _run(synthetic, "--set", "protocols=[sac]")[0] == 0
    for folder in (run_dir, synthetic):
        with sqlite3.connect(folder / "results.sqlite") as db:
            db.execute("UPDATE runs SET config = json_remove(config, '$.dataset.digest')")
        db.close()
    code, out, _ = _run(synthetic, "--set", "protocols=[sac]")
    assert code == 0 and json.loads(out)["skipped"] == 2
    _refused(_data_run(run_dir, data), "dataset.digest")
    forced = _data_run(run_dir, data, "--force")
    assert forced.exit_code == 0 and json.loads(forced.stdout)["done"] == 2
    assert _truths(run_dir) == ["3", "5"]


def _codegen_run(run_dir: Path, problems: Path, *extra: str) -> Result:
    args = ["codegen", "run", "--set", f"problems={problems}", "--set", "execution=simulated"]
    args += ["--set", "conditions=[zero-shot]", *extra, "-o", str(run_dir), "--json"]
    return RUNNER.invoke(app, args)


def _edit_tests(problems: Path) -> None:
    rows = [json.loads(line) for line in problems.read_text().splitlines()]
    for row in rows:
        row["test"] += "    assert candidate(0) is not None\n"
    problems.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def _codegen_rows(run_dir: Path) -> list[tuple[int, int]]:
    report = RUNNER.invoke(app, ["codegen", "report", str(run_dir), "--json"])
    return [(row["problems"], row["runs"]) for row in json.loads(report.stdout)["rows"]]


def test_an_edited_problem_file_is_another_config(
    tmp_path: Path, humaneval_file: Callable[..., Path]
) -> None:
    """A CodeGen config named its problem file by its path only: after every problem's test
    was edited, a rerun ran the edited problems' units beside the old ones, and the report
    counted 3 problems with 6 runs, the two versions pooled."""
    problems, run_dir = humaneval_file(tmp_path / "he.jsonl", 10), tmp_path / "run"
    first = _codegen_run(run_dir, problems)
    assert first.exit_code == 0 and json.loads(first.stdout)["done"] == 3
    # The same problems written otherwise (a JSON array): resumed.
    rows = [json.loads(line) for line in problems.read_text().splitlines()]
    problems.write_text(json.dumps(rows, indent=2), encoding="utf-8")
    resumed = _codegen_run(run_dir, problems)
    assert resumed.exit_code == 0 and json.loads(resumed.stdout)["skipped"] == 3
    # Every problem's test edited: another config, refused, nothing pooled.
    problems.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    _edit_tests(problems)
    before = _units(run_dir)
    _refused(_codegen_run(run_dir, problems), "problems_digest")
    assert _units(run_dir) == before and _codegen_rows(run_dir) == [(3, 3)]
    # --force: the edited problems run, the old problems' units and records are removed.
    forced = _codegen_run(run_dir, problems, "--force")
    assert forced.exit_code == 0 and json.loads(forced.stdout)["done"] == 3
    assert "removed 3 units" in forced.stderr
    assert _codegen_rows(run_dir) == [(3, 3)]


def test_a_codegen_run_recorded_without_problem_digests_is_refused_once(
    tmp_path: Path, humaneval_file: Callable[..., Path]
) -> None:
    """A folder run before configs recorded their problem files' digests cannot tell which
    version of the file its units ran: refused; --force keeps every unit whose problem is
    unchanged (the units carry their problems, so their ids are the same) and records the
    digest, after which the folder resumes."""
    import sqlite3

    problems, run_dir = humaneval_file(tmp_path / "he.jsonl", 10), tmp_path / "run"
    assert _codegen_run(run_dir, problems).exit_code == 0
    with sqlite3.connect(run_dir / "results.sqlite") as db:
        db.execute("UPDATE runs SET config = json_remove(config, '$.problems_digest')")
    db.close()
    _refused(_codegen_run(run_dir, problems), "problems_digest")
    forced = _codegen_run(run_dir, problems, "--force")
    assert forced.exit_code == 0 and json.loads(forced.stdout)["skipped"] == 3
    assert "removed" not in forced.stderr
    resumed = _codegen_run(run_dir, problems)
    assert resumed.exit_code == 0 and json.loads(resumed.stdout)["skipped"] == 3
    assert _codegen_rows(run_dir) == [(3, 3)]
