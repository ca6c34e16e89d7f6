"""LLM-backed SAC end to end against FakeOpenAIServer (acceptance 2 and 3)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from byzllm.experiments.consensus.config import ConsensusConfig
from byzllm.experiments.consensus.experiment import consensus_unit, expand_units
from byzllm.experiments.consensus.setup import load_dataset, ood_pool
from byzllm.runs import Store, run_units
from byzllm.testing import FakeOpenAIServer

from ._scripted import make_script


def _config(base_url: str, **overrides: Any) -> ConsensusConfig:
    backend = {
        "backend": "llm",
        "base_url": base_url,
        "api_key_env": None,
        "timeout_s": 2.0,
        "retry": {"max_attempts": 12, "initial_backoff_s": 0.01, "max_backoff_s": 0.05},
    }
    data: dict[str, Any] = {
        "protocols": ["sac"],
        "topologies": ["complete"],
        "compositions": [{"strong": 2, "weak": 1, "byzantine": 1, "attack": "replay"}],
        "F": [1],
        "T": [2],
        "dataset": {"name": "synthetic", "n": 2, "seed": 4},
        "agents": {
            "strong": {**backend, "model": "openai/strong"},
            "weak": {**backend, "model": "openai/weak"},
        },
    }
    data.update(overrides)
    return ConsensusConfig.model_validate(data)


def _script_for(config: ConsensusConfig) -> Any:
    return make_script(load_dataset(config.dataset) + ood_pool(config.dataset))


def _rows(run_dir: Path) -> list[dict[str, Any]]:
    with Store.open(run_dir) as store:
        rows = store.records("consensus_round")
    keep = ("task_id", "agent", "round", "answer", "self_score", "scores", "retained", "filtered")
    return sorted(
        ({k: r[k] for k in keep} for r in rows),
        key=lambda r: (r["task_id"], r["round"], r["agent"]),
    )


async def test_stored_rounds_match_a_hand_traced_algorithm_1(tmp_path: Path) -> None:
    """K4 with 2 strong, 1 weak, 1 replaying adversary; F = 1, T = 2.

    Strong agents score the truth 0.9 and anything else 0.1; the weak agent scores its own
    (wrong) answer 0.9 and anything else 0.2. Hand trace of every round:

    * strong i: s_ii = 0.9, the other strong 0.9, weak 0.1, adversary 0.1, so
      L_i = {weak, adversary} and F = 1 drops the lower-indexed of the two (equal scores);
      refine keeps the truth;
    * weak w: s_ww = 0.9, every peer 0.2, L_w = all three, the lowest index is dropped;
      refine sees only 0.2 scores and keeps its answer.
    """
    with FakeOpenAIServer(latency=0.01) as server:
        config = _config(server.base_url)
        server.script = _script_for(config)
        summary = await run_units(
            tmp_path / "run", expand_units(config), consensus_unit, config=config
        )
        assert summary.complete
    with Store.open(tmp_path / "run") as store:
        questions = store.records("consensus_question")
    assert len(questions) == 2
    tasks = {t.id: t for t in load_dataset(config.dataset)}
    for question in questions:
        task = tasks[question["task_id"]]
        trace = question["trace"]
        groups = trace["groups"]
        weak = groups.index("weak")
        adversary = groups.index("byzantine")
        strong = [i for i, g in enumerate(groups) if g == "strong"]
        replayed = trace["rounds"][0][adversary]["answer"]
        assert replayed not in (task.answer, task.meta["distractors"][0])  # precondition
        for rnd in trace["rounds"][:-1]:
            for i in strong:
                row = rnd[i]
                assert row["answer"] == task.answer and row["self_score"] == 0.9
                other = next(j for j in strong if j != i)
                assert row["scores"] == {str(other): 0.9, str(weak): 0.1, str(adversary): 0.1}
                dropped = min(weak, adversary)
                assert row["filtered"] == [dropped]
                assert row["retained"] == sorted({other, weak, adversary} - {dropped})
            row = rnd[weak]
            assert row["answer"] == task.meta["distractors"][0] and row["self_score"] == 0.9
            peers = sorted(set(range(4)) - {weak})
            assert row["scores"] == {str(j): 0.2 for j in peers}
            assert row["filtered"] == [peers[0]] and row["retained"] == peers[1:]
        final = trace["rounds"][-1]
        assert [final[i]["answer"] for i in strong] == [task.answer] * 2
        assert final[weak]["answer"] == task.meta["distractors"][0]
    rounds = _rows(tmp_path / "run")
    assert len(rounds) == 2 * 3 * 4  # questions × (T + 1) × agents
    with Store.open(tmp_path / "run") as store:
        frame = store.records_frame("consensus_round")
    # Identical temperature-0 requests were sent once and counted as saved.
    assert frame["saved_calls"].sum() > 0
    assert frame["calls"].sum() < frame["calls"].sum() + frame["saved_calls"].sum()


async def test_faults_do_not_change_results(tmp_path: Path) -> None:
    """Acceptance 3: 20% injected server faults, same stored results as the fault-free run."""
    with FakeOpenAIServer(latency=0.005) as clean_server:
        config = _config(clean_server.base_url)
        clean_server.script = _script_for(config)
        await run_units(tmp_path / "clean", expand_units(config), consensus_unit, config=config)
    with FakeOpenAIServer(latency=0.005, fault_rate=0.2, hang_s=0.3, seed=3) as faulty:
        config = _config(faulty.base_url)
        faulty.script = _script_for(config)
        summary = await run_units(
            tmp_path / "faulty", expand_units(config), consensus_unit, config=config
        )
        assert summary.complete
    assert _rows(tmp_path / "faulty") == _rows(tmp_path / "clean")


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_sigkill_then_resume_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    """Acceptance 3: kill -9 mid-run, rerun the same command, every unit stored exactly once."""
    with FakeOpenAIServer(latency=0.05) as server:
        config = _config(server.base_url, dataset={"name": "synthetic", "n": 16, "seed": 4})
        server.script = _script_for(config)
        path = tmp_path / "c.yaml"
        path.write_text(yaml.safe_dump(config.model_dump(mode="json")))
        run_dir = tmp_path / "run"
        command = [
            sys.executable, "-c", "from byzllm.cli import main; main()",
            "consensus", "run", str(path), "-o", str(run_dir), "-j", "2",
        ]  # fmt: skip
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        process = subprocess.Popen(
            command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            deadline = time.monotonic() + 60
            done = 0
            while time.monotonic() < deadline and process.poll() is None:
                if (run_dir / "results.sqlite").exists():
                    try:
                        with Store.open(run_dir) as store:
                            done = store.counts()["done"]
                    except Exception:
                        done = 0
                if done >= 3:
                    break
                time.sleep(0.05)
            assert process.poll() is None, "the run finished before it could be killed"
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=10)
        finally:
            if process.poll() is None:
                process.kill()
        with Store.open(run_dir) as store:
            partial = store.counts()
        assert 3 <= partial["done"] < 16
        rerun = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
        assert rerun.returncode == 0, rerun.stderr
        with Store.open(run_dir) as store:
            assert store.counts() == {"done": 16, "failed": 0, "pending": 0}
            questions = store.records("consensus_question")
            rounds = store.records("consensus_round")
    assert sorted(q["task_id"] for q in questions) == sorted({q["task_id"] for q in questions})
    assert len(questions) == 16 and len(rounds) == 16 * 3 * 4
