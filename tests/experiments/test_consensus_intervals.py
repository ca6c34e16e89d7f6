"""Consensus reports carry bootstrap intervals whose centre is the reported metric."""

from __future__ import annotations

import pytest

from byzllm.experiments.consensus.demo import demo_config
from byzllm.experiments.consensus.experiment import run_in_memory
from byzllm.experiments.consensus.report import (
    consensus_intervals,
    csv_rows,
    metrics_rows,
    round_rows,
    summarize,
)
from byzllm.protocols import QuestionTrace, compute_metrics


@pytest.fixture(scope="module")
def records() -> list[dict[str, object]]:
    config = demo_config(questions=12)
    return run_in_memory(config.model_copy(update={"topologies": ["merg"]}))


def test_interval_centres_are_the_metrics(records: list[dict[str, object]]) -> None:
    sac = [QuestionTrace.model_validate(r["trace"]) for r in records if r["protocol"] == "sac"]
    metrics = compute_metrics(sac)
    intervals = consensus_intervals(sac, resamples=300)
    for name in ("IAA", "FAA", "BFTI", "RA", "W_IAA", "W_FAA", "S_IAA", "S_FAA", "H_Majority"):
        value = getattr(metrics, name)
        assert intervals[name].value == pytest.approx(value)
        assert intervals[name].low <= value + 1e-12 <= intervals[name].high + 2e-12
    for r in metrics.per_round:
        assert intervals[f"round{r.round}.weak"].value == pytest.approx(r.weak)
        assert intervals[f"round{r.round}.h_majority"].value == pytest.approx(r.h_majority)


def test_every_table_of_the_report_shows_intervals(records: list[dict[str, object]]) -> None:
    summary = summarize(records)
    table = metrics_rows(summary)
    assert all("[" in row["FAA"] and "[" in row["H-Maj"] for row in table)
    assert all("[" in row["W %"] for row in round_rows(summary))
    for row in csv_rows(summary):
        assert row["FAA_low"] <= row["FAA"] <= row["FAA_high"]
        assert "bootstrap" in row["interval_method"]
    json_rows = metrics_rows(summary, for_json=True)
    low, high = json_rows[0]["intervals"]["BFTI"]
    assert low <= json_rows[0]["BFTI"] <= high
