"""`byzllm runs`: list, inspect and export experiment runs.

Every experiment command (`byzllm consensus run`, `byzllm whodunit run`, ...) writes its
results to a run directory (`runs/<name>/results.sqlite`). These commands read them.
"""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from ._common import (
    JsonOption,
    RunDirArgument,
    cli_errors,
    console,
    plural,
    print_json,
    show_parse_health,
    show_request_health,
)

__all__ = ["app"]

app = typer.Typer(
    help="List, inspect and export experiment runs (the runs/<name>/results.sqlite stores).",
    no_args_is_help=True,
)

#: How deep below ROOT `runs list` looks for stores (a bound on the search, said in its help:
#: `runs list .` in a home folder would otherwise walk all of it).
_MAX_DEPTH = 3
#: The unit counts `runs list` shows, in column order.
_COUNT_COLUMNS = ("units", "done", "failed", "pending")


def _when(timestamp: float | None, fmt: str = "%Y-%m-%d %H:%M:%S UTC") -> str:
    if timestamp is None:
        return ""
    return dt.datetime.fromtimestamp(timestamp, tz=dt.UTC).strftime(fmt)


def _relative(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root)) or "."
    except ValueError:
        return str(path)


def _find_stores(root: Path) -> list[Path]:
    from byzllm.runs import STORE_FILENAME

    found: dict[Path, Path] = {}  # resolved -> as found (a symlinked folder is listed once)
    for depth in range(_MAX_DEPTH + 1):
        pattern = "/".join(["*"] * depth + [STORE_FILENAME])
        for path in sorted(root.glob(pattern)):
            if path.is_file():
                found.setdefault(path.resolve(), path)
    return sorted(found.values())


def _run_overview(run_dir: Path) -> dict[str, Any]:
    from byzllm.runs import Store

    with Store.open(run_dir) as store:
        counts = store.counts()
        runs = store.runs()
    last = runs[-1] if runs else {}
    return {
        "run_dir": str(run_dir),
        "readable": True,
        "error": None,
        "units": sum(counts.values()),
        **counts,
        "invocations": len(runs),
        "last_status": last.get("status"),
        "last_started": _when(last.get("started_at")),
        "last_started_short": _when(last.get("started_at"), "%Y-%m-%d %H:%M"),
        "config_class": last.get("config_class"),
        "git_commit": last.get("git_commit"),
    }


def _unreadable_overview(run_dir: Path, error: str) -> dict[str, Any]:
    """A store that cannot be read: listed with its reason, never hiding the others."""
    return {
        "run_dir": str(run_dir),
        "readable": False,
        "error": error,
        "units": None,
        "pending": None,
        "done": None,
        "failed": None,
        "invocations": None,
        "last_status": "unreadable",
        "last_started": "",
        "last_started_short": "",
        "config_class": None,
        "git_commit": None,
    }


def _overview_or_reason(run_dir: Path) -> dict[str, Any]:
    from byzllm.errors import ByzllmError

    try:
        return _run_overview(run_dir)
    except ByzllmError as err:
        return _unreadable_overview(run_dir, " ".join(str(err).split()))


@app.command("list")
def list_runs(
    root: Annotated[
        Path, typer.Argument(help="Folder to search for run directories.", file_okay=False)
    ] = Path("runs"),
    json_output: JsonOption = False,
) -> None:
    """List the runs under ROOT (default: ./runs) with their progress.

    Run directories are searched in ROOT and up to three folders below it (ROOT/a/b/c);
    deeper ones are not listed.

    A store that cannot be read (damaged, truncated, empty, not a byzllm store) is listed
    as "unreadable", with the reason on stderr; the other runs are listed as usual.

    Examples:

        byzllm runs list

        byzllm runs list experiments/ --json
    """
    with cli_errors():
        from byzllm.errors import InputError

        if root.exists() and not root.is_dir():
            raise InputError(f"not a folder: {root}")
        # A missing root just means nothing has run here yet: an empty list, not an error.
        stores = _find_stores(root) if root.is_dir() else []
        overviews = [_overview_or_reason(store.parent) for store in stores]
        unreadable = [row for row in overviews if not row["readable"]]
        if json_output:
            for row in overviews:
                del row["last_started_short"]
            print_json({"root": str(root), "runs": overviews})
            return
        if not overviews:
            typer.echo(f"no runs under {root} up to {_MAX_DEPTH} folders deep (try `byzllm demo`)")
            return
        from rich.table import Table

        table = Table(title=f"runs under {root}")
        for column, justify in [
            ("run", "left"),
            ("units", "right"),
            ("done", "right"),
            ("failed", "right"),
            ("pending", "right"),
            ("last status", "left"),
            ("last started (UTC)", "left"),
        ]:
            table.add_column(column, justify=justify)  # type: ignore[arg-type]
        for row in overviews:
            table.add_row(
                _relative(Path(row["run_dir"]), root),
                *("" if row[key] is None else str(row[key]) for key in _COUNT_COLUMNS),
                str(row["last_status"] or ""),
                row.pop("last_started_short"),
                style=None if row["readable"] else "red",
            )
        console().print(table)
        for row in unreadable:
            typer.echo(f"unreadable: {row['error']}", err=True)


@app.command("show")
def show_run(
    run_dir: RunDirArgument,
    json_output: JsonOption = False,
    max_failures_shown: Annotated[
        int, typer.Option("--failures", min=0, help="How many failed units to list.")
    ] = 20,
) -> None:
    """Show a run: its config, provenance, progress counts, invocations and failures.

    For consensus, WhoDunit and monitor runs, also the parse health (model replies parsed
    per stage and how many fell back to the parser's default; a warning per stage above 20%)
    and the model requests (sent, cached, retried, timed out, errors by kind).

    Examples:

        byzllm runs show runs/sweep

        byzllm runs show runs/sweep --json | jq .counts
    """
    with cli_errors():
        from byzllm.experiments import parse_health, request_health
        from byzllm.runs import Store

        with Store.open(run_dir) as store:
            counts = store.counts()
            runs = store.runs()
            failures = store.failures()
            kinds = store.kinds()
            unit_rows = parse_health.unit_records(store)
        health = parse_health.from_records(unit_rows) if unit_rows else None
        requests = request_health.from_records(unit_rows) if unit_rows else None
        last = runs[-1] if runs else {}
        info: dict[str, Any] = {
            "run_dir": str(run_dir),
            "counts": {"total": sum(counts.values()), **counts},
            "records": kinds,
            "config_class": last.get("config_class"),
            "config": last.get("config"),
            "byzllm_version": last.get("byzllm_version"),
            "git_commit": last.get("git_commit"),
            "invocations": [
                {
                    "id": run["id"],
                    "status": run["status"],
                    "started": _when(run["started_at"]),
                    "finished": _when(run["finished_at"]),
                    "done": run["units_done"],
                    "failed": run["units_failed"],
                    "skipped": run["units_skipped"],
                }
                for run in runs
            ],
            "failures": [
                {
                    "unit_id": unit["id"],
                    "label": unit["label"],
                    "attempts": unit["attempts"],
                    "error": unit["error"],
                }
                for unit in failures
            ],
            "parse_health": health.to_json() if health is not None else None,
            "request_health": requests.to_json() if requests is not None else None,
        }
        if json_output:
            print_json(info)
        else:
            _print_show(info, max_failures_shown)
        show_parse_health(health, json_output=json_output)
        show_request_health(requests, json_output=json_output)


def _print_show(info: dict[str, Any], max_failures_shown: int) -> None:
    import yaml
    from rich.table import Table
    from rich.text import Text

    out = console()
    counts = info["counts"]
    total = counts["total"] or 1
    out.print(Text(info["run_dir"], style="bold"))
    out.print(
        f"units: {counts['total']}  done: {counts['done']} ({100 * counts['done'] / total:.1f}%)"
        f"  failed: {counts['failed']}  pending: {counts['pending']}",
        highlight=False,
    )
    if info["records"]:
        kinds = ", ".join(f"{kind} ({n})" for kind, n in info["records"].items())
        out.print(Text(f"records: {kinds}"))
    out.print(
        Text(
            f"byzllm {info['byzllm_version'] or '?'}  commit {info['git_commit'] or 'unknown'}"
            f"  config {info['config_class'] or '-'}"
        )
    )
    if info["config"] is not None:
        from ._streams import speaks_utf8

        out.print(Text("config:", style="bold"))
        # Characters as written where stdout takes them (YAML's escapes, "Erd\u0151s", read
        # as noise); escapes elsewhere, as print_json does: a "?" in their place is lossy.
        config = yaml.safe_dump(
            info["config"], sort_keys=False, allow_unicode=speaks_utf8(sys.stdout)
        )
        out.print(Text(config.rstrip()))
    if info["invocations"]:
        table = Table(title="invocations")
        for column in ("id", "status", "started", "finished", "done", "failed", "skipped"):
            table.add_column(column)
        for run in info["invocations"]:
            table.add_row(*(Text("" if run[key] is None else str(run[key])) for key in run))
        out.print(table)
    failures = info["failures"]
    if failures:
        table = Table(title=f"failed units ({len(failures)})")
        for column in ("label", "attempts", "error"):
            table.add_column(column)
        for unit in failures[:max_failures_shown]:
            table.add_row(Text(unit["label"]), str(unit["attempts"]), Text(unit["error"] or ""))
        out.print(table)
        if len(failures) > max_failures_shown:
            out.print(f"... and {len(failures) - max_failures_shown} more (use --json)")


@app.command("export")
def export_run(
    run_dir: RunDirArgument,
    fmt: Annotated[str, typer.Option("--format", "-f", help="csv, jsonl or parquet.")] = "csv",
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="Output folder (default: RUN_DIR/export).",
            show_default=False,
            file_okay=False,
        ),
    ] = None,
    kind: Annotated[
        list[str] | None,
        typer.Option("--kind", "-k", help="Record kind to export, repeatable (default: all)."),
    ] = None,
    json_output: JsonOption = False,
) -> None:
    """Export a run's records (one file per kind) and its units table.

    Examples:

        byzllm runs export runs/sweep --format parquet

        byzllm runs export runs/sweep --format csv --kind consensus_question --out tables/
    """
    with cli_errors():
        from byzllm.errors import InputError
        from byzllm.runs import Store

        if fmt not in ("csv", "jsonl", "parquet"):
            raise InputError(f"unknown export format {fmt!r} (choose csv, jsonl or parquet)")
        target = out if out is not None else run_dir / "export"
        with Store.open(run_dir) as store:
            written = store.export(fmt, target, kind or None)  # type: ignore[arg-type]
        if json_output:
            print_json({"run_dir": str(run_dir), "format": fmt, "files": [str(p) for p in written]})
        else:
            for path in written:
                typer.echo(str(path))


@app.command("repair")
def repair_run(
    run_dir: RunDirArgument,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Rebuild even a store that passes the integrity check, or one a process "
            "that looks alive is registered as writing to (never one whose writer lock a "
            "running run holds).",
        ),
    ] = False,
    json_output: JsonOption = False,
) -> None:
    """Salvage a damaged results store: copy what is readable into a fresh one.

    Every readable unit, record and invocation is copied into a new results.sqlite; the
    damaged file is kept beside it as results.damaged-<UTC time>.sqlite, never deleted.
    Units whose row or any of whose records was lost are not kept as done: rerunning the
    same command runs exactly those. Prints what was lost. A store that passes SQLite's
    integrity check is left as it is.

    Examples:

        byzllm runs repair runs/sweep

        byzllm runs repair runs/sweep --json
    """
    with cli_errors():
        from byzllm.runs import repair_store

        report = repair_store(run_dir, force=force)
        if json_output:
            print_json(report.to_dict())
            return
        _print_repair(report)


def _print_repair(report: Any) -> None:
    store = report.store
    if not report.repaired:
        typer.echo(f"{store} passed the integrity check: nothing to repair")
        return
    units = report.units
    kept = sum(units.values())

    if report.problems:
        first = " ".join(report.problems[0].split())
        more = f" (and {len(report.problems) - 1} more)" if len(report.problems) > 1 else ""
        typer.echo(f"damage found: {first[:300]}{more}")
    typer.echo(
        f"repaired {store}: kept {plural(kept, 'unit')} ({units['done']} done, "
        f"{units['failed']} failed, {units['pending']} pending), "
        f"{plural(report.records, 'record')}, {plural(report.runs, 'invocation')}"
    )
    typer.echo(
        f"lost: {plural(report.units_lost, 'unit')} unreadable, "
        f"{plural(report.units_rerun, 'done unit')} missing records (now pending), "
        f"{plural(report.records_lost, 'record row')} (a row holds one record or a unit's "
        f"records of one kind), {plural(report.runs_lost, 'invocation')}"
    )
    if report.unreadable_tables:
        typer.echo(f"unreadable tables: {', '.join(report.unreadable_tables)}")
    typer.echo(f"the damaged store is kept as {report.damaged_copy}")
    if report.units_to_run or "units" in report.unreadable_tables:
        typer.echo("rerun the same command to run the lost units again")
