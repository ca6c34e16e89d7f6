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

A new domain adds its page with :func:`register_view` (its record kind and a
:data:`ViewBuilder` made of :class:`Section`, :class:`Units` and :func:`table_html`); until
then its runs get every record kind listed with its fields.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from byzllm.errors import InputError

from ._html import Section, Units, esc, page, table_html

if TYPE_CHECKING:
    from byzllm.runs import Store

__all__ = [
    "DEFAULT_MAX_DETAILS",
    "VIEWS",
    "Section",
    "Units",
    "ViewBuilder",
    "esc",
    "register_view",
    "render_view",
    "table_html",
    "write_view",
]

#: Units whose full trace is embedded by default (the list always holds every unit).
DEFAULT_MAX_DETAILS = 500

#: A domain's part of the page: (the run's store, max_details) -> (its sections, whether the
#: results are simulated, what the run is: "consensus run (30 questions)").
ViewBuilder = Callable[["Store", int], tuple[list[Section], bool, str]]


def _consensus(store: Store, max_details: int) -> tuple[list[Section], bool, str]:
    from ._consensus import consensus_sections

    records = store.records("consensus_question", with_unit=True)
    sections, simulated = consensus_sections(records, max_details=max_details)
    return sections, simulated, f"consensus run ({len(records)} questions)"


def _whodunit(store: Store, max_details: int) -> tuple[list[Section], bool, str]:
    from ._games import whodunit_sections

    games = store.records("whodunit_game")
    turns = store.records("whodunit_turn") if "whodunit_turn" in store.kinds() else []
    sections, simulated = whodunit_sections(games, turns, max_details=max_details)
    return sections, simulated, f"WhoDunitEnv games ({len(games)})"


def _govsim(store: Store, max_details: int) -> tuple[list[Section], bool, str]:
    from ._games import govsim_sections

    games = store.records("govsim_game")
    sections, simulated = govsim_sections(games, max_details=max_details)
    return sections, simulated, f"GovSim games ({len(games)})"


def _codegen(store: Store, max_details: int) -> tuple[list[Section], bool, str]:
    from ._games import codegen_sections

    problems = store.records("codegen_problem")
    sections, simulated = codegen_sections(problems, max_details=max_details)
    return sections, simulated, f"CodeGen debates ({len(problems)})"


def _monitor(store: Store, max_details: int) -> tuple[list[Section], bool, str]:
    from ._games import monitor_sections

    games = store.records("monitor_game")
    sections, simulated = monitor_sections(games, max_details=max_details)
    return sections, simulated, f"monitor evaluation ({len(games)} games)"


#: Record kind -> the builder of the page of a run that holds it, tried in this order (the
#: first kind the run holds wins); a run holding none of them gets every record listed.
VIEWS: dict[str, ViewBuilder] = {
    "consensus_question": _consensus,
    "whodunit_game": _whodunit,
    "govsim_game": _govsim,
    "codegen_problem": _codegen,
    "monitor_game": _monitor,
}


def register_view(kind: str, build: ViewBuilder) -> None:
    """Lay out runs that hold records of ``kind`` with ``build`` (a new domain's page)."""
    VIEWS[kind] = build


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
        if not kinds:
            raise InputError(f"{location} holds no finished unit yet")
        build = next((VIEWS[kind] for kind in VIEWS if kind in kinds), None)
        if build is not None:
            sections, simulated, what = build(store, max_details)
        else:
            from ._games import generic_sections

            records = {kind: store.records(kind) for kind in kinds}
            sections, simulated = generic_sections(records, max_details=max_details)
            what = ", ".join(kinds)
    label = "simulated agents (not real LLMs)" if simulated else "real-model results"
    return page(f"{location.resolve().name}: {what}", label, simulated, [*lead, *sections])


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
