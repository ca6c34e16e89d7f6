"""The real SAC page's cost line counts what the model was asked and, apart, what the response
cache answered: a resumed run answered from the cache showed "Model calls 0" under a note
saying cached calls counted as calls."""

from __future__ import annotations

from pathlib import Path

import yaml

from byzllm.experiments.consensus.config import ConsensusConfig
from byzllm.experiments.consensus.report import summarize
from byzllm.protocols import AgentRound, QuestionTrace
from byzllm.reproduce import REPRODUCTIONS, config_path
from byzllm.reproduce.real_page import RealRun, write_real_report


def _question(task_id: str, *, calls: int, cached: int) -> dict[str, object]:
    rows = [
        [
            AgentRound(
                agent=i, round=t, answer="1", key="1", correct=True, calls=calls,
                cached_calls=cached, input_tokens=10 * calls, output_tokens=calls,
            )
            for i in range(3)
        ]
        for t in range(2)
    ]  # fmt: skip
    trace = QuestionTrace(
        task_id=task_id, protocol="sac", truth="1", groups=["strong"] * 3, rounds=rows
    )
    return {
        "protocol": "sac", "topology": "complete", "composition": "c", "F": 1, "T": 1,
        "task_id": task_id, "simulated": False, "trace": trace,
    }  # fmt: skip


def test_summaries_count_cached_calls_apart() -> None:
    questions = [_question("q1", calls=2, cached=1), _question("q2", calls=0, cached=3)]
    (meta, _), *_ = summarize(questions)
    assert meta["calls_per_question"] == (12 + 0) / 2
    assert meta["cached_calls_per_question"] == (6 + 18) / 2


def test_the_cost_line_shows_cache_answers_apart(tmp_path: Path) -> None:
    entry = REPRODUCTIONS["sac-table1"]
    config = ConsensusConfig.model_validate(
        yaml.safe_load(config_path(entry.real_config or "").read_text())
    )
    summary = summarize([_question("q1", calls=0, cached=3)])
    run = RealRun(entry, config, tmp_path, 60.0, "byzllm reproduce sac-table1 --real x")
    text = write_real_report(run, rows=[], summary=summary, records=[{"task_id": "q1"}])
    assert "Model calls 0 (and 18 answered from the response cache, 0 identical" in text
    assert "count as calls" not in text
