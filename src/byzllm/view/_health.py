"""A run's parse health and model requests on its page, as the report commands give them.

Every parser of model output falls back to a documented default when a reply cannot be read
(:mod:`byzllm.experiments.parse_health`); the report commands print the fall-backs per stage
and one warning line per stage above 20%. The page shows the same table and the same lines,
and for a consensus run the rate of every configuration, so a run whose numbers are mostly
the defaults says so where its numbers are.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ._html import Section, esc, table_html

__all__ = ["configuration_rows", "health_section"]

#: The request counts the page's table shows, in order: the report's table (retries with
#: their share, errors by kind) after the units counted.
_REQUEST_COLUMNS = ("units", "requests", "cached", "retries", "timeouts", "failed calls", "errors")


def _warnings(lines: Iterable[str]) -> str:
    return "".join(f"<p class='warning'>{esc(line)}</p>" for line in lines)


def configuration_rows(
    records: Iterable[Mapping[str, Any]], keys: Sequence[str]
) -> list[dict[str, Any]]:
    """Per configuration (the records' values of ``keys``) and stage, the replies parsed and
    the share that fell back, configurations in the order they first come."""
    from byzllm.experiments import parse_health

    groups: dict[tuple[Any, ...], list[Mapping[str, Any]]] = {}
    for record in records:
        groups.setdefault(tuple(record.get(k) for k in keys), []).append(record)
    return [
        {**dict(zip(keys, name, strict=True)), **row}
        for name, group in groups.items()
        for row in parse_health.from_records(group).rows()
    ]


def health_section(
    records: Sequence[Mapping[str, Any]], configuration: Sequence[str] = ()
) -> Section:
    """Parse health (per stage, or the line saying why there is none) with the report's
    warning lines, the fall-back rate per configuration (the records' values of the
    ``configuration`` keys) when there are several, and the run's model requests, for any
    unit records that count them."""
    from byzllm.experiments import parse_health, request_health

    health = parse_health.from_records(records)
    requests = request_health.from_records(records)
    rows = health.rows()
    parts = [
        _warnings(health.warnings()),
        table_html(rows) if rows else f"<p class='note'>{esc(health.note)}</p>",
    ]
    per_configuration = configuration_rows(records, configuration) if rows and configuration else []
    if len({tuple(r[k] for k in configuration) for r in per_configuration}) > 1:
        parts.append(
            table_html(per_configuration, note="parse fall-backs per configuration and stage")
        )
    parts.append(_warnings(requests.warnings()))
    if requests.status == "not recorded":
        # Records written before requests were counted: a table of zeros would say that no
        # request was sent, retried or lost.
        parts.append(f"<p class='note'>{esc(requests.note)}</p>")
    else:
        parts.append(
            table_html(
                [{"units": requests.units, **requests.rows()[0]}],
                _REQUEST_COLUMNS,
                note="model requests of the run (zero for simulated agents)",
            )
        )
    return Section("Parse health and model requests", "".join(parts), anchor="health")
