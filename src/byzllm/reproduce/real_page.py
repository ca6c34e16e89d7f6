"""The Markdown page of a real-model reproduction (``byzllm reproduce NAME --real``).

One page that a reader can check without opening the store: ours with 95% intervals beside
the paper's number where the paper ran the configuration, the questions and how the agents
differ, parse health per stage, how well the scores separate right from wrong answers (the
scorer's AUC, :mod:`byzllm.experiments.consensus.scorer`), and what the run cost (model
calls, tokens, wall time).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from byzllm.agents import ParseCounts
from byzllm.experiments.consensus.config import ConsensusConfig

__all__ = ["write_real_report"]

_METRICS = (
    ("IAA", "IAA"),
    ("FAA", "FAA"),
    ("BFTI", "BFTI"),
    ("RA", "RA"),
    ("W_IAA", "W IAA"),
    ("W_FAA", "W FAA"),
    ("S_IAA", "S IAA"),
    ("S_FAA", "S FAA"),
    ("H_Majority", "H-Majority"),
)


def _cell(row: Mapping[str, Any], key: str) -> str:
    ours = row.get(key)
    if ours is None:
        return "-"
    low, high = row.get(f"{key}_low"), row.get(f"{key}_high")
    text = f"{ours:.1f}"
    if low is not None and high is not None:
        text += f" [{low:.1f}, {high:.1f}]"
    paper = row.get(f"{key}_paper")
    if paper is not None:
        inside = low is not None and high is not None and low <= paper <= high
        text += f" / {paper:g}{'' if inside else ' ✗'}"
    return text


def _agents(config: ConsensusConfig) -> list[str]:
    lines = []
    for group in ("strong", "weak"):
        backend = getattr(config.agents, group)
        lines.append(
            f"- {group}: `{backend.model}`, temperature {backend.temperature:g} with a seed per "
            f"agent, at most {backend.max_tokens} tokens per reply, judging `{backend.judging}`, "
            f"refining `{backend.refining}`"
        )
    return lines


def write_real_report(
    path: Path,
    *,
    entry: Any,
    rows: Sequence[Mapping[str, Any]],
    summary: Sequence[tuple[Mapping[str, Any], Any]],
    records: Sequence[Mapping[str, Any]],
    config: ConsensusConfig,
    wall_s: float,
    planned_questions: int | None = None,
) -> str:
    """Write the page to ``path`` and return its text.

    ``planned_questions`` marks a partial report (a run stopped early, reported with
    ``--partial``): the page says how many of the planned questions it covers.
    """
    questions = {str(r.get("task_id", "")) for r in records} - {""}
    composition = config.compositions[0]
    partial = (
        [
            f"**Partial: {len(questions)} of the {planned_questions} planned questions** "
            "(those finished under every protocol when the run was stopped; rerunning the "
            "command without --partial resumes it).",
            "",
        ]
        if planned_questions is not None
        else []
    )
    lines = [
        f"# {entry.paper}, {entry.table}, on real models",
        "",
        *partial,
        f"{len(questions)} questions ({config.dataset.name}"
        + (f", {_steps_text(config.dataset.steps)}" if config.dataset.name == "synthetic" else "")
        + f"), n = {composition.n} ({composition.strong} strong, {composition.weak} weak, "
        f"{composition.byzantine} {composition.attack} adversary), F = {config.F[0]}, "
        f"T = {config.T[0]}, topologies {', '.join(config.topologies)}.",
        "",
        "How the agents differ:",
        *_agents(config),
        "",
        "Cells: ours [95% interval] / the paper's number where the paper ran this "
        "configuration (✗: the paper's number lies outside our interval). Percent.",
        "",
        "| protocol | topology | " + " | ".join(label for _, label in _METRICS) + " |",
        "|---|---|" + "---|" * len(_METRICS),
    ]
    for row in rows:
        cells = [_cell(row, key) for key, _ in _METRICS]
        lines.append(f"| {row['protocol']} | {row['topology']} | " + " | ".join(cells) + " |")
    lines += ["", "## Parse health (replies that fell back to the parser's default)", ""]
    lines += ["| protocol | stage | replies | fallbacks | rate |", "|---|---|---|---|---|"]
    for meta, _ in summary:
        for stage, entry_ in ParseCounts.of(meta.get("parse")).to_dict().items():
            calls, fallbacks = entry_["calls"], entry_["fallbacks"]
            rate = f"{100 * fallbacks / calls:.1f}%" if calls else "-"
            lines.append(f"| {meta['protocol']} | {stage} | {calls} | {fallbacks} | {rate} |")
    lines += [
        "",
        "## Do the scores separate right from wrong answers?",
        "",
        "AUC of each group's scores (SAC) and self-reported confidences (CP-WBFT) against the "
        "correctness of what they judge: 0.5 is no signal, 1 is perfect; 95% bootstrap "
        "interval over questions.",
        "",
        "| protocol | judged by | AUC | pairs |",
        "|---|---|---|---|",
    ]
    for meta, _ in summary:
        for group, auc in (meta.get("scorer_auc") or {}).items():
            value = "n/a" if auc["auc"] is None else f"{auc['auc']:.2f}"
            if auc["auc"] is not None and auc["low"] is not None:
                value += f" [{auc['low']:.2f}, {auc['high']:.2f}]"
            who = "own confidence" if group == "confidence" else f"{group} agents"
            lines.append(f"| {meta['protocol']} | {who} | {value} | {auc['pairs']} |")
    total_calls = total_tokens = total_saved = 0.0
    for meta, _ in summary:
        total_calls += float(meta.get("calls_per_question", 0)) * len(questions)
        total_tokens += float(meta.get("tokens_per_question", 0)) * len(questions)
        total_saved += float(meta.get("saved_calls_per_question", 0)) * len(questions)
    lines += [
        "",
        "## Cost",
        "",
        f"Model calls {total_calls:.0f} (and {total_saved:.0f} identical requests answered "
        f"once), tokens {total_tokens:,.0f}; wall time of this invocation {wall_s / 60:.1f} "
        "min (a resumed run counts only the units it ran). Calls answered from the response "
        "cache count as calls.",
        "",
        f"Regenerate: `byzllm reproduce {entry.name} --real "
        f"{str(config.agents.strong.model).split('/', 1)[-1]} --real-weak "
        f"{str(config.agents.weak.model).split('/', 1)[-1]} -n {len(questions)}`",
        "",
    ]
    text = "\n".join(lines)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return text


def _steps_text(steps: int | tuple[int, int]) -> str:
    if isinstance(steps, int):
        return f"{steps} step" + ("" if steps == 1 else "s")
    return f"{steps[0]}-{steps[1]} steps"
