"""Progress reporting for runs: a rich bar on a terminal, plain log lines otherwise.

Besides the units stored, the runner hands reporters a :class:`LiveStatus` about once a
second (``heartbeat``, optional): units in flight and the model requests of the run --
in flight, sent, retried, the kind of the last error -- so a run whose requests hang says
so while no unit finishes.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TextIO, runtime_checkable

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, Task, TaskID
    from rich.text import Text

__all__ = [
    "LiveStatus",
    "PlainProgress",
    "ProgressReporter",
    "RichProgress",
    "SilentProgress",
    "make_progress",
]

#: After this many failure lines, further failures are only counted.
_MAX_FAILURE_LINES = 10


@dataclass(frozen=True, slots=True)
class LiveStatus:
    """A run's health at one moment: its units and its model requests (this invocation).

    Requests are those the run's units made in this process (all of them with the local
    executor; none with worker processes or Ray, whose requests are counted per unit).
    """

    done: int = 0
    failed: int = 0
    units_in_flight: int = 0
    requests_in_flight: int = 0
    requests: int = 0
    retries: int = 0
    errors: int = 0
    last_error: str | None = None
    #: Seconds the oldest request still in flight has waited.
    oldest_request_s: float | None = None

    def describe(self) -> str:
        """``16 running; requests: 16 in flight (oldest 12s), 40 sent, 5 retries, last
        error: timeout`` (the request part only once the run has sent one)."""
        text = f"{self.units_in_flight} running"
        if not self.requests:
            return text
        oldest = self.oldest_request_s
        waited = f" (oldest {oldest:.0f}s)" if oldest is not None and oldest >= 1 else ""
        text += (
            f"; requests: {self.requests_in_flight} in flight{waited}, {self.requests} sent, "
            f"{self.retries} retries"
        )
        if self.last_error is not None:
            text += f", last error: {self.last_error}"
        return text


@runtime_checkable
class ProgressReporter(Protocol):
    """What the runner tells about a run's progress (all calls on the event loop thread).

    A reporter may also define ``heartbeat(status: LiveStatus) -> None``: the runner then
    calls it about once a second (every ``interval_s / 4`` when the reporter has a shorter
    ``interval_s``), whether or not a unit finished.
    """

    def start(self, description: str, total: int, already_done: int, to_run: int) -> None:
        """The run starts: ``total`` units, ``already_done`` skipped, ``to_run`` scheduled."""

    def update(self, done: int, failed: int) -> None:
        """Units of this invocation stored so far (``done`` and ``failed``, cumulative)."""

    def unit_failed(self, label: str, error: str) -> None:
        """A unit failed (called once per failure)."""

    def close(self) -> None:
        """The run ended (or was interrupted)."""


def _format_duration(seconds: float) -> str:
    seconds = max(0, round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class SilentProgress:
    """Reports nothing."""

    def start(self, description: str, total: int, already_done: int, to_run: int) -> None:
        pass

    def update(self, done: int, failed: int) -> None:
        pass

    def unit_failed(self, label: str, error: str) -> None:
        pass

    def close(self) -> None:
        pass


class PlainProgress:
    """Plain lines on a stream (stderr), at most one every ``interval_s`` seconds.

    For logs and CI, where a live bar would print garbage: ``sweep: 120/400 done, 3 failed,
    45.2 units/s, ETA 0:06``.
    """

    def __init__(self, stream: TextIO | None = None, interval_s: float = 10.0) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.interval_s = interval_s
        self._description = "run"
        self._total = 0
        self._already = 0
        self._to_run = 0
        self._done = 0
        self._failed = 0
        self._failure_lines = 0
        self._started = 0.0
        self._last_print = 0.0
        self._live: LiveStatus | None = None

    def _print(self, text: str) -> None:
        print(f"{self._description}: {text}", file=self.stream, flush=True)

    def start(self, description: str, total: int, already_done: int, to_run: int) -> None:
        self._description = description
        self._total, self._already, self._to_run = total, already_done, to_run
        self._started = self._last_print = time.monotonic()
        left = [f"{already_done} already done"] if already_done else []
        if self._failed_before:
            left.append(f"{self._failed_before} failed earlier, not rerun")
        skipped = f" ({', '.join(left)})" if left else ""
        self._print(f"{to_run} of {total} units to run{skipped}")

    @property
    def _failed_before(self) -> int:
        # Every unit neither done nor scheduled failed in an earlier run.
        return self._total - self._already - self._to_run

    def _line(self) -> str:
        elapsed = max(time.monotonic() - self._started, 1e-9)
        finished = self._done + self._failed
        rate = finished / elapsed
        remaining = self._to_run - finished
        eta = _format_duration(remaining / rate) if rate > 0 else "?"
        live = f", {self._live.describe()}" if self._live is not None else ""
        return (
            f"{self._already + self._done}/{self._total} done, {self._failed} failed{live}; "
            f"{rate:.1f} units/s, ETA {eta}"
        )

    def update(self, done: int, failed: int) -> None:
        self._done, self._failed = done, failed
        self._maybe_print()

    def heartbeat(self, status: LiveStatus) -> None:
        """The run's live health; prints a line when one is due, even if no unit finished."""
        self._live = status
        self._maybe_print()

    def _maybe_print(self) -> None:
        now = time.monotonic()
        if now - self._last_print >= self.interval_s:
            self._last_print = now
            self._print(self._line())

    def unit_failed(self, label: str, error: str) -> None:
        self._failure_lines += 1
        if self._failure_lines <= _MAX_FAILURE_LINES:
            self._print(f"unit {label} failed: {error}")
        elif self._failure_lines == _MAX_FAILURE_LINES + 1:
            self._print("more units failed; see `byzllm runs show RUN_DIR`")

    def close(self) -> None:
        if self._to_run == 0:
            text = f"nothing to run: {self._already} of {self._total} units done"
            if self._failed_before:
                text += (
                    f", {self._failed_before} failed earlier (rerun with --retry-failed "
                    "to run them again)"
                )
            self._print(text)
            return
        elapsed = time.monotonic() - self._started
        self._print(f"{self._line()} (elapsed {_format_duration(elapsed)})")


class RichProgress:
    """A rich progress bar (on stderr unless ``console`` says otherwise) with the rate,
    the elapsed time, the ETA and the failure count."""

    def __init__(self, console: Console | None = None) -> None:
        self._console = console
        self._progress: Progress | None = None
        self._task: TaskID | None = None
        self._done = 0
        self._failed = 0
        self._failure_lines = 0

    def start(self, description: str, total: int, already_done: int, to_run: int) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            ProgressColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )
        from rich.text import Text

        class RateColumn(ProgressColumn):
            def render(self, task: Task) -> Text:
                speed = task.finished_speed or task.speed
                return Text("? units/s" if speed is None else f"{speed:.1f} units/s")

        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("[red]{task.fields[failed]} failed"),
            RateColumn(),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            TextColumn("{task.fields[health]}"),
            console=self._console if self._console is not None else Console(stderr=True),
            transient=False,
        )
        self._progress.start()
        # Units that failed in an earlier run and are not rerun count as finished, as in
        # PlainProgress: left in, the bar ended short of its total and the ETA never reached 0.
        failed_before = total - already_done - to_run
        self._task = self._progress.add_task(
            description, total=total, completed=already_done + failed_before, failed=0, health=""
        )

    def update(self, done: int, failed: int) -> None:
        if self._progress is None or self._task is None:
            return
        advance = (done + failed) - (self._done + self._failed)
        self._done, self._failed = done, failed
        self._progress.update(self._task, advance=advance, failed=failed)

    def heartbeat(self, status: LiveStatus) -> None:
        """Show the run's live health (units running, requests) beside the bar."""
        if self._progress is None or self._task is None:
            return
        self._progress.update(self._task, health=status.describe())

    def unit_failed(self, label: str, error: str) -> None:
        if self._progress is None:
            return
        self._failure_lines += 1
        if self._failure_lines <= _MAX_FAILURE_LINES:
            from rich.text import Text

            line = Text.assemble((f"unit {label} failed: ", "red"), error)
            self._progress.console.print(line, highlight=False)
        elif self._failure_lines == _MAX_FAILURE_LINES + 1:
            self._progress.console.print("more units failed; see `byzllm runs show RUN_DIR`")

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


def make_progress(progress: bool | ProgressReporter | None) -> ProgressReporter:
    """The reporter for a ``progress`` argument.

    ``None``: a rich bar when stderr is a terminal, plain lines otherwise; ``True``: a rich
    bar; ``False``: silent; a :class:`ProgressReporter`: itself.
    """
    if progress is None:
        return RichProgress() if sys.stderr.isatty() else PlainProgress()
    if progress is True:
        return RichProgress()
    if progress is False:
        return SilentProgress()
    return progress
