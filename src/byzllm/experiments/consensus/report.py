"""Summaries and report rows of consensus runs (the SAC paper, §5.1 metrics; Tables 1-2)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from byzllm.agents import ParseCounts
from byzllm.protocols import (
    ConsensusMetrics,
    QuestionTrace,
    compute_metrics,
)

from .._records import Record

__all__ = ["ConfigKey", "metrics_rows", "round_rows", "summarize"]


ConfigKey = tuple[str, str, str, int, int]


def summarize(
    questions: Iterable[Mapping[str, Any]],
) -> list[tuple[dict[str, Any], ConsensusMetrics]]:
    """§5.1 metrics per configuration (protocol, topology, composition, F, T), seeds pooled.

    ``questions`` are ``consensus_question`` records (dicts from the store, or models). The
    metadata of each configuration includes its calls, tokens and ``parse`` counts (replies
    parsed per stage and fall-backs, :mod:`byzllm.experiments.parse_health`).
    """
    groups: dict[ConfigKey, list[QuestionTrace]] = {}
    simulated: dict[ConfigKey, bool] = {}
    for row in questions:
        data = row.model_dump() if isinstance(row, Record) else row
        key = (
            data["protocol"],
            data["topology"],
            data["composition"],
            int(data["F"]),
            int(data["T"]),
        )
        trace = data["trace"]
        groups.setdefault(key, []).append(
            trace if isinstance(trace, QuestionTrace) else QuestionTrace.model_validate(trace)
        )
        simulated[key] = simulated.get(key, False) or bool(data.get("simulated"))
    out = []
    for key, traces in groups.items():
        protocol, topology, composition, F, T = key
        meta: dict[str, Any] = {
            "protocol": protocol,
            "topology": topology,
            "composition": composition,
            "F": F,
            "T": T,
            "simulated": simulated[key],
        }
        rows = [row for trace in traces for rnd in trace.rounds for row in rnd]
        meta["calls_per_question"] = sum(r.calls for r in rows) / len(traces)
        meta["saved_calls_per_question"] = sum(r.saved_calls for r in rows) / len(traces)
        meta["tokens_per_question"] = sum(r.input_tokens + r.output_tokens for r in rows) / len(
            traces
        )
        meta["parse"] = ParseCounts.of(*(r.parse for r in rows)).to_dict()
        out.append((meta, compute_metrics(traces)))
    return out


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}"


_METHOD = {
    "sac": "SAC",
    "cp-wbft": "CP-WBFT",
    "debate": "Debate",
    "majority": "Majority",
    "w-msr": "W-MSR",
}


_TOPOLOGY = {"merg": "MERG", "complete": "Complete", "erdos-renyi": "Erdős-Rényi"}


def _arrow(a: float | None, b: float | None) -> str:
    if a is None or b is None:
        return "-"
    return f"{100 * a:.0f}→{100 * b:.0f}"


def metrics_rows(
    summary: Sequence[tuple[dict[str, Any], ConsensusMetrics]], *, for_json: bool = False
) -> list[dict[str, Any]]:
    """Table 1 layout: one row per configuration (percentages; JSON keeps §5.1 names)."""
    rows = []
    for meta, m in summary:
        if for_json:
            rows.append(
                {
                    **meta,
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
                "Method": _METHOD.get(meta["protocol"], meta["protocol"]),
                "Topology": _TOPOLOGY.get(meta["topology"], meta["topology"]),
                "Composition": meta["composition"],
                "IAA": _pct(m.IAA),
                "FAA": _pct(m.FAA),
                "BFTI": f"{100 * m.BFTI:+.1f}",
                "RA": _pct(m.RA),
                "W IAA→FAA": _arrow(m.W_IAA, m.W_FAA),
                "S IAA→FAA": _arrow(m.S_IAA, m.S_FAA),
                "H-Maj": _pct(m.H_Majority),
            }
        )
    return rows


def round_rows(summary: Sequence[tuple[dict[str, Any], ConsensusMetrics]]) -> list[dict[str, Any]]:
    """Table 2 layout: weak / strong accuracy (%) per round, one row per configuration × round."""
    rows = []
    for meta, m in summary:
        for r in m.per_round:
            rows.append(
                {
                    "Method": _METHOD.get(meta["protocol"], meta["protocol"]),
                    "Topology": _TOPOLOGY.get(meta["topology"], meta["topology"]),
                    "Composition": meta["composition"],
                    "Round": "Init" if r.round == 0 else f"Rnd {r.round}",
                    "W %": _pct(r.weak),
                    "S %": _pct(r.strong),
                    "All %": _pct(r.accuracy),
                    "RA %": _pct(r.ra),
                    "H-Majority %": _pct(r.h_majority),
                }
            )
    return rows
