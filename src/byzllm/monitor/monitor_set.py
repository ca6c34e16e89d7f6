"""The selected monitors of a system: one monitor and threshold per agent role (the rogue-agents
paper, §4.2).

"Agents with different roles exhibit different behavior" (§4.2), so every role gets its own
classifier, features, degree and τ (Table 5), and the random baseline its own ``p``. A
:class:`MonitorSet` is what ``byzllm monitor train`` writes and what interveners load: JSON
(never pickle) carrying the byzllm version and free-form ``meta`` (environment, model,
whether the training data came from simulated agents).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from byzllm import __version__
from byzllm.errors import InputError

from .dataset import TurnDataset
from .estimator import UncertaintyMonitor
from .features import TurnFeatures
from .selection import (
    DEFAULT_DEGREES,
    DEFAULT_GRID,
    RandomBaselineChoice,
    RoleSelection,
    fit_role_candidates,
    joint_choice,
    select_random_baseline,
    selection_for,
)

__all__ = [
    "MONITOR_SET_FORMAT",
    "MonitorSet",
    "RoleMonitor",
    "format_table5",
    "table5_rows",
    "train_monitor_set",
]

#: Identifies a serialized monitor set.
MONITOR_SET_FORMAT = "byzllm.monitor/monitor-set/1"


@dataclass(frozen=True)
class RoleMonitor:
    """A role's classifier, its threshold τ and the validation gain it was chosen with."""

    role: str
    monitor: UncertaintyMonitor
    threshold: float
    gain: float

    def score(self, features: TurnFeatures) -> float:
        """``P(success)`` of one turn."""
        return float(self.monitor.predict_success(features)[0])

    def triggers(self, features: TurnFeatures) -> bool:
        """Whether this turn falls below τ (§2: intervene when ``P(success) < τ``)."""
        return self.score(features) < self.threshold


@dataclass(frozen=True)
class MonitorSet:
    """Per-role monitors plus the per-role random-baseline probabilities."""

    roles: dict[str, RoleMonitor]
    random_baseline: dict[str, RandomBaselineChoice] = field(default_factory=dict)
    base_rate: float | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    #: The file it was loaded from (:meth:`load`), for messages; not part of the set.
    source: str | None = field(default=None, compare=False, repr=False)

    def thresholds(self) -> dict[str, float]:
        return {r: m.threshold for r, m in self.roles.items()}

    def random_probabilities(self) -> dict[str, float]:
        return {r: c.probability for r, c in self.random_baseline.items()}

    def check_roles(self, roles: Iterable[str], *, environment: str) -> None:
        """Refuse a set that cannot monitor ``environment``, whose agents have ``roles``.

        A role the environment does not have would silently never be monitored, and a set
        without any role monitor would monitor nothing: both raise :class:`InputError`
        naming the environment's roles.
        """
        known = list(dict.fromkeys(roles))
        where = self.source or "the monitor set"
        has = f"the {environment} environment has the roles {', '.join(known)}"
        unknown = [r for r in dict.fromkeys([*self.roles, *self.random_baseline]) if r not in known]
        if unknown:
            names = ", ".join(repr(r) for r in unknown)
            raise InputError(
                f"{where}: unknown role{'s' if len(unknown) > 1 else ''} {names}: {has} "
                "(train the monitors on games of this environment)"
            )
        if not self.roles:
            raise InputError(f"{where}: no role has a monitor; {has}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": MONITOR_SET_FORMAT,
            "byzllm_version": __version__,
            "base_rate": self.base_rate,
            "meta": self.meta,
            "roles": {
                role: {
                    "threshold": m.threshold,
                    "gain": m.gain,
                    "monitor": m.monitor.to_dict(),
                }
                for role, m in self.roles.items()
            },
            "random_baseline": {
                role: {"probability": c.probability, "gain": c.gain}
                for role, c in self.random_baseline.items()
            },
        }

    @classmethod
    def from_dict(cls, data: Any) -> MonitorSet:
        if not isinstance(data, dict) or data.get("format") != MONITOR_SET_FORMAT:
            raise InputError(f"not a monitor set (expected format {MONITOR_SET_FORMAT!r})")
        try:
            roles = {
                str(role): RoleMonitor(
                    role=str(role),
                    monitor=UncertaintyMonitor.from_dict(entry["monitor"]),
                    threshold=float(entry["threshold"]),
                    gain=float(entry["gain"]),
                )
                for role, entry in dict(data["roles"]).items()
            }
            baseline = {
                str(role): RandomBaselineChoice(
                    role=str(role),
                    probability=float(entry["probability"]),
                    gain=float(entry["gain"]),
                )
                for role, entry in dict(data.get("random_baseline", {})).items()
            }
            base_rate = None if data.get("base_rate") is None else float(data["base_rate"])
            meta = dict(data.get("meta") or {})
        except (KeyError, TypeError, ValueError, ArithmeticError) as err:
            raise InputError(f"malformed monitor set: {err}") from err
        for role, m in roles.items():
            if not 0.0 <= m.threshold <= 1.0:
                raise InputError(f"role {role!r}: threshold {m.threshold} outside [0, 1]")
        for role, c in baseline.items():
            if not 0.0 <= c.probability <= 1.0:
                raise InputError(f"role {role!r}: probability {c.probability} outside [0, 1]")
        return cls(roles=roles, random_baseline=baseline, base_rate=base_rate, meta=meta)

    def save(self, path: str | Path) -> Path:
        """Write the set as JSON; returns the path."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(self.to_dict(), indent=2) + "\n", encoding="utf-8")
        return target

    @classmethod
    def load(cls, path: str | Path) -> MonitorSet:
        """Read a set written by :meth:`save`. Anything else (a missing or unreadable file,
        text that is not UTF-8 or not JSON, another JSON document) raises one
        :class:`InputError` line naming the file."""
        source = Path(path)
        try:
            raw = source.read_bytes()
        except OSError as err:
            raise InputError(f"cannot read monitor set {source}: {err.strerror or err}") from None
        hint = "write one with `byzllm monitor train`"
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as err:
            raise InputError(
                f"{source}: not a monitor set: not UTF-8 text (byte {err.start}); {hint}"
            ) from None
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, RecursionError) as err:
            where = (
                f" (line {err.lineno}, column {err.colno}: {err.msg})"
                if isinstance(err, json.JSONDecodeError)
                else " (nested too deeply)"
            )
            raise InputError(f"{source}: not a monitor set: not JSON{where}; {hint}") from None
        try:
            loaded = cls.from_dict(data)
        except InputError as err:
            raise InputError(f"{source}: {err}; {hint}") from None
        except (ArithmeticError, ValueError, TypeError, KeyError, AttributeError) as err:
            raise InputError(f"{source}: malformed monitor set: {err}; {hint}") from None
        return dataclasses.replace(loaded, source=str(source))


def train_monitor_set(
    train: TurnDataset,
    validation: TurnDataset,
    *,
    roles: Sequence[str] | None = None,
    degrees: Sequence[int] = DEFAULT_DEGREES,
    alpha: float = 1.0,
    joint: bool = False,
    meta: dict[str, Any] | None = None,
) -> tuple[MonitorSet, list[RoleSelection]]:
    """Select one monitor per role (D.2 grid) and the random baseline's ``p`` per role.

    By default each role's (features, degree, τ) is chosen on its own, as in the paper
    (D.2, Table 5). ``joint=True`` chooses them together by the gain of the union of their
    triggers (:func:`~byzllm.monitor.selection.joint_choice`), what the system with every
    role monitored at once would gain if the one-reset model held exactly; it searches a much
    larger space and overfits small validation sets more (see ``docs/monitor.md``). Either
    way each role's ``gain`` is its standalone expected gain; ``meta["expected_gain"]`` is
    the union's, and ``meta["selection"]`` says which rule was used.
    """
    chosen_roles = list(roles) if roles is not None else train.role_names()
    if not chosen_roles:
        raise InputError("no roles to train monitors for")
    b = validation.base_rate
    taus = DEFAULT_GRID
    candidates = {
        role: fit_role_candidates(train, validation, role, degrees=degrees, alpha=alpha)
        for role in chosen_roles
    }
    weights = b - validation.game_success.astype(np.float64)
    if joint:
        picks, union_gain = joint_choice(
            {r: c.minima for r, c in candidates.items()}, weights, taus
        )
        selections = [
            selection_for(candidates[r], validation, b, taus, picks[r]) for r in chosen_roles
        ]
    else:
        selections = [selection_for(candidates[r], validation, b, taus) for r in chosen_roles]
        union = np.zeros(validation.n_games, dtype=bool)
        for r, sel in zip(chosen_roles, selections, strict=True):
            index = candidates[r].monitors.index(sel.monitor)
            union |= candidates[r].minima[index] < sel.threshold
        union_gain = float(np.sum(weights[union]) / validation.n_games)
    baseline = {role: select_random_baseline(validation, role) for role in chosen_roles}
    monitor_set = MonitorSet(
        roles={
            s.role: RoleMonitor(role=s.role, monitor=s.monitor, threshold=s.threshold, gain=s.gain)
            for s in selections
        },
        random_baseline=baseline,
        base_rate=b,
        meta={
            **dict(meta or {}),
            "selection": "joint" if joint else "per-role",
            "expected_gain": union_gain,
        },
    )
    return monitor_set, selections


_SHORT = {"entropy": "Ent", "varentropy": "Var", "kurtosis": "Kur"}


def table5_rows(monitor_set: MonitorSet) -> list[dict[str, Any]]:
    """One dict per role: role, features, degree, gain (percentage points), τ."""
    rows: list[dict[str, Any]] = []
    for role, m in monitor_set.roles.items():
        rows.append(
            {
                "role": role,
                "features": " ".join(_SHORT[f] for f in m.monitor.features),
                "degree": m.monitor.degree,
                "gain": round(100.0 * m.gain, 1),
                "tau": round(m.threshold, 2),
                "random_p": (
                    round(monitor_set.random_baseline[role].probability, 2)
                    if role in monitor_set.random_baseline
                    else None
                ),
                "random_gain": (
                    round(100.0 * monitor_set.random_baseline[role].gain, 1)
                    if role in monitor_set.random_baseline
                    else None
                ),
            }
        )
    return rows


def format_table5(monitor_set: MonitorSet) -> str:
    """Plain-text rendering of the selected monitors, laid out like the rogue-agents paper, Table
    5."""
    rows = table5_rows(monitor_set)
    header = f"{'Type':<12}{'Features':<14}{'Degree':>7}{'Gain':>7}{'τ':>7}"
    lines = [header]
    for r in rows:
        lines.append(
            f"{r['role']:<12}{r['features']:<14}{r['degree']:>7}{r['gain']:>7.1f}{r['tau']:>7.2f}"
        )
    if "expected_gain" in monitor_set.meta:
        gain = 100.0 * float(monitor_set.meta["expected_gain"])
        lines.append(f"expected gain, all roles together: {gain:.1f} points")
    return "\n".join(lines)
