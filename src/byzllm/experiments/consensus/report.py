"""Summaries and report rows of consensus runs (the SAC paper, §5.1 metrics; Tables 1-2)."""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from byzllm.agents import ParseCounts
from byzllm.protocols import (
    ROUND_FIELDS,
    ConsensusMetrics,
    QuestionTrace,
    metrics_from_counts,
    round_counts,
    vote_counts,
)
from byzllm.protocols.metrics import RoundCounts
from byzllm.runs import (
    BOOTSTRAP_METHOD,
    Interval,
    Record,
    collector_paused,
    weighted_mean_intervals,
)
from byzllm.runs.reports import format_bounds, format_interval

from .._order import natural_key

__all__ = [
    "GROUP_CELL_NOTE",
    "INTERVAL_NOTE",
    "METHOD_LABELS",
    "MIN_QUESTIONS",
    "NO_INTERVAL_NOTE",
    "ORACLE_NOTE",
    "TOPOLOGY_LABELS",
    "ConfigKey",
    "Summary",
    "consensus_intervals",
    "count_intervals",
    "count_questions",
    "llm_groups",
    "metrics_rows",
    "oracle_attack",
    "results_label",
    "round_csv_rows",
    "round_rows",
    "run_llm_groups",
    "summarize",
    "table_notes",
]

#: What the intervals of every consensus report are (written under each table).
INTERVAL_NOTE = BOOTSTRAP_METHOD.replace(
    "over units", "over questions (a question's seeds resampled together)"
)

#: What the bracket of a group cell (``W IAA→FAA``, ``S IAA→FAA``) holds: one bracket beside
#: two numbers, which a reader could take for an interval on the change.
GROUP_CELL_NOTE = "W / S IAA→FAA: the bracket is the interval of the final accuracy (FAA)"

#: Why a cell shows ``[n/a]``: a bootstrap over one question has no spread to resample.
NO_INTERVAL_NOTE = "[n/a]: no interval from fewer than 2 distinct questions"

#: What the mark of an oracle attack means (under the tables and the heat-map).
ORACLE_NOTE = (
    "† oracle attack: it reads the answer key to send a surely wrong answer, which the "
    "paper's adversary (replay) cannot; not comparable with the paper"
)

#: Distinct questions an interval needs: resampling a single question always draws that
#: question, so its bootstrap interval has zero width, a certainty one question cannot give.
MIN_QUESTIONS = 2

#: The §5.1 summary metrics as (round: 0 or -1 for T, per-round field).
_SUMMARY = {
    "IAA": (0, "accuracy"),
    "FAA": (-1, "accuracy"),
    "RA": (-1, "ra"),
    "W_IAA": (0, "weak"),
    "W_FAA": (-1, "weak"),
    "S_IAA": (0, "strong"),
    "S_FAA": (-1, "strong"),
    "H_Majority": (-1, "h_majority"),
}


def consensus_intervals(
    traces: Sequence[QuestionTrace], *, resamples: int = 2000, seed: int = 0
) -> dict[str, Interval]:
    """Bootstrap intervals over questions of every §5.1 metric and per-round quantity.

    Keys: the summary names of :class:`~byzllm.protocols.ConsensusMetrics` (``IAA``, ``FAA``,
    ``BFTI``, ...) and ``round{t}.{field}`` for the fields of ``RoundMetrics``. Every
    metric is a weighted mean of per-question values (weights: the agents of the group, or 1
    for the majority votes), so a resample costs array sums. A question run under several
    seeds is one unit: its runs are resampled together (they share its difficulty), and
    ``Interval.n`` counts distinct questions.
    """
    if not traces:
        return {}
    return count_intervals(
        np.array([round_counts(trace) for trace in traces], dtype=np.int64),
        clusters=[trace.task_id for trace in traces],
        resamples=resamples,
        seed=seed,
    )


def count_intervals(
    counts: npt.NDArray[np.int64],
    *,
    clusters: Sequence[object] | None = None,
    resamples: int = 2000,
    seed: int = 0,
) -> dict[str, Interval]:
    """:func:`consensus_intervals` from each question's :func:`~byzllm.protocols.round_counts`
    (``counts[q, t, k]``: question q, round t, count ``COUNT_FIELDS[k]``), so a report needs
    to keep only these integers per question. ``clusters``: each row's question id (rows of
    one id are resampled together); without it every row is its own question. Fewer than
    :data:`MIN_QUESTIONS` distinct questions: every bound NaN (no interval), the Wilson
    fallback of a 0 or 100% rate included, so no metric of the table claims a spread.

    With ``clusters``, the rows are first put in the order of their question ids
    (:func:`~byzllm.experiments._order.natural_key`; a question's rows by their counts): the
    bootstrap resamples positions, and the order a store returns records in changes when a
    run grows or resumes, which gave the same questions other intervals."""
    if len(counts) == 0:
        return {}
    if clusters is not None:
        counts, clusters = _question_order(counts, clusters)
    rows = len(counts)
    n = rows if clusters is None else len(set(clusters))
    rounds = counts.shape[1]
    # Per question and round: hits over agents per group (weight: the group's agents), and
    # the two majority votes' wins (weight 1 where there was a vote).
    numerators = np.concatenate([counts[:, :, 0:4], counts[:, :, [8, 10]]], axis=2)
    weights = np.concatenate([counts[:, :, 4:8], counts[:, :, [9, 11]]], axis=2).astype(float)
    values = np.zeros(weights.shape)
    np.divide(numerators, weights, out=values, where=weights > 0)
    flat_v = values.reshape(rows, -1)
    flat_w = weights.reshape(rows, -1)
    # BFTI = FAA - IAA per resample: the same draws, so one extra column pair suffices; and
    # the same over the honest agents (an adversary that changes its own answer, as mimic
    # does, moves the all-agent BFTI whatever the protocol did).
    last = rounds - 1
    acc = ROUND_FIELDS.index("accuracy")
    honest = ROUND_FIELDS.index("honest")
    diff_v = np.stack(
        [values[:, last, acc] - values[:, 0, acc], values[:, last, honest] - values[:, 0, honest]],
        axis=1,
    )
    # Every agent (every honest agent) counts at rounds 0 and T alike.
    diff_w = np.stack([weights[:, 0, acc], weights[:, 0, honest]], axis=1)
    point, low, high = weighted_mean_intervals(
        np.hstack([flat_v, diff_v]),
        np.hstack([flat_w, diff_w]),
        clusters=clusters,
        rates=[True] * flat_v.shape[1] + [False, False],  # every column a rate but the BFTIs
        resamples=resamples,
        seed=seed,
    )
    if n < MIN_QUESTIONS:
        low = high = np.full_like(point, np.nan)
    out: dict[str, Interval] = {}
    for t in range(rounds):
        for f, name in enumerate(ROUND_FIELDS):
            k = t * len(ROUND_FIELDS) + f
            if point[k] == point[k]:
                out[f"round{t}.{name}"] = Interval(
                    float(point[k]), float(low[k]), float(high[k]), n
                )
    for metric, (t, name) in _SUMMARY.items():
        key = f"round{t % rounds}.{name}"
        if key in out:
            out[metric] = out[key]
    out["BFTI"] = Interval(float(point[-2]), float(low[-2]), float(high[-2]), n)
    if point[-1] == point[-1]:  # (no honest agent: no honest BFTI)
        out["BFTI_honest"] = Interval(float(point[-1]), float(low[-1]), float(high[-1]), n)
    return out


def _question_order(
    counts: npt.NDArray[np.int64], clusters: Sequence[object]
) -> tuple[npt.NDArray[np.int64], list[object]]:
    """``counts`` and ``clusters`` with the rows sorted by question id (natural order), then by
    their counts: an order that depends on the rows alone, not on how they were read. A fresh
    run's questions come in the order of their ids (``synthetic/0/2`` before ``/10``), so its
    intervals are those of record order."""
    if len(clusters) != len(counts):
        raise ValueError(f"{len(clusters)} cluster labels for {len(counts)} rows")
    ids = sorted(set(clusters), key=natural_key)
    rank = {question: k for k, question in enumerate(ids)}
    flat = counts.reshape(len(counts), -1)
    # np.lexsort: the last key first, so the question's rank, then the counts column by column.
    order = np.lexsort(np.vstack([flat.T[::-1], [rank[c] for c in clusters]]))
    return counts[order], [clusters[i] for i in order]


ConfigKey = tuple[str, str, str, int, int]


def llm_groups(record: Mapping[str, Any]) -> dict[str, str]:
    """Group -> model of the agents of a ``consensus_question`` record that ran on a model."""
    return {
        str(agent.get("group")): str(agent.get("model"))
        for agent in record.get("agents") or []
        if isinstance(agent, Mapping) and agent.get("family") == "llm"
    }


def run_llm_groups(records: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Group -> model over a run's ``consensus_question`` records (:func:`llm_groups`), the
    first model a group ran on kept."""
    on_model: dict[str, str] = {}
    for record in records:
        on_model = {**llm_groups(record), **on_model}
    return on_model


def results_label(simulated: bool, on_model: Mapping[str, str]) -> bool | str:
    """What a run's tables say of its results: ``simulated``, or for a simulated run where
    some groups ran on a model (``--weak-model`` alone; ``on_model``: :func:`llm_groups`)
    the label saying which (:func:`~byzllm.runs.reports.partly_simulated_note`): "not real
    LLMs" alone would hide the model's agents."""
    from byzllm.runs.reports import partly_simulated_note

    return partly_simulated_note(on_model) if simulated and on_model else simulated


def oracle_attack(composition: str) -> bool:
    """Whether the adversaries of a composition (its label) read the answer key: an oracle
    attack (:data:`~byzllm.agents.consensus.ORACLE_ATTACKS`) with at least one adversary.
    Its rows are marked † (:data:`ORACLE_NOTE`) wherever a table shows them."""
    from byzllm.agents.consensus import ORACLE_ATTACKS

    from .config import parse_label

    parts = parse_label(composition)
    return parts is not None and parts.byzantine > 0 and parts.attack in ORACLE_ATTACKS


def _composition_cell(composition: str) -> str:
    """A composition as the tables print it: marked † under an oracle attack."""
    return composition + (" †" if oracle_attack(composition) else "")


def _composition_order(label: str) -> tuple[Any, ...]:
    """Where a composition's rows go: by attack (in :data:`~byzllm.agents.consensus.ATTACKS`
    order; mimic by its defect round), then adversaries, strong and weak agents, placement;
    a label of another shape after them, by its text."""
    from byzllm.agents.consensus import ATTACKS

    from .config import parse_label

    parts = parse_label(label)
    if parts is None:
        return (1, natural_key(label))
    rank = ATTACKS.index(parts.attack) if parts.attack in ATTACKS else len(ATTACKS)
    return (
        0,
        rank,
        parts.attack,
        parts.defect_round,
        parts.byzantine,
        parts.strong,
        parts.weak,
        natural_key(parts.placement),
    )


def _configuration_order(key: ConfigKey) -> tuple[Any, ...]:
    """The sort key of a configuration's row: the order a config's grid expands in
    (:func:`~.experiment.expand_units`: compositions, topologies, protocols, F, T), each by
    its canonical order: compositions by :func:`_composition_order`, topologies as
    :data:`~byzllm.graphs.CONSTRUCTIONS` lists them (graph files after, by path), protocols
    as :data:`~.config.ProtocolName` does, F and T ascending.

    Rows follow it rather than the order the records came in: a store's order changes when a
    run grows or resumes. A config that lists every axis in that order (the shipped ones do)
    gets its rows in the order it lists them.
    """
    from typing import get_args

    from byzllm.graphs import CONSTRUCTIONS

    from .config import ProtocolName

    protocol, topology, composition, F, T = key
    topologies = list(CONSTRUCTIONS)
    protocols: tuple[str, ...] = get_args(ProtocolName)
    return (
        _composition_order(composition),
        (topologies.index(topology), "") if topology in topologies else (len(topologies), topology),
        (protocols.index(protocol), "") if protocol in protocols else (len(protocols), protocol),
        F,
        T,
    )


def summarize(
    questions: Iterable[Mapping[str, Any]], *, intervals: bool = True
) -> list[tuple[dict[str, Any], ConsensusMetrics]]:
    """§5.1 metrics per configuration (protocol, topology, composition, F, T), seeds pooled
    (a question's seeds one unit of the intervals).

    ``questions`` are ``consensus_question`` records (dicts from the store, or models). The
    metadata of each configuration includes its calls, tokens and ``parse`` counts (replies
    parsed per stage and fall-backs, :mod:`byzllm.experiments.parse_health`) and, with
    ``intervals``, ``intervals``: ``{metric: [low, high]}`` from :func:`consensus_intervals`
    (:data:`INTERVAL_NOTE`). Runs of real models also get ``scorer_auc``: how well each
    group's scores (and CP-WBFT confidences) rank right answers above wrong ones
    (:func:`~byzllm.experiments.consensus.scorer.scorer_auc`).
    """
    # The traces are hundreds of thousands of acyclic objects: with the cycle collector
    # running, its full passes over them took more than half of a matrix report's time.
    with collector_paused():
        return count_questions(questions).result(intervals=intervals)


def count_questions(questions: Iterable[Mapping[str, Any]]) -> Summary:
    """:func:`summarize` up to its :meth:`~Summary.result`: the questions counted, the cycle
    collector paused meanwhile. Questions counted apart (in another process) are put together
    with :meth:`Summary.merge`."""
    with collector_paused():
        summary = Summary()
        for question in questions:
            summary.add(question)
        return summary


#: A stored round row's vote, and what it cost (with its parse counts), picked in C.
_vote = operator.itemgetter("key", "correct")
_COSTS = ("calls", "cached_calls", "saved_calls", "input_tokens", "output_tokens", "parse")
_costs = operator.itemgetter(*_COSTS)


@dataclass
class _Configuration:
    """What a summary keeps of one configuration's questions as it reads them: integer
    counts per question and running sums, not the traces (a 2,000-question demo's traces
    took gigabytes); the traces only of real runs, whose scorers are rated."""

    simulated: bool = False
    counts: list[list[RoundCounts]] = field(default_factory=list)
    #: Each question's task id: the unit its seeds are resampled as (count_intervals).
    questions: list[str] = field(default_factory=list)
    #: Each question's seed: with its task id, the order the scorer's AUC resamples in.
    seeds: list[int] = field(default_factory=list)
    calls: int = 0
    #: Calls answered from the response cache (not in ``calls``: no model was asked).
    cached_calls: int = 0
    saved_calls: int = 0
    tokens: int = 0
    parse: ParseCounts = field(default_factory=ParseCounts)
    traces: list[QuestionTrace] = field(default_factory=list)

    def add(self, trace: QuestionTrace, simulated: bool) -> None:
        costs = (
            (r.calls, r.cached_calls, r.saved_calls, r.input_tokens, r.output_tokens, r.parse)
            for rnd in trace.rounds
            for r in rnd
        )
        self._tally(len(trace.rounds), round_counts(trace), costs)
        self.simulated = self.simulated or simulated
        if self.simulated:
            self.traces.clear()  # no scorer to rate: see summarize
        else:
            self.traces.append(trace)

    def add_simulated(self, trace: Mapping[str, Any]) -> None:
        """:meth:`add` of a simulated question's trace as the store keeps it (a dict): the
        same sums, read from the dict, without validating it into a model (a simulated run
        keeps no trace for a scorer, so it needs none)."""
        rounds = trace["rounds"]
        try:
            # A stored row has every field: picked in C, not looked up one by one.
            votes = [list(map(_vote, rnd)) for rnd in rounds]
            costs = [_costs(row) for rnd in rounds for row in rnd]
        except KeyError:  # a hand-made record: the fields' defaults
            votes = [[(row.get("key"), bool(row["correct"])) for row in rnd] for rnd in rounds]
            costs = [
                (*(row.get(name, 0) for name in _COSTS[:-1]), row.get("parse"))
                for rnd in rounds
                for row in rnd
            ]
        self._tally(len(rounds), vote_counts(trace["groups"], votes), costs)
        self.simulated = True
        self.traces.clear()

    def merge(self, other: _Configuration) -> None:
        """Add the questions ``other`` counted (of the same configuration): the sums are
        integers and every result reads the questions in an order of their own (task id,
        seed, counts: :func:`count_intervals`, :meth:`traced_in_order`), so the order the
        questions were counted in, here or there, changes nothing."""
        if self.counts and other.counts and len(other.counts[0]) != len(self.counts[0]):
            raise ValueError("all traces must have the same number of rounds")
        self.counts += other.counts
        self.questions += other.questions
        self.seeds += other.seeds
        self.calls += other.calls
        self.cached_calls += other.cached_calls
        self.saved_calls += other.saved_calls
        self.tokens += other.tokens
        self.parse.merge(other.parse)
        self.simulated = self.simulated or other.simulated
        # As add keeps them: none once a simulated question is in.
        self.traces = [] if self.simulated else self.traces + other.traces

    def traced_in_order(self) -> list[QuestionTrace]:
        """The traces (a real run's: one per question added) by task id (natural order) and
        seed: the scorer's AUC resamples them by position, so not in the records' order."""
        if len(self.traces) != len(self.questions):
            return self.traces  # (none kept: a simulated configuration)
        order = sorted(
            range(len(self.traces)),
            key=lambda i: (natural_key(self.questions[i]), self.seeds[i]),
        )
        return [self.traces[i] for i in order]

    def _tally(
        self, rounds: int, counts: list[RoundCounts], costs: Iterable[Sequence[Any]]
    ) -> None:
        """Add one question: its round counts, and per row (calls, cached calls, saved calls,
        input and output tokens, parse counts)."""
        if self.counts and rounds != len(self.counts[0]):
            raise ValueError("all traces must have the same number of rounds")
        self.counts.append(counts)
        for calls, cached_calls, saved_calls, input_tokens, output_tokens, parse in costs:
            self.calls += calls
            self.cached_calls += cached_calls
            self.saved_calls += saved_calls
            self.tokens += input_tokens + output_tokens
            if parse:
                self.parse.merge(parse)


class Summary:
    """:func:`summarize` one question at a time: :meth:`add` each ``consensus_question``
    record as it is read (it returns that question's :func:`~byzllm.protocols.round_counts`,
    so a reader that also shows the question needs not count it again), then
    :meth:`result`. Pause the cycle collector around it, as :func:`summarize` does."""

    def __init__(self) -> None:
        self._configurations: dict[ConfigKey, _Configuration] = {}

    def add(self, row: Mapping[str, Any]) -> list[RoundCounts]:
        """Count one question record (a dict from the store, or a model); its round counts."""
        data = row.model_dump() if isinstance(row, Record) else row
        key = (
            data["protocol"],
            data["topology"],
            data["composition"],
            int(data["F"]),
            int(data["T"]),
        )
        trace = data["trace"]
        configuration = self._configurations.setdefault(key, _Configuration())
        configuration.questions.append(str(data.get("task_id") or _task_id(trace)))
        configuration.seeds.append(int(data.get("seed", 0)))
        simulated = bool(data.get("simulated"))
        if simulated and not isinstance(trace, QuestionTrace):
            configuration.add_simulated(trace)
        else:
            configuration.add(
                trace if isinstance(trace, QuestionTrace) else QuestionTrace.model_validate(trace),
                simulated,
            )
        return configuration.counts[-1]

    def merge(self, other: Summary) -> None:
        """Add the questions ``other`` counted (:meth:`_Configuration.merge`): a summary split
        over processes, each counting some of the records, gives the result of one."""
        for key, seen in other._configurations.items():
            if key in self._configurations:
                self._configurations[key].merge(seen)
            else:
                self._configurations[key] = seen

    def intervals(self) -> dict[ConfigKey, dict[str, list[float | None]]]:
        """Each configuration's ``intervals`` (see :func:`summarize`): the bootstraps, most
        of a result's time, computed apart (in another process) to pass to :meth:`result`."""
        return {
            key: {
                k: [_bound(v.low), _bound(v.high)]
                for k, v in count_intervals(
                    np.array(seen.counts, dtype=np.int64), clusters=seen.questions
                ).items()
            }
            for key, seen in self._configurations.items()
        }

    def result(
        self, *, intervals: bool | Mapping[ConfigKey, dict[str, list[float | None]]] = True
    ) -> list[tuple[dict[str, Any], ConsensusMetrics]]:
        """What :func:`summarize` returns for the questions added so far: one row per
        configuration, in :func:`_configuration_order` (not the order the records came in).
        ``intervals``: whether to compute them, or what :meth:`intervals` returned."""
        if intervals is True:
            intervals = self.intervals()
        out = []
        for key in sorted(self._configurations, key=_configuration_order):
            seen = self._configurations[key]
            protocol, topology, composition, F, T = key
            n = len(seen.counts)
            meta: dict[str, Any] = {
                "protocol": protocol,
                "topology": topology,
                "composition": composition,
                "F": F,
                "T": T,
                "simulated": seen.simulated,
            }
            meta["calls_per_question"] = seen.calls / n
            meta["cached_calls_per_question"] = seen.cached_calls / n
            meta["saved_calls_per_question"] = seen.saved_calls / n
            meta["tokens_per_question"] = seen.tokens / n
            meta["parse"] = seen.parse.to_dict()
            if not seen.simulated:
                # Real scorers only: a simulated scorer's AUC is its parameters read back.
                from .scorer import scorer_auc

                meta["scorer_auc"] = scorer_auc(seen.traced_in_order())
            meta["distinct_questions"] = len(set(seen.questions))
            if intervals is not False:
                meta["intervals"] = intervals[key]
            counts = np.array(seen.counts, dtype=np.int64)
            out.append((meta, metrics_from_counts(counts.sum(axis=0).tolist(), n)))
        return out


def _bound(x: float) -> float | None:
    """An undefined bound (NaN) as None: null in the JSON, empty in the CSV."""
    return None if math.isnan(x) else x


def _task_id(trace: QuestionTrace | Mapping[str, Any]) -> str:
    return trace.task_id if isinstance(trace, QuestionTrace) else str(trace["task_id"])


def scorer_auc_lines(summary: Sequence[tuple[dict[str, Any], ConsensusMetrics]]) -> list[str]:
    """One line per configuration and scoring group: the scorer's AUC with its interval."""
    lines = []
    for meta, _ in summary:
        for group, row in (meta.get("scorer_auc") or {}).items():
            if row["auc"] is None:
                value = "n/a (only right or only wrong responses scored)"
            else:
                value = f"{row['auc']:.2f}"
                if row["low"] is not None:
                    value += f" [{row['low']:.2f}, {row['high']:.2f}]"
            what = "confidence AUC" if group == "confidence" else f"scorer AUC ({group})"
            lines.append(
                f"{meta['protocol']} {meta['topology']}: {what} {value} over {row['pairs']} "
                f"pairs, {row['questions']} questions"
            )
    return lines


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}"


def _ci(meta: Mapping[str, Any], key: str) -> str:
    """`` [low, high]`` in percent when the summary has the interval; `` [n/a]`` when it was
    computed but is undefined (:data:`NO_INTERVAL_NOTE`)."""
    intervals = meta.get("intervals") or {}
    bounds = intervals.get(key) or (None, None)
    text = format_bounds(*bounds, scale=100)
    if not text and key in intervals:
        text = "[n/a]"
    return f" {text}" if text else ""


def _with_ci(
    meta: Mapping[str, Any], key: str, value: float | None, *, signed: bool = False
) -> str:
    text = format_interval(value, scale=100, signed=signed)
    return text if text == "-" else text + _ci(meta, key)


def table_notes(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """What the brackets and marks of Table 1 rows (:func:`metrics_rows`, as printed) mean
    beyond :data:`INTERVAL_NOTE`, to print under it: the group cells' bracket, ``[n/a]``
    where a cell has it, and the † of an oracle attack's rows (:data:`ORACLE_NOTE`)."""
    notes = [GROUP_CELL_NOTE]
    if any("[n/a]" in str(cell) for row in rows for cell in row.values()):
        notes.append(NO_INTERVAL_NOTE)
    if any(str(row.get("Composition", "")).endswith(" †") for row in rows):
        notes.append(ORACLE_NOTE)
    return notes


#: Protocol names as the tables print them.
METHOD_LABELS = {
    "sac": "SAC",
    "cp-wbft": "CP-WBFT",
    "debate": "Debate",
    "majority": "Majority",
    "w-msr": "W-MSR",
}


#: Topology names as the tables print them.
TOPOLOGY_LABELS = {"merg": "MERG", "complete": "Complete", "erdos-renyi": "Erdős-Rényi"}


def _arrow(a: float | None, b: float | None) -> str:
    if a is None or b is None:
        return "-"
    return f"{_whole_percent(a)}→{_whole_percent(b)}"


def _whole_percent(x: float) -> int:
    """``x`` in whole percent, halves up: ``format``'s halves-to-even printed 62.5% as 62
    and 37.5% as 38 in the same table."""
    return math.floor(100 * x + 0.5)


def metrics_rows(
    summary: Sequence[tuple[dict[str, Any], ConsensusMetrics]], *, for_json: bool = False
) -> list[dict[str, Any]]:
    """Table 1 layout: one row per configuration (percentages with their 95% intervals in
    brackets, ``[n/a]`` without one; a group cell's bracket is its FAA's,
    :data:`GROUP_CELL_NOTE`; JSON keeps §5.1 names, fractions, and ``intervals``:
    {metric: [low, high]}, ``null`` bounds without one)."""
    rows = []
    swept = _swept(summary)
    for meta, m in summary:
        if for_json:
            rows.append(
                {
                    **meta,
                    "oracle_attack": oracle_attack(meta["composition"]),
                    "n_questions": m.n_questions,
                    "IAA": m.IAA,
                    "FAA": m.FAA,
                    "BFTI": m.BFTI,
                    "RA": m.RA,
                    "W_IAA": m.W_IAA,
                    "W_FAA": m.W_FAA,
                    "S_IAA": m.S_IAA,
                    "S_FAA": m.S_FAA,
                    "H_Majority": m.H_Majority,
                    "per_round": [r.model_dump() for r in m.per_round],
                }
            )
            continue
        rows.append(
            {
                "Method": METHOD_LABELS.get(meta["protocol"], meta["protocol"]),
                "Topology": TOPOLOGY_LABELS.get(meta["topology"], meta["topology"]),
                "Composition": _composition_cell(meta["composition"]),
                **{key: meta[key] for key in swept},
                "IAA": _with_ci(meta, "IAA", m.IAA),
                "FAA": _with_ci(meta, "FAA", m.FAA),
                "BFTI": _with_ci(meta, "BFTI", m.BFTI, signed=True),
                "RA": _with_ci(meta, "RA", m.RA),
                "W IAA→FAA": _arrow(m.W_IAA, m.W_FAA) + _ci(meta, "W_FAA"),
                "S IAA→FAA": _arrow(m.S_IAA, m.S_FAA) + _ci(meta, "S_FAA"),
                "H-Maj": _with_ci(meta, "H_Majority", m.H_Majority),
            }
        )
    return rows


def _swept(summary: Sequence[tuple[dict[str, Any], ConsensusMetrics]]) -> list[str]:
    """``F`` and ``T`` where the run has more than one value of them: a sweep over either
    gave rows that differed in nothing printed."""
    return [key for key in ("F", "T") if len({meta[key] for meta, _ in summary}) > 1]


#: Summary metrics of the CSV export, in column order.
_CSV_METRICS = ("IAA", "FAA", "BFTI", "RA", "W_IAA", "W_FAA", "S_IAA", "S_FAA", "H_Majority")


def csv_rows(summary: Sequence[tuple[dict[str, Any], ConsensusMetrics]]) -> list[dict[str, Any]]:
    """Table 1 as numbers for CSV: each metric in percent with ``<metric>_low`` and
    ``<metric>_high`` (the 95% interval, :data:`INTERVAL_NOTE`)."""
    rows = []
    for meta, m in summary:
        row: dict[str, Any] = {
            **_configuration_columns(meta),
            "n_questions": m.n_questions,
            "distinct_questions": meta.get("distinct_questions", m.n_questions),
        }
        bounds = meta.get("intervals") or {}
        for name in _CSV_METRICS:
            _put_percent(row, name, getattr(m, name), bounds.get(name))
        row["interval_method"] = INTERVAL_NOTE
        rows.append(row)
    return rows


def round_csv_rows(
    summary: Sequence[tuple[dict[str, Any], ConsensusMetrics]],
) -> list[dict[str, Any]]:
    """Table 2 as numbers for CSV, one row per configuration × round: each per-round
    accuracy (:data:`~byzllm.protocols.ROUND_FIELDS`) in percent with ``<name>_low`` and
    ``<name>_high``, as :func:`csv_rows` writes Table 1. The printed cells
    (:func:`round_rows`, ``"23.3 [13.3, 35.0]"``) are text that no reader of a CSV takes
    for a number."""
    rows = []
    for meta, m in summary:
        bounds = meta.get("intervals") or {}
        for r in m.per_round:
            row: dict[str, Any] = {**_configuration_columns(meta), "round": r.round}
            for name in ROUND_FIELDS:
                _put_percent(row, name, getattr(r, name), bounds.get(f"round{r.round}.{name}"))
            row["interval_method"] = INTERVAL_NOTE
            rows.append(row)
    return rows


def _configuration_columns(meta: Mapping[str, Any]) -> dict[str, Any]:
    """The columns that name a configuration in the CSV exports."""
    return {
        "protocol": meta["protocol"],
        "topology": meta["topology"],
        "composition": meta["composition"],
        "oracle_attack": oracle_attack(meta["composition"]),
        "F": meta["F"],
        "T": meta["T"],
    }


def _put_percent(
    row: dict[str, Any], name: str, value: float | None, bounds: Sequence[float | None] | None
) -> None:
    """``row[name]`` and its interval ``row[name_low]``, ``row[name_high]`` in percent (empty
    where there is no value or no interval)."""
    low, high = bounds if bounds is not None else (None, None)
    row[name] = None if value is None else round(100 * value, 2)
    row[f"{name}_low"] = None if low is None else round(100 * low, 2)
    row[f"{name}_high"] = None if high is None else round(100 * high, 2)


def round_rows(summary: Sequence[tuple[dict[str, Any], ConsensusMetrics]]) -> list[dict[str, Any]]:
    """Table 2 layout: weak / strong accuracy (%) per round with 95% intervals, one row per
    configuration × round."""
    rows = []
    swept = _swept(summary)
    for meta, m in summary:
        for r in m.per_round:
            t = r.round
            rows.append(
                {
                    "Method": METHOD_LABELS.get(meta["protocol"], meta["protocol"]),
                    "Topology": TOPOLOGY_LABELS.get(meta["topology"], meta["topology"]),
                    "Composition": _composition_cell(meta["composition"]),
                    **{key: meta[key] for key in swept},
                    "Round": "Init" if t == 0 else f"Rnd {t}",
                    "W %": _with_ci(meta, f"round{t}.weak", r.weak),
                    "S %": _with_ci(meta, f"round{t}.strong", r.strong),
                    "All %": _with_ci(meta, f"round{t}.accuracy", r.accuracy),
                    "RA %": _with_ci(meta, f"round{t}.ra", r.ra),
                    "H-Majority %": _with_ci(meta, f"round{t}.h_majority", r.h_majority),
                }
            )
    return rows
