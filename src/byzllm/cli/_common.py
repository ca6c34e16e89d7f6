"""Shared pieces of every ``byzllm <area>`` command: options, errors, configs, runs, output.

A typical area command takes the run option families in one parameter (:func:`run_options`)::

    from byzllm.cli._common import RunOptions, run_options

    @app.command()
    @run_options()
    def run(opts: RunOptions) -> None:
        \"\"\"Run a sweep.\"\"\"
        from byzllm.myarea import MyConfig, expand_units, work   # heavy imports here

        opts.run("myarea", MyConfig, expand_units, work)      # a bad config: one line, exit 2

:func:`cli_errors` (which the option families apply themselves; other commands use it as
``with cli_errors():``) turns a :class:`~byzllm.errors.ByzllmError` into one ``error: ...``
line on stderr and the error's exit code (2 for bad input and configs), and Ctrl-C into exit
130; given ``--json``, such a command still prints one JSON object on stdout saying how it
ended (:mod:`byzllm.cli._unfinished`).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import inspect
import json
import math
import os
import signal
import sys
import threading
from collections.abc import Callable, Coroutine, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, NoReturn, TypeVar

import typer

from byzllm.errors import ByzllmError, InputError

from ._unfinished import json_option_given, note_json_written, note_run_dir, unfinished_document

if TYPE_CHECKING:
    from pydantic import BaseModel
    from rich.console import Console

    from byzllm.experiments.parse_health import ParseHealth
    from byzllm.experiments.request_health import RequestHealth
    from byzllm.llm import Model
    from byzllm.runs import Executor, Record, RunSummary, Unit, WorkFn

__all__ = [
    "EXIT_INTERRUPTED",
    "AlphaOption",
    "BaseUrlOption",
    "ConcurrencyOption",
    "ConfigArgument",
    "ConsensusModelOption",
    "DemoModelOption",
    "ExecutorOption",
    "ForceOption",
    "JsonOption",
    "MarkdownOption",
    "MaxDegreeOption",
    "MaxFailuresOption",
    "ModelOption",
    "MonitorsOutOption",
    "RayAddressOption",
    "RetryFailedOption",
    "RunDirArgument",
    "RunDirOption",
    "RunOptions",
    "SetOption",
    "TrainOptions",
    "WaitOption",
    "WeakModelOption",
    "bind_run_dir",
    "checked_model",
    "checked_on_failure",
    "cli_errors",
    "console",
    "csv_option",
    "default_run_dir",
    "echo_error",
    "emit_rows",
    "execute_units",
    "fixed_run_dir_option",
    "flag_option",
    "folder_option",
    "handle_errors",
    "load_cli_config",
    "model_flags",
    "model_option",
    "plural",
    "print_json",
    "require_collected_turns",
    "require_model",
    "run_dir_option",
    "run_options",
    "show_parse_health",
    "show_request_health",
    "stage_run_dir",
    "stored_records",
    "summary_exit_code",
    "train_options",
    "value_option",
]

ConfigT = TypeVar("ConfigT", bound="BaseModel")
F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")

#: Exit code after Ctrl-C (128 + SIGINT), as shells report it.
EXIT_INTERRUPTED = 130

# --- options (use as parameter annotations) ---------------------------------------------------


def folder_option(flag: str, help: str) -> Any:
    """An optional folder a report writes into (``--csv``, ``--plots``, ...): use as
    ``csv: Annotated[Path | None, common.folder_option("--csv", "...")] = None``."""
    return typer.Option(flag, help=help, file_okay=False, show_default=False)


def csv_option(files: str) -> Any:
    """``--csv FOLDER``: where a report writes its tables as CSV (``files``, for the help):
    use as ``csv: Annotated[Path | None, common.csv_option("table1.csv")] = None``."""
    return folder_option("--csv", f"Write {files} here.")


def value_option(flag: str, help: str) -> Any:
    """An optional value with no default shown (``--transcript ID``, ``--problems FILE``)."""
    return typer.Option(flag, help=help, show_default=False)


def flag_option(flag: str, help: str) -> Any:
    """An on/off switch, off unless given (``--fresh``, ``--open``): use as
    ``fresh: Annotated[bool, common.flag_option("--fresh", "...")] = False``."""
    return typer.Option(flag, help=help)


def model_option(help: str) -> Any:
    """``--model``, an LLM named as ``provider/model`` (no default shown): :data:`ModelOption`
    is the usual one; a command whose ``--model`` takes more (``byzllm demo``: ``local``)
    says so in ``help``."""
    return value_option("--model", help)


#: Optional YAML config file (the model's defaults when omitted).
ConfigArgument = Annotated[
    Path | None,
    typer.Argument(
        help="YAML config file (omit to use the defaults).",
        show_default=False,
        dir_okay=False,
    ),
]
#: A run directory holding ``results.sqlite``.
RunDirArgument = Annotated[
    Path, typer.Argument(help="Run directory (holds results.sqlite).", file_okay=False)
]


def _run_dir(text: str | Path) -> Path:
    """A ``--run-dir`` as given: an empty string (``-o ''``, an unset shell variable) is
    refused, where a path would read it as ``.`` and run into the working directory; an
    existing file is refused as a folder option's is. A command's own default arrives
    as a ``Path`` and is taken as it is."""
    if isinstance(text, Path):
        return text
    if not text.strip():
        raise typer.BadParameter("give a folder, not an empty string")
    # os.path: a name the file system refuses (too long) is for the run to report, not here.
    if os.path.isfile(text):
        raise typer.BadParameter(f"dir {text!r} is a file.")
    return Path(text)


def run_dir_option(area: str = "<area>", stage: str | None = None) -> Any:
    """``--run-dir`` / ``-o``, its help naming the default of this command: ``runs/`` and
    the config file's name (``runs/<area>`` without one), ``-<stage>`` in a pipeline."""
    suffix = f"-{stage}" if stage else ""
    return typer.Option(
        "--run-dir",
        "-o",
        help=f"Run directory for results.sqlite (default: runs/<CONFIG name>{suffix}, or "
        f"runs/{area}{suffix} without CONFIG). Rerunning the same config into it resumes; "
        "another config is refused (see --force).",
        show_default=False,
        parser=_run_dir,
        metavar="<dir>",
    )


def fixed_run_dir_option(default: str) -> Any:
    """``--run-dir`` / ``-o`` of a command that takes no config file, its help naming the
    folder it uses without one (``byzllm consensus matrix``: ``runs/matrix``)."""
    return typer.Option(
        "--run-dir",
        "-o",
        help=f"Run directory for results.sqlite (default: {default}). Rerunning the same "
        "command into it resumes: the units it holds are not run again, and the report "
        "reads this command's units only; another config there is refused unless --force.",
        show_default=False,
        parser=_run_dir,
        metavar="<dir>",
    )


#: Where the run stores its results (default: ``runs/<config name>``).
RunDirOption = Annotated[Path | None, run_dir_option()]
#: Replace a run folder's config instead of refusing a different one.
ForceOption = Annotated[
    bool,
    typer.Option(
        "--force",
        help="Run even though RUN_DIR holds a run of another config: the folder takes the "
        "new config, keeps the units both configs share and removes the others.",
    ),
]
#: ``--set a.b=3`` overrides (repeatable; values are YAML scalars).
SetOption = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        "-s",
        metavar="KEY=VALUE",
        help="Override a config key: the keys of the YAML file, dotted into sections "
        "(--set section.key=3); repeatable; values parse as YAML: 3, 0.5, true, null, [1, 2]. "
        "An unknown key is refused with the nearest valid one.",
        show_default=False,
    ),
]
#: How many units run at once.
ConcurrencyOption = Annotated[
    int, typer.Option("--concurrency", "-j", min=1, help="Units running at once.")
]
#: Also rerun units that failed before.
RetryFailedOption = Annotated[
    bool,
    typer.Option("--retry-failed", help="Also rerun units that failed in an earlier run."),
]
#: Stop after this many failures.
MaxFailuresOption = Annotated[
    int | None,
    typer.Option(
        "--max-failures",
        min=1,
        help="Stop the run once this many units have failed (default: never).",
        show_default=False,
    ),
]
#: Where units run.
ExecutorOption = Annotated[
    str,
    typer.Option(
        "--executor",
        help="Where units run: auto (default: process for a run of 1,000 units or more "
        "on simulated agents, local otherwise), local (this process; model calls "
        "concurrently), process (worker processes: CPU-bound simulations on every core) or "
        "ray (a Ray cluster, see --ray-address; pip install 'byzllm\\[ray]').",
    ),
]
#: The Ray cluster to join.
RayAddressOption = Annotated[
    str | None,
    typer.Option(
        "--ray-address",
        help="With --executor ray: the cluster to join (auto, ray://host:10001); "
        "default: $RAY_ADDRESS, else a local Ray instance.",
        show_default=False,
    ),
]
#: Wait for another process writing to the run folder instead of stopping.
WaitOption = Annotated[
    bool,
    typer.Option(
        "--wait",
        help="If another process is running units into the run directory, wait for it to "
        "end instead of stopping at once (one process writes to a run directory at a time).",
    ),
]
#: Machine-readable output.
JsonOption = Annotated[
    bool,
    typer.Option(
        "--json",
        help="Print machine-readable JSON on stdout instead.",
        callback=json_option_given,  # failed or interrupted: still one JSON document
    ),
]
#: Markdown tables (for papers, READMEs, issues).
MarkdownOption = Annotated[
    bool, typer.Option("--markdown", help="Print tables as markdown instead.")
]


#: ``--model``: the agents on this LLM instead of the simulated population.
ModelOption = Annotated[
    str | None,
    model_option(
        "Run the agents on this LLM, e.g. openai/gpt-4o-mini, instead of the simulated population."
    ),
]
#: ``--model`` of the commands that also take ``--weak-model`` (:data:`WeakModelOption`):
#: only their help names it, since the other commands have no weak group.
ConsensusModelOption = Annotated[
    str | None,
    model_option(
        "Run the agents on this LLM, e.g. openai/gpt-4o-mini, instead of the simulated "
        "population (in a consensus run: every honest agent, unless --weak-model gives the "
        "weak group another)."
    ),
]
#: ``byzllm demo``'s ``--model``: also ``local``, the model the local extra ships, in process.
DemoModelOption = Annotated[
    str | None,
    model_option(
        "Run the honest agents on this LLM instead of the simulated population: 'local' "
        "(Qwen2.5-Coder-0.5B, shipped with the local extra, in process) or provider/model, "
        "e.g. openai/qwen0.5b with --base-url."
    ),
]
#: ``--weak-model``: the weak group's LLM (consensus).
WeakModelOption = Annotated[
    str | None, value_option("--weak-model", "LLM of the weak group (default: --model).")
]
#: ``--base-url``: the OpenAI-compatible server of ``--model``.
BaseUrlOption = Annotated[
    str | None,
    value_option(
        "--base-url",
        "OpenAI-compatible server, e.g. http://localhost:8000/v1 (vLLM, Ollama, ...).",
    ),
]
#: ``train``'s options (monitors and CodeGen): where the monitors go, the ridge, the degrees.
MonitorsOutOption = Annotated[
    Path | None,
    typer.Option(
        "--out",
        help="Where to write the monitors (default: RUN_DIR/monitors.json).",
        dir_okay=False,
        show_default=False,
    ),
]
AlphaOption = Annotated[float, typer.Option("--alpha", min=0.0, help="Ridge strength.")]
MaxDegreeOption = Annotated[
    int, typer.Option("--max-degree", min=1, max=10, help="Search degrees 1..N.")
]


# --- errors --------------------------------------------------------------------------------


def echo_error(message: str) -> None:
    """Print ``error: <message>`` as ONE line on stderr."""
    typer.echo(f"error: {_one_line(message)}", err=True)


def _one_line(message: str) -> str:
    """``message`` on one line: its whitespace runs (newlines included) as single spaces."""
    return " ".join(message.split())


@contextlib.contextmanager
def cli_errors() -> Iterator[None]:
    """Turn byzllm errors into one stderr line + exit code, Ctrl-C into exit 130; with
    ``--json``, stdout gets one object saying so unless the command's JSON is out
    (:mod:`byzllm.cli._unfinished`). SIGTERM is Ctrl-C for the whole command, between its
    stages too (it killed a pipeline outright while it trained or wrote reports)."""
    try:
        with _sigterm_as_interrupt(), _unraisable_memory_errors_dropped():
            yield
    except ByzllmError as err:
        raise _failed(str(err) or type(err).__name__, err.exit_code) from None
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        _print_failure("interrupted", EXIT_INTERRUPTED, "interrupted")
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except OSError as err:
        # A file the command reads or writes (a read-only folder, a full disk, a name too
        # long): one line naming it, not a traceback. A write that fills the disk names no
        # file: it still gets its line.
        if err.filename is None and err.errno not in _DISK_FULL:
            raise
        where = f": {err.filename}" if err.filename is not None else ""
        hint = "; free some space and rerun" if err.errno in _DISK_FULL else ""
        raise _failed(f"{err.strerror or err}{where}{hint}", 2) from None
    except MemoryError as err:
        # Settings past what the machine holds (`sim compare --resamples 100000000000` asked
        # numpy for 1.46 TiB): one line saying so, not a traceback. numpy's message says how
        # much was asked for; a bare MemoryError says nothing.
        detail = f" ({err})" if str(err) else ""
        raise _failed(f"not enough memory{detail}; rerun with smaller settings", 2) from None
    except ValueError as err:
        # An option's value that a record or a setting refuses (`govsim play --months 500`)
        # is a usage error, not a traceback; other ValueErrors are bugs and stay visible.
        invalid = _invalid_value(err)
        if invalid is None:
            raise
        raise _failed(invalid, 2) from None


def _invalid_value(err: ValueError) -> str | None:
    """pydantic's validation error as one line (``invalid <model>: field: what (got x)``),
    else None. pydantic is looked up, not imported: `byzllm --help` never loads it, and a
    validation error means it is loaded already."""
    pydantic = sys.modules.get("pydantic")
    if pydantic is None or not isinstance(err, pydantic.ValidationError):
        return None
    from byzllm.runs import format_validation_error

    return format_validation_error(err, pydantic.BaseModel, what=f"value ({err.title})")


#: What a write says when the disk (or the user's quota, or the file size limit) is full.
_DISK_FULL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


def checked_model(name: str, base_url: str | None) -> Model:
    """The model ``name`` at ``base_url``, after the one-request check the run commands make
    (:func:`byzllm.llm.check_endpoint`): nothing listening, a rejected key or an unknown
    model stops the command in seconds with one line (exit 2), where a game retried it for a
    minute and exited 1."""
    import asyncio

    from byzllm.llm import ModelSpec, check_endpoint

    spec = ModelSpec(name=name, base_url=base_url)
    error = asyncio.run(check_endpoint(spec))
    if error is not None:
        raise error
    return spec.build()


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


@contextlib.contextmanager
def _unraisable_memory_errors_dropped() -> Iterator[None]:
    """In the block, a MemoryError Python cannot raise is dropped instead of printed as
    "Exception ignored in: <generator ...>" with a traceback: as memory runs out, closing a
    suspended generator fails too (`graph build complete -n 2800 -o g.json` under a 1 GB
    limit printed one above its "not enough memory" line). The MemoryError that ends the
    command gets its one line below; one the command outlives needs none. Other unraisable
    errors go to the hook that was there."""
    previous = sys.unraisablehook

    def hook(unraisable: sys.UnraisableHookArgs) -> None:
        if not isinstance(unraisable.exc_value, MemoryError):
            previous(unraisable)

    sys.unraisablehook = hook
    try:
        yield
    finally:
        sys.unraisablehook = previous


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM raises KeyboardInterrupt in the block (the main thread only: elsewhere
    Python cannot install handlers); the previous handler is back afterwards."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _failed(message: str, exit_code: int) -> typer.Exit:
    """The ``error: ...`` line on stderr and, with ``--json``, the same message as one JSON
    object on stdout; returns the exit to raise."""
    line = _one_line(message)
    echo_error(line)
    _print_failure("error", exit_code, line)
    return typer.Exit(exit_code)


def _print_failure(
    status: Literal["interrupted", "error"],
    exit_code: int,
    message: str,
    counts: dict[str, int] | None = None,
) -> None:
    """With ``--json`` and nothing printed yet, stdout's one document says how the command
    ended (:func:`~byzllm.cli._unfinished.unfinished_document`)."""
    document = unfinished_document(status, exit_code, message, counts=counts)
    if document is not None:
        print_json(document)


def handle_errors(command: F) -> F:
    """Decorator form of :func:`cli_errors` (put it under ``@app.command()``)."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with cli_errors():
            return command(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


# --- configs and runs ----------------------------------------------------------------------


def load_cli_config(
    path: Path | str | None, model: type[ConfigT], set_values: Sequence[str] | None = None
) -> ConfigT:
    """Load and fully validate a config from a YAML file and ``--set`` strings.

    Raises :class:`~byzllm.errors.ConfigError` (one line, exit code 2 under
    :func:`cli_errors`) before anything runs.
    """
    from byzllm.runs import load_config, parse_overrides

    return load_config(path, model, parse_overrides(list(set_values or [])))


def stored_records(run_dir: Path, kind: type[Record], *, missing: str) -> list[dict[str, Any]]:
    """A report's records: those of ``kind`` in the run at ``run_dir``, each checked against
    its class (:meth:`~byzllm.runs.Store.iter_records`); a run without any is an
    :class:`~byzllm.errors.InputError` saying ``<run_dir> has no <missing>``."""
    from byzllm.runs import Store

    with Store.open(run_dir) as store:
        records = store.records(kind)
    if not records:
        raise InputError(f"{run_dir} has no {missing}")
    return records


@contextlib.contextmanager
def checked_on_failure(run_dir: Path, *kinds: type[Record]) -> Iterator[None]:
    """A report over records read unchecked (by their kind's name), checked only when it
    fails: a report that fails as an edited or damaged record makes it fail (a ``TypeError``
    deep in a sum) ends with the :class:`InputError` naming that record
    (:meth:`~byzllm.runs.Store.iter_records`), any other failure as it was. ``kinds``: the
    record classes to check, default every kind in the run that the library writes.

    For records too big to check on every read: a consensus question holds its whole trace,
    and checking costs more than reading (the default ``consensus matrix``'s 2,700: 0.33 s of
    CPU to read, 0.89 s to read checked); and for the viewer, which reads every kind.
    """
    try:
        yield
    except (TypeError, ValueError, KeyError, AttributeError, ArithmeticError) as err:
        if isinstance(err, ByzllmError):
            raise
        from byzllm.runs import Store

        with Store.open(run_dir) as store:
            for kind in kinds or _record_classes(store.kinds()):
                for _ in store.iter_records(kind):  # raises at the first record that is wrong
                    pass
        raise


def _record_classes(names: Iterable[str]) -> list[type[Record]]:
    """The record classes of the kinds ``names`` that the library's experiments write."""
    import importlib

    from byzllm.runs import Record

    for domain in ("consensus", "whodunit", "govsim", "codegen", "monitor"):
        importlib.import_module(f"byzllm.experiments.{domain}.records")
    by_kind: dict[str, type[Record]] = {}
    pending = list(Record.__subclasses__())
    while pending:
        cls = pending.pop()
        if cls.__module__.startswith("byzllm."):  # not a user's class of the same kind
            by_kind.setdefault(cls.kind, cls)
        pending += cls.__subclasses__()
    return [by_kind[name] for name in names if name in by_kind]


def default_run_dir(config: Path | str | None, area: str, root: Path | str = "runs") -> Path:
    """``runs/<config file stem>``, or ``runs/<area>`` without a config file."""
    name = Path(config).stem if config is not None else area
    return Path(root) / name


def stage_run_dir(run_dir: Path | None, config: Path | None, area: str, stage: str) -> Path:
    """``run_dir``, or ``runs/<config stem or area>-<stage>`` for multi-stage pipelines
    (monitor and CodeGen: collect, evaluate / run)."""
    if run_dir is not None:
        return run_dir
    base = default_run_dir(config, area)
    return base.with_name(f"{base.name}-{stage}")


def require_model(base_url: str | None, *models: str | None) -> None:
    """Refuse ``--base-url`` given without a model to send there (``--model``, or
    ``--weak-model`` where a command takes one): the run would ignore it and play the
    simulated population instead."""
    if base_url is not None and not any(models):
        raise InputError(
            "--base-url needs --model, the model to run there (e.g. --model openai/gpt-4o-mini)"
        )


def model_flags(model: str | None, base_url: str | None) -> list[str]:
    """``--set`` overrides that put every player of a single-model experiment (WhoDunit,
    monitors, GovSim, CodeGen) on ``--model`` / ``--base-url`` (``--base-url`` alone is an
    :class:`~byzllm.errors.InputError`, :func:`require_model`)."""
    require_model(base_url, model)
    sets = ["agents=llm", f"model={model}"] if model is not None else []
    if base_url is not None:
        sets.append(f"base_url={base_url}")
    return sets


def bind_run_dir(
    run_dir: Path | str, config: BaseModel, units: Iterable[Unit], *, force: bool = False
) -> None:
    """Bind ``run_dir`` to ``config`` (:func:`byzllm.runs.check_config`): a folder holding the
    same config resumes, one holding another stops with one line naming the differing keys
    (exit 2) unless ``force``, which replaces the config and says how many units went."""
    from byzllm.runs import check_config

    removed = check_config(run_dir, config, {u.id for u in units}, force=force)
    if removed:
        typer.echo(
            f"--force: {run_dir} takes the new config; removed {removed} units of the old "
            "one that it does not share",
            err=True,
        )


def execute_units(
    run_dir: Path | str,
    units: Iterable[Unit],
    work: WorkFn,
    *,
    json_output: bool = False,
    quiet: bool = False,
    executor: Executor | str = "auto",
    ray_address: str | None = None,
    force: bool = False,
    fresh: bool = False,
    **options: Any,
) -> RunSummary:
    """Run units with progress on stderr and print the outcome; returns the summary.

    ``options`` go to :func:`~byzllm.runs.run_units` as they are (``config``, ``concurrency``,
    ``retry_failed``, ``max_failures``, ``description``, ...). With a ``config``, the folder
    is bound to it first (:func:`bind_run_dir`, ``force`` as ``--force``), under the run's
    writer lock and before an ``on_locked`` of ``options``: a rerun with another config never
    pools the two configs' units, and ``--force`` never removes units of a run that another
    process is writing. ``fresh`` (``byzllm demo --fresh``) deletes the folder's results
    store, under that lock as well, before anything runs.

    Progress is a rich bar on a terminal and plain lines otherwise (never on stdout, so
    ``--json`` output stays parseable). The summary goes to stderr as one line, or to
    stdout as JSON with ``json_output``; anything else written to stdout while the units run
    (Ray's driver messages when a node dies) goes to stderr. Ctrl-C or SIGTERM stores every
    finished unit, prints how to resume and exits 130 (a second one while it counts the units
    and prints is dropped). A fatal error (a rejected key, a
    missing model) raises :class:`~byzllm.runs.RunAbortedError`: one line and exit 2 under
    :func:`cli_errors` (with ``json_output`` the summary is printed first, with the error).
    ``executor`` (a name from ``--executor`` is resolved with ``ray_address``; ``auto``
    spreads a large run over worker processes when the config says its work is
    ``cpu_bound``, :attr:`~byzllm.runs.ExperimentConfig.cpu_bound`,
    :func:`~byzllm.runs.executor_by_name`) is passed on to :func:`~byzllm.runs.run_units`.
    """
    import asyncio  # here, not at the top: `byzllm --help` should not pay for it

    from byzllm.runs import RunAbortedError, Store, interrupts_held, run_units

    units = list(units)
    note_run_dir(run_dir, json_output=json_output)  # a --json error or Ctrl-C names the folder
    if options.get("config") is not None:
        _warn_idle_models(options["config"])
    config = options.get("config")
    if config is not None or fresh:
        # Under the run's writer lock: checked before it, --force removed the units of a run
        # another process was still writing, and two configs could pool in one folder. A
        # check that changes nothing also runs first, so that a refused run (a damaged store,
        # another config) leaves the folder as it was, without a lock file. `fresh` empties
        # the folder under the lock too: never a store another process is writing.
        if config is not None and not (force or fresh):
            bind_run_dir(run_dir, config, units)
        then = options.get("on_locked")

        def bind_then() -> None:
            if fresh:
                _discard_store(run_dir)
            if config is not None:
                bind_run_dir(run_dir, config, units, force=force)
            if then is not None:
                then()

        options["on_locked"] = bind_then
    if isinstance(executor, str):
        executor = resolve_executor(executor, ray_address=ray_address, config=config, units=units)

    async def main() -> RunSummary:
        task = asyncio.current_task()
        loop = asyncio.get_running_loop()
        installed = False
        # The loop's removal below leaves SIGTERM at its default: put back what was there.
        previous = signal.getsignal(signal.SIGTERM)
        if task is not None:
            # SIGTERM (a scheduler, `kill`) stops as cleanly as Ctrl-C does.
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(signal.SIGTERM, task.cancel)
                installed = True
        try:
            progress = False if quiet else None
            return await run_units(
                run_dir, units, work, progress=progress, executor=executor, **options
            )
        finally:
            if installed:
                loop.remove_signal_handler(signal.SIGTERM)
                if previous is not None:
                    with contextlib.suppress(ValueError):  # (not the main thread)
                        signal.signal(signal.SIGTERM, previous)

    try:
        # Stdout carries the command's result alone: whatever else writes to it while the
        # units run (Ray's driver relays a dying node's messages there, a library's print)
        # goes to stderr, so --json output stays one JSON document.
        with contextlib.redirect_stdout(sys.stderr):
            summary = _run_coroutine(main)
    except RunAbortedError as err:
        # A fatal error stopped the run: its one line comes from cli_errors (exit 2);
        # --json still gets the summary, with the error and the exit code as a failed
        # command's document has them.
        if json_output:
            ending = {"error": _one_line(str(err)), "exit_code": err.exit_code}
            print_json({**err.summary.to_dict(), **ending})
        raise
    except (KeyboardInterrupt, asyncio.CancelledError):
        # A second Ctrl-C or SIGTERM here cut the resume line and the --json counts short
        # (a bare "interrupted" instead): held, and dropped, since the command is ending with
        # exit 130 already, as they ask.
        with interrupts_held(deliver=False):
            counts = {"done": 0, "failed": 0, "pending": 0}
            with contextlib.suppress(ByzllmError), Store.open(run_dir) as store:
                counts = store.counts()
            total = sum(counts.values())
            message = (
                f"interrupted: {counts['done']} of {total} units done, {counts['failed']} "
                "failed; rerun the same command to resume"
            )
            typer.echo(message, err=True)
            # --json (this stage's or its command's): the run's counts as one JSON document.
            _print_failure("interrupted", EXIT_INTERRUPTED, message, counts)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    if json_output:
        print_json(summary.to_dict())
    else:
        typer.echo(_summary_line(summary), err=True)
    return summary


def resolve_executor(
    name: str, *, ray_address: str | None, config: Any, units: Sequence[Unit]
) -> Executor:
    """The executor ``--executor name`` gives a run of ``units`` under ``config``
    (:func:`~byzllm.runs.executor_by_name`; ``auto`` reads the config's
    :attr:`~byzllm.runs.ExperimentConfig.cpu_bound`): what :func:`execute_units` resolves a
    name to, for a command that also needs to know where its units ran."""
    from byzllm.runs import ExperimentConfig, executor_by_name

    return executor_by_name(
        name,
        ray_address=ray_address,
        cpu_bound=isinstance(config, ExperimentConfig) and config.cpu_bound,
        units=len(units),
    )


def preload(*modules: str) -> None:
    """Import ``modules`` in a background thread: a command that draws after its units have
    run loads the drawing library while worker processes run them (this process mostly
    waits then), not after; from :func:`~byzllm.runs.run_units`'s ``on_started``, not before
    the run, whose registration of units the import held up. A module that fails to import
    is left for its user to report."""
    import importlib

    def load() -> None:
        for name in modules:
            with contextlib.suppress(Exception):
                importlib.import_module(name)

    threading.Thread(target=load, name="byzllm-preload", daemon=True).start()


def _discard_store(run_dir: Path | str) -> None:
    """Delete the results store of ``run_dir`` (its database and SQLite's side files), and
    nothing else of the folder."""
    from byzllm.runs import STORE_FILENAME

    for suffix in ("", "-wal", "-shm"):
        (Path(run_dir) / f"{STORE_FILENAME}{suffix}").unlink(missing_ok=True)


def _warn_idle_models(config: BaseModel) -> None:
    """A ``warning: ...`` line on stderr for each config section that names a model but runs
    on simulated agents (:func:`byzllm.runs._model_config.idle_models`). A warning, not a
    refusal: a config keeps its model keys while ``agents: simulated`` switches them off."""
    from byzllm.runs._model_config import idle_models

    for line in idle_models(config):
        typer.echo(f"warning: {line}", err=True)


# --- the run option families, one definition for every area ----------------------------------


@dataclass(frozen=True)
class RunOptions:
    """What every command that runs units is told, as one value (see :func:`run_options`):
    the config (``CONFIG``, ``--set``), the model (``--model``, ``--base-url``), where the
    results go (``--run-dir``, ``--force``), how units run (``--concurrency``,
    ``--retry-failed``, ``--max-failures``, ``--executor``, ``--ray-address``) and the output
    (``--json``)."""

    config: Path | None = None
    run_dir: Path | None = None
    force: bool = False
    set_: tuple[str, ...] = ()
    model: str | None = None
    base_url: str | None = None
    concurrency: int = 16
    retry_failed: bool = False
    max_failures: int | None = None
    executor: str = "auto"
    ray_address: str | None = None
    json_output: bool = False
    wait: bool = False

    def load(self, model: type[ConfigT], model_sets: Sequence[str] | None = None) -> ConfigT:
        """The validated config: the file, then ``--set``, then ``model_sets`` (default: every
        player on ``--model`` / ``--base-url``, :func:`model_flags`)."""
        sets = model_flags(self.model, self.base_url) if model_sets is None else model_sets
        return load_cli_config(self.config, model, [*self.set_, *sets])

    def run(
        self,
        area: str,
        config_class: type[ConfigT],
        units_of: Callable[[ConfigT], Iterable[Unit]],
        work: WorkFn,
        stage: str | None = None,
    ) -> NoReturn:
        """Load the config (:meth:`load`), expand its units and run them (:meth:`execute`)."""
        config = self.load(config_class)
        self.execute(area, units_of(config), work, config=config, stage=stage)

    def target(self, area: str, stage: str | None = None) -> Path:
        """``--run-dir``, else ``runs/<config stem or area>`` (``-<stage>`` in pipelines)."""
        if stage is not None:
            return stage_run_dir(self.run_dir, self.config, area, stage)
        return self.run_dir or default_run_dir(self.config, area)

    def execute(
        self,
        area: str,
        units: Iterable[Unit],
        work: WorkFn,
        *,
        config: BaseModel,
        stage: str | None = None,
    ) -> NoReturn:
        """Run the units into :meth:`target` (:func:`execute_units`) and exit with the run's
        code; progress says ``<area> <stage>``.

        The folder is bound to its config (:func:`byzllm.runs.check_config`): the same
        config resumes, another one stops here with one line naming the differing keys
        (exit 2) unless ``--force``."""
        how = {name: getattr(self, name) for name in _EXECUTION}
        description = f"{area} {stage}" if stage else area
        summary = execute_units(
            self.target(area, stage),
            units,
            work,
            config=config,
            description=description,
            force=self.force,
            **how,
        )
        raise typer.Exit(summary_exit_code(summary))


#: The :class:`RunOptions` that say how units run, passed on to :func:`execute_units`.
_EXECUTION = (
    "concurrency",
    "retry_failed",
    "max_failures",
    "json_output",
    "executor",
    "ray_address",
    "wait",
)


#: The command-line parameters behind each :class:`RunOptions` field.
_RUN_PARAMETERS: dict[str, Any] = {
    "config": ConfigArgument,
    "run_dir": RunDirOption,
    "force": ForceOption,
    "set_": SetOption,
    "model": ModelOption,
    "base_url": BaseUrlOption,
    "concurrency": ConcurrencyOption,
    "retry_failed": RetryFailedOption,
    "max_failures": MaxFailuresOption,
    "executor": ExecutorOption,
    "ray_address": RayAddressOption,
    "wait": WaitOption,
    "json_output": JsonOption,
}


def run_options(
    *, concurrency: int = 16, stage: str | None = None, model: Any = ModelOption
) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Give a command the run option families: its parameter ``opts: RunOptions`` becomes
    ``CONFIG --run-dir --force --set --model --base-url -j --retry-failed --max-failures
    --executor --ray-address --json`` on the command line (after the command's own
    options), and the command receives them as one :class:`RunOptions`. Put it under
    ``@app.command()``; ``stage`` is the pipeline stage its runs go to (as in
    :meth:`RunOptions.execute`), for the default ``--run-dir`` its help shows; ``model`` is
    its ``--model`` (:data:`ConsensusModelOption` for a command that also takes
    ``--weak-model``)."""

    def decorate(command: Callable[..., None]) -> Callable[..., None]:
        area = command.__module__.rsplit(".", 1)[-1]
        run_dir = Annotated[Path | None, run_dir_option(area, stage)]
        parameters = {**_RUN_PARAMETERS, "run_dir": run_dir, "model": model}
        defaults = RunOptions(concurrency=concurrency)
        return _option_family("opts", parameters, defaults)(command)

    return decorate


@dataclass(frozen=True)
class TrainOptions:
    """``train``'s options (monitors, CodeGen), as one value (see :func:`train_options`): the
    collect run it reads (``RUN_DIR``), where the monitors go, the ridge, the degrees."""

    run_dir: Path = Path()
    out: Path | None = None
    alpha: float = 1.0
    max_degree: int = 5

    @property
    def degrees(self) -> range:
        """The polynomial degrees searched: 1..``--max-degree``."""
        return range(1, self.max_degree + 1)

    def target(self) -> Path:
        """``--out``, else ``RUN_DIR/monitors.json``."""
        return self.out or self.run_dir / "monitors.json"


#: The turn records each collect pipeline stores, with its command area and what it plays.
_COLLECTED_TURNS = {
    "monitor_turn": ("monitor", "WhoDunit or GovSim"),
    "codegen_turn": ("codegen", "CodeGen"),
}


def require_collected_turns(run_dir: Path, kinds: Mapping[str, int], kind: str) -> None:
    """Refuse a ``train`` RUN_DIR that holds no ``kind`` turn records (``Store.kinds()``) in
    one line saying what it holds instead: the other pipeline's turns come with the command
    that trains them, anything else with the collect command to run first. Without it,
    `monitor train` on a `codegen collect` run (and the reverse) said to run `byzllm monitor
    collect`, which the user had just done."""
    if kinds.get(kind):
        return
    area, plays = _COLLECTED_TURNS[kind]
    for other, (other_area, other_plays) in _COLLECTED_TURNS.items():
        if other != kind and kinds.get(other):
            raise InputError(
                f"{run_dir} holds {other_plays} turns, not {plays} ones: train its monitors "
                f"with `byzllm {other_area} train {run_dir}`"
            )
    held = ", ".join(kinds) or "nothing"
    raise InputError(
        f"{run_dir} holds no collected {plays} turns (it has: {held}): "
        f"run `byzllm {area} collect` first"
    )


_TRAIN_PARAMETERS: dict[str, Any] = {
    "run_dir": RunDirArgument,
    "out": MonitorsOutOption,
    "alpha": AlphaOption,
    "max_degree": MaxDegreeOption,
}


def train_options() -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Give a ``train`` command ``RUN_DIR --out --alpha --max-degree`` as one parameter
    ``training: TrainOptions`` (as :func:`run_options` does for runs)."""
    return _option_family("training", _TRAIN_PARAMETERS, TrainOptions())


def _option_family(
    parameter: str, options: Mapping[str, Any], defaults: Any
) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """The decorator behind :func:`run_options` and :func:`train_options`: the command's
    ``parameter`` becomes the ``options`` (name -> annotated type, default from
    ``defaults``), the command gets them back as one value of ``defaults``' class, and its
    errors become one line and an exit code (:func:`cli_errors`)."""

    def decorate(command: Callable[..., None]) -> Callable[..., None]:
        signature = inspect.signature(command, eval_str=True)
        own = [
            p.replace(kind=inspect.Parameter.KEYWORD_ONLY)
            for p in signature.parameters.values()
            if p.name != parameter
        ]
        added = [
            inspect.Parameter(
                name,
                inspect.Parameter.KEYWORD_ONLY,
                annotation=annotation,
                default=None if name == "set_" else getattr(defaults, name),
            )
            for name, annotation in options.items()
        ]

        @functools.wraps(command)
        def wrapper(**kwargs: Any) -> None:
            values = {name: kwargs.pop(name) for name in options}
            if "set_" in values:
                values["set_"] = tuple(values["set_"] or ())
            with cli_errors():
                command(**{parameter: type(defaults)(**values)}, **kwargs)

        wrapper.__signature__ = inspect.Signature([*own, *added])  # type: ignore[attr-defined]
        return wrapper

    return decorate


def _run_coroutine(factory: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """``asyncio.run`` — on a private thread when this thread already runs a loop (a
    notebook, an async test invoking the CLI), where ``asyncio.run`` would refuse."""
    import asyncio

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(factory())
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="byzllm-run") as pool:
        return pool.submit(lambda: asyncio.run(factory())).result()


def _summary_line(summary: RunSummary) -> str:
    """One line: what this invocation did and exactly what remains (done, failed with how
    to rerun them, never run), and the run's model requests when there were any."""
    parts = [f"{summary.done} done"]
    if summary.skipped:
        parts.append(f"{summary.skipped} already done")
    if summary.failed:
        parts.append(f"{summary.failed} failed")
    if summary.failed_before:
        parts.append(f"{summary.failed_before} failed earlier (not rerun)")
    if summary.never_run:
        parts.append(f"{summary.never_run} never run")
    line = f"{summary.run_dir}: {summary.status}: " + ", ".join(parts)
    line += f" of {summary.total} units in {summary.seconds:.1f}s"
    requests = _requests_text(summary.requests)
    if requests:
        line += f"; {requests}"
    hints = []
    if summary.failed or summary.failed_before:
        hints.append(
            "rerun with --retry-failed to run the failed units again "
            "(`byzllm runs show` lists their errors)"
        )
    if summary.never_run:
        hints.append("rerun the same command to run the rest")
    if hints:
        line += "; " + "; ".join(hints)
    return line


def _requests_text(counts: Mapping[str, Any]) -> str:
    """``requests: 140 sent, 12 retries, errors: http_503 5, timeout 7`` ("" for none)."""
    sent = int(counts.get("requests", 0) or 0)
    if not sent:
        return ""
    text = f"requests: {sent} sent, {int(counts.get('retries', 0) or 0)} retries"
    errors = counts.get("errors") or {}
    if errors:
        text += ", errors: " + ", ".join(f"{kind} {n}" for kind, n in errors.items())
    return text


def summary_exit_code(summary: RunSummary) -> int:
    """0 when every unit of the grid is done, 1 otherwise (failures, stopped early)."""
    return 0 if summary.complete else 1


# --- output --------------------------------------------------------------------------------


def _jsonable(value: Any) -> Any:
    from pydantic_core import to_jsonable_python

    return _finite(to_jsonable_python(value, fallback=str))


def _finite(value: Any) -> Any:
    """``value`` with every NaN and infinity as ``None``: JSON has no such numbers, and a bare
    ``NaN`` (what Python writes by default) is refused by strict parsers and ``JSON.parse``.
    Models that keep their NaN for the store (records) are converted here too."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def plural(n: int, word: str) -> str:
    """``1 run``, ``3 runs``: a count and its noun (an ``s`` unless the count is one)."""
    return f"{n} {word}{'' if n == 1 else 's'}"


#: Width of tables printed into a pipe or a file: wide enough that rich never shortens a cell.
PIPED_WIDTH = 10_000


def console(*, stderr: bool = False, highlight: bool = True) -> Console:
    """The console every table and report line is printed on.

    Tables fit instead of being cut: in a terminal each column wraps its cells (rich's
    ``fold``) rather than ending them with "…"; into a pipe or a file (not a terminal, no
    ``COLUMNS`` set) the width is unlimited, so every cell is whole.
    """
    from rich.console import Console
    from rich.table import Table

    class _FittingConsole(Console):
        def print(self, *objects: Any, **kwargs: Any) -> None:
            for item in objects:
                if isinstance(item, Table):
                    for column in item.columns:
                        column.overflow = "fold"
            super().print(*objects, **kwargs)

    stream = sys.stderr if stderr else sys.stdout
    piped = not stream.isatty() and "COLUMNS" not in os.environ
    return _FittingConsole(stderr=stderr, highlight=highlight, width=PIPED_WIDTH if piped else None)


def print_json(obj: Any) -> None:
    """Print ``obj`` as indented JSON on stdout (pydantic models, paths, numpy scalars ok);
    ``\\u`` escapes where stdout cannot encode every character (a Latin-1 or ASCII terminal:
    the replacement characters tables get there would corrupt the data)."""
    from ._streams import speaks_utf8

    escaped = not speaks_utf8(sys.stdout)
    text = json.dumps(_jsonable(obj), indent=2, ensure_ascii=escaped, allow_nan=False)
    sys.stdout.write(text + "\n")
    sys.stdout.flush()
    note_json_written()


def emit_rows(
    rows: Sequence[Mapping[str, Any]],
    *,
    json_output: bool,
    title: str | None = None,
    columns: Sequence[str] | None = None,
    simulated: bool = False,
    digits: int = 3,
    markdown: bool = False,
    extra: Mapping[str, Any] | None = None,
) -> None:
    """Print rows on stdout: a rich table, a markdown table, or JSON.

    JSON is ``{"rows": [...], "simulated": bool, "title": ..., **extra}``; simulated results
    are labelled in every form.
    """
    if json_output:
        payload: dict[str, Any] = {"rows": list(rows), "simulated": simulated}
        if title:
            payload["title"] = title
        payload.update(extra or {})
        print_json(payload)
        return
    from byzllm.runs.reports import markdown_table, rich_table, simulated_title

    if markdown:
        shown = simulated_title(title, simulated)
        heading = f"### {shown}\n\n" if shown else ""
        sys.stdout.write(
            heading + markdown_table(rows, columns, simulated=simulated, digits=digits)
        )
        return

    table = rich_table(rows, columns, title=title, simulated=simulated, digits=digits)
    console().print(table)


def unfinished_units(
    store: Any, by: str | Callable[[Mapping[str, Any]], str]
) -> dict[str, dict[str, int]]:
    """A run folder's units that failed or never ran, counted per value of their payload's
    ``by`` (``{"monitor-1": {"failed": 9, "pending": 0}}`` by ``"condition"``), or per name
    ``by(payload)`` gives; empty when every unit is done."""
    found: dict[str, dict[str, int]] = {}
    for status in ("failed", "pending"):
        for unit in store.units(status):
            payload = unit["payload"]
            name = by(payload) if callable(by) else str(payload.get(by, "?"))
            counts = found.setdefault(name, {"failed": 0, "pending": 0})
            counts[status] += 1
    return found


def unfinished_warning(
    unfinished: Mapping[str, Mapping[str, int]], *, units: str, left_out: str, rerun: str
) -> str:
    """One line: what a table computed from a run folder leaves out (:func:`unfinished_units`).
    Units that failed are not a random sample of the games (a longer game times out more
    often), so ``left_out`` says what the results are over and ``rerun`` how to complete
    them."""
    failed = sum(c["failed"] for c in unfinished.values())
    pending = sum(c["pending"] for c in unfinished.values())
    parts = ", ".join(
        f"{name}: " + ", ".join(f"{n} {status}" for status, n in counts.items() if n)
        for name, counts in sorted(unfinished.items())
    )
    return (
        f"warning: {failed} {units} unit(s) failed and {pending} did not run ({parts}); "
        f"{left_out}, and the ones that failed need not be like them: {rerun}"
    )


def collect_unfinished_warning(unfinished: dict[str, dict[str, int]], area: str) -> str:
    """The warning of a ``train`` command whose collect run did not finish: the monitors are
    fitted, and their thresholds and gains chosen, on the games that did (``area``:
    ``monitor`` or ``codegen``, whose collect command completes them)."""
    return unfinished_warning(
        unfinished,
        units="collect",
        left_out="the monitors were fitted, and their thresholds and validation gains chosen, "
        "on the games that finished",
        rerun=f"rerun `byzllm {area} collect` with --retry-failed, then train again",
    )


#: The title of the table every ``train`` command prints under its selected monitors: each
#: role's ablation monitors, the turn-count-only control among them, with their validation
#: gains, so that no monitor's gain is shown without what the turn count alone gains.
ABLATIONS_TITLE = "Selected and ablation monitors (Table 3; rank and gain on validation)"


def show_parse_health(health: ParseHealth | None, *, json_output: bool) -> None:
    """Print a run's parse health (:mod:`byzllm.experiments.parse_health`).

    Unless ``json_output`` (the JSON carries ``health.to_json()`` instead), a small table on
    stdout — stage, calls, fallbacks, rate — or one line saying why there is none
    (``n/a (simulated)``). In both modes, exactly one ``warning: ...`` line on stderr per stage
    that fell back on more than 20% of its replies. ``None`` (no unit records) prints nothing.
    """
    _show_health(health, "Parse health", json_output=json_output)


def show_request_health(health: RequestHealth | None, *, json_output: bool) -> None:
    """Print a run's model requests (:mod:`byzllm.experiments.request_health`).

    As :func:`show_parse_health`: unless ``json_output`` (the JSON carries
    ``health.to_json()`` under ``request_health`` instead), a one-row table on stdout --
    requests, cached, retries, timeouts, failed calls, errors by kind -- or one line saying
    why there is none (``n/a (simulated)``); in both modes one ``warning: ...`` line on
    stderr when more than 20% of the requests were retried. ``None`` prints nothing.
    """
    _show_health(health, "Model requests", json_output=json_output)


def _show_health(
    health: ParseHealth | RequestHealth | None, title: str, *, json_output: bool
) -> None:
    """The one way both health summaries print: a note or a table, then stderr warnings."""
    if health is None:
        return
    if not json_output:
        from byzllm.runs.reports import rich_table

        out = console()
        if health.note is not None:
            out.print(health.note, highlight=False, markup=False)
        else:
            out.print(rich_table(health.rows(), title=title))
    for line in health.warnings():
        typer.echo(line, err=True)
