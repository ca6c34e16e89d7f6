"""The offline viewer, ``byzllm view``: one HTML page per run, for any browser, no server.
It reads a run's store and lays out each domain's summary and traces from its report module.
May import: byzllm.experiments, byzllm.runs and every layer below them.

>>> from byzllm.view import write_view
>>> path = write_view("runs/demo")            # runs/demo/view.html, opens offline

The page holds the run's summary tables with their 95% intervals (the numbers of the matching
``report --json``), its parse health and model requests, per-round plots (consensus), and a
filterable, paginated list of its questions or games; each opens its trace (consensus: graph
and rounds; WhoDunit: the transcript with decision tokens coloured by entropy; GovSim: the
stock per month and the transcript; CodeGen: the debate round by round and the hidden-test
verdict; monitor evaluations: the monitor's P(success) per turn, triggers and resets, and for
GovSim the stock per month with them marked). At the top it
says whether the results are simulated or from a real model, and how many units failed or
are still pending, each failed one with its error's first line. Record text is never trusted
(escaped, cut, bidirectional controls shown; a Content-Security-Policy runs only the page's
own scripts: :mod:`._html`). No server, no network: CSS,
script and the list of units are inline. Column names are human labels (``Success-Rate``,
not ``success_rate``); hovering a metric's name shows its definition, and every page ends with
a glossary of the metrics (IAA, FAA, BFTI, RA, H-Majority, Pass@1, Survival-Time, the monitor's
gain, ...). ``byzllm reproduce`` pages lead with :func:`comparison_html`: the paper's number,
ours with its interval and the difference, cell by cell, coloured by whether the paper's number
lies inside our interval.

Every unit is reachable: the list holds every unit (a short row each), and every unit's trace
goes to gzip-compressed chunk files in ``view_files/`` next to ``view.html``, loaded when a
reader opens a unit (a ``<script>`` element, which browsers allow from ``file://``), so a
10,000-unit run's folder stays a few megabytes and still opens offline.

A new domain adds its page with :func:`register_view` (its record kind and a
:data:`ViewBuilder` made of :class:`Section`, :class:`Units` and :func:`table_html`); until
then its runs get every record kind listed with its fields.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from byzllm._files import write_text_atomic
from byzllm.errors import InputError
from byzllm.runs.reports import SIMULATED_NOTE

from ._compare import comparison_html
from ._glossary import (
    GLOSSARY,
    METRICS,
    METRICS_DOC,
    Metric,
    definition,
    find_term,
    glossary_html,
    label,
    metrics_markdown,
)
from ._html import Section, Units, esc, page, page_files, table_html

if TYPE_CHECKING:
    from byzllm.runs import Store

__all__ = [
    "DEFAULT_MAX_DETAILS",
    "GLOSSARY",
    "METRICS",
    "METRICS_DOC",
    "VIEWS",
    "Metric",
    "Section",
    "Units",
    "ViewBuilder",
    "comparison_html",
    "definition",
    "esc",
    "find_term",
    "label",
    "metrics_markdown",
    "register_view",
    "render_view",
    "table_html",
    "write_view",
]

#: Units whose full trace :func:`render_view`'s single file embeds by default (the list always
#: holds every unit; :func:`write_view` writes every unit's trace to chunk files).
DEFAULT_MAX_DETAILS = 500

#: A domain's part of the page: (the run's store, max_details) -> (its sections, whether the
#: results are simulated, what the run is: "consensus run (180 question runs, 30 questions)").
#: Simulated may be a text instead of True: the label of a partly simulated run (some groups
#: on a model, the others simulated), shown in place of "simulated agents (not real LLMs)".
ViewBuilder = Callable[["Store", int], tuple[list[Section], bool | str, str]]


def _consensus(store: Store, max_details: int) -> tuple[list[Section], bool | str, str]:
    from byzllm.runs import collector_paused

    from ._consensus import consensus_sections

    # One pass over the records, each dropped once read; the collector paused, as in
    # Store.records (the rows and details kept are many acyclic objects).
    with collector_paused():
        records = store.iter_records("consensus_question", with_unit=True)
        sections, simulated = consensus_sections(records, max_details=max_details)
    rows = next(s.units.rows for s in sections if s.units is not None)
    questions = len({row["question"] for row in rows})
    return sections, simulated, f"consensus run ({len(rows)} question runs, {questions} questions)"


def _counted(games: list[dict[str, Any]]) -> str:
    """``"3 games, 6 plays"``: the distinct games of a page's title, then their plays (a game
    replayed in several runs or conditions is one game), as the page's tables count them."""
    from byzllm.monitor.dataset import game_counts

    counts = game_counts(games)
    return f"{counts['distinct_games']} games, {counts['plays']} plays"


def _whodunit(store: Store, max_details: int) -> tuple[list[Section], bool, str]:
    from ._games import whodunit_sections

    games = store.records("whodunit_game")
    turns = store.records("whodunit_turn") if "whodunit_turn" in store.kinds() else []
    sections, simulated = whodunit_sections(games, turns, max_details=max_details)
    return sections, simulated, f"WhoDunitEnv ({_counted(games)})"


def _govsim(store: Store, max_details: int) -> tuple[list[Section], bool, str]:
    from ._games import govsim_sections

    games = store.records("govsim_game")
    sections, simulated = govsim_sections(games, max_details=max_details)
    return sections, simulated, f"GovSim ({_counted(games)})"


def _codegen(store: Store, max_details: int) -> tuple[list[Section], bool, str]:
    from ._games import codegen_sections

    problems = store.records("codegen_problem")
    n_test = (store.latest_config() or {}).get("n_test")
    sections, simulated = codegen_sections(problems, max_details=max_details, n_test=n_test)
    return sections, simulated, f"CodeGen debates ({len(problems)})"


def _monitor(store: Store, max_details: int) -> tuple[list[Section], bool, str]:
    from ._games import is_evaluation, monitor_sections

    games = store.records("monitor_game")
    sections, simulated = monitor_sections(games, max_details=max_details)
    what = "monitor evaluation" if is_evaluation(games) else "monitor training games"
    return sections, simulated, f"{what} ({_counted(games)})"


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


#: Failed units listed with their error on a page (the count says how many there are).
MAX_FAILURES_SHOWN = 200


def _unfinished(store: Store) -> Section | None:
    """The run's failed and pending units, if any: how many, and each failed unit with the
    first line of its error (the tables count finished units only)."""
    counts = store.counts()
    failed, pending = counts["failed"], counts["pending"]
    if not failed and not pending:
        return None
    total = sum(counts.values())
    head = (
        f"<p class='warning'>{failed} of {total} units failed, {pending} pending: "
        f"the tables count the {counts['done']} finished units only (byzllm runs show lists "
        "them; running the same command again retries them)</p>"
    )
    rows = [
        {
            "unit": unit["label"] or unit["id"],
            "attempts": unit["attempts"],
            "error": (str(unit["error"] or "").strip().splitlines() or ["-"])[0],
        }
        for unit in store.failures()[:MAX_FAILURES_SHOWN]
    ]
    note = f"first {MAX_FAILURES_SHOWN} of {failed} failed units" if failed > len(rows) else None
    table = table_html(rows, ["unit", "attempts", "error"], note=note) if rows else ""
    return Section("Failed and pending units", head + table, anchor="unfinished")


def _layout(
    run_dir: str | Path, max_details: int, lead: Sequence[Section]
) -> tuple[str, str, bool | None, list[Section]]:
    """(title, simulated / real label, simulated (None: no record says), sections) of the
    run in ``run_dir``."""
    from byzllm.runs import Store

    location = Path(run_dir)
    if not (location / "results.sqlite").is_file():
        raise InputError(f"no results.sqlite in {location}: nothing to view")
    with Store.open(location) as store:
        kinds = store.kinds()
        if not kinds:
            counts = store.counts()
            raise InputError(
                f"{location} holds no finished unit yet ({counts['failed']} failed, "
                f"{counts['pending']} pending; byzllm runs show lists the errors)"
            )
        unfinished = _unfinished(store)
        build = next((VIEWS[kind] for kind in VIEWS if kind in kinds), None)
        flag: bool | str | None  # None: no record says either way; a text: partly simulated
        if build is not None:
            sections, flag, what = build(store, max_details)
        else:
            from ._games import generic_sections

            records = {kind: store.records(kind) for kind in kinds}
            sections, flag = generic_sections(records, max_details=max_details)
            what = ", ".join(kinds)
    if isinstance(flag, str):  # partly simulated: simulated, with the label saying how much
        kind, flag = flag, True
    else:
        kind = {
            True: SIMULATED_NOTE,
            False: "real-model results",
            None: "records that do not say whether they are simulated",
        }[flag]
    glossary = Section(
        "Glossary (hover a dotted column name for its line)", glossary_html(), anchor="glossary"
    )
    first = [unfinished] if unfinished is not None else []
    return f"{location.resolve().name}: {what}", kind, flag, [*lead, *first, *sections, glossary]


def render_view(
    run_dir: str | Path,
    *,
    max_details: int = DEFAULT_MAX_DETAILS,
    lead: Sequence[Section] = (),
) -> str:
    """The run's page as one self-contained HTML text, the first ``max_details`` units' details
    inline (see the module docstring); ``lead`` sections go first (``byzllm reproduce``: the
    comparison, its gaps and the sensitivity section)."""
    return page(*_layout(run_dir, max_details, lead))


#: Chunk files this module writes (``u<section>-<n>.js``), the only files it replaces.
_CHUNK_FILE = re.compile(r"u\d+-\d+\.js")


def write_view(
    run_dir: str | Path,
    out: str | Path | None = None,
    *,
    max_details: int | None = None,
    lead: Sequence[Section] = (),
) -> Path:
    """Write the run's page (default ``RUN_DIR/view.html``) and return its path.

    Every unit's details (or the first ``max_details``) go to chunk files in a folder next to
    the page, ``<page name>_files/``, which the page reads when a unit is opened; copy the two
    together. Chunk files of an earlier page in that folder are replaced.
    """
    target = Path(out) if out is not None else Path(run_dir) / "view.html"
    folder = target.parent / f"{target.stem}_files"
    title, kind, simulated, sections = _layout(
        run_dir, sys.maxsize if max_details is None else max_details, lead
    )
    # The folder's name as the page's relative address: its bytes percent-encoded (a name
    # that is not UTF-8, such as b"p\xff", reaches Python with a surrogate that quote() of
    # the text cannot encode).
    text, files = page_files(title, kind, simulated, sections, quote(os.fsencode(folder.name)))
    target.parent.mkdir(parents=True, exist_ok=True)
    if folder.is_dir():
        for old in folder.iterdir():
            if _CHUNK_FILE.fullmatch(old.name):
                old.unlink()
    if files:
        folder.mkdir(exist_ok=True)
        for name, body in files.items():
            write_text_atomic(folder / name, body)
    write_text_atomic(target, text)
    return target
