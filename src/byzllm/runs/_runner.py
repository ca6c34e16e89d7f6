"""The runner: execute units concurrently, store each result the moment it is done, resume.

Flow of one invocation (:func:`run_units`):

1. register the units in the store; units already ``done`` are skipped (and ``failed`` ones
   too, unless ``retry_failed``);
2. ``concurrency`` worker coroutines take units in grid order and hand them to the executor;
3. each outcome (records + ``done``, or the error + ``failed``) goes to a writer thread that
   commits finished units in small groups: whatever is waiting is committed together, at
   most every ``commit_interval_s`` (a few ms). A unit's records and status always share one
   transaction. At most :data:`MAX_UNCOMMITTED` finished units wait for it: a worker with
   one more waits until the writer has committed some (records held in memory stay bounded
   when units finish faster than the store writes them);
4. a unit counts as finished (progress, summary) only once its transaction has committed.

Fatal errors (``fatal = True``: a rejected API key, a model the server does not serve, a bad
config) stop the whole run at their first occurrence: the units in flight are cancelled
and left not done (never stored as failed), and :class:`RunAbortedError` says why and what
is left. Every other error fails its own unit and the run goes on. Before the first unit,
one tiny request goes to each model endpoint the config calls
(:func:`~byzllm.runs._model_config.check_endpoints`): no server listening, a rejected key or
an unknown model stops the run there, in well under a second, instead of after every unit's
retries; it comes before the writer lock and the store, so a refused run leaves the folder as
it was (nothing created, no config bound, no invocation recorded) and the corrected command
runs into it without ``--force``.

The run's model requests are counted (:func:`byzllm.llm.track_requests`) for the progress
line, which comes at least every ``interval_s`` whether or not units finish, and for the
summary.

Durability: a unit reported done is in the database. The store runs in WAL mode with
``synchronous=NORMAL``: a committed unit survives the process being killed at any moment
(SIGKILL, Ctrl-C, an exception); after an operating-system crash or power loss the last few
milliseconds of commits may be lost (never corrupted), and those units simply rerun.
Pass ``synchronous="FULL"`` to fsync every group as well.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import inspect
import queue
import signal
import sys
import threading
import time
from collections.abc import (
    Awaitable,
    Callable,
    Collection,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel

from byzllm.errors import ByzllmError, InputError

from ._executor import Executor, LocalExecutor, WorkFn
from ._lock import RunBusyError, WriterLock
from ._progress import LiveStatus, ProgressReporter, make_progress
from ._provenance import byzllm_version, git_commit
from ._records import Record, WithDerived, coerce_records
from ._store import Store, StoreError, UnitResult, format_error, run_store_path
from ._units import Unit

if TYPE_CHECKING:
    from byzllm.llm import RequestCounts

__all__ = [
    "RunAbortedError",
    "RunBusyError",
    "RunStatus",
    "RunSummary",
    "UnitFailure",
    "format_error",
    "is_fatal",
    "run_in_memory",
    "run_units",
]

RunStatus = Literal["finished", "stopped", "interrupted", "aborted"]

#: Units the writer commits together at most.
_MAX_GROUP = 1000

#: Finished units that may wait for the writer (submitted, not yet committed). Twice a group:
#: while the writer commits one, the next can gather, so the bound only bites when units
#: finish faster than the store writes them. Without it a fast run held most of its records
#: in memory (8,000 units of 100 kB: 880 MB).
MAX_UNCOMMITTED = 2 * _MAX_GROUP


@dataclass(frozen=True, slots=True)
class UnitFailure:
    """A unit that failed in this invocation."""

    unit_id: str
    label: str
    error: str


@dataclass(slots=True)
class RunSummary:
    """What one invocation of :func:`run_units` did.

    ``total`` units in the grid = ``skipped`` (already done before) + ``done`` + ``failed``
    (this invocation) + ``not_run``; ``not_run`` = ``failed_before`` (failed in an earlier
    invocation, left alone without ``retry_failed``) + ``never_run`` (not reached: new, or
    the run stopped). ``requests`` counts the model requests the units made in this process
    (:meth:`byzllm.llm.RequestCounts.to_dict`; zeros with worker processes or Ray).
    """

    run_dir: Path
    run_id: int
    status: RunStatus
    total: int
    skipped: int
    done: int
    failed: int
    not_run: int
    seconds: float
    failures: list[UnitFailure] = field(default_factory=list)
    failed_before: int = 0
    requests: dict[str, Any] = field(default_factory=dict)

    @property
    def never_run(self) -> int:
        """Units neither done nor failed: not reached yet (new, or the run stopped)."""
        return self.not_run - self.failed_before

    @property
    def complete(self) -> bool:
        """Every unit of the grid is done (now or before)."""
        return self.skipped + self.done == self.total

    @property
    def units_per_s(self) -> float:
        """Units finished (done or failed) per second in this invocation."""
        return (self.done + self.failed) / self.seconds if self.seconds > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (for ``--json`` output)."""
        return {
            "run_dir": str(self.run_dir),
            "run_id": self.run_id,
            "status": self.status,
            "complete": self.complete,
            "total": self.total,
            "skipped": self.skipped,
            "done": self.done,
            "failed": self.failed,
            "not_run": self.not_run,
            "failed_before": self.failed_before,
            "never_run": self.never_run,
            "seconds": round(self.seconds, 3),
            "units_per_s": round(self.units_per_s, 1),
            "failures": [
                {"unit_id": f.unit_id, "label": f.label, "error": f.error} for f in self.failures
            ],
            "requests": self.requests,
        }


def is_fatal(err: BaseException) -> bool:
    """Whether ``err`` stops a whole run (its class says ``fatal = True``; see the module)."""
    return getattr(err, "fatal", False) is True


class RunAbortedError(ByzllmError):
    """A fatal error stopped the run at its first occurrence.

    ``cause`` is that error (a :class:`~byzllm.llm.ModelAuthError`, a
    :class:`~byzllm.llm.ModelNotFoundError`, a :class:`~byzllm.errors.ConfigError` ...),
    ``summary`` what the invocation did before. The message is one line: the cause (which
    names its fix), then what is done and what is left; the exit code is the cause's.
    Units in flight were cancelled and stay not done: rerunning the same command after the
    fix runs them.
    """

    fatal = True

    def __init__(self, cause: BaseException, summary: RunSummary, *, checked: bool = False) -> None:
        self.cause = cause
        self.summary = summary
        self.checked = checked
        self.exit_code = int(getattr(cause, "exit_code", 1))
        finished = summary.skipped + summary.done
        left = summary.total - finished
        reason = str(cause) if isinstance(cause, ByzllmError) else format_error(cause)
        reason = " ".join(reason.split()) or type(cause).__name__
        failed = summary.failed + summary.failed_before
        failed_text = f", {failed} failed" if failed else ""
        stopped = (
            "Found before the first unit started"
            if checked
            else "Run stopped at the first such error"
        )
        super().__init__(
            f"{reason.rstrip('.')}. {stopped}: {finished} of "
            f"{summary.total} units done{failed_text}, {left - failed} not done; fix the "
            "cause and rerun the same command to run them"
        )


class _Collector:
    """The cyclic garbage collector on a schedule while units run: young generations every
    ``young_s``, a full pass every ``full_s``, instead of automatic full passes.

    Finished units' records wait in the writer's queue, so the heap is large while a run goes
    on; the automatic full passes over it took a third of the default attack matrix's CPU
    time (2,700 simulated units: 11.5 s CPU with them, 7.8 s without). Cycles are still
    collected, within ``full_s`` at worst. Nothing changes when the collector was off.
    """

    def __init__(self, young_s: float = 1.0, full_s: float = 30.0) -> None:
        self._young_s, self._full_s = young_s, full_s
        self._task: asyncio.Future[None] | None = None

    def start(self) -> None:
        if gc.isenabled():
            gc.disable()
            self._task = asyncio.ensure_future(self._collect())

    async def _collect(self) -> None:
        last_full = time.monotonic()
        while True:
            await asyncio.sleep(self._young_s)
            if time.monotonic() - last_full >= self._full_s:
                gc.collect()
                last_full = time.monotonic()
            else:
                gc.collect(1)

    async def stop(self) -> None:
        if self._task is None:
            return
        task, self._task = self._task, None
        gc.enable()  # first: whatever happens to this task below, the collector is back on
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


class _Writer:
    """A thread that commits finished units in groups and reports each group back.

    Group commit keeps the store's cost per unit far below one transaction per unit while
    every unit still becomes durable within a few milliseconds of finishing.
    """

    _STOP = object()

    def __init__(
        self,
        store_path: Path,
        run_id: int,
        loop: asyncio.AbstractEventLoop,
        on_committed: Any,
        *,
        commit_interval_s: float,
        max_group: int,
        synchronous: Literal["OFF", "NORMAL", "FULL"],
    ) -> None:
        self._store = Store(
            store_path, create=False, synchronous=synchronous, check_same_thread=False
        )
        self._run_id = run_id
        self._loop = loop
        self._on_committed = on_committed
        self._interval = commit_interval_s
        self._max_group = max_group
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        # Set once no more units will come (all_submitted, close): the wait for more units to
        # share a transaction ends at once (a run whose units had all finished waited out a
        # long commit interval before it could end).
        self._all_submitted = threading.Event()
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._main, name="byzllm-store-writer", daemon=True)
        self._thread.start()

    def submit(self, result: UnitResult) -> None:
        if self.error is not None:
            raise StoreError(f"writing results failed: {self.error}")
        self._queue.put(result)

    def _main(self) -> None:
        stopping = False
        try:
            while not stopping:
                item = self._queue.get()
                if item is self._STOP:
                    break
                group: list[UnitResult] = [item]
                # Let a few more units finish so they share this transaction.
                if self._interval > 0:
                    self._all_submitted.wait(self._interval)
                while len(group) < self._max_group:
                    try:
                        item = self._queue.get_nowait()
                    except queue.Empty:
                        break
                    if item is self._STOP:
                        stopping = True
                        break
                    group.append(item)
                self._store.write_results(group, self._run_id)
                self._notify(group)
        except BaseException as err:  # report on the loop; never die silently
            self.error = err
            self._notify([])
        finally:
            self._store.close()

    def _notify(self, group: list[UnitResult]) -> None:
        # RuntimeError: the loop is closed, nobody is listening any more.
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(self._on_committed, group)

    def all_submitted(self) -> None:
        """No more units will come: commit what is queued without waiting for company."""
        self._all_submitted.set()

    def close(self) -> None:
        """Commit everything submitted so far, then stop (blocks until done)."""
        self._all_submitted.set()
        self._queue.put(self._STOP)
        self._thread.join()


def _config_dump(config: BaseModel | Mapping[str, Any] | None) -> tuple[Any, str | None]:
    if config is None:
        return None, None
    if isinstance(config, BaseModel):
        cls = type(config)
        return config.model_dump(mode="json"), f"{cls.__module__}.{cls.__qualname__}"
    return dict(config), None


def _unique(units: Iterable[Unit]) -> list[Unit]:
    seen: set[str] = set()
    unique = []
    for unit in units:
        if not isinstance(unit, Unit):
            raise InputError(f"run_units expects Unit objects (see make_unit), got {unit!r:.80}")
        if unit.id not in seen:
            seen.add(unit.id)
            unique.append(unit)
    return unique


async def run_units(
    run_dir: str | Path,
    units: Iterable[Unit],
    work: WorkFn,
    *,
    config: BaseModel | Mapping[str, Any] | None = None,
    concurrency: int = 16,
    retry_failed: bool = False,
    max_failures: int | None = None,
    progress: bool | ProgressReporter | None = None,
    executor: Executor | None = None,
    description: str | None = None,
    argv: Sequence[str] | None = None,
    commit_interval_s: float = 0.005,
    synchronous: Literal["OFF", "NORMAL", "FULL"] = "NORMAL",
    wait: bool = False,
    on_locked: Callable[[], object] | None = None,
    on_started: Callable[[], object] | None = None,
) -> RunSummary:
    """Run every unit not yet done, storing each result in ``<run_dir>/results.sqlite``.

    Rerunning with the same units resumes: units already ``done`` are skipped; ``failed``
    ones are rerun only with ``retry_failed=True``. A unit whose work raises is stored as
    failed with ``ExceptionType: message`` and the run goes on, until ``max_failures`` units
    have failed in this invocation (then it stops after the units in flight). A *fatal*
    error (:func:`is_fatal`: a rejected key, a missing model, a bad config) stops the run at
    once instead: the units in flight are cancelled and left not done, and
    :class:`RunAbortedError` is raised (its ``cause`` is the error). Cancelling the task
    (Ctrl-C under ``asyncio.run``) stores every unit already finished and re-raises; only
    the units in flight are lost, and they rerun next time.

    ``work`` is a top-level function of the payload returning records (see
    :mod:`byzllm.runs._executor` for the contract); ``config`` (a pydantic model) is
    stored with the byzllm version and git commit. Duplicate units (same id) run once. A
    ``config`` whose sections call models tells the executor their smallest
    ``max_concurrency`` (:meth:`~byzllm.runs.Executor.limit_requests`), so that worker
    processes keep the whole run within it.

    One process writes to a run folder at a time (:class:`~byzllm.runs._lock.WriterLock`,
    released when this process ends however it ends): while another process runs units into
    ``run_dir``, this raises :class:`RunBusyError` naming it, or with ``wait=True`` waits for
    it to end (saying so once on stderr). A folder that cannot be created or written (a
    read-only disk, a name longer than the file system allows) is one line, exit code 2.
    ``on_locked`` is called once the lock is held, before any unit is registered: where a
    caller checks the folder's recorded config (:func:`~byzllm.runs.check_config`, which
    ``force`` lets remove units), since nothing may be compared or removed while another
    process writes to the folder. ``on_started`` is called once the units are registered and
    the executor has started, as the first units go out: where a caller starts work of its
    own in a thread, which would otherwise hold up the registration (its many small steps
    each wait for the thread's turn with the GIL: an import there took 0.3 s of it).
    """
    # What can refuse the run without its folder is checked before the lock creates it.
    if concurrency < 1:
        raise InputError(f"concurrency must be at least 1, got {concurrency}")
    if max_failures is not None and max_failures < 1:
        raise InputError(f"max_failures must be at least 1 (or None), got {max_failures}")
    if isinstance(config, BaseModel):
        from ._model_config import check_caches

        check_caches(config)  # a damaged response cache stops the run before it starts
    # Here, not at the top: importing byzllm.experiments stays free of the model layer.
    from byzllm.llm import track_requests

    grid = _unique(units)
    run_path = Path(run_dir)
    # A folder whatever its name: `Store("sweep.db")` alone is a store file of that name,
    # which `runs show`, the reports and a resume (all given a folder) never found.
    store_path = run_store_path(run_path)
    executor = executor if executor is not None else LocalExecutor()
    if grid:
        # Worker processes start while this process checks the folder and registers the
        # units (a finished run's rerun, which runs nothing, starts them for nothing).
        executor.warm_up(work)
    started = time.monotonic()
    # Every request of the invocation counts for the run (tasks inherit the tally), the
    # endpoint check's too.
    with track_requests() as run_requests:
        if isinstance(config, BaseModel):
            # Before the lock and the store: a refused model leaves the folder as it was.
            await _check_endpoints_first(
                run_path, grid, config, retry_failed, started, run_requests
            )
        # The writer lock is held for the whole run: from registering the units to the last commit.
        async with WriterLock(store_path, wait=wait, argv=argv, on_wait=_say_waiting):
            if on_locked is not None:
                on_locked()
            config_json, config_class = _config_dump(config)

            # verify: a damaged store stops the run here, one line naming `byzllm runs repair`.
            store = Store(store_path, create=True, synchronous=synchronous, verify=True)
            try:
                statuses = store.register_units(grid)
                run_id = store.begin_run(
                    config=config_json,
                    config_class=config_class,
                    byzllm_version=byzllm_version(),
                    git_commit=git_commit(),
                    argv=list(sys.argv) if argv is None else argv,
                )
            finally:
                store.close()

            todo = [unit for unit in grid if _to_run(statuses[unit.id], retry_failed)]
            skipped = sum(1 for unit in grid if statuses[unit.id] == "done")
            failed_before = len(grid) - skipped - len(todo)
            labels = {unit.id: unit.label for unit in todo}

            reporter = make_progress(progress)
            loop = asyncio.get_running_loop()

            done_count = 0
            failed_count = 0
            failures: list[UnitFailure] = []
            failed_seen = 0  # failures observed by workers (before commit), for max_failures
            in_flight = 0  # units handed to the executor and not yet back
            fatal: BaseException | None = None  # the first fatal error: the run stops
            tasks: list[asyncio.Future[None]] = []
            stop = asyncio.Event()
            all_committed = loop.create_future()
            submitted = 0
            committed = 0
            finished_submitting = False
            room = asyncio.Event()  # set by each commit: workers waiting for the writer look again

            def on_committed(group: list[UnitResult]) -> None:
                nonlocal done_count, failed_count, committed
                for result in group:
                    if result.status == "done":
                        done_count += 1
                    else:
                        failed_count += 1
                        label = labels.get(result.unit_id, result.unit_id)
                        failures.append(UnitFailure(result.unit_id, label, result.error or ""))
                        reporter.unit_failed(label, result.error or "")
                committed += len(group)
                room.set()
                reporter.update(done_count, failed_count)
                writer_failed = writer.error is not None
                if (writer_failed or (finished_submitting and committed >= submitted)) and not (
                    all_committed.done()
                ):
                    all_committed.set_result(None)
                if writer_failed:
                    stop.set()

            writer = _Writer(
                store.path,
                run_id,
                loop,
                on_committed,
                commit_interval_s=commit_interval_s,
                max_group=_MAX_GROUP,
                synchronous=synchronous,
            )
            pending = iter(todo)

            def abort(err: BaseException) -> None:
                """A fatal error: stop taking units, cancel the ones in flight (left not done)."""
                nonlocal fatal
                if fatal is not None:
                    return
                fatal = err
                stop.set()
                current = asyncio.current_task()
                for task in tasks:
                    if task is not current:
                        task.cancel()

            async def worker() -> None:
                nonlocal failed_seen, submitted, in_flight
                try:
                    for unit in pending:
                        if stop.is_set():
                            return
                        started_at = time.time()
                        in_flight += 1
                        try:
                            records = await executor.run(work, unit)
                        except (Exception, SystemExit) as err:  # (a library's sys.exit: this unit)
                            if is_fatal(err):
                                abort(err)
                                return
                            result = UnitResult(
                                unit.id, "failed", started_at, time.time(), error=format_error(err)
                            )
                            failed_seen += 1
                            if max_failures is not None and failed_seen >= max_failures:
                                stop.set()
                        else:
                            result = UnitResult(
                                unit.id, "done", started_at, time.time(), records=records
                            )
                        finally:
                            in_flight -= 1
                        try:
                            while submitted - committed >= MAX_UNCOMMITTED and writer.error is None:
                                room.clear()
                                await room.wait()
                        finally:
                            # Stopped while waiting too: a finished unit is stored all the same.
                            submitted += 1
                            writer.submit(result)
                        # Work that never suspends (simulated agents: async in form only) would
                        # otherwise run every unit from this one task without giving the loop a
                        # turn: Ctrl-C, SIGTERM and the progress line waited for the whole run.
                        await asyncio.sleep(0)
                except asyncio.CancelledError:
                    if fatal is None:
                        raise
                    # Cancelled by abort(): the unit stays not done.

            def live_status(counts: RequestCounts) -> LiveStatus:
                # Units handed to the executor beyond what it runs at once are waiting (in a
                # worker pool's queue, for a seat), not running.
                at_most = executor.running_at_most()
                return LiveStatus(
                    done=done_count,
                    failed=failed_count,
                    units_in_flight=in_flight if at_most is None else min(in_flight, at_most),
                    requests_in_flight=counts.in_flight,
                    requests=counts.requests,
                    retries=counts.retries,
                    errors=sum(counts.errors.values()),
                    last_error=counts.last_error,
                    oldest_request_s=counts.oldest_in_flight_s(),
                )

            heartbeat = getattr(reporter, "heartbeat", None)
            interval = getattr(reporter, "interval_s", None)
            tick_s = 1.0
            if isinstance(interval, int | float) and interval > 0:
                tick_s = min(tick_s, interval / 4)

            async def ticker(counts: RequestCounts) -> None:
                # The progress line must come even while no unit finishes (requests hanging).
                assert heartbeat is not None
                while True:
                    await asyncio.sleep(tick_s)
                    heartbeat(live_status(counts))

            # What the runs table says if we never reach the end: interrupted, or an error.
            recorded_status = "interrupted"
            status: RunStatus = "interrupted"
            ticking: asyncio.Future[None] | None = None
            collector = _Collector()
            try:
                collector.start()
                reporter.start(description or run_path.name, len(grid), skipped, len(todo))
                if heartbeat is not None and todo:
                    ticking = asyncio.ensure_future(ticker(run_requests))
                if todo:  # nothing to run starts nothing (a Ray cluster took 7-13 s to join)
                    if isinstance(config, BaseModel):
                        from ._model_config import request_limit

                        # An executor with worker processes splits it among them.
                        limit = request_limit(config)
                        if limit is not None:
                            executor.limit_requests(limit)
                    try:
                        await executor.start(concurrency)
                    except BaseException as err:
                        if not isinstance(err, (asyncio.CancelledError, KeyboardInterrupt)):
                            recorded_status = "error"
                        raise
                if on_started is not None:
                    on_started()
                tasks += [
                    asyncio.ensure_future(worker()) for _ in range(min(concurrency, len(todo)))
                ]
                try:
                    await asyncio.gather(*tasks)
                    finished_submitting = True
                    writer.all_submitted()
                    if committed >= submitted and not all_committed.done():
                        all_committed.set_result(None)
                    await all_committed
                except BaseException as err:
                    if not isinstance(err, (asyncio.CancelledError, KeyboardInterrupt)):
                        recorded_status = "error"
                    for task in tasks:
                        task.cancel()
                    # To the end: a unit that finished is handed to the writer as it stops.
                    await _to_the_end(asyncio.gather(*tasks, return_exceptions=True))
                    raise
                status = "stopped" if stop.is_set() else "finished"
                if fatal is not None:
                    status = "aborted"
                recorded_status = status
            finally:

                async def stop_run() -> None:
                    try:
                        await collector.stop()
                        if ticking is not None:
                            ticking.cancel()
                            await asyncio.gather(ticking, return_exceptions=True)
                        # Commit every unit that already finished, even when interrupted.
                        writer.close()
                        await executor.aclose()
                        # Let the last on_committed callbacks run before counting.
                        await asyncio.sleep(0)
                    finally:
                        if heartbeat is not None:
                            heartbeat(live_status(run_requests))
                        reporter.close()
                    closing = Store(store_path, create=False)
                    try:
                        closing.finish_run(
                            run_id,
                            status=recorded_status,
                            total=len(grid),
                            skipped=skipped,
                            done=done_count,
                            failed=failed_count,
                        )
                    finally:
                        closing.close()

                # A second Ctrl-C or SIGTERM while the run stops waits for the stop (a few
                # milliseconds: nothing here waits for a unit still running), then lands:
                # cut short, it left finished units uncommitted and the invocation unrecorded.
                with interrupts_held():
                    cancelled_again = await _to_the_end(stop_run())
                if cancelled_again and sys.exc_info()[1] is None:
                    raise asyncio.CancelledError  # (the run had ended: the cancel still counts)
            if writer.error is not None:
                raise StoreError(f"writing results to {store.path} failed: {writer.error}")
            summary = RunSummary(
                run_dir=run_path,
                run_id=run_id,
                status=status,
                total=len(grid),
                skipped=skipped,
                done=done_count,
                failed=failed_count,
                not_run=len(grid) - skipped - done_count - failed_count,
                seconds=time.monotonic() - started,
                failures=failures,
                failed_before=failed_before,
                requests=run_requests.to_dict(),
            )
            if fatal is not None:
                raise RunAbortedError(fatal, summary) from fatal
            return summary


async def _to_the_end(awaitable: Awaitable[Any]) -> bool:
    """Await ``awaitable`` to its end even when this task is cancelled meanwhile (a second
    SIGTERM, a caller cancelling twice); returns whether it was, for the caller to raise the
    cancel afterwards. What ``awaitable`` raises is raised."""
    future = asyncio.ensure_future(awaitable)
    cancelled = False
    while not future.done():
        try:
            await asyncio.shield(future)
        except asyncio.CancelledError:
            cancelled = cancelled or not future.done()
    if not future.cancelled():
        future.result()
    return cancelled


@contextlib.contextmanager
def interrupts_held(*, deliver: bool = True) -> Iterator[None]:
    """Ctrl-C (SIGINT) and SIGTERM held back while the block runs, and delivered when it ends
    (dropped with ``deliver=False``, where the block ends the command as they would have).

    Under ``asyncio.run`` a second Ctrl-C raises ``KeyboardInterrupt`` wherever the code is,
    and so does SIGTERM under the command line's handler; in the block that stops a run
    (commit what finished, record how the invocation ended) it left finished units
    uncommitted and the invocation recorded as running, shown as ``killed``. Only on the main
    thread (the only one Python delivers signals to), and only over a handler written in
    Python: an ignored signal stays ignored, and an event loop's handler
    (``add_signal_handler``) is a callback that waits for the loop anyway.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []

    def hold(signum: int, frame: object) -> None:
        held.append(signum)

    previous: dict[int, Callable[[int, Any], Any]] = {}
    for number in (signal.SIGINT, signal.SIGTERM):
        handler = signal.getsignal(number)
        if callable(handler):
            previous[number] = handler
            signal.signal(number, hold)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if deliver:
            for signum in held:  # each as it would have landed (asyncio's counts them)
                previous[signum](signum, None)


def _say_waiting(refusal: str) -> None:
    print(f"waiting: {refusal.split('; ')[0]}", file=sys.stderr, flush=True)


async def _check_endpoints_first(
    run_path: Path,
    grid: Sequence[Unit],
    config: BaseModel,
    retry_failed: bool,
    started: float,
    counts: RequestCounts,
) -> None:
    """One request to each model endpoint the config calls
    (:func:`~byzllm.runs._model_config.check_endpoints`) when a unit of ``grid`` is left to
    run; a refusal raises :class:`RunAbortedError` before the lock, the store or the folder
    exist or change, so the corrected command runs into the folder as if nothing happened."""
    from ._model_config import check_endpoints, request_limit

    if request_limit(config) is None:  # no section calls a model: nothing to check
        return
    statuses = _stored_statuses(run_path)
    states = [statuses.get(unit.id, "pending") for unit in grid]
    todo = sum(1 for state in states if _to_run(state, retry_failed))
    if not todo:  # a finished run reruns without its server
        return
    refusal = await check_endpoints(config)
    if refusal is None:
        return
    skipped = states.count("done")
    summary = RunSummary(
        run_dir=run_path,
        run_id=0,  # no invocation was recorded
        status="aborted",
        total=len(grid),
        skipped=skipped,
        done=0,
        failed=0,
        not_run=len(grid) - skipped,
        seconds=time.monotonic() - started,
        failed_before=len(grid) - skipped - todo,
        requests=counts.to_dict(),
    )
    raise RunAbortedError(refusal, summary, checked=True) from refusal


def _to_run(status: str, retry_failed: bool) -> bool:
    """Whether a unit of this stored status runs in this invocation."""
    return status == "pending" or (retry_failed and status == "failed")


def _stored_statuses(run_path: Path) -> dict[str, str]:
    """Each stored unit's status, read without writing (none when there is no store yet)."""
    store_path = run_store_path(run_path)
    if not store_path.is_file():
        return {}
    with Store.open(store_path) as store:
        return {row["id"]: row["status"] for row in store.units()}


async def run_in_memory(
    units: Iterable[Unit],
    work: WorkFn,
    *,
    kinds: Collection[str] | None = None,
    batch: int = 256,
) -> list[dict[str, Any]]:
    """Play ``units`` in this process without a store (tests, notebooks, simulated twins):
    every record (of ``kinds``, default all) as a JSON-ready dict with its ``kind``, in unit
    order.

    ``work`` is what :func:`run_units` takes: sync or ``async def``, returning a record, a list
    of records or ``None``. Units of a batch run concurrently, as on the runner (sync work
    runs on the event loop, one unit after another); nothing resumes, nothing is kept.
    """

    async def play(payload: dict[str, Any]) -> Sequence[Record]:
        # As the executors do: await only what is awaitable, so sync work is accepted too.
        result = work(payload)
        if inspect.isawaitable(result):
            result = await result
        records = coerce_records(result)
        if (
            isinstance(records, WithDerived)
            and kinds is not None
            and records.derived.kind not in kinds
        ):
            return [records.source]  # (its derived records unbuilt)
        return records

    pending = list(units)
    rows: list[dict[str, Any]] = []
    for start in range(0, len(pending), batch):
        chunk = pending[start : start + batch]
        results = await asyncio.gather(*(play(dict(u.payload)) for u in chunk))
        for records in results:
            rows += [
                {"kind": r.kind, **r.model_dump(mode="json")}
                for r in records
                if kinds is None or r.kind in kinds
            ]
    return rows
