"""What a ``byzllm reproduce`` page says beyond the comparison: why each gap is there, and how
far the simulator's assumptions move the headline.

**Gaps.** A cell's gap is *larger than its interval* when the paper's number lies outside our
95% interval (a cell without an interval counts as a gap whenever it differs). Every such
gap gets one sentence (:func:`gap_rows`), in this order of evidence:

1. a known cause of :data:`GAP_CAUSES`, keyed by (entry, metric, row), naming the assumption
   and the ablation that shows it;
2. else the sensitivity runs below: the assumptions of :data:`SENSITIVITY` whose plausible
   range, run on this entry, spans the paper's number in that cell ("moving X over its
   range covers the paper's value");
3. else "unexplained".

Runs on real models (``--real``, ``--model``) list their gaps too; none is the simulator's,
so each says "unexplained" and why (:data:`REAL_UNEXPLAINED`).

**Sensitivity.** Per entry, the headline metric (:data:`HEADLINE`) as each named assumption of
the simulator moves across its plausible range, one assumption at a time, everything else at
its default (as ``scripts/consensus_tables.py`` does for docs/consensus.md). The SAC entries
rerun the entry's config with the changed profile for both honest groups (``byzllm sim show``
lists every parameter and its source); the rogue-agents entries replay the test games under
no intervention and the selected monitor (one reset), with the monitors the run trained on
the default population, and one repeat (so the numbers say how the same monitor fares on a
different population, not what a monitor retrained on it would do); CodeGen's entry replays
its test problems the same way under Table 1's three conditions (zero-shot, multi-agent,
multi-agent + monitor). The cost (simulated runs, units and seconds) is printed with the
section. A run with agents on real models (every group, or one: ``--weak-model`` alone) has
none: a real model has no simulator assumption to move, and a rerun would call it again; its
section says so and points to ``byzllm sim fit`` / ``sim compare``, which fit the simulator to
the run.

The ranges are plausible, not measured: where a source gives a range (the SAC paper, Table 1:
strong agents' initial accuracy 81-86%), it is used; elsewhere each range spans the values
the docs' ablations already discuss, and "assumed" in ``byzllm sim show`` says so.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from byzllm._files import write_text_atomic
from byzllm.runs.reports import format_interval, paper_within, simulated_note

from ._diff import shown_difference

if TYPE_CHECKING:
    from byzllm.experiments.parse_health import ParseHealth

__all__ = [
    "CODEGEN_SENSITIVITY_CONDITIONS",
    "GAP_CAUSES",
    "HEADLINE",
    "NO_SENSITIVITY",
    "REAL_UNEXPLAINED",
    "SENSITIVITY",
    "Assumption",
    "GapCause",
    "Sensitivity",
    "cell_label",
    "codegen_sensitivity",
    "consensus_sensitivity",
    "gap_rows",
    "monitor_sensitivity",
    "page_markdown",
    "sensitivity_rows",
]

#: The row keys that name a cell, in the order the comparison prints them.
ROW_KEYS = (
    "protocol",
    "topology",
    "adversaries",
    "round",
    "paper model",
    "benchmark",
    "condition",
    "suspects",
)

#: Each entry's headline metric: what the sensitivity section follows.
HEADLINE: dict[str, str] = {
    "sac-table1": "BFTI",
    "sac-table2": "S",
    "sac-table3": "BFTI",
    "sac-table4": "S",
    "sac-table5": "BFTI",
    "sac-table6": "BFTI",
    "ra-table1": "pass_at_1",
    "ra-table2": "survival_rate",
    "ra-table3": "success",
    "ra-fig4": "gain",
    "ra-fig5": "gain",
    "ra-fig6": "gain_1",
}


@dataclass(frozen=True)
class Assumption:
    """A named simulator assumption and the values of its plausible range that are run.

    ``key`` is the parameter of ``domain``'s simulator (``byzllm sim show``); ``why`` where
    the range comes from; :attr:`default` what the default run uses, read from the domain's
    parameters (``gloss`` says what that value means where the number alone does not).
    """

    key: str
    values: tuple[float, ...]
    why: str
    #: More parameters set to the same value (e.g. both ``confidence_at_one_*``).
    also: tuple[str, ...] = ()
    gloss: str = ""
    #: Set by :data:`SENSITIVITY` from the domain each assumption is listed under.
    domain: str = ""

    @property
    def name(self) -> str:
        """How the page names it: the parameter, or every parameter it sets joined by +."""
        return "+".join((self.key, *self.also))

    @property
    def default(self) -> str:
        """Each parameter's default (``0.3``; ``0.6 strong, 0.55 weak`` where the groups
        differ), several joined by "and", then the gloss in brackets."""
        from byzllm.agents._params import default_parameters

        groups = default_parameters(self.domain)
        parts = []
        for key in (self.key, *self.also):
            values = {group: getattr(params, key) for group, params in groups.items()}
            if len(set(values.values())) == 1:
                parts.append(f"{next(iter(values.values()))}")
            else:
                parts.append(", ".join(f"{value} {group}" for group, value in values.items()))
        return " and ".join(parts) + (f" ({self.gloss})" if self.gloss else "")

    def overrides(self, value: float) -> dict[str, float]:
        return {k: value for k in (self.key, *self.also)}


#: The assumptions each domain's sensitivity section moves.
_MOVED: dict[str, tuple[Assumption, ...]] = {
    "consensus": (
        Assumption(
            "self_trust", (0.5, 0.75), "assumed; docs/consensus.md's ablations run 0.75 and 0.5"
        ),
        Assumption("false_reject", (0.0, 0.3), "assumed; 0 is the 'perfect judges' ablation"),
        Assumption("anchoring", (0.0, 0.5), "assumed; 0 is the 'never anchored' ablation"),
        Assumption(
            "confidence_at_one_right",
            (0.0, 1.0),
            "assumed; the 'never 1.0' and 'always 1.0' ablations",
            also=("confidence_at_one_wrong",),
        ),
    ),
    "whodunit": (
        Assumption("rogue_rate", (0.1, 0.4), "assumed (the notion: the rogue-agents paper, §2)"),
        Assumption("fault_signal", (0.0, 0.5), "assumed; 0 is the null: faults leave no trace"),
        Assumption(
            "hallucination_rate", (0.0, 0.06), "assumed (the mode: the rogue-agents paper, §6.3)"
        ),
    ),
    "govsim": (
        Assumption("greed", (0.1, 0.5), "assumed (GovSim: most LLM fishers over-harvest)"),
        Assumption("rogue_rate", (0.0, 0.12), "assumed (the notion: the rogue-agents paper, §2)"),
        Assumption("fault_signal", (0.0, 0.5), "assumed; 0 is the null: faults leave no trace"),
    ),
    # CodeGen: the coders' skill (which sets zero-shot), what the judge can see and how often
    # it fails, how visible a bug is, the fault signal the monitor reads, and which coder
    # plays zero-shot (the paper does not say; docs/codegen.md's ablations move each).
    "codegen": (
        Assumption(
            "coder_skill",
            (1.5, 2.5),
            "assumed, chosen near Table 1's zero-shot 80.5%; half a logit either side",
        ),
        Assumption(
            "judge_error_rate",
            (0.05, 0.3),
            "assumed; the rogue-agents paper reports no rate of faulty judgements",
        ),
        Assumption(
            "verdict_noise",
            (0.0, 0.5),
            "assumed; 0.5 is the null: verdicts ignore what the examples show",
        ),
        Assumption(
            "verdict_noise",
            (0.5,),
            "the judge without information, docs/codegen.md's ablation: verdicts ignore the "
            "examples and a solution without one is a coin flip",
            also=("unseen_correct_rate",),
        ),
        Assumption(
            "bug_coverage", (0.25, 1.0), "assumed; docs/codegen.md's ablations run 0.25 and 1.0"
        ),
        Assumption("fault_signal", (0.0, 0.5), "assumed; 0 is the null: faults leave no trace"),
        Assumption(
            "zero_shot_seat",
            (1.0, 3.0),
            "assumed: Table 1 does not say which coder plays zero-shot; 3 is the least skilled",
            gloss="the most skilled coder",
        ),
    ),
}
SENSITIVITY: dict[str, tuple[Assumption, ...]] = {
    domain: tuple(replace(a, domain=domain) for a in moved) for domain, moved in _MOVED.items()
}

#: The explanation of every gap of a real-model run: the simulator's assumptions are not in
#: it, and the run differs from the paper's in more than one way at once.
REAL_UNEXPLAINED = (
    "unexplained (real models: no simulator assumption is in this run, and no ablation "
    "isolates the cause; docs/reproduce.md lists how `--real` differs from the paper's setting)"
)


@dataclass(frozen=True)
class GapCause:
    """A known cause of a gap: the entries and metric it applies to, the row fields it needs
    (empty: every row), and the sentence, which names the assumption and the ablation."""

    entries: tuple[str, ...]
    metric: str
    row: Mapping[str, Any]
    sentence: str

    def matches(self, entry: str, metric: str, row: Mapping[str, Any]) -> bool:
        return (
            entry in self.entries
            and metric == self.metric
            and all(row.get(k) == v for k, v in self.row.items())
        )


#: Known causes of gaps that the sensitivity runs cannot show (they are not a parameter's
#: range), each with the ablation that shows it; an entry is added only with that ablation.
#: Empty for now: every explanation on a page comes from its own sensitivity runs, and
#: anything they do not span is "unexplained".
GAP_CAUSES: tuple[GapCause, ...] = ()


@dataclass
class Sensitivity:
    """The sensitivity runs of one entry: per (assumption, value), the comparison rows.

    ``baseline`` is a replay at the defaults under the same reduced protocol as the runs
    (the rogue-agents entries replay fewer conditions and repeats than the entry runs), so
    that each column is read against the defaults measured the same way; ``None`` when the
    runs repeat the entry's whole protocol (the SAC entries).
    """

    headline: str
    runs: list[tuple[Assumption, float, list[dict[str, Any]]]] = field(default_factory=list)
    units: int = 0
    seconds: float = 0.0
    note: str = ""
    baseline: list[dict[str, Any]] | None = None

    @property
    def extra_runs(self) -> int:
        """Simulated runs beyond the entry's own: one per (assumption, value), and the
        baseline replay."""
        return len(self.runs) + (self.baseline is not None)


def cell_label(row: Mapping[str, Any]) -> str:
    """The cell's name from its row keys, e.g. ``sac / merg``."""
    return " / ".join(str(row[k]) for k in ROW_KEYS if k in row) or "-"


def _key(row: Mapping[str, Any]) -> tuple[Any, ...]:
    return tuple(row.get(k) for k in ROW_KEYS)


def _number(value: Any) -> float | None:
    if value is None:
        return None
    x = float(value)
    return None if math.isnan(x) else x


def _spanning(
    metric: str, row: Mapping[str, Any], paper: float, sensitivity: Sensitivity | None
) -> list[str]:
    """The assumptions whose runs, with the defaults, span the paper's number in this cell.

    The defaults' point is ours, or, where the runs are a reduced replay (``baseline``), the
    defaults replayed the same way: ours then comes from more conditions and repeats than
    any run, and a range stretched to it would name values the assumption never gave."""
    if sensitivity is None:
        return []
    if sensitivity.baseline is None:
        ours = _number(row.get(metric))
    else:
        match = next((r for r in sensitivity.baseline if _key(r) == _key(row)), None)
        ours = None if match is None else _number(match.get(metric))
    found: list[str] = []
    by_assumption: dict[str, list[float]] = {}
    for assumption, _value, rows in sensitivity.runs:
        match = next((r for r in rows if _key(r) == _key(row)), None)
        value = None if match is None else _number(match.get(metric))
        if value is not None:
            by_assumption.setdefault(assumption.name, []).append(value)
    for key, values in by_assumption.items():
        span = [*values, *([] if ours is None else [ours])]
        if min(span) <= paper <= max(span):
            low, high = min(span), max(span)
            found.append(f"`{key}` over its range gives {low:.1f} to {high:.1f}")
    return found


def gap_rows(
    entry: str,
    rows: Sequence[Mapping[str, Any]],
    metrics: Sequence[str],
    sensitivity: Sensitivity | None = None,
    *,
    unexplained: str = "unexplained",
) -> list[dict[str, Any]]:
    """Every cell whose gap to the paper is larger than its interval, with one sentence
    (module docstring); ``unexplained`` is the sentence where nothing explains it. Cells the
    paper has no number for, or we have none for, are left out."""
    out: list[dict[str, Any]] = []
    for row in rows:
        for metric in metrics:
            ours = _number(row.get(metric))
            paper = _number(row.get(f"{metric}_paper"))
            if ours is None or paper is None:
                continue
            low = _number(row.get(f"{metric}_low"))
            high = _number(row.get(f"{metric}_high"))
            if paper_within(paper, ours, low, high):
                continue
            cause = next((c for c in GAP_CAUSES if c.matches(entry, metric, row)), None)
            if cause is not None:
                why = cause.sentence
            else:
                spans = _spanning(metric, row, paper, sensitivity)
                why = (
                    "simulator assumptions: " + "; ".join(spans) + f", which contains {paper:g}"
                    if spans
                    else unexplained
                )
            given = _number(row.get(f"{metric}_diff"))
            out.append(
                {
                    "cell": cell_label(row),
                    "metric": metric,
                    "ours": round(ours, 1),
                    "low": None if low is None else round(low, 1),
                    "high": None if high is None else round(high, 1),
                    "paper": paper,
                    # The row's own difference where it has one: the table and this line
                    # must say the same number.
                    "diff": shown_difference(ours - paper if given is None else given),
                    "explanation": why,
                }
            )
    return out


def sensitivity_rows(
    rows: Sequence[Mapping[str, Any]], sensitivity: Sensitivity
) -> list[dict[str, Any]]:
    """One row per cell: the paper's headline value, ours at the defaults, the defaults
    replayed the way the runs are (when the runs are a reduced replay), then ours under each
    (assumption = value). Per-round tables keep their last round only."""
    metric = sensitivity.headline
    last_round = max((int(r["round"]) for r in rows if "round" in r), default=None)
    out: list[dict[str, Any]] = []
    for row in rows:
        if last_round is not None and int(row.get("round", last_round)) != last_round:
            continue
        cells: dict[str, Any] = {
            "cell": cell_label(row),
            "paper": row.get(f"{metric}_paper"),
            "defaults": _fmt(row.get(metric)),
        }
        if sensitivity.baseline is not None:
            match = next((r for r in sensitivity.baseline if _key(r) == _key(row)), None)
            cells["defaults, replayed"] = _fmt(None if match is None else match.get(metric))
        for assumption, value, runs in sensitivity.runs:
            match = next((r for r in runs if _key(r) == _key(row)), None)
            cells[f"{assumption.name}={value:g}"] = _fmt(
                None if match is None else match.get(metric)
            )
        out.append(cells)
    return out


def _fmt(value: Any) -> str:
    return format_interval(_number(value))


# -- running the sensitivity -------------------------------------------------------------------


def consensus_sensitivity(
    entry: str, config: Any, compare: Callable[[Any], list[dict[str, Any]]]
) -> Sensitivity:
    """Rerun a SAC entry's config once per (assumption, value) of :data:`SENSITIVITY`
    (``consensus``), the profile changed for both honest groups, in memory."""
    from byzllm.experiments.consensus.config import ConsensusConfig
    from byzllm.experiments.consensus.experiment import expand_units, run_in_memory
    from byzllm.experiments.consensus.report import summarize

    result = Sensitivity(headline=HEADLINE.get(entry, ""))
    started = time.monotonic()
    for assumption in SENSITIVITY["consensus"]:
        for value in assumption.values:
            agents = config.agents.model_copy(
                update={
                    group: getattr(config.agents, group).model_copy(
                        update={
                            "profile": {
                                **getattr(config.agents, group).profile,
                                **assumption.overrides(value),
                            }
                        }
                    )
                    for group in ("strong", "weak")
                }
            )
            changed = ConsensusConfig.model_validate(
                config.model_copy(update={"agents": agents}).model_dump()
            )
            result.units += len(expand_units(changed))
            result.runs.append((assumption, value, compare(summarize(run_in_memory(changed)))))
    result.seconds = time.monotonic() - started
    result.note = (
        "the entry's config rerun in memory, one assumption changed for both honest groups"
    )
    return result


def _replayed(
    entry: str,
    assumptions: Sequence[Assumption],
    replay: Callable[[Mapping[str, float]], tuple[int, list[dict[str, Any]]]],
    note: str,
) -> Sensitivity:
    """The baseline replay at the defaults, then one replay per (assumption, value):
    ``replay(overrides)`` returns the units it played and the comparison rows."""
    result = Sensitivity(headline=HEADLINE.get(entry, ""), note=note)
    started = time.monotonic()
    units, result.baseline = replay({})
    result.units += units
    for assumption in assumptions:
        for value in assumption.values:
            units, rows = replay(assumption.overrides(value))
            result.units += units
            result.runs.append((assumption, value, rows))
    result.seconds = time.monotonic() - started
    return result


def monitor_sensitivity(
    entry: str,
    config: Any,
    monitors: Any,
    compare: Callable[[Any], list[dict[str, Any]]],
    *,
    size: int | None = None,
) -> Sensitivity:
    """Replay a rogue-agents entry's test games under no intervention and the selected
    monitor (one reset), one repeat, at the defaults and once per (assumption, value) of
    :data:`SENSITIVITY` for its environment, with the monitors trained on the default
    population."""
    from byzllm.experiments.monitor.config import MonitorExperimentConfig
    from byzllm.experiments.monitor.experiment import evaluate_units, run_in_memory

    env = str(config.env)

    def replay(overrides: Mapping[str, float]) -> tuple[int, list[dict[str, Any]]]:
        data = config.model_dump()
        data.update(repeats=1, conditions=["none", "monitor-1"])
        (data["govsim"]["sim"] if env == "govsim" else data["sim"]).update(overrides)
        units = evaluate_units(MonitorExperimentConfig.model_validate(data), monitors)
        games = [r for r in asyncio.run(run_in_memory(units)) if r.get("kind") == "monitor_game"]
        return len(units), compare({size: games} if size is not None else games)

    return _replayed(
        entry,
        SENSITIVITY[env],
        replay,
        "the test games replayed under none and monitor-1 only (one repeat), with the monitors "
        "trained on the default population"
        + ("" if size is None else f"; lineup size {size} only"),
    )


#: The sensitivity section of a run without sensitivity runs (real models).
NO_SENSITIVITY = (
    "Not run: agents of this run are real models, which have no simulator assumption to move "
    "(and a rerun would call them again). "
    "`byzllm sim fit RUN_DIR` fits the simulator's parameters to this run and `byzllm sim "
    "compare` sets the fitted twin beside it, cell by cell."
)

#: The conditions CodeGen's sensitivity runs replay: Table 1's three rows.
CODEGEN_SENSITIVITY_CONDITIONS = ("zero-shot", "none", "monitor-1")


def codegen_sensitivity(
    entry: str, config: Any, monitors: Any, compare: Callable[[Any], list[dict[str, Any]]]
) -> Sensitivity:
    """Replay CodeGen's test problems under Table 1's three conditions, one repeat, at the
    defaults and once per (assumption, value) of :data:`SENSITIVITY` (``codegen``), with the
    monitors trained on the default population (the rogue-agents paper, §5, Table 1)."""
    from byzllm.experiments.codegen.config import CodeGenConfig
    from byzllm.experiments.codegen.experiment import run_in_memory, run_units

    def replay(overrides: Mapping[str, float]) -> tuple[int, list[dict[str, Any]]]:
        data = config.model_dump()
        data.update(repeats=1, conditions=list(CODEGEN_SENSITIVITY_CONDITIONS))
        data["sim"].update(overrides)
        units = run_units(CodeGenConfig.model_validate(data), monitors)
        problems = [
            r for r in asyncio.run(run_in_memory(units)) if r.get("kind") == "codegen_problem"
        ]
        return len(units), compare(problems)

    return _replayed(
        entry,
        SENSITIVITY["codegen"],
        replay,
        "the test problems replayed under zero-shot, none and monitor-1 only (one repeat), "
        "with the monitors trained on the default population",
    )


# -- the page ----------------------------------------------------------------------------------


def _table(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    if not rows:
        return []
    cols = list(rows[0])
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        lines.append(
            "| " + " | ".join("" if r.get(c) is None else str(r.get(c)) for c in cols) + " |"
        )
    return lines


def gap_sentence(gap: Mapping[str, Any]) -> str:
    """One gap as the page writes it."""
    ours = format_interval(gap["ours"], gap["low"], gap["high"])
    diff = format_interval(gap["diff"], signed=True)
    return (
        f"{gap['cell']}, {gap['metric']}: ours {ours} vs the paper's {gap['paper']:g} "
        f"({diff}): {gap['explanation']}."
    )


def page_markdown(
    *,
    title: str,
    simulated: bool | str,
    note: str,
    gaps: Sequence[Mapping[str, Any]],
    sensitivity: Sensitivity | None,
    sensitivity_table: Sequence[Mapping[str, Any]] = (),
    controls: Sequence[Mapping[str, Any]] = (),
    remark: str = "",
    health: ParseHealth | None = None,
) -> str:
    """``report/reproduce.md``: the gaps with their explanations, the sensitivity section and
    (rogue-agents entries) the monitor's gains over the two controls. ``simulated``: a bool,
    or the label of a partly simulated run (``--weak-model`` alone:
    :func:`~byzllm.runs.reports.partly_simulated_note`), which the page gives. Without sensitivity
    runs (real models) the section says why there are none. ``health`` (runs of real
    models): the parse health, model replies parsed per stage and how many fell back to
    their documented default, with its warnings."""
    lines = [f"# {title}", ""]
    said = simulated_note(simulated)
    lines.append(f"Ours: {said}." if said else "Ours: real-model results.")
    lines += [f"Intervals: {note}.", ""]
    if remark:
        lines += [remark, ""]
    if controls:
        lines += ["## The monitor's gain over the controls", ""]
        lines += [f"- {c['sentence']}" for c in controls]
        lines.append("")
    if health is not None:
        lines += ["## Parse health", ""]
        lines += [health.note] if health.note is not None else _table(health.rows())
        lines += ["", *(f"- {w}" for w in health.warnings()), *([""] if health.warnings() else [])]
    lines += ["## Gaps larger than their interval", ""]
    if not gaps:
        lines.append("None: every paper number lies within our 95% interval.")
    else:
        lines += [f"- {gap_sentence(g)}" for g in gaps]
    lines.append("")
    if sensitivity is not None:
        lines += [f"## Sensitivity: {sensitivity.headline} as each assumption moves", ""]
        lines += _table(sensitivity_table)
        lines.append("")
        if sensitivity.baseline is not None:
            lines.append(
                "- `defaults, replayed`: the defaults replayed the way every other column is "
                "(below); read each column against it, not against `defaults`"
            )
        seen: dict[str, Assumption] = {a.name: a for a, _, _ in sensitivity.runs}
        for a in seen.values():
            values = ", ".join(f"{v:g}" for v in a.values)
            lines.append(f"- `{a.name}`: default {a.default}; run at {values} ({a.why})")
        lines.append("")
        lines.append(
            f"Cost: {sensitivity.extra_runs} extra simulated runs, {sensitivity.units} units, "
            f"{sensitivity.seconds:.0f} s ({sensitivity.note})."
        )
        lines.append("")
    else:
        lines += ["## Sensitivity", "", NO_SENSITIVITY, ""]
    return "\n".join(lines)


def write_pages(
    run_dir: Any,
    view_source: Any,
    *,
    entry: Any,
    rows: Sequence[Mapping[str, Any]],
    simulated: bool | str,
    note: str,
    sensitivity: Sensitivity | None,
    controls: Sequence[Mapping[str, Any]] = (),
    health: ParseHealth | None = None,
) -> tuple[Any, Any, list[dict[str, Any]]]:
    """Write ``report/reproduce.md`` and ``view.html`` (the run's page of ``view_source``
    with the comparison, the monitor's control gains, the gaps and the sensitivity section
    first); return both paths and the gap rows. Every page has both sections, real-model
    runs included (their gaps are :data:`REAL_UNEXPLAINED`, their sensitivity section
    :data:`NO_SENSITIVITY`). ``simulated``: as :func:`page_markdown` takes it."""
    from pathlib import Path

    from byzllm.view import Section, comparison_html, esc, table_html, write_view

    gaps = gap_rows(
        entry.name,
        rows,
        entry.metrics,
        sensitivity,
        unexplained="unexplained" if simulated else REAL_UNEXPLAINED,
    )
    table = sensitivity_rows(rows, sensitivity) if sensitivity is not None else []
    title = f"{entry.paper}, {entry.table}: ours beside the paper"
    markdown = page_markdown(
        title=title,
        simulated=simulated,
        note=note,
        gaps=gaps,
        sensitivity=sensitivity,
        sensitivity_table=table,
        controls=controls,
        remark=entry.remark,
        health=health,
    )
    folder = Path(run_dir)
    md_path = folder / "report" / "reproduce.md"
    md_path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(md_path, markdown)
    caption = f"intervals: {note}" + (f". {entry.remark}" if entry.remark else "")
    partly = simulated if isinstance(simulated, str) else None
    compare = comparison_html(rows, entry.metrics, ROW_KEYS, note=caption, partly=partly)
    lead = [Section(title, compare, anchor="paper")]
    if controls:
        lead.append(
            Section(
                "The monitor's gain over the controls",
                "<ul>" + "".join(f"<li>{esc(c['sentence'])}</li>" for c in controls) + "</ul>",
                anchor="controls",
            )
        )
    body = (
        "<ul>" + "".join(f"<li>{esc(gap_sentence(g))}</li>" for g in gaps) + "</ul>"
        if gaps
        else "<p class='note'>None: every paper number lies within our 95% interval.</p>"
    )
    lead.append(Section("Gaps larger than their interval", body, anchor="gaps"))
    if sensitivity is None:
        lead.append(
            Section(
                "Sensitivity", f"<p class='note'>{esc(NO_SENSITIVITY)}</p>", anchor="sensitivity"
            )
        )
    else:
        cost = (
            f"{sensitivity.extra_runs} extra simulated runs, {sensitivity.units} units, "
            f"{sensitivity.seconds:.0f} s ({sensitivity.note})"
        )
        lead.append(
            Section(
                f"Sensitivity: {sensitivity.headline} as each assumption moves",
                table_html(table, note=cost),
                anchor="sensitivity",
            )
        )
    page = write_view(view_source, folder / "view.html", lead=lead)
    return md_path, page, gaps
