"""Request health: how many model requests a run sent, retried, lost to timeouts, by error kind.

Retries hide faults: a run against a flaky server finishes with the same results as against
a healthy one, only slower -- and nothing said why. Each unit therefore stores its model
requests (a ``requests`` field: ``{"requests", "cached", "retries", "timeouts", "failures",
"errors": {kind: n}}``, counted by :func:`byzllm.llm.track_requests`) on its unit-level
record -- ``consensus_question``, ``whodunit_game``, ``monitor_game`` --; this module sums
them over a run, lays them out as a table and words the warning, for every report command
(``byzllm consensus report``, ``whodunit report``, ``monitor report``, ``runs show``), as
:mod:`byzllm.experiments.parse_health` does for parsing.

Error kinds: ``timeout`` (no answer in time), ``connection`` (refused, dropped, cut short),
``bad_response`` (malformed body), ``http_<status>`` (``http_429``, ``http_503``, ...).
Units that failed store no records: their last error is in ``byzllm runs show``.
Simulated agents send no requests: a run of simulated agents only is ``n/a (simulated)``.
A run whose retries exceed :data:`WARN_ABOVE` of its requests gets one warning line.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from byzllm.runs import REQUEST_COUNTS

from .parse_health import UNIT_KINDS, Coverage, unit_records

if TYPE_CHECKING:
    from byzllm.runs import Store

__all__ = ["UNIT_KINDS", "WARN_ABOVE", "RequestHealth", "from_records", "from_store"]

#: A run whose retried requests exceed this share of its requests gets a warning line.
WARN_ABOVE = 0.2


@dataclass(frozen=True)
class RequestHealth(Coverage):
    """A run's model requests, summed over its unit records.

    ``units`` counts the unit records read, ``recorded`` those that carry request counts
    (records written before requests were counted have none), ``simulated`` those of
    simulated runs.
    """

    requests: int = 0
    cached: int = 0
    retries: int = 0
    timeouts: int = 0
    failures: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    units: int = 0
    recorded: int = 0
    simulated: int = 0
    #: Units whose requests needed at least one retry.
    units_retried: int = 0

    @property
    def retry_rate(self) -> float | None:
        """Retries per request sent (``None`` without requests)."""
        return self.retries / self.requests if self.requests else None

    _notes = (
        "model requests: n/a (simulated agents: no model was called)",
        "model requests: not recorded (results written before requests were counted)",
        "model requests: none",
    )

    def counted(self) -> bool:
        return bool(self.requests or self.cached)

    def errors_text(self) -> str:
        """``http_503 5, timeout 7`` (``-`` without errors)."""
        return ", ".join(f"{kind} {n}" for kind, n in self.errors.items()) or "-"

    def warnings(self, threshold: float = WARN_ABOVE) -> list[str]:
        """One line when retried requests are above ``threshold`` of those sent."""
        rate = self.retry_rate
        if rate is None or rate <= threshold:
            return []
        return [
            f"warning: {100 * rate:.0f}% of model requests were retried ({self.retries} "
            f"retries for {self.requests} requests; {self.errors_text()}): the server was "
            "overloaded or failing; the results stand, but the run was slower"
        ]

    def rows(self) -> list[dict[str, Any]]:
        """One table row: requests, cached, retries, timeouts, failed calls, errors by kind."""
        rate = self.retry_rate
        return [
            {
                "requests": self.requests,
                "cached": self.cached,
                "retries": self.retries if rate is None else f"{self.retries} ({100 * rate:.1f}%)",
                "timeouts": self.timeouts,
                "failed calls": self.failures,
                "errors": self.errors_text(),
            }
        ]

    def to_json(self) -> dict[str, Any]:
        """The JSON form: status, note, threshold, totals, errors by kind, warnings."""
        return {
            "status": self.status,
            "note": self.note,
            "threshold": WARN_ABOVE,
            "units": self.units,
            "recorded": self.recorded,
            "units_retried": self.units_retried,
            "requests": self.requests,
            "cached": self.cached,
            "retries": self.retries,
            "timeouts": self.timeouts,
            "failures": self.failures,
            "errors": dict(self.errors),
            "retry_rate": self.retry_rate,
            "warnings": self.warnings(),
        }


def from_records(records: Iterable[Mapping[str, Any]]) -> RequestHealth:
    """Sum the ``requests`` counts of unit-level records (dicts from the store, or models)."""
    totals = dict.fromkeys(REQUEST_COUNTS, 0)
    errors: dict[str, int] = {}
    units = recorded = simulated = retried = 0
    for record in records:
        data = record.model_dump() if hasattr(record, "model_dump") else record
        units += 1
        simulated += bool(data.get("simulated"))
        counts = data.get("requests")
        if not isinstance(counts, Mapping):
            continue
        recorded += 1
        for name in REQUEST_COUNTS:
            totals[name] += int(counts.get(name, 0) or 0)
        retried += bool(counts.get("retries"))
        kinds = counts.get("errors")
        if isinstance(kinds, Mapping):
            for kind, n in kinds.items():
                errors[str(kind)] = errors.get(str(kind), 0) + int(n)
    return RequestHealth(
        **totals,
        errors=dict(sorted(errors.items(), key=lambda item: (-item[1], item[0]))),
        units=units,
        recorded=recorded,
        simulated=simulated,
        units_retried=retried,
    )


def from_store(store: Store, kinds: Sequence[str] = UNIT_KINDS) -> RequestHealth | None:
    """The request health of every unit-level record in ``store`` (``None``: it has none)."""
    rows = unit_records(store, kinds)
    return from_records(rows) if rows else None
