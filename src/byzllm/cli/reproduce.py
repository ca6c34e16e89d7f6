"""``byzllm reproduce``: a paper's table from a shipped config, beside the published numbers."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ._common import (
    BaseUrlOption,
    ConsensusModelOption,
    ForceOption,
    JsonOption,
    WeakModelOption,
    checked_on_failure,
    cli_errors,
    console,
    execute_units,
    fixed_run_dir_option,
    model_flags,
    print_json,
    show_parse_health,
    summary_exit_code,
    value_option,
)
from .consensus import model_overrides

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from byzllm.runs import Record, Reused, Unit

__all__ = ["reproduce"]


def reproduce(
    name: Annotated[
        str | None, typer.Argument(help="The table, e.g. sac-table1.", show_default=False)
    ] = None,
    list_: Annotated[bool, typer.Option("--list", help="List every reproducible table.")] = False,
    run_dir: Annotated[
        Path | None,
        fixed_run_dir_option(
            "runs/reproduce/NAME; NAME-MODEL with --model, e.g. sac-table1-gpt-4o-mini; "
            "NAME-weak-MODEL with --weak-model alone; "
            "NAME-real with --real qwen0.5b, NAME-real-STRONG-WEAK with other shipped models"
        ),
    ] = None,
    model: ConsensusModelOption = None,
    weak_model: WeakModelOption = None,
    base_url: BaseUrlOption = None,
    questions: Annotated[
        int | None,
        typer.Option(
            "--questions",
            "-n",
            min=1,
            help="Questions per configuration (SAC entries) [default: the paper's 30]; games "
            "or problems per split (rogue-agents entries) [default: the config's].",
            show_default=False,
        ),
    ] = None,
    problems: Annotated[
        Path | None,
        typer.Option(
            "--problems",
            help="ra-table1: the HumanEval file (HumanEval.jsonl.gz from "
            "github.com/openai/human-eval), which byzllm does not ship.",
            dir_okay=False,
            show_default=False,
        ),
    ] = None,
    concurrency: Annotated[
        int,
        typer.Option(
            "--concurrency",
            "-j",
            min=1,
            help="Units running at once [default: 64; 1 with --real, so that each llama.cpp "
            "server reuses the prompt prefix of consecutive requests].",
            show_default=False,
        ),
    ] = 64,
    real: Annotated[
        str | None,
        value_option(
            "--real",
            "Run on a shipped real model instead of simulated agents: the strong agents' "
            "model (qwen0.5b, qwen1.5b; see byzllm models list). Starts and stops the llama.cpp "
            "servers itself. Entries marked 'real' in --list.",
        ),
    ] = None,
    real_weak: Annotated[
        str | None,
        typer.Option(
            "--real-weak",
            help="With --real on a SAC entry: the weak agents' shipped model [default: smollm2].",
            show_default=False,
        ),
    ] = None,
    partial: Annotated[
        bool,
        typer.Option(
            "--partial",
            help="With --real: run nothing; report the questions a stopped run finished under "
            "every protocol, labelled partial (rerun without it to resume).",
        ),
    ] = False,
    force: ForceOption = False,
    json_output: JsonOption = False,
) -> None:
    """Run one table of the SAC paper or the rogue-agents paper and set it beside the paper.

    The config ships with byzllm (`byzllm reproduce --list` shows each entry
    and its file); the run is an ordinary resumable run (default
    runs/reproduce/NAME); the report puts ours (with its 95% interval) beside
    the published number with the difference per cell, writes
    report/paper_comparison.csv and view.html, and says whether the results
    are simulated.

    Examples:

        byzllm reproduce --list

        byzllm reproduce sac-table1

        byzllm reproduce sac-table5 --model openai/gpt-4o-mini --weak-model openai/gpt-3.5-turbo

        byzllm reproduce sac-table1 --real qwen0.5b     # real small models, a few hours on 2 cores

        byzllm reproduce sac-table1 --real qwen0.5b -n 4   # a 4-question pilot

        byzllm reproduce ra-table1 --problems HumanEval.jsonl.gz   # CodeGen's Table 1
    """
    with cli_errors():
        from byzllm.errors import InputError
        from byzllm.reproduce import REPRODUCTIONS, config_path, get_reproduction

        if list_ or name is None:
            rows = [
                {
                    "name": r.name,
                    "paper": r.paper,
                    "table": r.table,
                    "what": r.description,
                    "real": "yes" if r.real_config else "",
                    "config": str(config_path(r.config)),
                    "results": f"runs/reproduce/{r.name}",
                }
                for r in REPRODUCTIONS.values()
            ]
            if json_output:
                print_json({"reproductions": rows})
                return
            if name is None and not list_:
                raise InputError("name a table (see `byzllm reproduce --list`)")
            from byzllm.cli._common import emit_rows

            for row in rows:
                row["config file"] = Path(row["config"]).name
            emit_rows(
                rows,
                json_output=False,
                title="Reproducible tables",
                columns=["name", "paper", "table", "what", "real", "config file", "results"],
            )
            folders = sorted({str(Path(r["config"]).parent) for r in rows})
            typer.echo(
                f"config files: in {', '.join(folders)} (copy one, edit it and run it with "
                "`byzllm consensus run` or the command of its area)"
            )
            return
        entry = get_reproduction(name)
        if problems is not None and entry.kind != "codegen":
            codegen = ", ".join(r.name for r in REPRODUCTIONS.values() if r.kind == "codegen")
            raise InputError(f"--problems is for {codegen}, not {name}")
        if weak_model is not None and entry.kind != "consensus":
            # Every player of a rogue-agents entry runs on --model: a weak model given here
            # would be ignored, and the run simulated where a model was asked for.
            raise InputError(f"--weak-model is for the SAC entries: {name} has no weak agents")
        if real is None and (partial or real_weak is not None):
            flag = "--partial" if partial else "--real-weak"
            raise InputError(f"{flag} goes with --real (a run on the shipped models)")
        if real is not None:
            if entry.real_config is None:
                real_ones = ", ".join(r.name for r in REPRODUCTIONS.values() if r.real_config)
                raise InputError(f"--real is available for {real_ones}, not {name}")
            if real_weak is not None and entry.kind == "monitor":
                # Every seat of a rogue-agents game plays --real's model: a weak model given
                # here would be ignored, and the run would not be the one asked for.
                raise InputError(f"--real-weak is for the SAC entries: {name} has no weak agents")
            real_weak = real_weak or "smollm2"
            if model or weak_model or base_url:
                raise InputError("--real starts its own servers: leave out --model/--base-url")
            real_dir = run_dir or Path("runs") / "reproduce" / _real_folder(entry, real, real_weak)
            one_at_a_time = 1 if concurrency == 64 else concurrency
            job = _Job(entry, real_dir, questions=questions, concurrency=one_at_a_time, force=force)
            _run_real(replace(job, json_output=json_output), real, real_weak, partial=partial)
            return
        # A run on a model has a folder of its own: the simulated run's folder holds
        # another config, which the binding of run folders would refuse.
        folder = name
        if model is not None:
            folder += f"-{_folder_word(model)}"
        elif weak_model is not None:  # the weak group alone on a model
            folder += f"-weak-{_folder_word(weak_model)}"
        job = _Job(
            entry,
            run_dir or Path("runs") / "reproduce" / folder,
            _Models(model, weak_model, base_url),
            questions=questions,
            concurrency=concurrency,
            json_output=json_output,
            problems=problems,
            force=force,
        )
        {"codegen": _run_codegen, "monitor": _run_monitor}.get(entry.kind, _run)(job)


def _folder_word(model: str) -> str:
    """A model's name in a run folder's: without its provider, one path segment."""
    return model.split("/", 1)[-1].replace("/", "-")


#: The shipped models of the real configs (strong, weak): their runs keep the folder NAME-real.
_REAL_MODELS = ("qwen0.5b", "smollm2")


def _real_folder(entry: Any, strong: str, weak: str) -> str:
    """``NAME-real`` on the real config's own models; on others, a folder of their own
    (``NAME-real-STRONG-WEAK``; ``NAME-real-MODEL`` for a rogue-agents entry, which has one),
    as a run on ``--model`` has: a run folder holds one config, and the binding of run
    folders refuses a second (docs/reproduce.md runs qwen0.5b, then qwen1.5b)."""
    models = (strong,) if entry.kind == "monitor" else (strong, weak)
    if models == _REAL_MODELS[: len(models)]:
        return f"{entry.name}-real"
    return "-".join([f"{entry.name}-real", *models])


@dataclass(frozen=True)
class _Models:
    """``--model``, ``--weak-model`` and ``--base-url`` as given, and what they set in each
    kind of entry's config."""

    model: str | None = None
    weak_model: str | None = None
    base_url: str | None = None

    def consensus_overrides(self) -> list[str]:
        """A SAC entry: the strong and the weak group's models (:func:`model_overrides`)."""
        return model_overrides(self.model, self.weak_model, self.base_url)

    def flags(self) -> list[str]:
        """A rogue-agents entry: every player on ``--model`` (:func:`model_flags`)."""
        return model_flags(self.model, self.base_url)


@dataclass(frozen=True)
class _Job:
    """One ``byzllm reproduce NAME``, as each kind of entry runs it."""

    entry: Any
    run_dir: Path
    models: _Models = _Models()
    #: Questions per configuration (SAC), games or problems per split (rogue-agents).
    questions: int | None = None
    concurrency: int = 64
    json_output: bool = False
    problems: Path | None = None
    #: ``--force``: replace the config a run folder holds (its shared units kept).
    force: bool = False


def _stage(
    job: _Job,
    folder: Path,
    units: list[Any],
    work: Any,
    cfg: Any,
    kind: str | type[Record],
    stage: str = "",
    on_locked: Callable[[], object] | None = None,
) -> list[dict[str, Any]]:
    """Run one stage's units into ``folder`` (stopping the command unless all are done) and
    read back their records of ``kind`` (:func:`_unit_records`). ``on_locked`` runs once the
    folder is locked and bound to ``cfg``."""
    description = f"{job.entry.name}: {stage}" if stage else job.entry.name
    run = execute_units(
        folder,
        units,
        work,
        config=cfg,
        concurrency=job.concurrency,
        description=description,
        force=job.force,
        on_locked=on_locked,
    )
    if not run.complete:
        raise typer.Exit(summary_exit_code(run))
    return _unit_records(folder, kind, units)


def _unit_records(
    folder: Path, kind: str | type[Record], units: Sequence[Unit]
) -> list[dict[str, Any]]:
    """The records of ``kind`` of exactly ``units`` in ``folder`` (a reused folder may hold
    others' units). Given a record class, each is checked as it is read
    (:meth:`~byzllm.runs.Store.records`): the folder may be one the user has edited."""
    from byzllm.runs import Store

    ids = {u.id for u in units}
    with Store.open(folder) as store:
        return [r for r in store.records(kind, with_unit=True) if r["unit_id"] in ids]


def _run(
    job: _Job,
    *,
    config: str | None = None,
    overrides: list[str] | None = None,
    started: float | None = None,
    partial: bool = False,
) -> None:
    """Run (or, with ``partial``, only report) a consensus entry and compare it."""
    entry, run_dir, questions, json_output = job.entry, job.run_dir, job.questions, job.json_output
    import time

    from byzllm.cli._common import load_cli_config
    from byzllm.errors import InputError
    from byzllm.experiments.consensus.config import ConsensusConfig
    from byzllm.experiments.consensus.experiment import consensus_unit, expand_units
    from byzllm.experiments.consensus.records import ConsensusQuestion
    from byzllm.experiments.consensus.report import (
        INTERVAL_NOTE,
        results_label,
        run_llm_groups,
        summarize,
    )
    from byzllm.experiments.consensus.setup import load_dataset
    from byzllm.reproduce import config_path
    from byzllm.runs.reports import write_csv

    if overrides is None:
        overrides = [] if questions is None else [f"dataset.n={questions}"]
        overrides += job.models.consensus_overrides()
    started = time.monotonic() if started is None else started
    cfg = load_cli_config(config_path(config or entry.config), ConsensusConfig, overrides)
    units = expand_units(cfg)
    if config is not None:
        # Real models: question by question (every protocol of a question, then the next), so
        # that a run stopped early has whole questions and later protocols of a question find
        # its shared first answers in the response cache.
        units.sort(key=lambda unit: int(unit.payload["question"]))
    if partial:
        records = _unit_records(run_dir, ConsensusQuestion.kind, units)
    else:
        found: list[Reused] = []

        def reuse() -> None:
            # Once the folder is locked and bound (a changed config stops before anything
            # is copied in).
            if config is None:
                found.append(_reuse(entry.name, run_dir, units))

        records = _stage(
            job, run_dir, units, consensus_unit, cfg, ConsensusQuestion.kind, on_locked=reuse
        )
        reused = found[0] if found else None
    # The questions were read by their kind's name, unchecked (each holds its whole trace, as
    # in `consensus report`): they are checked if the report fails, so that a record edited in
    # the reused folder is named, not a traceback.
    with checked_on_failure(run_dir, ConsensusQuestion):
        complete = _complete_questions(
            records, len(units) // max(1, len(load_dataset(cfg.dataset)))
        )
        if partial:
            records = [r for r in records if r["task_id"] in complete]
            if not records:
                raise InputError(
                    f"no question of {run_dir} has finished under every protocol yet; run it first"
                )
        summary = summarize(records)
        rows = entry.compare(summary)
        simulated = any(r["simulated"] for r in rows)
        on_model = run_llm_groups(records)  # the groups that ran on a model
        label = results_label(simulated, on_model)  # which, when only some did (--weak-model)
        csv_path = write_csv(rows, run_dir / "report" / "paper_comparison.csv", simulated=label)
        from byzllm.reproduce.page import consensus_sensitivity

        # Runs whose every agent is simulated: the headline as each assumption moves (a few
        # in-memory reruns). A run with only its weak group on --weak-model is labelled
        # simulated too, but rerunning it would call that model eight more times.
        all_simulated = cfg.cpu_bound
        sensitivity = (
            consensus_sensitivity(entry.name, cfg, entry.compare) if all_simulated else None
        )
        page, extra = _pages(
            entry, run_dir, run_dir, rows, label, INTERVAL_NOTE, sensitivity, records=records,
            model_replies=not all_simulated,
        )  # fmt: skip
        extra["on_model"] = on_model
        if not partial and reused is not None:
            extra["reused_units"] = reused.total
            extra["reused_from"] = {str(path): n for path, n in reused.sources.items()}
        _print_comparison(
            entry, rows, label, INTERVAL_NOTE, csv_path, page, json_output, extra=extra
        )
        if not simulated:
            from byzllm.reproduce.real_page import RealRun, write_real_report

            # The page is regenerated by the command that made the run: its -n as given (a
            # --partial page covers fewer questions than the run plans) and its folder.
            if config is None:
                command = _command_of(job)
            else:
                strong, weak = (
                    str(g.model).split("/", 1)[-1] for g in (cfg.agents.strong, cfg.agents.weak)
                )
                command = _real_command(job, strong, weak)
            markdown = write_real_report(
                RealRun(entry, cfg, run_dir, wall_s=time.monotonic() - started, command=command),
                rows=rows,
                summary=summary,
                records=records,
                planned_questions=cfg.dataset.n if partial else None,
            )
            if not json_output:
                typer.echo(markdown)


def _command_of(job: _Job) -> str:
    """The ``byzllm reproduce`` command line of a run on ``--model``."""
    import shlex

    models = job.models
    words = ["byzllm", "reproduce", job.entry.name, "--model", str(models.model)]
    for flag, value in (("--weak-model", models.weak_model), ("--base-url", models.base_url)):
        if value is not None:
            words += [flag, value]
    if job.questions is not None:
        words += ["-n", str(job.questions)]
    return shlex.join([*words, "-o", str(job.run_dir)])


def _real_command(job: _Job, alias: str, weak: str | None = None) -> str:
    """The ``byzllm reproduce NAME --real MODEL [--real-weak WEAK]`` command line that made
    this run (its ``-n``, its ``-j`` and its folder), for the page's Regenerate line."""
    import shlex

    words = ["byzllm", "reproduce", job.entry.name, "--real", alias]
    if weak is not None:
        words += ["--real-weak", weak]
    if job.questions is not None:
        words += ["-n", str(job.questions)]
    return shlex.join([*words, "-j", str(job.concurrency), "-o", str(job.run_dir)])


def _reuse(name: str, run_dir: Path, units: list[Any]) -> Reused:
    """Copy the units that the run folders beside ``run_dir`` have done (the same unit id is
    the same work: sac-table2 reads sac-table1's runs), saying how many on stderr."""
    from byzllm.runs import reuse_units, sibling_runs

    reused = reuse_units(run_dir, units, sibling_runs(run_dir))
    if reused.total:
        typer.echo(f"{name}: {reused.describe()} (the same units)", err=True)
    return reused


def _complete_questions(records: list[dict[str, Any]], configurations: int) -> set[str]:
    """Task ids with a record under every configuration of the grid."""
    counts: dict[str, int] = {}
    for record in records:
        counts[record["task_id"]] = counts.get(record["task_id"], 0) + 1
    return {task for task, count in counts.items() if count >= configurations}


def _run_real(job: _Job, strong: str, weak: str, *, partial: bool = False) -> None:
    """``--real``: serve the shipped models, run the real config, report as usual + health."""
    entry, run_dir, questions = job.entry, job.run_dir, job.questions
    import contextlib
    import time

    from byzllm.llm import LocalServer
    from byzllm.llm._shipped import shipped_model

    if entry.kind == "monitor":
        _run_real_monitor(job, strong, partial=partial)
        return
    shipped_model(strong), shipped_model(weak)  # unknown aliases: one line, before any start
    with contextlib.ExitStack() as stack:
        urls: dict[str, str] = {}
        for alias in dict.fromkeys((strong, weak)):
            if partial:  # nothing runs: the URL only has to be the same as the run's
                urls[alias] = "http://127.0.0.1:1/v1"
                continue
            typer.echo(f"starting llama.cpp for {alias} ...", err=True)
            urls[alias] = stack.enter_context(LocalServer(alias, port=0)).base_url
        overrides = [] if questions is None else [f"dataset.n={questions}"]
        for group, alias in (("strong", strong), ("weak", weak)):
            overrides += [
                f"agents.{group}.model=openai/{alias}",
                f"agents.{group}.base_url={urls[alias]}",
                f"agents.{group}.cache={run_dir.resolve() / 'responses.sqlite'}",
                f"agents.{group}.cache_endpoint={_server_identity(alias)}",
            ]
        started = time.monotonic()
        _run(
            job,
            config=entry.real_config,
            overrides=overrides,
            started=started,
            partial=partial,
        )


def _server_identity(alias: str) -> str:
    """What the response cache knows our own llama.cpp server by: the model it serves, not
    its port (a free one, new on every start), so a resumed run finds the answers it had."""
    from byzllm.llm._local import server_identity
    from byzllm.llm._shipped import shipped_model

    return server_identity(alias, shipped_model(alias).sha256)


def _run_real_monitor(job: _Job, alias: str, *, partial: bool) -> None:
    """``--real`` for a rogue-agents entry: every player on one shipped model, served with
    ``-j`` slots (one game per slot at a time), the monitors trained on these real games."""
    import time

    from byzllm.errors import InputError
    from byzllm.llm import LocalServer, default_threads
    from byzllm.llm._shipped import shipped_model

    if partial:
        raise InputError(f"--partial reports SAC entries; {job.entry.name} reports when it ends")
    shipped_model(alias)
    # One context per seat of every game in flight: each agent's requests then find their own
    # prompt prefix in the KV cache (the server's slot affinity); at most `-j` generate at once.
    from byzllm.cli._common import load_cli_config
    from byzllm.experiments.monitor.config import MonitorExperimentConfig
    from byzllm.reproduce import config_path

    game = load_cli_config(config_path(job.entry.real_config), MonitorExperimentConfig, []).game
    seats = 2 if game.variant == "asym" else game.n_agents
    slots = job.concurrency * seats
    threads = max(1, default_threads() // job.concurrency)
    typer.echo(f"starting llama.cpp for {alias} ({slots} slots) ...", err=True)
    started = time.monotonic()
    with LocalServer(alias, port=0, slots=slots, threads=threads) as server:
        overrides = [
            f"model=openai/{alias}",
            f"base_url={server.base_url}",
            f"cache={job.run_dir.resolve() / 'responses.sqlite'}",
            f"cache_endpoint={_server_identity(alias)}",
        ]
        _run_monitor(job, config=job.entry.real_config, overrides=overrides, started=started)


def _run_monitor(
    job: _Job,
    *,
    config: str | None = None,
    overrides: list[str] | None = None,
    started: float | None = None,
) -> None:
    """collect -> train -> evaluate (at each lineup size of ``entry.sizes``) -> compare.

    ``config`` and ``overrides``: a real run's config file and its server settings."""
    import time

    entry, run_dir, games = job.entry, job.run_dir, job.questions
    started = time.monotonic() if started is None else started
    from byzllm.cli._common import execute_units, load_cli_config
    from byzllm.experiments.monitor import collect_units, evaluate_units, work
    from byzllm.experiments.monitor.ablations import interval_note
    from byzllm.experiments.monitor.config import MonitorExperimentConfig
    from byzllm.experiments.monitor.pipeline import train_from_turns
    from byzllm.experiments.monitor.records import MonitorGameRecord, MonitorTurnRecord
    from byzllm.reproduce import config_path
    from byzllm.runs import Store
    from byzllm.runs.reports import write_csv

    sets = list(overrides or [])
    if games is not None:
        sets += [f"n_train={games}", f"n_validation={games}", f"n_test={games}"]
    sets += job.models.flags()
    cfg = load_cli_config(config_path(config or entry.config), MonitorExperimentConfig, sets)
    collect_dir = run_dir / "collect"
    done = execute_units(
        collect_dir, collect_units(cfg), work, config=cfg, concurrency=job.concurrency,
        description=f"{entry.name}: collect", force=job.force,
    )  # fmt: skip
    if not done.complete:
        raise typer.Exit(summary_exit_code(done))
    with Store.open(collect_dir) as store:  # checked: a resumed folder may have been edited
        turns = store.records(MonitorTurnRecord)
        collected_games = store.records(MonitorGameRecord)
        recorded = store.latest_config()
    monitors, selections = train_from_turns(turns, recorded, games=collected_games)
    monitors.save(run_dir / "monitors.json")
    by_size: dict[int, list[dict[str, Any]]] = {}
    last_dir = run_dir
    for size in entry.sizes or (0,):
        evaluated = cfg
        folder = run_dir / "evaluate"
        if size:
            game = cfg.game.model_copy(update={"n_suspects": size})
            evaluated = cfg.model_copy(update={"game": game})
            folder = run_dir / f"evaluate-{size}"
        done = execute_units(
            folder, evaluate_units(evaluated, monitors), work, config=evaluated,
            concurrency=job.concurrency, description=f"{entry.name}: evaluate", force=job.force,
        )  # fmt: skip
        if not done.complete:
            raise typer.Exit(summary_exit_code(done))
        with Store.open(folder) as store:
            by_size[size] = store.records(MonitorGameRecord)
        last_dir = folder
    rows = entry.compare(by_size if entry.sizes else by_size[0])
    simulated = any(r["simulated"] for r in rows)
    csv_path = write_csv(rows, run_dir / "report" / "paper_comparison.csv", simulated=simulated)
    # Gains are paired differences with no intervention; table cells are per-condition means.
    if entry.metrics[0].startswith("gain"):
        note = interval_note(True)
    else:
        from byzllm.runs._intervals import BOOTSTRAP_METHOD

        note = BOOTSTRAP_METHOD.replace("over units", "over test games")
    from byzllm.experiments.monitor.ablations import control_gain_rows, not_evaluated
    from byzllm.experiments.monitor.environments import get_environment
    from byzllm.reproduce.page import monitor_sensitivity

    # The monitor's gains over the two controls, at the lineup size it was trained on.
    trained = int(cfg.game.n_suspects or 0) if entry.sizes else 0
    trained_games = by_size.get(trained) or by_size[max(by_size)]
    controls = control_gain_rows(
        trained_games,
        not_evaluated(trained_games, cfg.conditions),
        metric=get_environment(cfg.env).metrics[0].label,
    )
    sensitivity = (
        monitor_sensitivity(
            entry.name, cfg, monitors, entry.compare, size=trained if entry.sizes else None
        )
        if simulated
        else None
    )
    evaluated_games = [game for games in by_size.values() for game in games]
    page, extra = _pages(
        entry,
        run_dir,
        last_dir,
        rows,
        simulated,
        note,
        sensitivity,
        controls=controls,
        records=evaluated_games,
    )
    _print_comparison(entry, rows, simulated, note, csv_path, page, job.json_output, extra=extra)
    if not simulated and config is not None:
        from byzllm.reproduce.real_page import RealRun, write_real_monitor_report

        markdown = write_real_monitor_report(
            RealRun(
                entry,
                cfg,
                run_dir,
                wall_s=time.monotonic() - started,
                command=_real_command(job, str(cfg.model).split("/", 1)[-1]),
            ),
            games=trained_games,
            collected=collected_games,
            selections=selections,
            controls=controls,
            random_probabilities=monitors.random_probabilities(),
        )
        if not job.json_output:
            typer.echo(markdown)


def _run_codegen(job: _Job) -> None:
    """CodeGen's Table 1: collect (train, validation) -> train -> run the test problems ->
    compare, the monitor's gains over the controls, the sensitivity runs."""
    entry, run_dir, problems, per_split = job.entry, job.run_dir, job.problems, job.questions
    from byzllm.cli._common import load_cli_config
    from byzllm.errors import InputError
    from byzllm.experiments.codegen import CodeGenConfig, collect_units, run_units, work
    from byzllm.experiments.codegen.experiment import train_monitors
    from byzllm.experiments.codegen.records import CodeGenProblemRecord, CodeGenTurnRecord
    from byzllm.reproduce import config_path
    from byzllm.reproduce.codegen import control_gains
    from byzllm.reproduce.page import codegen_sensitivity
    from byzllm.runs._intervals import BOOTSTRAP_METHOD
    from byzllm.runs.reports import write_csv

    if problems is None:
        raise InputError(
            f"{entry.name} needs the HumanEval file, which byzllm does not ship: --problems "
            "HumanEval.jsonl.gz (from github.com/openai/human-eval)"
        )
    overrides = [f"problems={problems.resolve()}"]
    if per_split is not None:
        overrides += [f"n_train={per_split}", f"n_validation={per_split}", f"n_test={per_split}"]
    if job.models.model is not None:
        # LLM roles write code of their own: it runs in the sandbox, never simulated.
        overrides.append("execution=sandbox")
    overrides += job.models.flags()
    cfg = load_cli_config(config_path(entry.config), CodeGenConfig, overrides)
    # A folder holding another config (another -n) is refused unless --force.
    collect_dir = run_dir / "collect"
    units = collect_units(cfg)
    turns = _stage(job, collect_dir, units, work, cfg, CodeGenTurnRecord, "collect")
    monitors = train_monitors(turns, meta={"agents": cfg.agents, "model": cfg.model})
    monitors.save(run_dir / "monitors.json")
    folder = run_dir / "evaluate"
    units = run_units(cfg, monitors)
    records = _stage(job, folder, units, work, cfg, CodeGenProblemRecord, "evaluate")
    rows = entry.compare(records)
    simulated = any(r["simulated"] for r in rows)
    csv_path = write_csv(rows, run_dir / "report" / "paper_comparison.csv", simulated=simulated)
    note = (
        BOOTSTRAP_METHOD.replace("over units", "over test problems")
        + "; repeats averaged per problem"
    )
    controls = control_gains(records, cfg.conditions)
    sensitivity = (
        codegen_sensitivity(entry.name, cfg, monitors, entry.compare) if simulated else None
    )
    page, extra = _pages(
        entry, run_dir, folder, rows, simulated, note, sensitivity, controls=controls,
        records=records,
    )  # fmt: skip
    _print_comparison(entry, rows, simulated, note, csv_path, page, job.json_output, extra=extra)


def _pages(
    entry: Any,
    run_dir: Path,
    view_source: Path,
    rows: list[dict[str, Any]],
    simulated: bool | str,
    note: str,
    sensitivity: Any,
    *,
    controls: list[dict[str, Any]] | None = None,
    records: Sequence[Mapping[str, Any]] = (),
    model_replies: bool | None = None,
) -> tuple[Path, dict[str, Any]]:
    """Write report/reproduce.md and view.html with the gaps' explanations, the sensitivity
    section and (rogue-agents entries) the monitor's gains over the controls. ``simulated``:
    a bool, or the label of a partly simulated run
    (:func:`~byzllm.experiments.consensus.report.results_label`). For a run with
    agents on real models (``model_replies``; default: not ``simulated``) also the parse
    health of its unit ``records`` (page, ``extra`` and, from :func:`_print_comparison`, the
    console)."""
    from byzllm.experiments import parse_health
    from byzllm.reproduce.page import sensitivity_rows, write_pages

    replies = not simulated if model_replies is None else model_replies
    health = parse_health.from_records(records) if replies and records else None
    markdown, page, gaps = write_pages(
        run_dir,
        view_source,
        entry=entry,
        rows=rows,
        simulated=simulated,
        note=note,
        sensitivity=sensitivity,
        controls=controls or [],
        health=health,
    )
    extra: dict[str, Any] = {"page": str(markdown), "gaps": gaps}
    if health is not None:
        extra["parse_health"] = health
    if controls is not None:
        extra["control_gains"] = controls
    if sensitivity is not None:
        extra["sensitivity"] = {
            "headline": sensitivity.headline,
            "rows": sensitivity_rows(rows, sensitivity),
            "runs": sensitivity.extra_runs,
            "units": sensitivity.units,
            "seconds": round(sensitivity.seconds, 1),
            "how": sensitivity.note,
        }
    return page, extra


def _print_comparison(
    entry: Any,
    rows: list[dict[str, Any]],
    simulated: bool | str,
    note: str,
    csv_path: Path,
    page: Path,
    json_output: bool,
    *,
    extra: dict[str, Any] | None = None,
) -> None:
    """The comparison on the console (or as JSON). ``simulated``: a bool, or the label of a
    partly simulated run, printed under the table (the JSON keeps ``simulated: true``)."""
    from rich.markup import escape
    from rich.table import Table

    from byzllm.runs.reports import format_interval, simulated_note, simulated_title

    extra = dict(extra or {})
    health = extra.pop("parse_health", None)
    if json_output:
        print_json(
            {
                "name": entry.name,
                "paper": entry.paper,
                "table": entry.table,
                "simulated": bool(simulated),
                "interval_method": note,
                "remark": entry.remark,
                "rows": rows,
                "csv": str(csv_path),
                "view": str(page),
                **({} if health is None else {"parse_health": health.to_json()}),
                **extra,
            }
        )
        show_parse_health(health, json_output=True)  # its warnings, on stderr
        return
    from byzllm.reproduce.page import ROW_KEYS

    keys = [k for k in ROW_KEYS if rows and k in rows[0]]
    title = f"{entry.paper}, {entry.table}: ours [95% CI] / paper (difference)"
    table = Table(title=simulated_title(title, simulated))
    for k in keys:
        table.add_column(k)
    for metric in entry.metrics:
        table.add_column(metric.replace("_", " "), justify="right")
    for row in rows:
        cells = [str(row[k]) for k in keys]
        for metric in entry.metrics:
            ours, paper, diff = (
                row.get(metric),
                row.get(f"{metric}_paper"),
                row.get(f"{metric}_diff"),
            )
            low, high = row.get(f"{metric}_low"), row.get(f"{metric}_high")
            if ours is None:
                cells.append("-" if paper is None else f"- / {paper:g}")
            elif paper is None:
                cells.append(f"{format_interval(ours, low, high)} / -")
            else:
                signed = format_interval(diff, signed=True)
                cells.append(f"{format_interval(ours, low, high)} / {paper:g} ({signed})")
        table.add_row(*cells)
    out = console()
    out.print(table)
    label = escape(simulated_note(simulated) or "real models")  # a model's name is not markup
    out.print(f"[dim]ours: {label}; brackets: {note}; definitions: byzllm metrics[/dim]")
    if entry.remark:
        out.print(entry.remark, markup=False, highlight=False)
    show_parse_health(health, json_output=False)
    for control in extra.get("control_gains") or []:
        typer.echo(control["sentence"] + (" (simulated)" if simulated else ""))
    gaps = extra.get("gaps")
    if gaps is not None:
        from byzllm.reproduce.page import gap_sentence

        typer.echo(f"gaps larger than their interval: {len(gaps)}")
        for gap in gaps:
            typer.echo(f"  {gap_sentence(gap)}")
    if extra.get("sensitivity"):
        s = extra["sensitivity"]
        typer.echo(
            f"sensitivity of {s['headline']}: {s['runs']} extra simulated runs, "
            f"{s['units']} units, {s['seconds']:.0f} s (in {extra['page']})"
        )
    page_md = extra.get("page")
    written = f"{csv_path}, {page_md} and {page}" if page_md else f"{csv_path} and {page}"
    typer.echo(f"wrote {written}")
