"""`byzllm codegen`: the CodeGen debate on HumanEval / LiveCodeBench with monitors (the
rogue-agents paper, §4.1, §5 Table 1, App. C).

The pipeline::

    byzllm codegen collect --set problems=HumanEval.jsonl.gz -o runs/cg-collect
    byzllm codegen train runs/cg-collect                    # -> runs/cg-collect/monitors.json
    byzllm codegen run --set problems=HumanEval.jsonl.gz \\
        -m runs/cg-collect/monitors.json -o runs/cg-run       # zero-shot, multi-agent, + monitor
    byzllm codegen report runs/cg-run --problems

Simulated roles by default (results labelled simulated); ``--model``/``--base-url`` run the
same debates with LLM-backed roles. Model code runs only in the sandbox.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any

import typer

from . import _common as common

__all__ = ["app"]

app = typer.Typer(
    help="CodeGen: multi-agent code debate with monitors (collect, train, run, report).",
    no_args_is_help=True,
)

MonitorsOption = Annotated[
    Path | None,
    typer.Option(
        "--monitors",
        "-m",
        help="Monitors JSON from `byzllm codegen train` (needed by monitor conditions).",
        dir_okay=False,
        show_default=False,
    ),
]


def _config(opts: common.RunOptions) -> Any:
    from byzllm.experiments.codegen import CodeGenConfig

    return opts.load(CodeGenConfig)


@app.command()
@common.run_options(stage="collect")
def collect(opts: common.RunOptions) -> None:
    """Debate the train and validation problems without intervention (monitor features).

    Stores the judge's and tester's per-turn features for `byzllm codegen train`.

    Example:

        byzllm codegen collect --set problems=HumanEval.jsonl.gz --set n_train=40 -o runs/cgc
    """
    from byzllm.experiments.codegen import collect_units, work

    cfg = _config(opts)
    _say_short_splits(cfg, ("train", "validation"))
    opts.execute("codegen", collect_units(cfg), work, config=cfg, stage="collect")


def _say_short_splits(cfg: Any, splits: tuple[str, ...]) -> None:
    """A ``warning:`` line for each split that holds fewer problems than ``n_<split>`` asks:
    the run takes what there is, and a table over 12 problems must not pass for one of 40."""
    from byzllm.experiments.codegen.experiment import load_split

    for split in splits:
        asked = getattr(cfg, f"n_{split}")
        if split == "test" and cfg.test_split == "livecodebench":
            source = "the LiveCodeBench file"
        else:
            source = f"the {split} split of {cfg.problems}"
        found = len(load_split(cfg, split)) if asked is not None else asked
        if found is not None and found < asked:
            typer.echo(
                f"warning: n_{split}={asked}, but {source} holds "
                f"{common.plural(found, 'problem')}: running {found}",
                err=True,
            )


@app.command()
@common.train_options()
def train(
    training: common.TrainOptions,
    json_output: common.JsonOption = False,
) -> None:
    """Select the judge's and the tester's monitors (the D.2 grid); save them as JSON.

    Selection is on the validation problems of a `byzllm codegen collect` run. Prints the
    winners like the paper's Table 5, then the ablation monitors saved with them (each
    role's second-best and worst grid monitor, its turn-count-only monitor and its best
    single-feature monitor) with their validation gains.

    Example:

        byzllm codegen train runs/cgc
    """
    from byzllm.experiments.codegen import train_monitors
    from byzllm.experiments.codegen.records import CodeGenTurnRecord
    from byzllm.monitor import ablation_rows, table5_rows
    from byzllm.runs import Store

    with Store.open(training.run_dir) as store:
        common.require_collected_turns(training.run_dir, store.kinds(), "codegen_turn")
        turns = store.records(CodeGenTurnRecord)
        cfg = store.latest_config() or {}
        unfinished = common.unfinished_units(store, "split")
    if unfinished:
        typer.secho(common.collect_unfinished_warning(unfinished, "codegen"), fg="yellow", err=True)
    monitors = train_monitors(
        turns,
        degrees=training.degrees,
        alpha=training.alpha,
        meta={"agents": cfg.get("agents"), "model": cfg.get("model")},
    )
    path = monitors.save(training.target())
    rows = table5_rows(monitors)
    ablations = ablation_rows(monitors)
    simulated = bool(monitors.meta.get("simulated"))
    if json_output:
        common.print_json(
            {
                "monitors": str(path),
                "simulated": simulated,
                "rows": rows,
                "ablations": ablations,
                "unfinished": unfinished,
            }
        )
        return
    common.emit_rows(
        rows,
        json_output=False,
        title="CodeGen monitors (gain in points on validation)",
        simulated=simulated,
    )
    common.emit_rows(
        ablations, json_output=False, title=common.ABLATIONS_TITLE, simulated=simulated
    )
    typer.echo(f"wrote {path}", err=True)


@app.command()
@common.run_options(stage="run")
def run(opts: common.RunOptions, monitors: MonitorsOption = None) -> None:
    """Debate the test problems under each condition of Table 1; resumable.

    The test problems are HumanEval's held-out test split (disjoint from the train and
    validation problems collect and train used) or, with test_split: livecodebench, the
    LiveCodeBench file.

    Conditions: zero-shot, none (multi-agent), monitor-1 (multi-agent + monitor). Then
    `byzllm codegen report RUN_DIR`.

    Without --monitors only zero-shot and none run (monitor conditions are dropped with a
    warning).

    Config keys: problems, livecodebench, test_split (humaneval | livecodebench), seed,
    test_fraction, train_fraction, n_train, n_validation, n_test, rounds, coders, final_rule
    (tests | vote),
    conditions, repeats, collect_repeats, execution (auto | sandbox | simulated),
    sandbox_timeout_s, sandbox_memory_mb, agents (simulated | llm), sim, top_logprobs,
    max_reprompts, max_tokens, renormalize, and the model keys.

    Examples:

        byzllm codegen run --set problems=HumanEval.jsonl.gz --set "conditions=[zero-shot, none]"

        byzllm codegen run cfg.yaml -m runs/cgc/monitors.json --set repeats=3 -o runs/cg
    """
    from byzllm.experiments.codegen import run_units, work
    from byzllm.monitor import MonitorSet

    cfg = _config(opts)
    _say_short_splits(cfg, ("test",))
    monitor_set = MonitorSet.load(monitors) if monitors is not None else None
    if monitor_set is None:
        kept = [c for c in cfg.conditions if c in ("zero-shot", "none")]
        dropped = [c for c in cfg.conditions if c not in kept]
        if dropped:
            typer.echo(
                f"warning: no --monitors: skipping {', '.join(dropped)} (run `byzllm "
                "codegen collect -o RUN_DIR` and `byzllm codegen train RUN_DIR`, then pass "
                "--monitors RUN_DIR/monitors.json)",
                err=True,
            )
            cfg = cfg.model_copy(update={"conditions": kept})
    else:  # the folder is bound to the monitors too: another set's units would pool here
        cfg = cfg.model_copy(update={"monitor_set": monitor_set.fingerprint()})
    opts.execute("codegen", run_units(cfg, monitor_set), work, config=cfg, stage="run")


def _pct(v: float) -> str:
    return "-" if math.isnan(v) else f"{100 * v:.1f}"


@app.command()
def report(
    run_dir: common.RunDirArgument,
    problems: Annotated[
        bool, common.flag_option("--problems", "Also print every problem's outcome.")
    ] = False,
    transcript: Annotated[
        str | None,
        common.value_option(
            "--transcript", "Print the debate of this problem id (first repeat of each condition)."
        ),
    ] = None,
    csv: Annotated[Path | None, common.csv_option("table1.csv and problems.csv")] = None,
    json_output: common.JsonOption = False,
) -> None:
    """Pass@1 per condition (Table 1) with 95% intervals, and the monitor's paired gains.

    Test problems only; intervals are bootstrapped over problems; also parse fall-backs and
    run failures, and the run's parse health per stage (code, ratings, judge, tests; a
    warning above 20%) and model requests. The monitor's gain is shown over no
    intervention, the turn-count-only monitor and the best single-feature monitor, "not
    significant" where its interval contains 0 or the problems fail the exact sign test
    (then with its counts and p; JSON: `paired_gain`).

    Examples:

        byzllm codegen report runs/cg --problems

        byzllm codegen report runs/cg --transcript HumanEval/1
    """
    with common.cli_errors():
        from byzllm.errors import InputError
        from byzllm.experiments import parse_health, request_health
        from byzllm.experiments.codegen.records import CodeGenProblemRecord
        from byzllm.experiments.codegen.report import (
            INTERVAL_NOTE,
            gain_line,
            gain_rows,
            not_hidden,
            problem_rows,
            short_of_asked,
            table1_rows,
        )
        from byzllm.runs import Store
        from byzllm.runs.reports import write_csv

        rows = common.stored_records(
            run_dir, CodeGenProblemRecord, missing="CodeGen results (run `byzllm codegen run`)"
        )
        with Store.open(run_dir) as store:
            n_test = (store.latest_config() or {}).get("n_test")
        table = table1_rows(rows)
        if not table:  # a collect run: train and validation problems only, no conditions
            raise InputError(
                f"{run_dir} holds no test problems (a `byzllm codegen collect` run): nothing "
                f"to report; train its monitors with `byzllm codegen train {run_dir}`, then "
                "run the test problems with `byzllm codegen run -m "
                f"{run_dir / 'monitors.json'}` and report that run"
            )
        gains = gain_rows(rows)
        per_problem = problem_rows(rows)
        short = short_of_asked(table, n_test)
        warnings = [*not_hidden(rows), *([short] if short is not None else [])]
        # Per stage (code, ratings, judge, tests), with the warning of every report. A
        # simulated role's "unreadable" replies are drawn (no_code_rate), not model output:
        # they are not parse health (the table's column still counts them).
        health = parse_health.from_records(
            [{**r, "parse": {}} if r["simulated"] else r for r in rows]
        )
        requests = request_health.from_records(rows)
        simulated = any(r["simulated"] for r in table)
        sim_params = next((r["sim_params"] for r in rows if r.get("sim_params")), None)
        if csv is not None:
            write_csv(table, csv / "table1.csv", simulated=simulated)
            write_csv(per_problem, csv / "problems.csv", simulated=simulated)
        if transcript is not None:
            _print_transcript(rows, transcript, json_output=json_output)
            return
        if json_output:
            common.print_json(
                {
                    "rows": table,
                    "paired_gain": gains,
                    "problems": per_problem if problems else None,
                    "simulated": simulated,
                    "sim_params": sim_params,
                    "parse_health": health.to_json(),
                    "request_health": requests.to_json(),
                    "n_test": n_test,
                    "warnings": warnings,
                }
            )
            common.show_parse_health(health, json_output=True)
            common.show_request_health(requests, json_output=True)
            for line in warnings:
                typer.echo(line, err=True)
            return
        pretty = [
            {
                "source": r["source"],
                "method": r["method"],
                "problems": f"{r['problems']} ({common.plural(r['runs'], 'run')})",
                "Pass@1 %": f"{_pct(r['pass_at_1'])} [{_pct(r['ci_low'])}, {_pct(r['ci_high'])}]",
                "interventions": r["interventions"],
                "parse fallbacks": f"{r['parse_fallbacks']}/{r['parse_calls']}",
                "run failures": r["run_failures"],
                "execution": "simulated" if r["simulated_execution"] else "sandbox",
            }
            for r in table
        ]
        common.emit_rows(pretty, json_output=False, title="CodeGen (Table 1)", simulated=simulated)
        typer.echo(f"intervals: {INTERVAL_NOTE}", err=True)
        for g in gains:
            typer.echo(gain_line(g), err=True)
        if problems:
            common.emit_rows(
                per_problem, json_output=False, title="Per problem", simulated=simulated
            )
        common.show_parse_health(health, json_output=False)
        common.show_request_health(requests, json_output=False)
        for line in warnings:
            typer.echo(line, err=True)


def _print_transcript(rows: list[dict[str, Any]], problem: str, *, json_output: bool) -> None:
    from byzllm.agents.codegen import TestSuite
    from byzllm.errors import InputError

    chosen = [r for r in rows if r["problem_id"] == problem and int(r["repeat"]) == 0]
    if not chosen:
        held = sorted({str(r["problem_id"]) for r in rows})
        shown = ", ".join(held[:5]) + (f" and {len(held) - 5} more" if len(held) > 5 else "")
        raise InputError(f"no results for problem {problem!r}; the run holds {shown}")
    if json_output:
        common.print_json(chosen)
        return
    console = common.console(highlight=False)
    for r in chosen:
        label = " (simulated)" if r["simulated"] else ""
        console.print(f"[bold]{problem} — {r['condition']}{label}[/bold]", markup=True)
        for rnd in r["transcript"]:
            console.print(f"[bold]round {rnd['round']}[/bold]", markup=True)
            if rnd.get("feedback"):
                console.print("judge:\n" + str(rnd["feedback"].get("text", "")), markup=False)
            if rnd.get("tests"):
                suite = TestSuite.model_validate(rnd["tests"])  # asserts, or stdin cases
                console.print("tests:\n" + suite.text(), markup=False)
            for i, res in enumerate(rnd.get("results", []), start=1):
                console.print(
                    f"  solution {i}: {res['passed']}/{res['passed'] + res['failed']} tests passed",
                    markup=False,
                )
            for s in rnd["solutions"]:
                flags = " (fallback)" if s.get("fallback") else ""
                console.print(f"--- {s['coder']}{flags}\n{s['code'][:1500]}", markup=False)
        for t in r.get("turns", []):
            if t["decision"] != "continue":
                console.print(
                    f"intervention: {t['decision']} after the {t['obs']['role']}'s turn in "
                    f"round {t['round']}",
                    markup=False,
                )
        verdict = "PASSED" if r["passed"] else f"FAILED ({r['hidden_status']})"
        # The record keeps the 0-based seat; solutions are numbered from 1 wherever they are
        # shown (the judge's "Solution i", the test results above), so the final one is too.
        seat = r["final_seat"]
        final = "?" if seat is None else f"{int(seat) + 1}"
        console.print(
            f"[bold]{verdict}[/bold] final: solution {final} "
            + ("(the only one)" if r["final_rule"] == "only" else f"by {r['final_rule']}"),
            markup=True,
        )
        if r["hidden_detail"]:
            console.print(r["hidden_detail"], markup=False)
