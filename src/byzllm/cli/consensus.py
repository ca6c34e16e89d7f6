"""`byzllm consensus` and `byzllm demo`: Byzantine-robust consensus experiments."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from . import _common as common

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

    from byzllm.errors import InputError
    from byzllm.experiments.consensus.config import ConsensusConfig
    from byzllm.experiments.consensus.report import Summary
    from byzllm.runs import Executor, RunSummary

_T = TypeVar("_T")

__all__ = ["app", "demo", "matrix", "report", "run"]

#: The module of the matrix's work function (``consensus_unit``), named so that its workers
#: can start importing it before this module does.
MATRIX_WORK_MODULE = "byzllm.experiments.consensus.experiment"

app = typer.Typer(
    help="Byzantine-robust consensus (SAC, CP-WBFT, debate, majority, W-MSR): run and report.",
    no_args_is_help=True,
)


def model_overrides(model: str | None, weak_model: str | None, base_url: str | None) -> list[str]:
    """``--set`` overrides that put the honest groups on ``--model`` / ``--weak-model``
    (``--base-url`` without either is refused: :func:`~byzllm.cli._common.require_model`)."""
    common.require_model(base_url, model, weak_model)
    overrides: list[str] = []
    for group, name in (("strong", model), ("weak", weak_model or model)):
        if name:
            overrides += [f"agents.{group}.backend=llm", f"agents.{group}.model={name}"]
            if base_url:
                overrides.append(f"agents.{group}.base_url={base_url}")
    return overrides


def _warn_robustness(cfg: ConsensusConfig) -> None:
    from byzllm.experiments.consensus.experiment import graph_checks

    said: set[str] = set()  # one graph checked under several compositions: said once

    def warn(line: str) -> None:
        if line not in said:
            said.add(line)
            typer.echo(line, err=True)

    for check in graph_checks(cfg):
        where = f"{check['topology']} graph (n={check['n']}, seed={check['seed']})"
        if not check["ok"]:
            warn(
                f"warning: {where} is {check['r']}-robust, not ({check['F']}+1)-robust: "
                f"Properties 4.2-4.3 do not hold; certificate: {check['certificate']}"
            )
        if not check["adversaries_f_local"]:
            warn(
                f"warning: {where}, {check['composition']}: on "
                f"{check['placements_not_f_local']} of {check['placements']} questions the "
                f"adversaries are not {check['F']}-local (Definition 3.2): some honest agent "
                f"has more than F={check['F']} adversarial neighbours"
            )


@app.command("run")
@common.run_options(concurrency=64, model=common.ConsensusModelOption)
def run(opts: common.RunOptions, weak_model: common.WeakModelOption = None) -> None:
    """Run a consensus sweep: protocols × topologies × compositions × F × T × seeds.

    One unit is one question under one configuration. Results stream into
    RUN_DIR/results.sqlite; rerunning the same command resumes. Warns when a
    graph is not (F+1)-robust (with the certificate) or the adversaries are
    not F-local.

    Examples:

        byzllm consensus run sweep.yaml

        byzllm consensus run --set 'protocols=[sac, debate]' --set dataset.n=10

        byzllm consensus run --set 'compositions=[{attack: inject}]' -o runs/inject

        byzllm consensus run --model openai/qwen2.5-7b --base-url http://127.0.0.1:8000/v1
    """
    from byzllm.experiments.consensus.config import ConsensusConfig
    from byzllm.experiments.consensus.experiment import consensus_unit, expand_units

    cfg = opts.load(ConsensusConfig, model_overrides(opts.model, weak_model, opts.base_url))
    _warn_robustness(cfg)
    units = expand_units(cfg)
    opts.execute("consensus", units, consensus_unit, config=cfg)


def _questions(run_dir: Path, unit_ids: set[str] | None = None) -> list[dict[str, Any]]:
    """The run's question records (of ``unit_ids`` only, when given), as a list."""
    return list(_question_stream(run_dir, unit_ids))


def _keeping_counts(
    questions: Iterable[dict[str, Any]], counts: list[dict[str, Any]]
) -> Iterator[dict[str, Any]]:
    """``questions`` as they are, keeping each one's parse and request counts in ``counts``
    (what the parse and request health read), so one pass serves the summary and both."""
    for question in questions:
        counts.append({key: question.get(key) for key in ("simulated", "parse", "requests")})
        yield question


def _question_stream(run_dir: Path, unit_ids: set[str] | None = None) -> Iterator[dict[str, Any]]:
    """The run's question records read as they are asked for (a one-pass summary holds one
    at a time); an :class:`InputError` before the first when the run has none."""
    from byzllm.errors import InputError

    if not (run_dir / "results.sqlite").is_file():
        raise InputError(f"no results.sqlite in {run_dir}: run `byzllm consensus run` first")
    return _read_questions(run_dir, unit_ids)


def _read_questions(run_dir: Path, unit_ids: set[str] | None) -> Iterator[dict[str, Any]]:
    found = False
    for row in _stored_questions(run_dir, unit_ids):
        found = True
        yield row
    if not found:
        raise _no_results(run_dir)


def _stored_questions(run_dir: Path, unit_ids: Collection[str] | None) -> Iterator[dict[str, Any]]:
    """The run's question records (of ``unit_ids`` only, when given; the others are not
    read), none where it has none."""
    from byzllm.runs import Store

    with Store.open(run_dir) as store:
        # Unchecked: a report over them checks them when it fails (_checked_on_failure).
        yield from store.iter_records("consensus_question", with_unit=True, units=unit_ids)


def _no_results(run_dir: Path) -> InputError:
    from byzllm.errors import InputError

    return InputError(f"{run_dir} holds no consensus results")


def _count_questions(
    run_dir: Path, unit_ids: Collection[str]
) -> tuple[Summary, list[dict[str, Any]]]:
    """The run's question records of ``unit_ids`` counted
    (:func:`~byzllm.experiments.consensus.report.count_questions`), with each one's parse
    and request counts (:func:`_keeping_counts`). At the top level: a matrix's helper
    process runs it on its share (:func:`_matrix_summary`)."""
    from byzllm.experiments.consensus.report import count_questions

    counts: list[dict[str, Any]] = []
    records = _keeping_counts(_stored_questions(run_dir, set(unit_ids)), counts)
    return count_questions(records), counts


#: The share of a matrix's question records its helper process counts
#: (:func:`_matrix_summary`): it starts later than this process, which counts the rest, by
#: its fork and imports (about 0.15 s, the time of a third of the default matrix's share).
_HELPER_SHARE = 0.35


def _matrix_helper(run_executor: Executor, run: RunSummary) -> ProcessPoolExecutor | None:
    """A helper process for a matrix's summary and heat-map, where it pays: a run of at
    least :data:`~byzllm.runs.AUTO_PROCESS_MIN_UNITS` questions (below that, the helper's
    start costs about what it saves), on more than one core, that ran units in worker
    processes just now. Never under ``--executor local``, which keeps the command in one
    process; nor for a rerun that ran none, whose fork server (the helper's too) may still
    be importing: waiting for it took longer than the whole summary."""
    from byzllm.runs import AUTO_PROCESS_MIN_UNITS, ProcessExecutor, helper_pool, usable_cores

    if not isinstance(run_executor, ProcessExecutor) or run.done == 0:
        return None
    if run.total < AUTO_PROCESS_MIN_UNITS or usable_cores() < 2:
        return None
    return helper_pool()


def _matrix_summary(
    run_dir: Path, unit_ids: Sequence[str], helper: ProcessPoolExecutor | None
) -> tuple[Summary, list[dict[str, Any]]]:
    """:func:`_count_questions` of ``unit_ids``: with a ``helper``, a share of them
    (:data:`_HELPER_SHARE`) counted there while this process counts the rest, the two
    summaries then merged into what one would have given
    (:meth:`~byzllm.experiments.consensus.report.Summary.merge`)."""
    share = round(_HELPER_SHARE * len(unit_ids)) if helper is not None else 0
    theirs = _beside(helper, _count_questions, run_dir, unit_ids[:share]) if share else None
    summary, counts = _count_questions(run_dir, unit_ids[share:])
    if theirs is not None:
        part, part_counts = theirs()
        summary.merge(part)
        counts += part_counts
    if not counts:
        raise _no_results(run_dir)
    return summary, counts


def _beside(
    helper: ProcessPoolExecutor | None, fn: Callable[..., _T], *args: Any
) -> Callable[[], _T]:
    """``fn(*args)`` started in ``helper`` (a top-level ``fn``, picklable ``args``); calling
    what is returned waits for its result. Without a helper, or where it died or could not
    start, ``fn`` runs here at that call instead: the helper only saves time."""
    from concurrent.futures.process import BrokenProcessPool

    future = None
    if helper is not None:
        with contextlib.suppress(BrokenProcessPool, OSError):
            future = helper.submit(fn, *args)

    def result() -> _T:
        if future is not None:
            with contextlib.suppress(BrokenProcessPool):
                return future.result()
        return fn(*args)

    return result


def _configuration_of(payload: Mapping[str, Any]) -> str:
    """The configuration a unit runs (``sac/complete/4s2w1b-replay/F3/T6``): the report row
    its question joins when it is done."""
    from byzllm.experiments.consensus.config import Composition

    composition = payload.get("composition")
    label = Composition.model_validate(composition).label if isinstance(composition, dict) else "?"
    return "/".join(
        [str(payload.get("protocol", "?")), str(payload.get("topology", "?")), label]
        + [f"{axis}{payload.get(axis, '?')}" for axis in ("F", "T")]
    )


def _unfinished(run_dir: Path) -> dict[str, dict[str, int]]:
    """The run's units that failed or never ran, per configuration: the report's rows are
    over the questions that finished, and a row missing some says so only through them."""
    from byzllm.runs import Store

    with Store.open(run_dir) as store:
        return common.unfinished_units(store, _configuration_of)


def _checked_on_failure(run_dir: Path) -> contextlib.AbstractContextManager[None]:
    """A report over the run's question records, which are checked when it fails
    (:func:`~byzllm.cli._common.checked_on_failure`)."""
    from byzllm.experiments.consensus.records import ConsensusQuestion

    return common.checked_on_failure(run_dir, ConsensusQuestion)


def _report_folder_option(contents: str) -> Any:
    """``--out``: where a consensus report's files go, ``RUN_DIR/report`` unless given."""
    return common.folder_option("--out", f"Folder for {contents} [default: RUN_DIR/report].")


#: The file names :func:`_plot_name` gives, and the only files :func:`_write_outputs` removes.
_PLOT_NAME = re.compile(r"accuracy_[^/\\]+_F\d+_T\d+\.png")


def _topology_slug(topology: str) -> str:
    """``topology`` as a part of a file name: a saved graph (``file:/abs/dir/ring.json``) as
    ``file-ring-<8 hex digits of the path>`` (the stem alone would let two ``ring.json`` of
    different folders share a plot; the raw path made nested folders and a colon)."""
    import hashlib

    from byzllm.experiments.consensus.config import GRAPH_FILE_PREFIX

    if not topology.startswith(GRAPH_FILE_PREFIX):
        return topology
    path = topology[len(GRAPH_FILE_PREFIX) :]
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", PurePath(path).stem).strip("-.") or "graph"
    return f"file-{stem}-{hashlib.sha256(path.encode()).hexdigest()[:8]}"


def _plot_name(meta: Mapping[str, Any]) -> str:
    """The file name of one configuration's accuracy plot (matches :data:`_PLOT_NAME`)."""
    return (
        f"accuracy_{meta['protocol']}_{_topology_slug(str(meta['topology']))}_"
        f"{meta['composition']}_F{meta['F']}_T{meta['T']}.png"
    )


def _remove_stale_plots(target: Path, written: Iterable[Path]) -> int:
    """Remove the accuracy plots in ``target`` that this report did not write (those of a
    run discarded by ``demo --fresh`` or ``--force``); only names of :data:`_PLOT_NAME`,
    so nothing else in the folder is touched. How many were removed."""
    keep = {path.name for path in written}
    removed = 0
    for path in target.iterdir():
        if path.name not in keep and _PLOT_NAME.fullmatch(path.name) and path.is_file():
            path.unlink()
            removed += 1
    return removed


def _write_outputs(
    run_dir: Path, summary: Any, out_dir: Path | None, label: bool | str
) -> tuple[list[Path], int]:
    """Write the CSV tables and plots; the files written, and how many stale plots were
    removed (only from the run's own report folder: a folder given with ``--out`` may hold
    plots the user keeps). ``label``: what the tables say of the results
    (:func:`~byzllm.experiments.consensus.report.results_label`)."""
    from byzllm.experiments.consensus.report import csv_rows, round_csv_rows
    from byzllm.runs.reports import line_plot, write_csv

    own = run_dir / "report"
    target = out_dir or own
    target.mkdir(parents=True, exist_ok=True)
    written = [
        write_csv(csv_rows(summary), target / "table1.csv", simulated=label),
        write_csv(round_csv_rows(summary), target / "table2_rounds.csv", simulated=label),
    ]
    for meta, metrics in summary:
        rounds = [r.round for r in metrics.per_round]
        series = {}
        for group in ("strong", "weak", "honest"):
            values = [getattr(r, group) for r in metrics.per_round]
            if all(v is not None for v in values):
                series[group] = (rounds, [100 * v for v in values])
        series["all agents"] = (rounds, [100 * r.accuracy for r in metrics.per_round])
        written.append(
            line_plot(
                target / _plot_name(meta),
                series,
                title=f"{meta['protocol']} on {meta['topology']} ({meta['composition']})",
                xlabel="round",
                ylabel="accuracy (%)",
                # The run's label, as its tables and CSV say it: a run with some groups on a
                # model is "partly simulated", not "simulated".
                simulated=label if meta["simulated"] else False,
                ylim=(0, 100),
            )
        )
    removed = _remove_stale_plots(target, written) if target.resolve() == own.resolve() else 0
    return written, removed


def _literal(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` with their text cells escaped for rich, which took a cell's ``[n/a]`` for a
    markup tag and printed nothing in its place."""
    from rich.markup import escape

    return [{k: escape(v) if isinstance(v, str) else v for k, v in row.items()} for row in rows]


def _print_notes(console: Any, notes: Iterable[str]) -> None:
    """Each of ``notes`` dimmed, as written (``[n/a]`` is text, not markup)."""
    from rich.markup import escape

    for note in notes:
        console.print(f"[dim]{escape(note)}[/dim]", highlight=False)


def _csv_list(value: str | None) -> list[str] | None:
    return None if value is None else [v.strip() for v in value.split(",") if v.strip()]


def _option_list(value: str | None, flag: str, default: Iterable[str]) -> list[str]:
    """A comma-separated option's values, ``default`` when not given; given but empty
    (``--attacks ''``) is an :class:`~byzllm.errors.InputError`, not the default: a grid
    of nothing was asked for, and running every value instead would hide the slip."""
    from byzllm.errors import InputError

    values = _csv_list(value)
    if values is None:
        return list(default)
    if not values:
        raise InputError(f"{flag} needs at least one value (comma-separated), got {value!r}")
    return values


@app.command("matrix")
def matrix(
    run_dir: Annotated[Path | None, common.fixed_run_dir_option("runs/matrix")] = None,
    attacks: Annotated[
        str | None,
        typer.Option(
            "--attacks", help="Comma-separated attacks [default: all six].", show_default=False
        ),
    ] = None,
    protocols: Annotated[
        str | None,
        common.value_option(
            "--protocols",
            "Comma-separated protocols [default: sac, cp-wbft, debate, majority, w-msr].",
        ),
    ] = None,
    topologies: Annotated[
        str | None,
        common.value_option(
            "--topologies", "Comma-separated topologies [default: merg, complete, erdos-renyi]."
        ),
    ] = None,
    adversaries: Annotated[
        str,
        typer.Option(
            "--adversaries",
            help="Comma-separated numbers of adversaries b (n = 7, 4 strong, 3 - b weak).",
        ),
    ] = "1,2",
    questions: Annotated[
        int, typer.Option("--questions", "-n", min=1, help="Questions per cell.")
    ] = 15,
    seed: Annotated[int, typer.Option("--seed", help="Graphs, placements, questions, agents.")] = 0,
    rounds: Annotated[int, typer.Option("--rounds", "-T", min=0, help="Rounds T.")] = 6,
    model: common.ConsensusModelOption = None,
    weak_model: common.WeakModelOption = None,
    base_url: common.BaseUrlOption = None,
    concurrency: common.ConcurrencyOption = 64,
    executor: common.ExecutorOption = "auto",
    ray_address: common.RayAddressOption = None,
    out: Annotated[Path | None, _report_folder_option("matrix.csv and matrix.png")] = None,
    force: common.ForceOption = False,
    json_output: common.JsonOption = False,
) -> None:
    """Attacks × protocols × topologies × adversaries: BFTI and H-Majority per cell.

    One run of the ordinary sweep (resumable: rerunning the same matrix reads
    the cells already done; RUN_DIR holds one matrix, another is refused unless
    --force), then one table per topology (rows: attack × b; columns: protocols;
    each cell BFTI, BFTI over the honest agents and H-Majority with 95% bootstrap
    intervals over questions),
    matrix.csv (one row per cell, with calls and tokens per question),
    matrix.png (heat-maps) and the run's parse and request health (model
    replies that fell back to their default, per stage). The defaults (6 attacks × 5 protocols × 3
    topologies × b in {1, 2}, 15 questions) run in under a minute on
    simulated agents.

    Examples:

        byzllm consensus matrix

        byzllm consensus matrix --attacks inject --protocols sac,cp-wbft -n 50 -o runs/inject

        byzllm consensus matrix -o runs/smollm2 --model openai/smollm2 --base-url URL -n 5 -T 2
    """
    with common.cli_errors():
        if executor in ("auto", "process") and not (model or weak_model or base_url):
            # Simulated agents: a matrix of the default size runs in worker processes, whose
            # fork server now imports the work while this process imports, reads its options
            # and builds the grid (0.6 s), instead of once the units are ready.
            from byzllm.runs import warm_workers

            warm_workers(MATRIX_WORK_MODULE)
        from rich.table import Table

        from byzllm.agents.consensus import ATTACKS
        from byzllm.errors import InputError
        from byzllm.experiments import parse_health, request_health
        from byzllm.experiments.consensus.experiment import consensus_unit, expand_units
        from byzllm.experiments.consensus.matrix import (
            DEFAULT_PROTOCOLS,
            DEFAULT_TOPOLOGIES,
            attack_label,
            matrix_config,
            matrix_heatmap,
            matrix_rows,
        )
        from byzllm.experiments.consensus.report import INTERVAL_NOTE, ORACLE_NOTE
        from byzllm.runs.reports import simulated_title, write_csv

        try:
            b_values = [int(v) for v in _option_list(adversaries, "--adversaries", [])]
        except ValueError:
            raise InputError(
                f"--adversaries takes comma-separated integers, got {adversaries!r}"
            ) from None
        cfg = matrix_config(
            attacks=_option_list(attacks, "--attacks", ATTACKS),
            protocols=_option_list(protocols, "--protocols", DEFAULT_PROTOCOLS),
            topologies=_option_list(topologies, "--topologies", DEFAULT_TOPOLOGIES),
            adversaries=b_values,
            questions=questions,
            seed=seed,
            T=rounds,
        )
        if model or weak_model or base_url:
            from byzllm.experiments.consensus.config import ConsensusConfig
            from byzllm.runs import apply_overrides, parse_overrides

            data = cfg.model_dump(mode="json")
            apply_overrides(data, parse_overrides(model_overrides(model, weak_model, base_url)))
            cfg = ConsensusConfig.model_validate(data)
        target_dir = run_dir or Path("runs") / "matrix"
        # As `consensus run` does: SAC's guarantees need (F+1)-robust graphs (a star or a
        # chain ran silently beside γ-MERG).
        _warn_robustness(cfg)
        units = expand_units(cfg)
        run_executor = common.resolve_executor(
            executor, ray_address=ray_address, config=cfg, units=units
        )
        summary_run = common.execute_units(
            target_dir,
            units,
            consensus_unit,
            config=cfg,
            concurrency=concurrency,
            executor=run_executor,
            description="consensus matrix",
            force=force,
            # The heat-map's library, imported while the units run (not after them), once
            # they are registered (not while: each insert waited for the import's GIL turn).
            on_started=lambda: common.preload(
                "matplotlib.figure", "matplotlib.backends.backend_agg"
            ),
        )
        if not summary_run.complete:
            raise typer.Exit(common.summary_exit_code(summary_run))
        helper = _matrix_helper(run_executor, summary_run)
        try:
            with _checked_on_failure(target_dir):
                # The parse and request counts are kept as the summary reads each question
                # once.
                summary, counts = _matrix_summary(target_dir, [u.id for u in units], helper)
                health = parse_health.from_records(counts)
                requests = request_health.from_records(counts)
                intervals = _beside(helper, summary.intervals)
                cells = matrix_rows(summary.result(intervals=False))
            simulated = any(r["simulated"] for r in cells)
            folder = out or target_dir / "report"
            # The heat-map shows the cells' values alone: drawn while the helper computes
            # their intervals (the bootstraps).
            png_path = matrix_heatmap(cells, folder / "matrix.png", simulated=simulated)
            with _checked_on_failure(target_dir):
                rows = matrix_rows(summary.result(intervals=intervals()))
        finally:
            if helper is not None:
                helper.shutdown(wait=False, cancel_futures=True)
        csv_path = write_csv(rows, folder / "matrix.csv", simulated=simulated)
        if json_output:
            common.print_json(
                {
                    "simulated": simulated,
                    "interval_method": INTERVAL_NOTE,
                    "rows": rows,
                    "parse_health": health.to_json(),
                    "request_health": requests.to_json(),
                    "csv": str(csv_path),
                    "png": str(png_path),
                }
            )
            common.show_parse_health(health, json_output=True)
            common.show_request_health(requests, json_output=True)
            return
        console = common.console()
        for topology in dict.fromkeys(r["topology"] for r in rows):
            cells = [r for r in rows if r["topology"] == topology]
            protos = list(dict.fromkeys(r["protocol"] for r in cells))
            title = f"{topology}: BFTI, honest BFTI and H-Majority (%) per attack × adversaries"
            table = Table(title=simulated_title(title, simulated))
            table.add_column("attack × b")
            for p in protos:
                table.add_column(p, justify="right")
            for key in dict.fromkeys((r["attack"], r["adversaries"]) for r in cells):
                line = [attack_label(*key)]
                for p in protos:
                    cell = next(
                        (
                            r
                            for r in cells
                            if (r["attack"], r["adversaries"]) == key and r["protocol"] == p
                        ),
                        None,
                    )
                    line.append("-" if cell is None else _matrix_cell(cell))
                table.add_row(*line)
            console.print(table)
        console.print(
            f"[dim]brackets: {INTERVAL_NOTE}; honest: BFTI over the honest agents (an "
            "adversary that changes its own answer, as mimic does, moves BFTI by itself); "
            "H: H-Majority[/dim]"
        )
        if any(r["oracle_attack"] for r in rows):
            console.print(f"[dim]{ORACLE_NOTE}[/dim]")
        common.show_parse_health(health, json_output=False)
        common.show_request_health(requests, json_output=False)
        typer.echo(f"wrote {csv_path} and {png_path}")


def _matrix_cell(row: dict[str, Any]) -> str:
    from byzllm.experiments.consensus.matrix import cell_figures

    bfti, honest, hmaj = cell_figures(row)
    return f"{bfti}\nhonest {honest}\nH {hmaj}"


@app.command("report")
def report(
    run_dir: common.RunDirArgument,
    json_output: common.JsonOption = False,
    out: Annotated[Path | None, _report_folder_option("CSV tables and PNG plots")] = None,
    rounds: Annotated[
        bool, typer.Option("--rounds/--no-rounds", help="Also print the per-round table.")
    ] = True,
) -> None:
    """Report a consensus run: Table 1 (§5.1 metrics), Table 2 (per round), CSV and plots.

    Also the run's parse health (per stage: model replies parsed and how many fell back to
    the parser's default), with one warning per stage above 20%, and its model requests
    (sent, cached, retried, timed out, errors by kind).

    Examples:

        byzllm consensus report runs/sweep

        byzllm consensus report runs/demo --json > metrics.json
    """
    with common.cli_errors():
        from byzllm.experiments import parse_health, request_health
        from byzllm.experiments.consensus.report import (
            INTERVAL_NOTE,
            metrics_rows,
            results_label,
            round_rows,
            run_llm_groups,
            scorer_auc_lines,
            summarize,
            table_notes,
        )
        from byzllm.runs.reports import rich_table

        questions = _questions(run_dir)
        with _checked_on_failure(run_dir):
            summary = summarize(questions)
            health = parse_health.from_records(questions)
            requests = request_health.from_records(questions)
            on_model = run_llm_groups(questions)  # the groups that ran on a model
        simulated = any(meta["simulated"] for meta, _ in summary)
        label = results_label(simulated, on_model)
        unfinished = _unfinished(run_dir)
        if json_output:
            common.print_json(
                {
                    "simulated": simulated,
                    "on_model": on_model,
                    "rows": metrics_rows(summary, for_json=True),
                    "interval_method": INTERVAL_NOTE,
                    "parse_health": health.to_json(),
                    "request_health": requests.to_json(),
                    "scorer_auc": [
                        {"protocol": m["protocol"], "topology": m["topology"], **m["scorer_auc"]}
                        for m, _ in summary
                        if "scorer_auc" in m
                    ],
                    "unfinished": unfinished,
                }
            )
            common.show_parse_health(health, json_output=True)
            common.show_request_health(requests, json_output=True)
            return
        console = common.console()
        table1 = metrics_rows(summary)
        console.print(
            rich_table(
                _literal(table1),
                title="Consensus under Byzantine faults (Table 1 layout)",
                simulated=label,
            )
        )
        console.print(f"[dim]brackets: {INTERVAL_NOTE}[/dim]")
        _print_notes(console, table_notes(table1))
        if unfinished:
            typer.secho(
                common.unfinished_warning(
                    unfinished,
                    units="consensus",
                    left_out="the rows above are over the questions that finished",
                    rerun="rerun `byzllm consensus run` with the same config and --retry-failed",
                ),
                fg="yellow",
                err=True,
            )
        if rounds:
            console.print(
                rich_table(
                    _literal(round_rows(summary)),
                    title="Per-round accuracy (Table 2)",
                    simulated=label,
                )
            )
            console.print(f"[dim]brackets: {INTERVAL_NOTE}[/dim]")
        common.show_parse_health(health, json_output=False)
        for line in scorer_auc_lines(summary):
            console.print(line, highlight=False)
        common.show_request_health(requests, json_output=False)
        try:
            written, removed = _write_outputs(run_dir, summary, out, label)
        except OSError as err:
            if out is not None:
                raise  # the folder asked for: one error line (cli_errors)
            # The default folder is inside the run (an archive on a read-only disk, say):
            # the tables are printed; the files need another place.
            typer.echo(
                f"note: CSV and plots not written ({err.strerror or err}: {err.filename}); "
                "pass --out DIR to write them elsewhere",
                err=True,
            )
            return
        line = f"wrote {len(written)} files to {written[0].parent}"
        if removed:
            line += f" (removed {common.plural(removed, 'plot')} of configurations not in the run)"
        typer.echo(line, err=True)


def demo(
    json_output: common.JsonOption = False,
    run_dir: Annotated[Path, common.fixed_run_dir_option("runs/demo")] = Path("runs/demo"),
    questions: Annotated[
        int | None,
        typer.Option(min=1, help="Synthetic questions (default: 30 simulated, 3 with --model)."),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of questions, graphs and agents.")] = 0,
    rounds: Annotated[
        int | None,
        typer.Option(
            "--rounds", "-T", min=0, help="Rounds T (default: 6 simulated, 2 with --model)."
        ),
    ] = None,
    fresh: Annotated[
        bool,
        common.flag_option(
            "--fresh",
            "Start over: delete RUN_DIR/results.sqlite (earlier demo or consensus results) "
            "first; a RUN_DIR holding another experiment's run is refused.",
        ),
    ] = False,
    model: common.DemoModelOption = None,
    base_url: common.BaseUrlOption = None,
    force: common.ForceOption = False,
) -> None:
    """SAC vs CP-WBFT under a replay attack (Table 1), on simulated agents or a real model.

    n = 7 agents: 4 strong, 2 weak honest, 1 Byzantine agent replaying a weak
    model's answer to another question with confidence 1.0. F = 3, T = 6, on
    γ-MERG, complete and Erdős–Rényi graphs, 30 synthetic questions.

    No API key needed: the agents are simulated (docs/consensus.md). With
    --model local, the honest agents run on the real model the local extra ships
    (Qwen2.5-Coder-0.5B-Instruct, in process, no server), each sampling with a
    seed of its own: γ-MERG only, T = 2, 3 one-step questions, several minutes on
    2 CPU cores. For the paper's setting on real models, see byzllm reproduce
    sac-table1 --real.

    Examples:

        byzllm demo

        byzllm demo --json

        byzllm demo --seed 3 --questions 100 -o runs/demo-s3

        byzllm demo --model local

        byzllm demo --model local --questions 1 -T 1 -o runs/real-quick

        byzllm demo --model openai/qwen0.5b --base-url http://127.0.0.1:8000/v1
    """
    with common.cli_errors():
        from byzllm.errors import InputError
        from byzllm.experiments import parse_health
        from byzllm.experiments.consensus.demo import (
            REAL_MODEL_QUESTIONS,
            demo_config,
            demo_model_name,
            demo_rows,
        )
        from byzllm.experiments.consensus.experiment import consensus_unit, expand_units
        from byzllm.experiments.consensus.report import INTERVAL_NOTE, table_notes
        from byzllm.runs.reports import rich_table

        if base_url is not None and model is None:
            raise InputError("--base-url needs --model (e.g. --model openai/qwen0.5b)")
        if questions is None:
            questions = 30 if model is None else REAL_MODEL_QUESTIONS
        cfg = demo_config(questions, seed, model=model, base_url=base_url, rounds=rounds)
        real = None if model is None else demo_model_name(model)
        if real is not None:
            # Fail before the run, with one line, if the model cannot be built.
            cfg.agents.strong.model_spec().build()
        units = expand_units(cfg)
        if fresh:
            _refuse_other_experiment(run_dir)
        summary = common.execute_units(
            run_dir,
            units,
            consensus_unit,
            config=cfg,
            concurrency=64,
            quiet=real is None,
            force=force,
            fresh=fresh,
        )
        if not summary.complete:
            raise typer.Exit(common.summary_exit_code(summary))
        counts: list[dict[str, Any]] = []
        records = _keeping_counts(_question_stream(run_dir, {u.id for u in units}), counts)
        with _checked_on_failure(run_dir):
            rows = demo_rows(records, for_json=json_output)
            # A real model's replies: how many were parsed and how many fell back (the table
            # is read from them).
            health = None if real is None else parse_health.from_records(counts)
        if json_output:
            common.print_json(
                {
                    "simulated": real is None,
                    "model": real,
                    "run_dir": str(run_dir),
                    "rows": rows,
                    "interval_method": INTERVAL_NOTE,
                    **({} if health is None else {"parse_health": health.to_json()}),
                }
            )
            common.show_parse_health(health, json_output=True)
            return
        console = common.console()
        rounds = cfg.T[0]
        console.print(
            rich_table(
                _literal(rows),
                title=f"SAC vs CP-WBFT: n=7 (4 strong, 2 weak, 1 replay), F=3, T={rounds}, "
                f"{questions} questions, accuracies in %"
                + ("" if real is None else f", real model {real}"),
                simulated=real is None,
            )
        )
        console.print(f"[dim]brackets: {INTERVAL_NOTE}[/dim]")
        _print_notes(console, table_notes(rows))
        if real is None:
            console.print(
                "[dim]simulated agents (not real LLMs): every behaviour is a named parameter "
                "(`byzllm sim show`); which of them drive these rows, and what happens when "
                "they are switched, is in docs/consensus.md (ablations). Fit the twin to a "
                "real run with `byzllm sim fit`.[/dim]"
            )
        else:
            console.print(
                f"[dim]real model: every honest agent is {real} at temperature "
                f"{cfg.agents.strong.temperature:g}, each with a seed of its own (strong and "
                "weak alike).[/dim]"
            )
            common.show_parse_health(health, json_output=False)
        typer.echo(f"results: {run_dir / 'results.sqlite'}")
        typer.echo(f"full report, CSV and plots: byzllm consensus report {run_dir}")


def _refuse_other_experiment(run_dir: Path) -> None:
    """``demo --fresh`` discards consensus results only: a RUN_DIR holding a run of another
    experiment (a WhoDunit run given the same ``-o``) is an :class:`InputError`, untouched."""
    from byzllm.errors import InputError
    from byzllm.experiments.consensus.config import ConsensusConfig
    from byzllm.runs import STORE_FILENAME, Store

    if not (run_dir / STORE_FILENAME).is_file():
        return
    with Store.open(run_dir) as store:
        classes = {str(r["config_class"]) for r in store.runs() if r.get("config_class")}
    ours = f"{ConsensusConfig.__module__}.{ConsensusConfig.__qualname__}"
    others = sorted(c.rsplit(".", 1)[-1] for c in classes - {ours})
    if others:
        raise InputError(
            f"{run_dir} holds a {others[0]} run, not consensus results: --fresh discards "
            "only the demo's earlier results; choose another -o/--run-dir"
        )


def register(root: typer.Typer) -> None:
    """Attach ``consensus`` and the top-level ``demo`` command to the root app."""
    root.add_typer(app, name="consensus")
    root.command("demo")(demo)
