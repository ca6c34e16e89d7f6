"""``byzllm sim``: the simulated population's assumptions, fitted from a run and compared to it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import typer

from ._common import (
    JsonOption,
    MarkdownOption,
    RunDirArgument,
    checked_on_failure,
    cli_errors,
    emit_rows,
    print_json,
)

__all__ = ["app"]

app = typer.Typer(
    help=(
        "The simulated population: every parameter of the four domains with its source (show), "
        "estimated from a run with real LLM agents (fit: consensus, WhoDunit, GovSim and "
        "CodeGen runs), and the fitted twin beside the real run (compare)."
    ),
    no_args_is_help=True,
)

Domain = Literal["consensus", "whodunit", "govsim", "codegen", "all"]
_DOMAINS = ("consensus", "whodunit", "govsim", "codegen", "all")


def _fmt(value: Any) -> Any:
    return round(value, 4) if isinstance(value, float) else value


@app.command()
def show(
    domain: Annotated[
        str, typer.Option("--domain", "-d", help="consensus, whodunit, govsim, codegen or all.")
    ] = "all",
    json_output: JsonOption = False,
    markdown: MarkdownOption = False,
) -> None:
    """Print every parameter of the simulated agents: default, meaning and source.

    A source is a published figure (cited), a measurement, or "assumption": a
    modelling choice you can switch in a config (agents.<group>.profile for
    consensus, sim: for WhoDunit and CodeGen, govsim.sim: for GovSim) or fit from
    a real run with `byzllm sim fit`.

    Examples:

        byzllm sim show

        byzllm sim show --domain consensus --markdown
    """
    with cli_errors():
        from byzllm.errors import InputError

        if domain not in _DOMAINS:
            raise InputError(
                f"unknown domain {domain!r}; choose consensus, whodunit, govsim, codegen or all"
            )
        tables = _parameter_tables(domain)
        if json_output:
            print_json({"tables": tables})
            return
        for title, rows in tables.items():
            emit_rows(rows, json_output=False, title=title, markdown=markdown)
            if markdown:
                typer.echo("")


#: What each domain's table covers and where a config sets it (consensus: per group).
_TABLE_TITLES = {
    "whodunit": "whodunit: every agent (sim)",
    "govsim": "govsim: every fisher (govsim.sim)",
    "codegen": "codegen: coders, judge and tester (codegen sim)",
}


def _parameter_tables(domain: str) -> dict[str, list[dict[str, Any]]]:
    from byzllm.agents._params import default_parameters

    tables: dict[str, list[dict[str, Any]]] = {}
    for name in _DOMAINS[:-1] if domain == "all" else (domain,):
        for group, params in default_parameters(name).items():
            title = f"consensus: {group} group (agents.{group}.profile)" if group else ""
            rows = [_row(r.to_dict()) for r in params.rows()]
            tables[title or _TABLE_TITLES[name]] = rows
    return tables


def _row(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "parameter": row["name"],
        "default": _fmt(row["value"]),
        "meaning": row["meaning"],
        "source": row["source"],
    }


#: The record kind that marks each domain's runs, in the order they are looked for.
_DOMAIN_KINDS = (
    ("consensus_question", "consensus"),
    ("whodunit_game", "whodunit"),
    ("govsim_game", "govsim"),
    ("codegen_problem", "codegen"),
)


def _domain_of(run_dir: Path) -> str:
    from byzllm.errors import InputError
    from byzllm.runs import Store

    if not (run_dir / "results.sqlite").is_file():
        raise InputError(f"no results.sqlite in {run_dir}: run an experiment there first")
    with Store.open(run_dir) as store:
        kinds = store.kinds()
    for kind, domain in _DOMAIN_KINDS:
        if kind in kinds:
            return domain
    hint = ""
    if "monitor_game" in kinds:
        # A monitor run keeps the monitored turns only: no whole games to fit the agents on.
        hint = (
            "; a monitor run keeps the monitored turns only: fit a `byzllm whodunit run` or "
            "`byzllm govsim run` of the same agents"
        )
    raise InputError(
        f"{run_dir} holds no consensus, WhoDunit, GovSim or CodeGen results to fit (it has: "
        f"{', '.join(kinds) or 'nothing'}){hint}"
    )


def _run_is_simulated(run_dir: Path, domain: str) -> bool:
    """Whether any of the run's results came from simulated agents (its own records)."""
    from byzllm.runs import Store

    kind = next(k for k, d in _DOMAIN_KINDS if d == domain)
    with Store.open(run_dir) as store:
        return any(bool(row.get("simulated")) for row in store.iter_records(kind))


def _fit(run_dir: Path) -> Any:
    from byzllm.runs import Store

    domain = _domain_of(run_dir)
    if domain == "consensus":
        from byzllm.experiments._fitting import run_name
        from byzllm.experiments.consensus.config import ConsensusConfig
        from byzllm.experiments.consensus.fit import fit_consensus
        from byzllm.experiments.consensus.records import ConsensusQuestion

        with Store.open(run_dir) as store:
            # Unchecked (each holds its whole trace): checked if the fit fails.
            questions = store.records("consensus_question")
            raw = store.latest_config()
        config = ConsensusConfig.model_validate(raw) if raw else None
        with checked_on_failure(run_dir, ConsensusQuestion):
            return fit_consensus(questions, run=run_name(run_dir), config=config)
    if domain == "govsim":
        from byzllm.experiments.govsim.fit import fit_govsim_run

        return fit_govsim_run(run_dir)
    if domain == "codegen":
        from byzllm.experiments.codegen.fit import fit_codegen_run

        return fit_codegen_run(run_dir)
    from byzllm.experiments.whodunit.fit import fit_whodunit_run

    return fit_whodunit_run(run_dir)


@app.command()
def fit(
    run_dir: RunDirArgument,
    out: Annotated[
        Path,
        typer.Option(
            "--out", "-o", help="Where to write the profile (YAML; .json for JSON).", dir_okay=False
        ),
    ] = Path("profile.yaml"),
    json_output: JsonOption = False,
) -> None:
    """Estimate the simulator's parameters from a run (best: one with real LLM agents).

    Consensus runs give, per honest group, the solo accuracy, the judge's
    false-accept and false-reject rates, the score levels, the confidence
    distribution for right and wrong answers (with its mass at 1.0) and how
    answers move towards the retained peers; WhoDunit runs give per-role
    invalid-move and wrong-message rates and decision entropies; GovSim runs
    (byzllm govsim run) give the fishers' greed, estimate noise, persuadability
    and rogue episodes from their catches and meeting proposals; CodeGen runs
    give the coders' skill, the problems' difficulty spread, how often a wrong
    solution fails an example, the judge's and the tester's error rates and
    reported confidences, broken replies and rating noise. Parameters the run
    holds no evidence for keep their defaults; the file and the last line say
    which, and why.

    Use the file in a config: agents.strong.profile: profile.yaml (consensus),
    sim: profile.yaml (WhoDunit, CodeGen) or govsim.sim: profile.yaml (GovSim).

    Examples:

        byzllm sim fit runs/real-demo -o smollm2.yaml

        byzllm sim compare runs/real-demo --profile smollm2.yaml

        byzllm sim fit runs/gs -o govsim-profile.yaml
    """
    with cli_errors():
        profile = _fit(run_dir)
        path = profile.save(out)
        if json_output:
            print_json({"profile": str(path), **profile.model_dump(mode="json")})
            return
        for group, values in profile.groups.items():
            rows = [
                {"parameter": k, "value": _fmt(v), "source": profile.sources[group].get(k, "")}
                for k, v in values.items()
            ]
            emit_rows(rows, json_output=False, title=f"{profile.domain}: {group}")
        label = "simulated" if profile.run_simulated else "real-model"
        splits = f" ({', '.join(profile.splits)} split)" if profile.splits else ""
        typer.echo(f"fitted from a {label} run: {profile.run}{splits}")
        kept = _not_fitted(profile)
        if kept:
            typer.echo(f"kept their defaults (no evidence in the run): {', '.join(kept)}")
        typer.echo(f"wrote {path}")


def _not_fitted(profile: Any) -> list[str]:
    """The parameters the run did not fit (every fitted source starts "fitted from"),
    group-qualified when the profile has more than one group."""
    out = []
    for group, sources in profile.sources.items():
        for name, source in sources.items():
            if not source.startswith("fitted from "):
                out.append(f"{group}.{name}" if len(profile.sources) > 1 else name)
    return out


@app.command()
def compare(
    run_dir: RunDirArgument,
    profile_path: Annotated[
        Path | None,
        typer.Option(
            "--profile",
            "-p",
            help="A profile from `byzllm sim fit` [default: fit RUN_DIR now].",
            dir_okay=False,
            show_default=False,
        ),
    ] = None,
    resamples: Annotated[
        int, typer.Option("--resamples", min=100, help="Bootstrap resamples per interval.")
    ] = 2000,
    json_output: JsonOption = False,
    markdown: MarkdownOption = False,
) -> None:
    """Rerun RUN_DIR's configuration on the fitted simulator; print both side by side.

    Every metric of the run (consensus: the SAC paper's §5.1 metrics; WhoDunit:
    Success-Rate, Precision, Game-Length; GovSim: Survival-Rate, Survival-Time,
    Efficiency, per split; CodeGen: Pass@1 and interventions per debate, per
    split and condition) beside the same metric of its simulated twin (the
    run's games, problems, conditions and repeats replayed), each with a 95%
    bootstrap interval over questions, games or problems, and the difference
    (simulated - real). This is how far the twin is from the real thing before
    you explore thousands of configurations on it.

    Examples:

        byzllm sim compare runs/real-demo

        byzllm sim compare runs/real-demo --profile smollm2.yaml --markdown

        byzllm sim compare runs/gs --profile govsim-profile.yaml
    """
    with cli_errors():
        from byzllm.experiments._fitting import FittedProfile
        from byzllm.runs._intervals import BOOTSTRAP_METHOD

        profile = FittedProfile.load(profile_path) if profile_path else _fit(run_dir)
        domain = _domain_of(run_dir)
        tables = _comparison(run_dir, domain, profile, resamples)
        # The compared run's own records say what it is: a --profile may come from another
        # run (a real one beside a simulated run headed "real run", and the reverse).
        run_simulated = (
            _run_is_simulated(run_dir, domain) if profile_path else profile.run_simulated
        )
        real_label = "simulated run" if run_simulated else "real run"
        method = BOOTSTRAP_METHOD.replace("2000", str(resamples))
        if json_output:
            print_json(
                {
                    "domain": domain,
                    "run": str(run_dir),
                    "run_simulated": run_simulated,
                    "profile_run": profile.run,
                    "profile_run_simulated": profile.run_simulated,
                    "profile_splits": profile.splits,
                    "method": method,
                    "tables": [
                        {**meta, "rows": [r.model_dump() for r in rows]} for meta, rows in tables
                    ],
                }
            )
            return
        for meta, rows in tables:
            title = (
                " / ".join(f"{k}={v}" if k in ("F", "T") else str(v) for k, v in meta.items())
                if meta
                else domain
            )
            if domain in ("govsim", "codegen"):
                title = f"{domain}: {title}"
            shown = [
                {
                    "metric": r.metric,
                    real_label: _interval(r.real, r.real_low, r.real_high),
                    "simulated twin": _interval(r.simulated, r.simulated_low, r.simulated_high),
                    "difference": _signed(r.difference),
                }
                for r in rows
            ]
            emit_rows(shown, json_output=False, title=title, markdown=markdown)
        typer.echo(f"intervals: {method}; the twin's results are simulated.")


def _comparison(run_dir: Path, domain: str, profile: Any, resamples: int) -> list[Any]:
    from byzllm.errors import InputError
    from byzllm.runs import Store

    if profile.domain != domain:
        raise InputError(f"the profile was fitted on a {profile.domain} run; {run_dir} is {domain}")
    if domain == "consensus":
        from byzllm.experiments.consensus.config import ConsensusConfig
        from byzllm.experiments.consensus.fit import compare_consensus
        from byzllm.experiments.consensus.records import ConsensusQuestion

        with Store.open(run_dir) as store:
            # Unchecked (each holds its whole trace): checked if the comparison fails.
            questions = store.records("consensus_question")
            raw = store.latest_config()
        if not raw:
            raise InputError(f"{run_dir} does not record its configuration; cannot rerun it")
        config = ConsensusConfig.model_validate(raw)
        with checked_on_failure(run_dir, ConsensusQuestion):
            return compare_consensus(questions, config, profile, resamples=resamples)
    if domain == "govsim":
        from byzllm.experiments.govsim.fit import compare_govsim_run

        return compare_govsim_run(run_dir, profile, resamples=resamples)
    if domain == "codegen":
        from byzllm.experiments.codegen.fit import compare_codegen_run

        return compare_codegen_run(run_dir, profile, resamples=resamples)
    from byzllm.experiments.whodunit.fit import compare_whodunit_run

    return compare_whodunit_run(run_dir, profile, resamples=resamples)


def _interval(value: float, low: float, high: float) -> str:
    from byzllm.runs.reports import format_interval

    # NaN (the metric is undefined here) reads "-".
    return format_interval(value, low, high, digits=3)


def _signed(value: float) -> str:
    from byzllm.runs.reports import format_interval

    return format_interval(value, digits=3, signed=True)
