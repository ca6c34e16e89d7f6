"""The simulated twin of a stored run, and the rows that set it beside the run (``byzllm sim
compare``), shared by the domains whose units are games or problems (WhoDunit, GovSim,
CodeGen).

:func:`replay_units` plays every finished unit of a run again with the unit's configuration
rewritten for simulated agents on fitted parameters (the same games or problems, repeats and
conditions), in memory. :func:`mean_comparison` and :func:`grouped_comparison` turn the real
and the twin's records into :class:`~._fitting.ComparisonRow` s: each metric is a mean over
units (a game or a problem; its repeats averaged first) with a percentile bootstrap interval
over units (:func:`~._intervals.bootstrap_interval`, the units in the order of their ids:
:mod:`._order`), as every report of these domains gives its metrics: the metrics a domain
names as rates (a success counted over units) get Wilson's bounds when every unit is 0 or
every unit is 1, the others (a share per unit, a count) their bootstrap interval.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from byzllm.errors import InputError
from byzllm.runs import Interval, Record, Store, bootstrap_interval, make_unit, run_in_memory

from ._fitting import ComparisonRow, comparison_row
from ._order import in_unit_order

__all__ = [
    "Metric",
    "UnitOf",
    "grouped_comparison",
    "mean_comparison",
    "replay_games",
    "replay_units",
]

#: A metric of one record (``None``: the record does not define it).
Metric = Callable[[Mapping[str, Any]], float | None]
#: The unit a record belongs to (a game's or a problem's id).
UnitOf = Callable[[Mapping[str, Any]], str]


def replay_units(
    run_dir: str | Path,
    twin_config: Callable[[Mapping[str, Any]], dict[str, Any]],
    work: Callable[[dict[str, Any]], Awaitable[Sequence[Record]]],
    *,
    kinds: set[str],
    repeats: int = 1,
    accept: Callable[[Mapping[str, Any]], bool] | None = None,
    what: str = "units",
) -> list[dict[str, Any]]:
    """Play every finished unit of ``run_dir`` again, ``repeats`` times, in memory.

    ``twin_config`` maps a unit's stored ``config`` to the twin's (simulated agents on the
    fitted parameters; only what the work reads for them, so no model settings travel);
    every other payload key (the game or problem, split, condition, monitors) is kept.
    ``accept`` picks the units to replay (default: those with a ``config`` and a
    ``repeat``). Twin repeat ``k`` shifts every unit's repeat index by ``k`` times one more
    than the run's largest, so each pass plays on its own random stream while the
    conditions of one problem still share theirs (common random numbers). Returns the
    records of ``kinds`` as dicts; raises InputError when nothing is left to replay.
    """
    if repeats < 1:
        raise InputError(f"repeats must be at least 1, got {repeats}")
    with Store.open(run_dir) as store:
        payloads = [u["payload"] for u in store.units("done")]
    keep = accept or (lambda p: {"config", "repeat"} <= set(p))
    payloads = [p for p in payloads if keep(p)]
    if not payloads:
        raise InputError(f"{run_dir} holds no finished {what} to replay")
    stride = 1 + max(int(p["repeat"]) for p in payloads)
    units = []
    for k in range(repeats):
        for p in payloads:
            payload = {
                **p,
                "config": twin_config(p.get("config") or {}),
                "repeat": int(p["repeat"]) + k * stride,
            }
            units.append(make_unit(payload, label=f"twin/{k}"))
    return asyncio.run(run_in_memory(units, work, kinds=kinds))


def replay_games(
    run_dir: str | Path,
    twin_config: Callable[[Mapping[str, Any]], dict[str, Any]],
    work: Callable[[dict[str, Any]], Awaitable[Sequence[Record]]],
    *,
    kind: str,
    what: str,
    repeats: int = 1,
) -> list[dict[str, Any]]:
    """:func:`replay_units` for a game environment (WhoDunit, GovSim): every finished unit
    that plays one stored game (its payload has a ``config``, the ``game`` and a
    ``repeat``); returns the twin's records of ``kind`` (``what`` names them in errors)."""
    return replay_units(
        run_dir,
        twin_config,
        work,
        kinds={kind},
        repeats=repeats,
        accept=lambda p: {"config", "game", "repeat"} <= set(p),
        what=what,
    )


def _interval(
    rows: Sequence[Mapping[str, Any]], metric: Metric, unit: UnitOf, resamples: int, *, rate: bool
) -> Interval:
    """Mean of ``metric`` over units (each unit's rows averaged first), bootstrapped
    (``rate``: a rate, whose interval at 0 or 1 is Wilson's)."""
    per_unit: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        value = metric(row)
        if value is not None:
            per_unit[unit(row)].append(float(value))
    values = [sum(v) / len(v) for v in in_unit_order(per_unit)]
    return bootstrap_interval(values, resamples=resamples, rate=rate)


def mean_comparison(
    real: Sequence[Mapping[str, Any]],
    twin: Sequence[Mapping[str, Any]],
    metrics: Mapping[str, Metric],
    *,
    unit: UnitOf,
    rates: Collection[str] = (),
    resamples: int = 2000,
) -> list[ComparisonRow]:
    """One :class:`ComparisonRow` per metric (in ``metrics``' order): its mean over the
    units of ``real`` and of ``twin`` (``unit`` names a record's unit), with intervals;
    ``rates``: the metrics that are rates (module docstring)."""
    return [
        comparison_row(
            name,
            _interval(real, metric, unit, resamples, rate=name in rates),
            _interval(twin, metric, unit, resamples, rate=name in rates),
        )
        for name, metric in metrics.items()
    ]


def grouped_comparison(
    real: Sequence[Mapping[str, Any]],
    twin: Sequence[Mapping[str, Any]],
    metrics: Mapping[str, Metric],
    *,
    unit: UnitOf,
    group: Sequence[str],
    order: Callable[[tuple[Any, ...]], Any] | None = None,
    rates: Collection[str] = (),
    resamples: int = 2000,
) -> list[tuple[dict[str, Any], list[ComparisonRow]]]:
    """:func:`mean_comparison` per value of the record keys ``group`` (a table each, with
    those keys as its metadata), in ``order`` (default: sorted as text)."""

    def key(row: Mapping[str, Any]) -> tuple[Any, ...]:
        return tuple(row.get(k) for k in group)

    keys = sorted({key(r) for r in real}, key=order or (lambda k: tuple(str(x) for x in k)))
    out = []
    for k in keys:
        mine = [r for r in real if key(r) == k]
        theirs = [r for r in twin if key(r) == k]
        rows = mean_comparison(mine, theirs, metrics, unit=unit, rates=rates, resamples=resamples)
        out.append((dict(zip(group, k, strict=True)), rows))
    return out
