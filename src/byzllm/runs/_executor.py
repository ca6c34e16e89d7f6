"""Executors: where a unit's work function actually runs.

The runner only ever calls :meth:`Executor.run` with a top-level work function and a unit,
so the same units can run in this process (:class:`LocalExecutor`), in worker processes
(:class:`ProcessExecutor`) or on a Ray cluster (:class:`RayExecutor`, which ships ``work``
and ``unit.payload`` to a remote task and awaits its result).
The work contract that makes this possible:

* ``work`` is a top-level (importable, picklable) function of one argument, the payload;
* the payload is plain JSON;
* it returns a :class:`~byzllm.runs.Record`, a list of records or ``None`` (records
  are pydantic models, so they pickle); it may be ``async def``;
* it raises to fail; the runner stores ``ExceptionType: message`` as the unit's error (an
  exception that does not survive pickle comes back as a stand-in that reads the same,
  :class:`RemoteUnitError`).

A model endpoint's ``max_concurrency`` is the most requests the whole run sends it at once,
wherever the units run. In this process every model on an endpoint shares one limiter; worker
processes and Ray tasks build their own models, so there the runner tells the executor the
run's smallest limit (:meth:`Executor.limit_requests`) and the executor gives each unit running
at once a *seat*: its process holds that seat's share of each endpoint's limit
(:func:`byzllm.llm.limits_shared`), at least one request, the shares adding up to the limit.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import multiprocessing
import os
import pickle
import signal
import sys
import threading
import traceback
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing.process import BaseProcess
from typing import Any, cast

from byzllm._process import (
    adopt_secrets,
    exit_with_parent,
    secrets_hidden,
    secrets_of,
    usable_cores,
)
from byzllm.errors import ByzllmError, ConfigError

from ._records import PackedRecords, Record, coerce_records, pack_records
from ._units import Unit

__all__ = [
    "AUTO_PROCESS_MIN_UNITS",
    "EXECUTOR_NAMES",
    "Executor",
    "LocalExecutor",
    "ProcessExecutor",
    "RayExecutor",
    "WorkFn",
    "executor_by_name",
    "usable_cores",
]

#: Names accepted by :func:`executor_by_name` (and the CLI's ``--executor``).
EXECUTOR_NAMES = ("auto", "local", "process", "ray")

#: Units a CPU-bound run must be given before ``auto`` starts worker processes (units
#: already done count too: a resumed run is judged as a whole): starting them (a fork server,
#: then each worker's imports) costs about a second of CPU, the work of a few hundred
#: simulated units; below this a run stays in this process.
AUTO_PROCESS_MIN_UNITS = 1000

#: How long joining a Ray cluster may take (``RayExecutor(connect_timeout_s=...)``, or this
#: environment variable) before the run stops with one line.
DEFAULT_CONNECT_TIMEOUT_S = 30.0
CONNECT_TIMEOUT_ENV = "BYZLLM_RAY_CONNECT_TIMEOUT_S"

#: Worker pools that may break in a row (a worker dying each time, no unit finishing in
#: between) before a :class:`ProcessExecutor` run stops: past that the deaths are not one
#: unit's doing (memory exhausted, workers killed from outside) and rebuilding is futile.
MAX_POOL_BREAKS_IN_A_ROW = 5

#: A unit's work: payload in, record(s) out; sync or ``async def``.
WorkFn = Callable[[dict[str, Any]], Any | Awaitable[Any]]


class Executor(ABC):
    """Runs units' work functions. Subclass to run them elsewhere (threads, processes, Ray)."""

    def warm_up(self, work: WorkFn) -> None:  # noqa: B027 - optional hook
        """Told by the runner as soon as it has units of ``work`` to run, before the run's
        store is opened: start, without waiting for it, whatever :meth:`start` would wait
        for, so that it is ready sooner (:class:`ProcessExecutor` starts its fork server with
        ``work``'s module imported). It must not fail the run: :meth:`start` still follows
        and does what was not done."""

    async def start(self, concurrency: int) -> None:  # noqa: B027 - optional hook
        """Prepare resources for up to ``concurrency`` units at once."""

    def limit_requests(self, limit: int) -> None:  # noqa: B027 - optional hook
        """Told by the runner before :meth:`start` when the run's config calls models: the
        smallest ``max_concurrency`` among their endpoints, which bounds the requests the
        whole run sends an endpoint at once. Nothing to do for work in this process, whose
        models share one limiter per endpoint; an executor that runs units in several
        processes keeps their sum within it (see the module's docstring)."""

    @abstractmethod
    async def run(self, work: WorkFn, unit: Unit) -> Sequence[Record] | PackedRecords:
        """Run ``work(unit.payload)`` and return its records (packed for the store, where the
        work ran in another process); raise if the work raised."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release resources; units still running may be abandoned (the run was stopped)."""

    def running_at_most(self) -> int | None:
        """The most units that can be running at this moment, or ``None`` when every unit
        handed to :meth:`run` runs at once. An executor that queues units (for a worker, a
        seat) says so here: the progress line counts the units handed to it as running only
        up to this number, the others are waiting."""
        return None


class LocalExecutor(Executor):
    """Runs work in this process: ``async def`` work on the event loop, sync work in threads.

    Sync work runs in a thread pool sized to the run's concurrency rather than inline: a
    sync function may block (file or network I/O, a subprocess), and blocking the event loop
    would freeze the progress bar, delay the store's commits and make Ctrl-C unresponsive.
    The cost is one thread hop per unit (tens of microseconds). CPU-bound pure-Python work
    does not get faster with threads (the GIL); ``sync_inline=True`` runs it on the loop
    when the hop matters more than responsiveness.
    """

    def __init__(self, *, sync_inline: bool = False) -> None:
        self.sync_inline = sync_inline
        self._pool: ThreadPoolExecutor | None = None
        self._max_workers = 1

    async def start(self, concurrency: int) -> None:
        self._max_workers = max(1, concurrency)

    async def run(self, work: WorkFn, unit: Unit) -> Sequence[Record]:
        if inspect.iscoroutinefunction(work):
            result = await work(unit.payload)
        elif self.sync_inline:
            result = work(unit.payload)
        else:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(
                    max_workers=self._max_workers, thread_name_prefix="byzllm-unit"
                )
            loop = asyncio.get_running_loop()
            result = await loop.run_in_executor(self._pool, work, unit.payload)
        if inspect.isawaitable(result):  # e.g. a sync wrapper returning a coroutine
            result = await result
        return coerce_records(result)

    async def aclose(self) -> None:
        if self._pool is not None:
            # Do not wait: after Ctrl-C, units still running in threads are abandoned.
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None


class RemoteUnitError(Exception):
    """Stands in for an exception of a unit's work that cannot travel back from the worker
    (it does not survive pickle: an ``__init__`` with keyword-only arguments, an attribute
    holding a lock). Sent as it was, it broke the whole process pool, or reached Ray's driver
    as an opaque ``UnserializableException``.

    Each stand-in is of a subclass named like the original (module and name), so the unit's
    stored error reads ``OriginalType: message`` as it would have; it keeps the original's
    formatted traceback (``remote_traceback``) and what the runner reads of an error,
    ``fatal`` and ``exit_code``.
    """

    #: The original exception's traceback, formatted where it was raised.
    remote_traceback: str = ""

    def __reduce__(self) -> tuple[Any, ...]:
        kind = type(self)
        kept = {name: self.__dict__[name] for name in _KEPT_ATTRIBUTES if name in self.__dict__}
        return (
            _stand_in,
            (kind.__module__, kind.__name__, str(self), self.remote_traceback, kept),
        )


#: What the runner reads of a unit's error besides its type and message (:func:`is_fatal`,
#: the exit code of a run it stops).
_KEPT_ATTRIBUTES = ("fatal", "exit_code")

_stand_in_types: dict[tuple[str, str], type[RemoteUnitError]] = {}


def _stand_in(
    module: str, name: str, message: str, remote_traceback: str, kept: dict[str, Any]
) -> RemoteUnitError:
    """A :class:`RemoteUnitError` named ``module.name`` (one subclass per name, made once)."""
    kind = _stand_in_types.get((module, name))
    if kind is None:
        made = type(name, (RemoteUnitError,), {"__module__": module, "__qualname__": name})
        kind = _stand_in_types[(module, name)] = cast(type[RemoteUnitError], made)
    err = kind(message)
    err.remote_traceback = remote_traceback
    for attribute, value in kept.items():
        setattr(err, attribute, value)
    return err


def _portable(err: Exception) -> Exception:
    """``err`` itself if it survives pickle (what carries it back from a worker), else a
    :class:`RemoteUnitError` that reads the same."""
    try:
        pickle.loads(pickle.dumps(err))
    except Exception:
        pass
    else:
        return err
    try:
        message = str(err)
    except Exception:
        message = ""
    try:
        formatted = "".join(traceback.format_exception(err))
    except Exception:
        formatted = ""
    kept = {}
    for attribute in _KEPT_ATTRIBUTES:
        value = getattr(err, attribute, None)
        # Only plain values: the stand-in must pickle whatever the original held.
        if isinstance(value, bool | int | str):
            kept[attribute] = value
    kind = type(err)
    return _stand_in(kind.__module__, kind.__name__, message, formatted, kept)


@contextlib.contextmanager
def _portable_errors() -> Iterator[None]:
    """Raise what the block raises as :func:`_portable` makes it (in a worker, so that the
    exception always reaches the run)."""
    try:
        yield
    except Exception as err:
        portable = _portable(err)
        if portable is err:
            raise
        raise portable from None


#: A unit's seat among the units running at once in other processes, ``(seat, seats)``
#: (:class:`_Seats`); ``None``: no seat (work that calls no model).
Seat = tuple[int, int] | None


def _call_in_process(work: WorkFn, payload: dict[str, Any], seat: Seat = None) -> Any:
    """Run one unit's work inside a worker process (``async def`` work runs on the worker
    thread's unit loop, :func:`_run_on_unit_loop`); its exception comes back as one that
    pickles (:func:`_portable`). With a ``seat``, the process holds that seat's share of
    every model endpoint's limit while the unit runs (:func:`byzllm.llm.limits_shared`)."""
    with _portable_errors(), _seated(seat):
        result = work(payload)
        if inspect.isawaitable(result):
            result = _run_on_unit_loop(result)
        return result


def _seated(seat: Seat) -> contextlib.AbstractContextManager[None]:
    if seat is None:
        return contextlib.nullcontext()
    # Here, not at the top: a worker of work that calls no model never loads the model layer.
    from byzllm.llm import limits_shared

    return limits_shared(*seat)


class _Seats:
    """One seat per unit a run may have running at once in other processes, for work that
    calls models: a unit holds a free seat for as long as it runs (a rerun alone after its
    worker died included), and its process holds the seat's share of each endpoint's limit
    (:func:`byzllm.llm.limit_share`). Seats taken by different units are different seats,
    so the shares in use never add up past the limit."""

    def __init__(self, seats: int) -> None:
        self.seats = seats
        self._free: asyncio.Queue[int] = asyncio.Queue()
        for seat in range(seats):
            self._free.put_nowait(seat)

    @contextlib.asynccontextmanager
    async def taken(self) -> AsyncIterator[Seat]:
        seat = await self._free.get()
        try:
            yield (seat, self.seats)
        finally:
            self._free.put_nowait(seat)


def _note_fewer(running: int, asked: int, what: str, reasons: list[str]) -> None:
    """Say once on stderr that fewer units run at once than were asked for, and why (not an
    error: the run goes on, the other units wait their turn)."""
    print(
        f"note: units run {running} at a time, not {asked} as asked for ({what}): "
        f"{'; '.join(reasons)}; the other units wait for a free one",
        file=sys.stderr,
        flush=True,
    )


def _limit_reason(limit: int) -> str:
    return (
        f"the model endpoint takes {limit} requests at once (max_concurrency) for the whole "
        "run, and each unit running needs one"
    )


_unit_runners = threading.local()


def _run_on_unit_loop(awaitable: Awaitable[Any]) -> Any:
    """``awaitable``'s result, run to completion on this thread's event loop, made once (by an
    :class:`asyncio.Runner`) and kept for the thread's later units.

    Not ``asyncio.run`` per unit: each call made a loop and, on a process's main thread,
    swapped the SIGINT handler in and out, and putting the old handler back formats an error
    message holding the repr of the finished task and of every record it returned: a
    simulated consensus unit took 2.2 ms that way, 1.3 ms on a kept loop (``Runner.run`` does
    the same swap, so units run on its loop directly). What ``asyncio.run`` guarantees per unit
    holds here too: tasks the work left running are cancelled and awaited before the next unit,
    and a loop stopped by an interrupt (``KeyboardInterrupt``, ``SystemExit``) is closed by its
    runner, the next unit getting a fresh one. SIGINT keeps the handler the process has (a
    :class:`ProcessExecutor` worker ignores it: the run stops its units, :func:`_start_worker`).
    """
    runner: asyncio.Runner | None = getattr(_unit_runners, "runner", None)
    if runner is None:
        runner = _unit_runners.runner = asyncio.Runner()
    loop = runner.get_loop()

    async def _await() -> Any:
        return await awaitable

    task = loop.create_task(_await())
    try:
        return loop.run_until_complete(task)
    except (KeyboardInterrupt, SystemExit):
        _unit_runners.runner = None
        runner.close()
        raise
    finally:
        if not loop.is_closed():
            _cancel_leftovers(loop)


def _cancel_leftovers(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel and await the tasks a unit left on ``loop`` (as ``asyncio.run`` does on exit)."""
    pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
    if not pending:
        return
    for task in pending:
        task.cancel()
    loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))


def _packed_in_process(work: WorkFn, payload: dict[str, Any], seat: Seat = None) -> PackedRecords:
    """:func:`_call_in_process`, then the records packed for the store, in the worker."""
    with _portable_errors():
        return pack_records(coerce_records(_call_in_process(work, payload, seat)))


def _packed_batch_in_process(
    work: WorkFn, payloads: list[dict[str, Any]]
) -> list[PackedRecords | BaseException]:
    """:func:`_packed_in_process` for several units one after another, in one worker: each
    unit's packed records, or its exception (as a value: one unit's failure is its own)."""
    results: list[PackedRecords | BaseException] = []
    for payload in payloads:
        try:
            results.append(_packed_in_process(work, payload))
        except (Exception, SystemExit) as err:  # (a library's sys.exit: this unit's, as ever)
            results.append(err)
    return results


def _start_worker(secrets: dict[str, str]) -> None:  # pragma: no cover - in a worker
    """The initializer of every :class:`ProcessExecutor` worker: Ctrl-C left to the run, the
    run's secrets (sent through the worker's start-up pipe, never a file or an argument), and
    exit with the process that started it."""
    # A terminal's Ctrl-C reaches the whole process group, workers included: the run alone
    # stops (what finished is stored, the pool closed). Here it printed tracebacks, came back
    # as a unit's result, and could leave the pool's result queue locked: the run hung at exit.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    adopt_secrets(secrets)
    exit_with_parent()


#: The most units handed to a worker at once (:class:`ProcessExecutor`, work that calls no
#: model).
MAX_BATCH = 8


#: A unit waiting to be handed to a worker, with the future its records come back on.
_Waiting = tuple[WorkFn, Unit, "asyncio.Future[PackedRecords]"]


class _PoolBroke(Exception):
    """A unit's pool broke while the unit was in it (a worker died): it runs again alone."""


def _settle(batch: list[tuple[Any, Any, asyncio.Future[Any]]], error: BaseException) -> None:
    """Every unit of ``batch`` still waiting fails with ``error``."""
    for _, _, waiter in batch:
        if not waiter.done():
            waiter.set_exception(error)


class WorkerDiedError(ByzllmError):
    """A unit's worker process died while running it (out of memory, a crash in native code,
    ``os._exit``), and died again when the unit ran in a worker of its own."""


class WorkerPoolError(ByzllmError):
    """Worker processes keep dying, whatever unit they run: the run stops (the units not done
    stay pending) instead of failing them all one by one."""

    fatal = True


def _is_broken(pool: ProcessPoolExecutor) -> bool:
    """Whether ``pool`` broke (a worker died), rather than a unit's work raising
    ``BrokenProcessPool`` of its own."""
    return bool(getattr(pool, "_broken", True))


def _workers_of(pool: ProcessPoolExecutor) -> list[BaseProcess]:
    """The worker processes ``pool`` started; read them before its ``shutdown``, which
    forgets them (``_processes`` becomes ``None``) while its thread may still wait for them."""
    return list((getattr(pool, "_processes", None) or {}).values())


def _kill_leftovers(workers: list[BaseProcess]) -> None:
    """SIGKILL every one of a broken pool's ``workers`` (:func:`_workers_of`) still alive.
    Python's pool terminates its workers when it breaks, but a worker it starts for a unit
    submitted in the same moment can miss that and wait for work forever; the pool's thread
    then waits for it, and so does this interpreter's exit (the end of a run, or of a test
    session, hung there)."""
    for process in workers:
        with contextlib.suppress(OSError, ValueError, AttributeError):
            if process.is_alive():
                process.kill()


def _end_pool(pool: ProcessPoolExecutor) -> None:
    """Shut ``pool`` down without waiting; a broken one's leftover workers are killed."""
    workers = _workers_of(pool)
    pool.shutdown(wait=False, cancel_futures=True)
    if _is_broken(pool):
        _kill_leftovers(workers)


async def _how_its_worker_died(pool: ProcessPoolExecutor) -> str:
    """How the worker of a broken one-worker ``pool`` ended: ``killed by SIGKILL``, ``exit
    code 3``. Read once the pool's own thread has reaped it (reading it here as well raced
    that thread for the exit status)."""
    processes = _workers_of(pool)
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(10):
            await asyncio.to_thread(pool.shutdown, wait=True)
    _kill_leftovers(processes)
    codes = [process.exitcode for process in processes]
    if len(codes) != 1 or codes[0] is None:
        return "exit status unknown"
    code = codes[0]
    if code >= 0:
        return f"exit code {code}"
    try:
        return f"killed by {signal.Signals(-code).name}"
    except ValueError:
        return f"killed by signal {-code}"


#: The modules the fork server imports when it starts (:func:`_start_servers`): the main
#: module, as multiprocessing's own default, then the modules of the work it was warmed up for.
_server_preload: list[str] = ["__main__"]


def _start_servers(module: str | None = None) -> str:
    """Start the fork server and the resource tracker where they are not running; returns
    the start method workers use (``forkserver``, or ``spawn`` where there is none).

    Both start without API keys, whatever the run: a process's environment block (what
    /proc/<pid>/environ shows) is fixed when it starts, and a worker forked from a
    key-holding server showed the keys there for good. Workers that call models take the
    keys from the pool's initializer instead. Both are started once per process: where one
    already runs, it keeps what it started with, its imported modules included. ``module``
    (a work function's, importable by name: the work contract) is imported by a fork server
    started here, in the background: multiprocessing's server skips a module it cannot
    import, and its workers then import the work as they would have.
    """
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return "spawn"
    from multiprocessing import forkserver, resource_tracker

    if module and module != "__main__" and module not in _server_preload:
        _server_preload.append(module)
        forkserver.set_forkserver_preload(_server_preload)
    with secrets_hidden():
        forkserver.ensure_running()
        resource_tracker.ensure_running()
    return "forkserver"


def warm_workers(module: str) -> None:
    """Start the fork server now, importing ``module`` (a work function's), for a command
    that will likely run its units in worker processes but has work of its own to do first
    (imports, its options, its grid): the server's import then runs beside it on another
    core, where :meth:`ProcessExecutor.warm_up` would start it only once the units are
    ready, and the first units waited for it. Where the run stays in this process after all,
    the server waits idle and ends with it. Nothing on one usable core, where ``auto`` keeps
    units in this process and the import would compete with the command's own."""
    if usable_cores() > 1 and _processes_work():
        _start_servers(module)


def helper_pool() -> ProcessPoolExecutor | None:
    """One worker process for a command's own work beside this process's (a report split
    in two), forked from the fork server (:func:`_start_servers`, started where it is not
    running) as :class:`ProcessExecutor`'s workers are: never a ``fork`` of this process,
    whose threads and open stores a child would inherit mid-state. Without secrets, and it
    exits with this process. ``None`` where there is no fork server: a spawned interpreter
    starts in about what the split saves. Shut it down once its results are in."""
    if _start_servers() != "forkserver":
        return None
    return ProcessPoolExecutor(
        max_workers=1,
        mp_context=multiprocessing.get_context("forkserver"),
        initializer=_start_worker,
        initargs=({},),
    )


class ProcessExecutor(Executor):
    """Runs work in a pool of worker processes: real parallelism for CPU-bound work
    (simulations) that threads cannot give under the GIL.

    This is the work contract at full strength: ``work`` must be importable by its module
    and name in a fresh interpreter (a top-level function of an importable module, not a
    lambda, a closure or a function of ``__main__`` run as a script), and its payload
    travels by pickle. Its records come back packed for the store (:class:`PackedRecords`,
    serialized and compressed in the worker), so this process only writes them and the
    workers share that cost too. Processes start with ``forkserver`` where available (never a
    plain ``fork`` of this multi-threaded process), so each worker imports the work's
    module once.

    Workers never outlive this process: each watches it and exits the moment it is gone, even
    killed by SIGKILL (:func:`byzllm._process.exit_with_parent`); the fork server and
    multiprocessing's resource tracker follow as soon as the last worker has exited. Workers
    ignore Ctrl-C (SIGINT), which a terminal sends to the whole process group: this process
    alone stops the run, and a worker busy with units finishes them (their results are
    dropped, the units rerun next time) before the pool lets it go.

    The fork server, and so every worker, starts without the environment's secret-looking
    variables (API keys, tokens: :func:`byzllm._process.looks_secret`), where this process
    has not started one already. Each worker then takes the secrets it should hold
    (:func:`byzllm._process.adopt_secrets`): this process's own at the start of the run, or
    none with ``keep_secrets=False`` (work that calls no model: ``executor_by_name`` passes
    it for a ``cpu_bound`` config). Taken that way they are in the worker's ``os.environ``
    but not in its ``/proc`` environ, which a server started with the keys would have shown.

    A worker that dies (killed for memory, a crash in native code, ``os._exit``) breaks its
    pool: every unit in it fails with ``BrokenProcessPool``, and so did every unit after. The
    pool is replaced instead, and the units that were in it run again one at a time in a
    worker of their own: one whose worker dies there too is stored failed
    (:class:`WorkerDiedError`, saying how the worker ended), the others finish. Pools that
    keep breaking (:data:`MAX_POOL_BREAKS_IN_A_ROW`, no unit finishing in between; a break
    whose unit then dies alone is that unit's, not counted), or as many units in a row that
    die alone, stop the run with :class:`WorkerPoolError` (fatal): the units not done stay
    pending.

    Work that calls no model is handed to the workers a few units at a time (the units the
    run has waiting together, at most :data:`MAX_BATCH` at once, split among the workers): a
    simulated unit takes a millisecond or two, about what handing one unit over and its
    records back cost this process, so one at a time kept the workers waiting for it. Each
    unit still comes back with its own records or its own error.

    How many workers: ``max_workers``, else one per usable core, at most the run's
    ``concurrency``; for work that calls models, at most the endpoints' request limit too
    (``request_limit``, or what the runner tells :meth:`limit_requests`), and each unit then
    runs on a seat holding its share of that limit (see the module's docstring). Fewer
    workers than asked for because of that limit is said once on stderr, unless ``quiet``
    (``auto``'s choice, where nobody asked for a number); fewer because of the cores is not.
    """

    def __init__(
        self,
        max_workers: int | None = None,
        *,
        keep_secrets: bool = True,
        request_limit: int | None = None,
        quiet: bool = False,
    ) -> None:
        if request_limit is not None and request_limit < 1:
            raise ConfigError(f"request_limit must be at least 1, got {request_limit!r}")
        self.max_workers = max_workers
        self.keep_secrets = keep_secrets
        self.request_limit = request_limit
        self.quiet = quiet
        self._told_limit: int | None = None  # the runner's (limit_requests), for one run
        self._seats: _Seats | None = None
        self._noted = False
        self._pool: ProcessPoolExecutor | None = None
        # Where units that were in a broken pool run again, one at a time.
        self._lone: ProcessPoolExecutor | None = None
        self._lone_turn: asyncio.Lock | None = None
        self._breaks_in_a_row = 0
        self._lone_deaths_in_a_row = 0
        self._workers = 1
        self._context: Any = None
        self._initargs: tuple[dict[str, str]] = ({},)
        # Units waiting to be handed over together (work that calls no model: no seats).
        self._waiting: list[_Waiting] = []

    def warm_up(self, work: WorkFn) -> None:
        """Start the fork server now with ``work``'s module imported in it
        (:func:`_start_servers`), so that every worker forked from it has the module already:
        each worker imported it for itself (0.44 s of CPU for the consensus experiment's),
        while this process went on to open the store."""
        _start_servers(getattr(work, "__module__", None))

    async def start(self, concurrency: int) -> None:
        method = _start_servers()
        context = multiprocessing.get_context(method)
        self._workers = self._size(concurrency)
        limit = self._limit()
        # Seats only for work that calls models: for the rest a unit waits for its worker in
        # the pool's queue, which keeps every worker busy (a seat is taken back only once the
        # result is here, a round trip per unit that simulated units would notice).
        self._seats = None if limit is None else _Seats(min(self._workers, concurrency))
        self._context = context
        self._initargs = (secrets_of(os.environ) if self.keep_secrets else {},)
        self._breaks_in_a_row = 0
        self._lone_turn = asyncio.Lock()
        self._pool = self._new_pool(self._workers)

    def limit_requests(self, limit: int) -> None:
        self._told_limit = limit

    def _limit(self) -> int | None:
        """The smallest request limit known for the run's endpoints, if any."""
        known = [n for n in (self.request_limit, self._told_limit) if n is not None]
        return min(known) if known else None

    def _size(self, concurrency: int) -> int:
        """How many workers: see the class docstring (and the note when fewer than asked)."""
        asked = self.max_workers or concurrency
        workers = asked
        if self.max_workers is None:
            # More processes than cores only adds start-up time and memory for CPU-bound
            # work. Not noted: the documented default, and -j's default is above most cores.
            workers = min(workers, usable_cores())
        limit = self._limit()
        if limit is not None and limit < workers:
            # More workers than requests allowed at once would each still hold one: the
            # endpoint would see more than its limit.
            if not self.quiet and not self._noted:
                self._noted = True
                what = "max_workers" if self.max_workers else "the run's concurrency, -j"
                _note_fewer(limit, asked, what, [_limit_reason(limit)])
            workers = limit
        return max(1, workers)

    def _new_pool(self, workers: int) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(
            max_workers=workers,
            mp_context=self._context,
            initializer=_start_worker,
            initargs=self._initargs,
        )

    async def run(self, work: WorkFn, unit: Unit) -> PackedRecords:
        if self._seats is None:
            return await self._run_batched(work, unit)
        async with self._seats.taken() as seat:
            return await self._run(work, unit, seat)

    async def _run_batched(self, work: WorkFn, unit: Unit) -> PackedRecords:
        """:meth:`_run` for work that calls no model, handed over with the units that wait
        with it (:meth:`_hand_over`, once this loop turn's units have come)."""
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[PackedRecords] = loop.create_future()
        self._waiting.append((work, unit, waiter))
        if len(self._waiting) == 1:
            loop.call_soon(self._hand_over)
        try:
            result = await waiter
        except _PoolBroke:
            # A worker of the pool died while this unit was in it (see _run).
            return await self._run_alone(work, unit, None)
        self._breaks_in_a_row = self._lone_deaths_in_a_row = 0
        return result

    def _hand_over(self) -> None:
        waiting, self._waiting = self._waiting, []
        waiting = [entry for entry in waiting if not entry[2].done()]  # (cancelled meanwhile)
        size = max(1, min(MAX_BATCH, -(-len(waiting) // self._workers)))
        for start in range(0, len(waiting), size):
            batch = waiting[start : start + size]
            by_work: dict[int, list[_Waiting]] = {}
            for entry in batch:
                by_work.setdefault(id(entry[0]), []).append(entry)
            for same_work in by_work.values():
                self._submit_batch(same_work)

    def _submit_batch(self, batch: list[_Waiting]) -> None:
        loop = asyncio.get_running_loop()
        while True:
            pool = self._pool
            try:
                if pool is None:
                    raise RuntimeError("ProcessExecutor.run called before start()")
                future = pool.submit(
                    _packed_batch_in_process, batch[0][0], [unit.payload for _, unit, _ in batch]
                )
            except BrokenProcessPool:
                # Another unit's worker died before these got in: a fresh pool.
                try:
                    self._replace(cast("ProcessPoolExecutor", pool))
                except BaseException as err:
                    _settle(batch, err)
                    return
                continue
            except BaseException as err:
                _settle(batch, err)
                return
            break

        def delivered(done: Any) -> None:
            # RuntimeError: the run's loop is closed (the run ended), nobody is waiting.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._deliver, pool, batch, done)

        future.add_done_callback(delivered)

    def _deliver(
        self,
        pool: ProcessPoolExecutor,
        batch: list[_Waiting],
        done: Any,
    ) -> None:
        if done.cancelled():
            # Still in the queue when its pool was shut down (reading its exception raised in
            # this callback): a broken pool's units run again alone, a closed one's were
            # abandoned (the run stopped; the runner has cancelled them already).
            if _is_broken(pool):
                _settle(batch, _PoolBroke())
            for _, _, waiter in batch:
                waiter.cancel()
            return
        error = done.exception()
        if isinstance(error, BrokenProcessPool) and _is_broken(pool):
            try:
                self._replace(pool)
            except BaseException as err:
                _settle(batch, err)
                return
            _settle(batch, _PoolBroke())
            return
        if error is not None:
            _settle(batch, error)
            return
        for (_, _, waiter), result in zip(batch, done.result(), strict=True):
            if waiter.done():
                continue
            if isinstance(result, BaseException):
                waiter.set_exception(result)
            else:
                waiter.set_result(result)

    async def _run(self, work: WorkFn, unit: Unit, seat: Seat) -> PackedRecords:
        while True:
            pool = self._pool
            if pool is None:
                raise RuntimeError("ProcessExecutor.run called before start()")
            try:
                # Packed in the worker: this process then only writes bytes (PackedRecords).
                future = pool.submit(_packed_in_process, work, unit.payload, seat)
            except BrokenProcessPool:
                # Another unit's worker died before this unit got in: a fresh pool.
                self._replace(pool)
                continue
            try:
                result = await asyncio.wrap_future(future)
            except BrokenProcessPool:
                if not _is_broken(pool):
                    raise  # the work's own
                self._replace(pool)
                break
            self._breaks_in_a_row = self._lone_deaths_in_a_row = 0
            return result
        # A worker of the pool died while this unit was in it: its own or another unit's
        # doing. Alone, a death is surely its own. (On the same seat: the worker alone runs
        # beside the pool's, and the seats keep their sum within the limit.)
        return await self._run_alone(work, unit, seat)

    def running_at_most(self) -> int | None:
        # The pool's workers, and the lone worker where a broken pool's units rerun. More
        # units than that wait in the pool's queue (-j 8 on 2 cores showed "8 running").
        if self._pool is None:
            return None
        return self._workers + (1 if self._lone is not None else 0)

    def _replace(self, broken: ProcessPoolExecutor) -> None:
        """A fresh pool for a broken one (once: the units that were in it all come here)."""
        if broken is not self._pool:
            return
        _end_pool(broken)
        self._count_break()
        self._pool = self._new_pool(self._workers)

    def _count_break(self) -> None:
        self._breaks_in_a_row += 1
        if self._breaks_in_a_row >= MAX_POOL_BREAKS_IN_A_ROW:
            raise WorkerPoolError(
                f"worker processes keep dying: {self._breaks_in_a_row} in a row with no unit "
                "finishing in between (out of memory? killed from outside?)"
            )

    async def _run_alone(self, work: WorkFn, unit: Unit, seat: Seat) -> PackedRecords:
        """Run ``unit`` in a worker of its own (one unit at a time); it fails with
        :class:`WorkerDiedError` when that worker dies too."""
        if self._lone_turn is None:
            raise RuntimeError("ProcessExecutor.run called before start()")
        async with self._lone_turn:
            lone = self._lone
            if lone is None:
                lone = self._lone = self._new_pool(1)
            future = lone.submit(_packed_in_process, work, unit.payload, seat)
            try:
                result = await asyncio.wrap_future(future)
            except BrokenProcessPool:
                if not _is_broken(lone):
                    raise
                self._lone = None
                how = await _how_its_worker_died(lone)
                # Dead alone too: the unit was at fault, so the pool break it caused does not
                # count toward "workers keep dying"; units dying alone one after another do.
                self._breaks_in_a_row = max(0, self._breaks_in_a_row - 1)
                self._lone_deaths_in_a_row += 1
                if self._lone_deaths_in_a_row >= MAX_POOL_BREAKS_IN_A_ROW:
                    raise WorkerPoolError(
                        f"worker processes keep dying: {self._lone_deaths_in_a_row} units in "
                        "a row died alone in a worker of their own, with no unit finishing in "
                        "between (out of memory? killed from outside?)"
                    ) from None
                raise WorkerDiedError(
                    f"the worker process died ({how}) while running this unit"
                ) from None
        self._breaks_in_a_row = self._lone_deaths_in_a_row = 0
        return result

    async def aclose(self) -> None:
        for pool in (self._pool, self._lone):
            if pool is not None:
                _end_pool(pool)
        self._pool = self._lone = None
        self._seats = None
        self._told_limit = None  # the next run's runner says its own


class RayExecutor(Executor):
    """Runs each unit as a Ray task: on a running cluster, or on a local Ray instance.

    The work contract is the one of :class:`ProcessExecutor` (importable top-level work,
    payloads and records that pickle); Ray ships them to its workers, which must be able to
    import byzllm and the work's module. ``address``: a cluster to join (``"auto"``, or
    ``"ray://host:10001"``); ``None`` joins the cluster named by ``RAY_ADDRESS`` if set and
    otherwise starts a local instance, which :meth:`aclose` shuts down again. Each unit asks
    Ray for ``num_cpus`` CPUs, so Ray never runs more units at once than the cluster has room
    for, whatever the run's ``concurrency``. A unit whose work raises fails with the work's
    own exception (not Ray's wrapper), exactly as with the other executors. Joining waits at
    most ``connect_timeout_s`` (default 30 s, or ``$BYZLLM_RAY_CONNECT_TIMEOUT_S``), then the
    run stops with one line (a :class:`~byzllm.errors.ConfigError`, exit 2), as it does when
    Ray refuses to connect (a cluster that asks for token authentication, say).

    For work that calls models (``request_limit``, or what the runner tells
    :meth:`limit_requests`), at most that many units run at once, each on a seat holding its
    share of the limit in the Ray worker that runs it (see the module's docstring); fewer
    than the run's ``concurrency`` is said once on stderr.

    Needs the optional ``ray`` package: ``pip install "byzllm[ray]"``.
    """

    def __init__(
        self,
        address: str | None = None,
        *,
        num_cpus: float = 1.0,
        init_options: dict[str, Any] | None = None,
        connect_timeout_s: float | None = None,
        request_limit: int | None = None,
    ) -> None:
        if not num_cpus > 0:
            raise ConfigError(f"num_cpus must be positive, got {num_cpus!r}")
        if request_limit is not None and request_limit < 1:
            raise ConfigError(f"request_limit must be at least 1, got {request_limit!r}")
        self.request_limit = request_limit
        self._told_limit: int | None = None
        self._seats: _Seats | None = None
        self._noted = False
        if connect_timeout_s is None:
            connect_timeout_s = _env_seconds(CONNECT_TIMEOUT_ENV, DEFAULT_CONNECT_TIMEOUT_S)
        if not connect_timeout_s > 0:
            raise ConfigError(f"connect_timeout_s must be positive, got {connect_timeout_s!r}")
        self.connect_timeout_s = connect_timeout_s
        self.address = address
        self.num_cpus = num_cpus
        self.init_options = dict(init_options or {})
        self._ray: Any = None
        self._remote: Any = None
        self._started_ray = False
        self._in_flight: set[Any] = set()

    async def start(self, concurrency: int) -> None:
        # Read when ray is first imported: Ray's core would otherwise install a failure-signal
        # handler that turns SIGTERM into an abort (exit 134, a stack dump on stderr) instead
        # of the run's clean stop.
        os.environ.setdefault("RAY_DISABLE_FAILURE_SIGNAL_HANDLER", "1")
        try:
            import ray
        except ImportError:
            raise ConfigError(
                "the Ray executor needs the ray package: pip install 'byzllm[ray]'"
            ) from None
        self._ray = ray
        if not ray.is_initialized():
            options = {
                "include_dashboard": False,
                "log_to_driver": False,
                "logging_level": logging.WARNING,
            } | self.init_options
            await self._connect(ray, options)
            self._started_ray = True
        self._remote = ray.remote(num_cpus=self.num_cpus, max_retries=0)(_call_in_process)
        known = [n for n in (self.request_limit, self._told_limit) if n is not None]
        if known:
            # A Ray worker process runs one task at a time: a seat per unit running at once.
            limit = min(known)
            seats = min(concurrency, limit)
            if seats < concurrency and not self._noted:
                self._noted = True
                _note_fewer(seats, concurrency, "the run's concurrency, -j", [_limit_reason(limit)])
            self._seats = _Seats(seats)

    def limit_requests(self, limit: int) -> None:
        self._told_limit = limit

    async def _connect(self, ray: Any, options: dict[str, Any]) -> None:
        """``ray.init`` within ``connect_timeout_s``, on a daemon thread.

        ray.init blocks for seconds while it starts or joins a cluster, and forever when the
        address answers nothing; on a daemon thread the event loop stays free (Ctrl-C and
        SIGTERM still stop the run) and an abandoned attempt never keeps the process alive.
        Ray's own log lines go to stderr, never stdout (``--json`` output stays JSON).

        A local instance (no address, no ``$RAY_ADDRESS``) is started on this thread: it
        cannot hang on an absent cluster, and started from a daemon thread its processes
        lost their GCS and Ray terminated the whole process after 60 s. It is the run's own
        (``"local"``): Ray's default would join whatever cluster was last started on this
        machine, and refuse the run's ``num_cpus`` there.
        """

        def init(address: str | None) -> None:
            with contextlib.redirect_stdout(sys.stderr):
                ray.init(address=address, **options)

        if self.address is None and not os.environ.get("RAY_ADDRESS"):
            with _signal_handlers_kept():
                init("local")
            return
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()

        def settle(error: BaseException | None) -> None:
            if done.done():
                return
            if error is None:
                done.set_result(None)
            else:
                done.set_exception(error)

        def connect() -> None:
            error: BaseException | None = None
            try:
                init(self.address)
            except BaseException as err:  # handed to the loop, raised there
                error = err
            with contextlib.suppress(RuntimeError):  # the loop is gone: nobody waits
                loop.call_soon_threadsafe(settle, error)

        threading.Thread(target=connect, name="byzllm-ray-init", daemon=True).start()
        where = self.address or os.environ.get("RAY_ADDRESS") or "a local Ray instance"
        try:
            async with asyncio.timeout(self.connect_timeout_s):
                await done
        except TimeoutError:
            raise ConfigError(
                f"cannot reach the Ray cluster at {where} within {self.connect_timeout_s:g}s "
                "(is it running? check --ray-address or $RAY_ADDRESS; "
                f"${CONNECT_TIMEOUT_ENV} sets the wait)"
            ) from None
        except ConfigError:
            raise
        except Exception as err:
            message = " ".join(str(err).split())[:300] or type(err).__name__
            raise ConfigError(f"cannot join the Ray cluster at {where}: {message}") from None

    async def run(self, work: WorkFn, unit: Unit) -> Sequence[Record]:
        if self._seats is None:
            return await self._run(work, unit, None)
        async with self._seats.taken() as seat:
            return await self._run(work, unit, seat)

    def running_at_most(self) -> int | None:
        # With seats, a unit without one waits for it; without, Ray queues what the cluster
        # has no room for, which only Ray knows.
        return None if self._seats is None else self._seats.seats

    async def _run(self, work: WorkFn, unit: Unit, seat: Seat) -> Sequence[Record]:
        if self._remote is None:
            raise RuntimeError("RayExecutor.run called before start()")
        ref = self._remote.remote(work, unit.payload, seat)
        self._in_flight.add(ref)
        try:
            result = await ref
        except asyncio.CancelledError:
            # The run was stopped (Ctrl-C, SIGTERM): no longer awaiting it does not stop the
            # task on the cluster. The runner awaits its cancelled units before aclose(), so
            # this is the only place that still knows the task.
            self._cancel(ref)
            raise
        except self._ray.exceptions.RayTaskError as err:
            cause = getattr(err, "cause", None)
            if isinstance(cause, BaseException):
                raise cause from None
            raise
        finally:
            self._in_flight.discard(ref)
        return coerce_records(result)

    def _cancel(self, ref: Any) -> None:
        """Stop a unit's task on the cluster (its unit reruns next time).

        On a Ray session this executor opened, nothing is sent: :meth:`aclose` ends the job,
        and the cluster stops every task of a finished job. Cancelling task by task there
        raced the tasks' replies: a cancel that met one on its way in tripped a check inside
        Ray's core, which aborted this process (exit 1, no report).
        """
        if self._started_ray:
            return
        with contextlib.suppress(Exception):
            self._ray.cancel(ref, force=True)

    async def aclose(self) -> None:
        self._seats = None
        self._told_limit = None  # the next run's runner says its own
        ray = self._ray
        if ray is None:
            return
        for ref in list(self._in_flight):
            # The run was stopped: its units in flight rerun next time.
            self._cancel(ref)
        self._in_flight.clear()
        if self._started_ray:
            await asyncio.to_thread(ray.shutdown)  # ends the job, and so its tasks
            self._started_ray = False
        self._remote = None
        self._ray = None


@contextlib.contextmanager
def _signal_handlers_kept() -> Iterator[None]:
    """SIGTERM's and SIGINT's handlers as they were before the block, once it ends.

    ray.init on the main thread makes SIGTERM exit the process at once (``sys.exit``): the
    run's own handler (store what finished, say how to resume, exit 130) never ran, and a
    ``--json`` run printed nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    kept = {number: signal.getsignal(number) for number in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for number, handler in kept.items():
            if handler is not None:  # (one set outside Python: nothing to put back)
                signal.signal(number, handler)


def _env_seconds(name: str, default: float) -> float:
    text = os.environ.get(name)
    if not text:
        return default
    try:
        return float(text)
    except ValueError:
        raise ConfigError(f"${name} must be a number of seconds, got {text!r}") from None


def executor_by_name(
    name: str, *, ray_address: str | None = None, cpu_bound: bool = False, units: int = 0
) -> Executor:
    """The executor a CLI user names: ``local``, ``process``, ``ray`` or ``auto``.

    ``auto`` (the commands' default) picks worker processes for a run whose work is
    ``cpu_bound`` (it computes in-process and calls no model: simulated agents) with at least
    :data:`AUTO_PROCESS_MIN_UNITS` ``units`` to run on a machine with more than one usable
    core; this process otherwise, where model calls already overlap on one event loop (so a
    config that calls models runs here unless ``process`` or ``ray`` is named; there too its
    endpoints' ``max_concurrency`` bounds the whole run, :meth:`Executor.limit_requests`).
    The records are the same either way. The worker count ``auto`` chooses follows the cores
    silently (nobody asked for a number); a named ``process`` says when an endpoint's
    request limit runs fewer units at once than ``-j`` asks for.
    """
    if ray_address is not None and name != "ray":
        raise ConfigError("a Ray address needs the ray executor (--executor ray)")
    if name == "auto":
        large = cpu_bound and units >= AUTO_PROCESS_MIN_UNITS
        if large and usable_cores() > 1 and _processes_work():
            return ProcessExecutor(keep_secrets=False, quiet=True)
        return LocalExecutor()
    if name == "local":
        return LocalExecutor()
    if name == "process":
        return ProcessExecutor(keep_secrets=not cpu_bound)
    if name == "ray":
        return RayExecutor(ray_address)
    raise ConfigError(f"unknown executor {name!r}; use one of: {', '.join(EXECUTOR_NAMES)}")


def _processes_work() -> bool:
    """Whether this platform gives worker processes what they need: a process pool's locks
    and queues need ``sem_open``, which some sandboxed platforms lack (``auto`` then stays in
    this process instead of failing)."""
    try:
        import multiprocessing.synchronize  # noqa: F401 - raises ImportError without sem_open
    except ImportError:
        return False
    return True
