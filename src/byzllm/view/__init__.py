"""The offline viewer, ``byzllm view``: one self-contained HTML page per run, for any browser.
It reads a run's store and lays out each domain's summary and traces from its report module.
May import: byzllm.experiments, byzllm.runs and every layer below them.

>>> from byzllm.view import write_view
>>> path = write_view("runs/demo")            # runs/demo/view.html, opens offline

The page holds the run's summary tables with their 95% intervals (the numbers of the matching
``report --json``), its parse health and model requests, per-round plots (consensus), and a
filterable, paginated list of its questions or games; each opens its trace (consensus: graph
and rounds; WhoDunit: the transcript with decision tokens coloured by entropy; GovSim: the
stock per month and the transcript; CodeGen: the debate round by round and the hidden-test
verdict; monitor evaluations: the monitor's P(success) per turn, triggers and resets). At the top it
says whether the results are simulated or from a real model. No server, no network: CSS,
script and data are inline.

Large runs stay light: the list holds every unit (a short row each), but only the first
``max_details`` units carry their full trace.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from byzllm.errors import InputError

from ._html import Section, page

__all__ = ["DEFAULT_MAX_DETAILS", "Section", "render_view", "write_view"]

#: Units whose full trace is embedded by default (the list always holds every unit).
DEFAULT_MAX_DETAILS = 500


def render_view(
    run_dir: str | Path,
    *,
    max_details: int = DEFAULT_MAX_DETAILS,
    lead: Sequence[Section] = (),
) -> str:
    """The HTML page of the run in ``run_dir`` (see the module docstring); ``lead`` sections
    go first (``byzllm reproduce``: the comparison, its gaps and the sensitivity section)."""
    from byzllm.runs import Store

    location = Path(run_dir)
    if not (location / "results.sqlite").is_file():
        raise InputError(f"no results.sqlite in {location}: nothing to view")
    with Store.open(location) as store:
        kinds = store.kinds()
        name = location.resolve().name
        sections: list[Section]
        if "consensus_question" in kinds:
            from ._consensus import consensus_sections

            records = store.records("consensus_question", with_unit=True)
            sections, simulated = consensus_sections(records, max_details=max_details)
            title = f"{name}: consensus run ({len(records)} questions)"
        elif "whodunit_game" in kinds:
            from ._games import whodunit_sections

            games = store.records("whodunit_game")
            turns = store.records("whodunit_turn") if "whodunit_turn" in kinds else []
            sections, simulated = whodunit_sections(games, turns, max_details=max_details)
            title = f"{name}: WhoDunitEnv games ({len(games)})"
        elif "govsim_game" in kinds:
            from ._games import govsim_sections

            games = store.records("govsim_game")
            sections, simulated = govsim_sections(games, max_details=max_details)
            title = f"{name}: GovSim games ({len(games)})"
        elif "codegen_problem" in kinds:
            from ._games import codegen_sections

            problems = store.records("codegen_problem")
            sections, simulated = codegen_sections(problems, max_details=max_details)
            title = f"{name}: CodeGen debates ({len(problems)})"
        elif "monitor_game" in kinds:
            from ._games import monitor_sections

            games = store.records("monitor_game")
            sections, simulated = monitor_sections(games, max_details=max_details)
            title = f"{name}: monitor evaluation ({len(games)} games)"
        elif kinds:
            from ._games import generic_sections

            sections, simulated = generic_sections(
                {kind: store.records(kind) for kind in kinds}, max_details=max_details
            )
            title = f"{name}: {', '.join(kinds)}"
        else:
            raise InputError(f"{location} holds no finished unit yet")
    label = "simulated agents (not real LLMs)" if simulated else "real-model results"
    return page(title, label, simulated, [*lead, *sections])


def write_view(
    run_dir: str | Path,
    out: str | Path | None = None,
    *,
    max_details: int = DEFAULT_MAX_DETAILS,
    lead: Sequence[Section] = (),
) -> Path:
    """Write the run's page (default ``RUN_DIR/view.html``) and return its path."""
    target = Path(out) if out is not None else Path(run_dir) / "view.html"
    text = render_view(run_dir, max_details=max_details, lead=lead)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return target
