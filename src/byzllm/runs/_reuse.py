"""Shared work across run folders: a unit done in one folder is not run again in another.

A unit's id is the hash of its payload (:func:`~byzllm.runs.make_unit`): two folders holding
the same unit id hold the same work, so its result can be copied instead of recomputed.
``byzllm reproduce`` uses it for tables read from the same runs (the SAC paper's Table 2 is
the per-round view of Table 1's runs): ``reproduce sac-table2`` after ``sac-table1`` copies
every unit from ``runs/reproduce/sac-table1`` and runs none.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from byzllm.errors import InputError

from ._store import STORE_FILENAME, Store, StoreError, run_store_path
from ._units import Unit

__all__ = ["Reused", "reuse_units", "sibling_runs"]


@dataclass(frozen=True)
class Reused:
    """What :func:`reuse_units` copied: units per source folder, in the order searched."""

    sources: dict[Path, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.sources.values())

    def describe(self) -> str:
        """``"42 units reused from runs/reproduce/sac-table1"`` (empty when none were)."""
        if not self.total:
            return ""
        where = ", ".join(f"{n} from {path}" for path, n in self.sources.items() if n)
        plural = "unit" if self.total == 1 else "units"
        if len(self.sources) == 1:
            return f"{self.total} {plural} reused from {next(iter(self.sources))}"
        return f"{self.total} {plural} reused ({where})"


def sibling_runs(run_dir: str | Path) -> list[Path]:
    """The run folders beside ``run_dir`` (each holding a results store), by name."""
    here = Path(run_dir)
    parent = here.parent
    if not parent.is_dir():
        return []
    return sorted(
        path
        for path in parent.iterdir()
        if path.is_dir() and path.name != here.name and (path / STORE_FILENAME).is_file()
    )


def reuse_units(run_dir: str | Path, units: Sequence[Unit], sources: Iterable[Path]) -> Reused:
    """Copy every unit of ``units`` not yet done in ``run_dir`` but done in one of
    ``sources`` (run folders, searched in order) into ``run_dir``'s store, records and all.

    ``run_dir``'s store is created and the units registered (in grid order, as the runner
    would), so a run that follows finds them done and skips them. Sources are only read; one
    that cannot be read (damaged, foreign, gone) is passed over.
    """
    ids = {unit.id for unit in units}
    copied: dict[Path, int] = {}
    target: Store | None = None
    try:
        for source in sources:
            if Path(source).resolve() == Path(run_dir).resolve():
                continue
            try:
                reader = Store.open(source, verify=False)
            except (StoreError, InputError):
                continue
            try:
                if target is None:
                    target = Store(run_store_path(run_dir), create=True)
                    statuses = target.register_units(list(units))
                    ids = {unit for unit, status in statuses.items() if status != "done"}
                if not ids:
                    break
                adopted = target.adopt_units(reader, ids)
            finally:
                reader.close()
            if adopted:
                copied[Path(source)] = len(adopted)
                ids -= set(adopted)
    finally:
        if target is not None:
            target.close()
    return Reused(copied)
