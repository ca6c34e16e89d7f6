"""Consensus reports carry bootstrap intervals whose centre is the reported metric."""

from __future__ import annotations

import json

import numpy as np
import pytest

from byzllm.experiments.consensus.demo import demo_config
from byzllm.experiments.consensus.experiment import run_in_memory
from byzllm.experiments.consensus.report import (
    consensus_intervals,
    count_intervals,
    csv_rows,
    metrics_rows,
    round_rows,
    summarize,
)
from byzllm.protocols import QuestionTrace, compute_metrics, round_counts, round_values
from byzllm.runs import weighted_mean_intervals


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


def test_intervals_from_counts_are_those_of_each_question_s_values(
    records: list[dict[str, object]],
) -> None:
    """The bootstrap resamples each question's per-round values with its weights (agents of
    the group; 1 for a vote): from the integer counts, the very numbers of the values read
    trace by trace."""
    traces = [QuestionTrace.model_validate(r["trace"]) for r in records]
    traces = [t for t in traces if t.protocol == "sac"]
    values, weights = [], []
    for trace in traces:
        sizes = [
            len(trace.groups),
            trace.groups.count("weak"),
            trace.groups.count("strong"),
            sum(g != "byzantine" for g in trace.groups),
            1,
            1,
        ]
        rows = round_values([trace])
        values.append([v or 0.0 for row in rows for v in row])
        weights.append(
            [0 if v is None else w for row in rows for v, w in zip(row, sizes, strict=True)]
        )
    v, w = np.array(values), np.array(weights, dtype=float)
    acc_last = len(values[0]) - 6
    v = np.hstack([v, (v[:, acc_last] - v[:, 0])[:, None]])
    w = np.hstack([w, w[:, :1]])
    point, low, high = weighted_mean_intervals(v, w, resamples=300)
    got = count_intervals(np.array([round_counts(t) for t in traces]), resamples=300)
    assert got["round0.accuracy"].low == low[0] and got["round0.accuracy"].high == high[0]
    assert (got["BFTI"].value, got["BFTI"].low, got["BFTI"].high) == (point[-1], low[-1], high[-1])
    assert got == consensus_intervals(traces, resamples=300)


def test_a_summary_read_once_equals_one_from_a_list(records: list[dict[str, object]]) -> None:
    assert summarize(iter(records)) == summarize(records)


def test_a_summary_of_stored_dicts_equals_one_of_validated_traces(
    records: list[dict[str, object]],
) -> None:
    # Simulated traces as the store gives them (JSON dicts) are summed without building their
    # models: the same summary as from the validated traces.
    stored = [json.loads(json.dumps(r)) for r in records]
    assert stored and all(r["simulated"] for r in stored)
    models = [{**r, "trace": QuestionTrace.model_validate(r["trace"])} for r in stored]
    assert summarize(stored) == summarize(models)


def test_a_questions_seeds_are_resampled_together(records: list[dict[str, object]]) -> None:
    """The same questions under three seeds (here: three copies) are 12 units, not 36: the
    report's intervals are those of one copy, and it counts 12 distinct questions."""
    sac = [r for r in records if r["protocol"] == "sac"]
    ((meta, _),) = summarize(sac)
    ((tripled, metrics),) = summarize(
        [{**r, "seed": s} for s in range(3) for r in sac]  # the record of another seed
    )
    assert metrics.n_questions == 36 and tripled["distinct_questions"] == 12
    for name, (low, high) in meta["intervals"].items():
        assert tripled["intervals"][name] == pytest.approx([low, high]), name
    counts = np.array([round_counts(QuestionTrace.model_validate(r["trace"])) for r in sac])
    alone = count_intervals(np.vstack([counts] * 3))  # without the question ids: too narrow
    assert (
        alone["IAA"].high - alone["IAA"].low
        < meta["intervals"]["IAA"][1] - meta["intervals"]["IAA"][0]
    )


def test_whole_percent_arrows_round_halves_up() -> None:
    from byzllm.experiments.consensus.report import _arrow

    assert _arrow(0.625, 0.375) == "63→38"  # was 62→38: halves to even
    assert _arrow(0.125, 0.875) == "13→88"
    assert _arrow(None, 0.5) == "-"


def test_a_sweep_over_f_or_t_names_them_in_the_printed_tables(
    records: list[dict[str, object]],
) -> None:
    """Rows of a sweep over F or T were told apart only in table1.csv: the printed Table 1
    and the per-round table showed four identical labels."""
    summary = summarize(records)
    assert "F" not in metrics_rows(summary)[0] and "T" not in round_rows(summary)[0]
    swept = run_in_memory(
        demo_config(questions=2).model_copy(
            update={"topologies": ["merg"], "protocols": ["sac"], "F": [1, 3], "T": [1, 2]}
        )
    )
    rows = metrics_rows(summarize(swept))
    assert sorted((row["F"], row["T"]) for row in rows) == [(1, 1), (1, 2), (3, 1), (3, 2)]
    assert {(row["F"], row["T"]) for row in round_rows(summarize(swept))} == {
        (1, 1),
        (1, 2),
        (3, 1),
        (3, 2),
    }
