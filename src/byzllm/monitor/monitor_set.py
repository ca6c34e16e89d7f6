"""The selected monitors of a system: one monitor and threshold per agent role (the rogue-agents
paper, §4.2).

"Agents with different roles exhibit different behavior" (§4.2), so every role gets its own
classifier, features, degree and τ (Table 5), and the random baseline its own ``p``. A
:class:`MonitorSet` is what ``byzllm monitor train`` writes and what interveners load: JSON
(never pickle) carrying the byzllm version and free-form ``meta`` (environment, model,
whether the training data came from simulated agents).

Next to the selected monitors a set carries its **ablations** (§6.1, Table 3): per role, the
second-best and the worst monitor of the selection grid, the turn-count-only control and the
best single-feature monitor of the grid (:mod:`.selection`). :meth:`MonitorSet.ablation`
gives the set an ablation condition runs.
Sets written before ablations were trained have none and still load; the conditions that
need them are then skipped (:func:`~byzllm.monitor.conditions.missing_conditions`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from byzllm import __version__
from byzllm._files import refuse_pipe, write_text_atomic
from byzllm.errors import InputError

from .dataset import TurnDataset
from .estimator import UncertaintyMonitor
from .features import UNCERTAINTY_FEATURES, TurnFeatures
from .selection import (
    ABLATIONS,
    DEFAULT_DEGREES,
    DEFAULT_GRID,
    RandomBaselineChoice,
    RoleCandidates,
    RoleSelection,
    best_single_feature,
    fit_role_candidates,
    grid_ablations,
    joint_choice,
    rank_candidates,
    select_random_baseline,
    select_turn_only_monitor,
    selection_for,
)

__all__ = [
    "ABLATION_LABELS",
    "MONITOR_SET_FORMAT",
    "MonitorSet",
    "RoleMonitor",
    "ablation_rows",
    "format_table5",
    "table5_rows",
    "train_monitor_set",
]

#: Identifies a serialized monitor set.
MONITOR_SET_FORMAT = "byzllm.monitor/monitor-set/1"

#: How tables name the selected monitor and each ablation.
ABLATION_LABELS: dict[str, str] = {
    "selected": "selected",
    "second-best": "2nd best",
    "worst": "worst",
    "turn-only": "turn count only",
    "single-feature": "best single feature",
}
_RETRAIN = "rerun `byzllm monitor train`"


@dataclass(frozen=True)
class RoleMonitor:
    """A role's classifier, its threshold τ and the validation gain it was chosen with.

    ``rank``: its place among the role's grid candidates by validation gain (1 = best), where
    known; ``None`` for the turn-only control and in sets written before it was kept.
    """

    role: str
    monitor: UncertaintyMonitor
    threshold: float
    gain: float
    rank: int | None = None

    def score(self, features: TurnFeatures) -> float:
        """``P(success)`` of one turn."""
        return float(self.monitor.predict_success(features)[0])

    def triggers(self, features: TurnFeatures) -> bool:
        """Whether this turn falls below τ (§2: intervene when ``P(success) < τ``)."""
        return self.score(features) < self.threshold


def _entry(m: RoleMonitor) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "threshold": m.threshold,
        "gain": m.gain,
        "monitor": m.monitor.to_dict(),
    }
    if m.rank is not None:
        entry["rank"] = m.rank
    return entry


def _role_monitors(entries: Any) -> dict[str, RoleMonitor]:
    """Parse ``{role: {threshold, gain, monitor[, rank]}}``; errors are the caller's to wrap."""
    monitors: dict[str, RoleMonitor] = {}
    for role, entry in dict(entries).items():
        rank = entry.get("rank")
        if rank is not None and (isinstance(rank, bool) or int(rank) != rank or rank < 1):
            raise ValueError(f"role {role!r}: rank must be an integer >= 1, got {rank!r}")
        monitors[str(role)] = RoleMonitor(
            role=str(role),
            monitor=UncertaintyMonitor.from_dict(entry["monitor"]),
            threshold=float(entry["threshold"]),
            gain=float(entry["gain"]),
            rank=None if rank is None else int(rank),
        )
    return monitors


@dataclass(frozen=True)
class MonitorSet:
    """Per-role monitors plus the per-role random-baseline probabilities.

    ``ablations`` maps each ablation (``second-best``, ``worst``, ``turn-only``,
    ``single-feature``) to its per-role monitors. ``variant`` names the ablation whose
    monitors ``roles`` holds, in the set :meth:`ablation` returns; ``None`` for the selected
    monitors.
    """

    roles: dict[str, RoleMonitor]
    random_baseline: dict[str, RandomBaselineChoice] = field(default_factory=dict)
    base_rate: float | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    ablations: dict[str, dict[str, RoleMonitor]] = field(default_factory=dict)
    variant: str | None = None
    #: The file it was loaded from (:meth:`load`), for messages; not part of the set.
    source: str | None = field(default=None, compare=False, repr=False)

    def thresholds(self) -> dict[str, float]:
        return {r: m.threshold for r, m in self.roles.items()}

    def random_probabilities(self) -> dict[str, float]:
        return {r: c.probability for r, c in self.random_baseline.items()}

    def has_ablation(self, name: str) -> bool:
        """Whether the ``name`` ablation's monitors were trained (or this set is them)."""
        return self.variant == name or bool(self.ablations.get(name))

    def ablation(self, name: str) -> MonitorSet:
        """The set whose role monitors are the ``name`` ablation's, without other ablations.

        What the ablation conditions run; the random baseline, base rate and meta are kept.
        Raises :class:`InputError` when the set has no such monitors.
        """
        if name not in ABLATIONS:
            raise InputError(f"unknown ablation {name!r}; choose from {', '.join(ABLATIONS)}")
        if self.variant == name:
            return self
        roles = self.ablations.get(name)
        if not roles:
            where = self.source or "the monitor set"
            raise InputError(
                f"{where} has no {ABLATION_LABELS[name]} monitors: not trained "
                f"(a set written before ablations were kept); {_RETRAIN}"
            )
        return dataclasses.replace(self, roles=dict(roles), ablations={}, variant=name)

    def selected(self) -> MonitorSet:
        """The set without its ablations: what the selected-monitor conditions run."""
        if self.variant is not None:
            raise InputError(f"this monitor set holds the {self.variant} ablation's monitors")
        return dataclasses.replace(self, ablations={}) if self.ablations else self

    def check_roles(self, roles: Iterable[str], *, environment: str) -> None:
        """Refuse a set that cannot monitor ``environment``, whose agents have ``roles``.

        A role the environment does not have would silently never be monitored, and a set
        without any role monitor would monitor nothing: both raise :class:`InputError`
        naming the environment's roles.
        """
        known = list(dict.fromkeys(roles))
        where = self.source or "the monitor set"
        has = f"the {environment} environment has the roles {', '.join(known)}"
        ablated = [r for monitors in self.ablations.values() for r in monitors]
        named = dict.fromkeys([*self.roles, *self.random_baseline, *ablated])
        unknown = [r for r in named if r not in known]
        if unknown:
            names = ", ".join(repr(r) for r in unknown)
            raise InputError(
                f"{where}: unknown role{'s' if len(unknown) > 1 else ''} {names}: {has} "
                "(train the monitors on games of this environment)"
            )
        if not self.roles:
            raise InputError(f"{where}: no role has a monitor; {has}")

    def fingerprint(self) -> str:
        """A short SHA-256 of the set's contents (not of the byzllm version that wrote it):
        what binds an evaluation's run folder to the monitors it evaluates."""
        data = self.to_dict()
        data.pop("byzllm_version", None)
        text = json.dumps(data, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "format": MONITOR_SET_FORMAT,
            "byzllm_version": __version__,
            "base_rate": self.base_rate,
            "meta": self.meta,
            "roles": {role: _entry(m) for role, m in self.roles.items()},
            "random_baseline": {
                role: {"probability": c.probability, "gain": c.gain}
                for role, c in self.random_baseline.items()
            },
        }
        # Written only when present, so a set without them serializes as before (and the
        # evaluate units that carry it keep their ids).
        if self.ablations:
            data["ablations"] = {
                name: {role: _entry(m) for role, m in monitors.items()}
                for name, monitors in self.ablations.items()
            }
        if self.variant is not None:
            data["variant"] = self.variant
        return data

    @classmethod
    def from_dict(cls, data: Any) -> MonitorSet:
        if not isinstance(data, dict) or data.get("format") != MONITOR_SET_FORMAT:
            raise InputError(f"not a monitor set (expected format {MONITOR_SET_FORMAT!r})")
        try:
            roles = _role_monitors(data["roles"])
            ablations = {
                str(name): _role_monitors(monitors)
                for name, monitors in dict(data.get("ablations") or {}).items()
            }
            variant = data.get("variant")
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
        except (KeyError, TypeError, ValueError, ArithmeticError, AttributeError) as err:
            raise InputError(f"malformed monitor set: {err}") from err
        unknown: list[Any] = [name for name in ablations if name not in ABLATIONS]
        if variant is not None and variant not in ABLATIONS:
            unknown.append(variant)
        if unknown:
            raise InputError(f"unknown ablation {unknown[0]!r}; known: {', '.join(ABLATIONS)}")
        for monitors in (roles, *ablations.values()):
            for role, m in monitors.items():
                if not 0.0 <= m.threshold <= 1.0:
                    raise InputError(f"role {role!r}: threshold {m.threshold} outside [0, 1]")
        for role, c in baseline.items():
            if not 0.0 <= c.probability <= 1.0:
                raise InputError(f"role {role!r}: probability {c.probability} outside [0, 1]")
        return cls(
            roles=roles,
            random_baseline=baseline,
            base_rate=base_rate,
            meta=meta,
            ablations=ablations,
            variant=None if variant is None else str(variant),
        )

    def save(self, path: str | Path) -> Path:
        """Write the set as JSON; returns the path."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(target, json.dumps(self.to_dict(), indent=2) + "\n")
        return target

    @classmethod
    def load(cls, path: str | Path) -> MonitorSet:
        """Read a set written by :meth:`save`. Anything else (a missing or unreadable file,
        text that is not UTF-8 or not JSON, another JSON document) raises one
        :class:`InputError` line naming the file."""
        source = Path(path)
        try:
            refuse_pipe(source)
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
    ablations: bool = True,
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

    ``ablations`` (default): also keep each role's second-best and worst grid monitor and
    fit its turn-count-only monitor (§6.1, Table 3; :mod:`.selection`), and keep its best
    single-feature grid monitor, each chosen on validation by its standalone gain;
    ``meta["candidates"]`` is the grid size they are ranked in.
    """
    chosen_roles = list(roles) if roles is not None else train.role_names()
    if not chosen_roles:
        raise InputError("no roles to train monitors for")
    flat = _flat_roles(train, chosen_roles)
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
    ablation_monitors: dict[str, dict[str, RoleMonitor]] = {}
    if ablations:
        for r, sel in zip(chosen_roles, selections, strict=True):
            choices = [
                *grid_ablations(candidates[r], sel),
                select_turn_only_monitor(
                    train, validation, r, degrees=degrees, thresholds=taus, alpha=alpha, base_rate=b
                ),
            ]
            single = best_single_feature(candidates[r], sel)
            if single is not None:
                choices.append(single)
            for c in choices:
                ablation_monitors.setdefault(c.ablation, {})[r] = RoleMonitor(
                    role=r, monitor=c.monitor, threshold=c.threshold, gain=c.gain, rank=c.rank
                )
        # Report order, whichever role came first.
        ablation_monitors = {a: ablation_monitors[a] for a in ABLATIONS if a in ablation_monitors}
    monitor_set = MonitorSet(
        roles={s.role: _selected(s, candidates[s.role]) for s in selections},
        random_baseline=baseline,
        base_rate=b,
        meta={
            **dict(meta or {}),
            "selection": "joint" if joint else "per-role",
            "expected_gain": union_gain,
            "candidates": len(selections[0].grid),
            # Roles whose uncertainty features never varied: their monitors read the turn
            # count alone, whatever their features say (_flat_roles). Only when there are
            # any, so a set trained on the same turns keeps its fingerprint.
            **({"flat_roles": flat} if flat else {}),
        },
        ablations=ablation_monitors,
    )
    return monitor_set, selections


def _flat_roles(train: TurnDataset, roles: Sequence[str]) -> list[str]:
    """The roles whose entropy, varentropy and kurtosis are the same on every training turn:
    their candidates can read only the turn count, though the tables name features. Every
    role flat is refused: that is one alternative per decision position (``top_logprobs`` or
    ``sim.top_k`` of 1, or a server that returns no top-k lists), where a lone token,
    renormalized, is a point mass (H = V = K = 0)."""
    flat = []
    for role in roles:
        x = train.x[train.role_mask(role)][:, : len(UNCERTAINTY_FEATURES)]
        if x.shape[0] >= 2 and np.all(x == x[0]):
            flat.append(role)
    if flat and len(flat) == len(roles):
        raise InputError(
            "entropy, varentropy and kurtosis are the same on every training turn of every "
            "role, so a monitor could only read the turn count; the run's decision positions "
            "carry one alternative each (top_logprobs or sim.top_k of 1, or a server that "
            "returns no top-k lists): collect again with at least 2 alternatives"
        )
    return flat


def _selected(selection: RoleSelection, candidates: RoleCandidates) -> RoleMonitor:
    """The selected monitor of a role, with its rank in the grid (1 unless chosen jointly)."""
    index = candidates.monitors.index(selection.monitor)
    rank = rank_candidates([g.gain for g in selection.grid]).index(index) + 1
    return RoleMonitor(
        role=selection.role,
        monitor=selection.monitor,
        threshold=selection.threshold,
        gain=selection.gain,
        rank=rank,
    )


_SHORT = {"entropy": "Ent", "varentropy": "Var", "kurtosis": "Kur"}


def table5_rows(monitor_set: MonitorSet) -> list[dict[str, Any]]:
    """One dict per role: role, features, degree, gain (percentage points), τ."""
    rows: list[dict[str, Any]] = []
    for role, m in monitor_set.roles.items():
        rows.append(
            {
                "role": role,
                "features": _features_label(m.monitor.features),
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


def _features_label(features: Sequence[str]) -> str:
    return " ".join(_SHORT[f] for f in features) if features else "(turn only)"


def ablation_rows(monitor_set: MonitorSet) -> list[dict[str, Any]]:
    """The selected monitor and its ablations per role, as the rogue-agents paper's Table 3
    lists them: monitor, features, degree, rank in the grid, validation gain (points), τ.

    A set without ablations gives the selected rows only.
    """
    n = monitor_set.meta.get("candidates")
    rows: list[dict[str, Any]] = []
    for role, selected in monitor_set.roles.items():
        entries = [("selected", selected)] + [
            (name, monitors[role])
            for name, monitors in monitor_set.ablations.items()
            if role in monitors
        ]
        for name, m in entries:
            rows.append(
                {
                    "role": role,
                    "monitor": ABLATION_LABELS.get(name, name),
                    "features": _features_label(m.monitor.features),
                    "degree": m.monitor.degree,
                    "rank": "" if m.rank is None else (f"{m.rank}/{n}" if n else str(m.rank)),
                    "gain": round(100.0 * m.gain, 1),
                    "tau": round(m.threshold, 2),
                }
            )
    return rows
