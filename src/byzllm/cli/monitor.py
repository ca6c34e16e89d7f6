"""`byzllm monitor`: Rogue-agent monitors: collect, train, evaluate, report (the rogue-agents
paper, §2, §4.2).

The pipeline::

    byzllm monitor collect -o runs/mon-collect                 # train + validation games
    byzllm monitor train runs/mon-collect                      # -> runs/mon-collect/monitors.json
    byzllm monitor evaluate --monitors runs/mon-collect/monitors.json -o runs/mon-eval
    byzllm monitor report runs/mon-eval --plots runs/mon-eval  # tables + Fig. 4 / Fig. 9 PNGs

Training keeps the ablation monitors (the rogue-agents paper, §6.1, Table 3: second-best and
worst of the selection, and a turn-count-only control); evaluation plays them and the report
says how many points the uncertainty features add over the turn count.

Simulated agents by default (results labelled simulated); ``--model``/``--base-url`` play the
same games with LLM-backed agents.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from . import _common as common

__all__ = ["app"]

app = typer.Typer(
    help="Rogue-agent monitors: collect, train, evaluate, report.", no_args_is_help=True
)


def _config(opts: common.RunOptions) -> Any:
    from byzllm.experiments.monitor import MonitorExperimentConfig

    return opts.load(MonitorExperimentConfig)


@app.command()
@common.run_options(stage="collect")
def collect(opts: common.RunOptions) -> None:
    """Play the train and validation games without interventions; store per-turn features.

    Examples:

        byzllm monitor collect -o runs/mon-collect

        byzllm monitor collect --set n_train=50 --set n_validation=30 -o runs/small

        byzllm monitor collect --model openai/gpt-4o-mini -o runs/gpt-collect
    """
    from byzllm.experiments.monitor import MonitorExperimentConfig, collect_units, work

    opts.run("monitor", MonitorExperimentConfig, collect_units, work, "collect")


@app.command()
@common.train_options()
def train(
    training: common.TrainOptions,
    joint: Annotated[
        bool,
        typer.Option(
            "--joint",
            help="Choose all roles' monitors together by the gain of their combined triggers "
            "instead of each on its own (the paper's Table 5).",
        ),
    ] = False,
    json_output: common.JsonOption = False,
) -> None:
    """Select one monitor per role on the validation games (D.2 grid) and save them as JSON.

    Prints the winners like the paper's Table 5 (role, features, degree, gain, τ), plus the
    random baseline's trigger probability per role, and the ablation monitors saved with them
    (Table 3: each role's second-best and worst grid monitor, and its turn-count-only monitor,
    fitted and thresholded the same way).

    Examples:

        byzllm monitor train runs/mon-collect

        byzllm monitor train runs/mon-collect --out monitors.json --json
    """
    from byzllm.experiments.monitor.pipeline import train_from_turns
    from byzllm.experiments.monitor.records import MonitorGameRecord, MonitorTurnRecord
    from byzllm.monitor import ablation_rows, table5_rows
    from byzllm.runs import Store

    with Store.open(training.run_dir) as store:
        common.require_collected_turns(training.run_dir, store.kinds(), "monitor_turn")
        turns = store.records(MonitorTurnRecord)
        games = store.records(MonitorGameRecord)
        cfg = store.latest_config() or {}
        unfinished = common.unfinished_units(store, "split")
    if unfinished:
        typer.secho(common.collect_unfinished_warning(unfinished, "monitor"), fg="yellow", err=True)
    simulated = any(bool(t.get("simulated")) for t in turns)
    monitors, selections = train_from_turns(
        turns, cfg, degrees=training.degrees, alpha=training.alpha, joint=joint, games=games
    )
    path = monitors.save(training.target())
    rows = table5_rows(monitors)
    ablations = ablation_rows(monitors)
    if json_output:
        common.print_json(
            {
                "monitors": str(path),
                "simulated": simulated,
                "base_rate": monitors.base_rate,
                "selection": monitors.meta["selection"],
                "expected_gain": monitors.meta["expected_gain"],
                "flat_roles": monitors.meta.get("flat_roles", []),
                "unfinished": unfinished,
                "rows": rows,
                "ablations": ablations,
                "grid": {s.role: [g.model_dump() for g in s.grid] for s in selections},
            }
        )
        return
    common.emit_rows(
        rows,
        json_output=False,
        title="Selected monitors (gain in points on validation)",
        simulated=simulated,
    )
    common.emit_rows(
        ablations,
        json_output=False,
        title=common.ABLATIONS_TITLE,
        simulated=simulated,
    )
    for role in monitors.meta.get("flat_roles") or ():
        typer.echo(
            f"warning: the {role}'s entropy, varentropy and kurtosis never varied on its "
            "training turns: its monitor reads the turn count alone",
            err=True,
        )
    typer.echo(
        f"expected gain with every role monitored ({monitors.meta['selection']} "
        f"selection): {100 * monitors.meta['expected_gain']:.1f} points",
        err=True,
    )
    typer.echo(f"wrote {path}", err=True)


@app.command()
@common.run_options(stage="evaluate")
def evaluate(
    opts: common.RunOptions,
    monitors: Annotated[
        Path,
        typer.Option(
            "--monitors", "-m", help="Monitors JSON from `byzllm monitor train`.", dir_okay=False
        ),
    ] = Path("monitors.json"),
) -> None:
    """Play the test games under every condition, repeatedly.

    Conditions (`--set conditions=[...]`, default all): none, monitor-1, monitor-2,
    random-1, random-2, and the ablations resample-1 (§6.1), second-best-1, worst-1 (Table
    3), turn-only-1 (a monitor of the turn count alone) and single-feature-1 (each role's
    best monitor of one uncertainty feature, chosen on validation). A monitors file trained
    before these ablations were kept has no monitors for them: they are skipped with a
    warning.
    Then `byzllm monitor report RUN_DIR`.

    Examples:

        byzllm monitor evaluate -m runs/mon-collect/monitors.json -o runs/mon-eval

        byzllm monitor evaluate -m monitors.json --set repeats=4 \\
            --set "conditions=[none, monitor-1, resample-1]" -o runs/ablation
    """
    from byzllm.experiments.monitor import evaluate_units, work
    from byzllm.experiments.monitor.experiment import capped_conditions
    from byzllm.monitor import MonitorSet, missing_conditions

    monitor_set = MonitorSet.load(monitors)
    # The folder is bound to the monitors too: another set's units would pool with these.
    cfg = _config(opts).model_copy(update={"monitor_set": monitor_set.fingerprint()})
    units = evaluate_units(cfg, monitor_set)
    capped = capped_conditions(cfg)
    if capped:
        typer.echo(
            f"note: {cfg.env} allows one intervention per role (the rogue-agents paper, "
            f"§4.2): skipping {', '.join(capped)}",
            err=True,
        )
    skipped = missing_conditions(cfg.conditions, monitor_set)
    if skipped:
        typer.echo(
            f"warning: {monitors} has no ablation monitors (trained before they were kept): "
            f"skipping {', '.join(skipped)}; rerun `byzllm monitor train` to evaluate them",
            err=True,
        )
    opts.execute("monitor", units, work, config=cfg, stage="evaluate")


@app.command()
def report(
    run_dir: common.RunDirArgument,
    plots: Annotated[
        Path | None,
        common.folder_option(
            "--plots",
            "Write success_rate.png (Fig. 4/5), trigger_turns.png (Fig. 9) and "
            "ablations.png (Table 3) here.",
        ),
    ] = None,
    csv: Annotated[
        Path | None, common.csv_option("conditions.csv, ablations.csv and control_gains.csv")
    ] = None,
    json_output: common.JsonOption = False,
) -> None:
    """Success-Rate, Precision and Game-Length (± standard error) per condition, the ablations.

    For `env: govsim` runs also Survival-Rate, Survival-Time and Efficiency per condition
    with 95% bootstrap intervals (the rogue-agents paper, Table 2); there "success" is
    survival of the season.

    The ablation table (the rogue-agents paper, Table 3, plus the turn-count-only monitor)
    gives each condition's Success-Rate difference to no intervention and to the selected
    monitor in points with 95% paired bootstrap intervals, then two lines: the selected
    monitor's gain over the turn-count-only monitor and over the best single-feature monitor,
    each with its 95% interval and "not significant" where the interval contains 0 or the
    games fail the exact sign test (then with its counts and p; JSON: `control_gains`). Also
    the run's parse
    health (model moves parsed and how many fell back to a passed turn), with a warning when
    more than 20% did, and its model requests (sent, cached, retried, timed out, errors by
    kind).

    Examples:

        byzllm monitor report runs/mon-eval

        byzllm monitor report runs/mon-eval --plots figures --csv figures --json
    """
    with common.cli_errors():
        from byzllm.errors import InputError
        from byzllm.experiments import parse_health, request_health
        from byzllm.experiments.monitor.ablations import (
            ablation_rows,
            control_gain_rows,
            feature_gain,
            feature_gain_sentence,
            interval_note,
            not_evaluated,
        )
        from byzllm.experiments.monitor.environments import get_environment
        from byzllm.experiments.monitor.outcomes import OUTCOME_NOTE, outcome_rows
        from byzllm.experiments.monitor.records import MonitorGameRecord
        from byzllm.monitor.report import (
            MONITORS_SIMULATED_NOTE,
            SE_NOTE,
            evaluation_rows,
            monitors_transferred,
            plot_ablation_gains,
            plot_success_bars,
            plot_trigger_histogram,
            trigger_turns,
        )
        from byzllm.runs import Store
        from byzllm.runs.reports import format_pm, rich_table, write_csv

        with Store.open(run_dir) as store:
            games = store.records(MonitorGameRecord)
            cfg = store.latest_config()
            unfinished = common.unfinished_units(store, "condition")
        env_name = str(
            (cfg or {}).get("env") or next((g.get("env") for g in games), None) or "whodunit"
        )
        environment = get_environment(env_name)
        # WhoDunit's table is the Success-Rate / Precision / Game-Length one below; other
        # environments add their own metrics with 95% intervals (GovSim: Table 2's).
        outcomes = [] if env_name == "whodunit" else outcome_rows(games, environment.metrics)
        rows = evaluation_rows(games)
        if not rows:
            raise InputError(f"{run_dir} has no evaluated test games (run `monitor evaluate`)")
        simulated = any(r["simulated"] for r in rows)
        # Monitors trained on simulated agents and played on real ones: the games are real,
        # what triggers the interventions is not, and the report says so.
        transferred = monitors_transferred(games)
        caption = SE_NOTE + (f" · {MONITORS_SIMULATED_NOTE}" if transferred else "")
        health = parse_health.from_records(games)
        requests = request_health.from_records(games)
        # The simulation's parameters go with every simulated result (one set per run).
        sim_params = next((g["sim_params"] for g in games if g.get("sim_params")), None)
        triggers = trigger_turns(games)
        ablations = ablation_rows(rows, games)
        gain = feature_gain(games)
        requested = None if cfg is None else cfg.get("conditions")
        missing = not_evaluated(games, requested)
        sentence = feature_gain_sentence(gain, missing)
        controls = control_gain_rows(games, missing, metric=environment.metrics[0].label)
        flags = {bool(r["paired"]) for r in ablations}
        method = interval_note(flags.pop() if len(flags) == 1 else None)
        written: list[str] = []
        if plots is not None:
            from byzllm.experiments.monitor.environments import get_environment

            success_label = (
                get_environment(
                    (cfg or {}).get("env", "whodunit") if isinstance(cfg, dict) else "whodunit"
                )
                .metrics[0]
                .label
            )
            written.append(
                str(plot_success_bars(rows, plots / "success_rate.png", metric_label=success_label))
            )
            written.append(
                str(
                    plot_trigger_histogram(
                        triggers, plots / "trigger_turns.png", simulated=simulated
                    )
                )
            )
            written.append(
                str(
                    plot_ablation_gains(
                        ablations,
                        plots / "ablations.png",
                        note=method,
                        metric_label=success_label,
                    )
                )
            )
        if csv is not None:
            tables = [
                (rows, "conditions.csv", {"se_method": SE_NOTE}),
                ([_flat(r) for r in ablations], "ablations.csv", {"interval_method": method}),
                (controls, "control_gains.csv", {"interval_method": method}),
                (outcomes, "outcomes.csv", {"interval_method": OUTCOME_NOTE}),
            ]
            for table, name, notes in tables:
                if table or name != "outcomes.csv":
                    table_path = write_csv(table, csv / name, simulated=simulated, notes=notes)
                    written.append(str(table_path))
        if json_output:
            common.print_json(
                {
                    "env": env_name,
                    "simulated": simulated,
                    "monitors_simulated": transferred or simulated,
                    "sim_params": sim_params,
                    "rows": rows,
                    "outcomes": outcomes,
                    "outcome_interval_method": OUTCOME_NOTE if outcomes else None,
                    "se_method": SE_NOTE,
                    "ablations": ablations,
                    "feature_gain": None if gain is None else gain.model_dump(),
                    "feature_gain_sentence": sentence,
                    "control_gains": controls,
                    "not_evaluated": missing,
                    "interval_method": method,
                    "trigger_turns": triggers,
                    "plots": written,
                    "parse_health": health.to_json(),
                    "request_health": requests.to_json(),
                    "unfinished": unfinished,
                }
            )
            common.show_parse_health(health, json_output=True)
            common.show_request_health(requests, json_output=True)
            return
        shown = [
            {
                "condition": r["condition"],
                "runs": r["runs"],
                # Distinct test games, and their plays over the runs (`games` counts plays).
                "games": r["distinct_games"],
                "plays": r["plays"],
                "success %": format_pm(r["success_rate"], r["success_rate_se"], scale=100),
                "precision %": format_pm(r["precision"], r["precision_se"], scale=100),
                "length": format_pm(r["game_length"], r["game_length_se"]),
                "×len": f"{r['length_ratio']:.2f}",
                "interv.": f"{r['interventions_per_game']:.2f}",
            }
            for r in rows
        ]
        console = common.console()
        console.print(
            rich_table(
                shown,
                title="Monitors and interventions (test games)",
                caption=caption,
                simulated=simulated,
            )
        )
        if unfinished:
            typer.secho(
                common.unfinished_warning(
                    unfinished,
                    units="test",
                    left_out="success rates and gains above are over the games that finished",
                    rerun="rerun `byzllm monitor evaluate` with --retry-failed",
                ),
                fg="yellow",
                err=True,
            )
        if outcomes:
            console.print(
                rich_table(
                    [_outcome_cells(r, environment.metrics) for r in outcomes],
                    title=f"{env_name}: "
                    + ", ".join(m.label for m in environment.metrics)
                    + " per condition (test games; success above is "
                    + f"{environment.metrics[0].label})",
                    caption=OUTCOME_NOTE,
                    simulated=simulated,
                )
            )
        table3 = [
            {
                "condition": r["condition"],
                "success %": format_pm(r["success_rate"], r["success_rate_se"], scale=100),
                "vs none, pts (95% CI)": _ci(r["vs_none"]),
                "vs monitor-1, pts (95% CI)": _ci(r["vs_selected"]),
            }
            for r in ablations
        ] + [
            {
                "condition": c,
                "success %": why,
                "vs none, pts (95% CI)": "",
                "vs monitor-1, pts (95% CI)": "",
            }
            for c, why in missing.items()
        ]
        console.print(
            rich_table(
                table3,
                title="Ablations (the rogue-agents paper, Table 3; test games)",
                caption=f"success % ± standard error as above; differences: {method}",
                simulated=simulated,
            )
        )
        for control in controls:
            typer.echo(control["sentence"] + (" (simulated)" if simulated else ""))
        common.show_parse_health(health, json_output=False)
        common.show_request_health(requests, json_output=False)
        if sim_params:
            typer.echo(
                "simulation: " + ", ".join(f"{k}={v}" for k, v in sorted(sim_params.items())),
                err=True,
            )
        for path in written:
            typer.echo(f"wrote {path}", err=True)


def _ci(points: dict[str, float | None]) -> str:
    """``+8.6 [+5.0, +12.2]`` from ``{value, low, high}`` in points; empty when absent."""
    from byzllm.runs.reports import format_interval

    return format_interval(points["value"], points["low"], points["high"], signed=True, missing="")


def _outcome_cells(row: dict[str, Any], metrics: Any) -> dict[str, Any]:
    """A condition's metrics as ``value [low, high]`` cells (rates in %)."""
    from byzllm.runs.reports import format_interval

    cells: dict[str, Any] = {
        "condition": row["condition"],
        "games": row["distinct_games"],
        "plays": row["plays"],
    }
    for m in metrics:
        value, low, high = row[m.key], row[f"{m.key}_low"], row[f"{m.key}_high"]
        unit = " %" if m.scale == 100.0 else ""
        cells[m.label + unit] = format_interval(value, low, high, scale=m.scale, missing="n/a")
    cells["interv."] = f"{row['interventions_per_game']:.2f}"
    return cells


def _flat(row: dict[str, Any]) -> dict[str, Any]:
    """An ablation row with its interval dicts spread into columns, for CSV."""
    out = {k: v for k, v in row.items() if not isinstance(v, dict)}
    for key in ("vs_none", "vs_selected"):
        for part, value in row[key].items():
            out[f"{key}_{part}_pts"] = value
    return out
