"""Parse health: how often a model's output could not be read and a parser used its default.

Every parser of model output has a documented default (:mod:`byzllm.agents._parsed`): a SAC
score of 0.5, the current answer kept, a passed WhoDunitEnv turn. A model that ignores the
output format therefore does not crash a run; it silently turns it into a measurement of the
defaults (every SAC score 0.5 filters nothing: SAC becomes debate). Each unit stores, per stage,
how many replies were parsed and how many fell back (a ``parse`` field:
``{stage: {"calls": n, "fallbacks": k}}``) on its unit-level record — ``consensus_question``,
``whodunit_game``, ``monitor_game`` —; this module sums them over a run, lays them out as a
table and words the warnings, for every report command (``byzllm consensus report``,
``whodunit report``, ``monitor report``, ``runs show``).

Simulated agents parse no model output: their units count nothing, and a run of simulated
agents only is reported as ``n/a (simulated)``. A stage that falls back on more than
:data:`WARN_ABOVE` of its replies gets exactly one warning line.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, Field

from byzllm.agents import ParseCounts
from byzllm.runs import UnitRequests

if TYPE_CHECKING:
    from byzllm.runs import Store

__all__ = [
    "STAGES",
    "UNIT_KINDS",
    "WARN_ABOVE",
    "Coverage",
    "ParseHealth",
    "StageHealth",
    "StageText",
    "UnitCounts",
    "from_records",
    "from_store",
    "logprob_counts",
    "move_counts",
    "unit_records",
]

#: A stage whose fall-back rate is above this gets a warning line.
WARN_ABOVE = 0.2

#: The record kinds that carry a unit's ``parse`` counts (one record per unit).
UNIT_KINDS = (
    "consensus_question",
    "whodunit_game",
    "monitor_game",
    "govsim_game",
    "codegen_problem",
)


class UnitCounts(BaseModel):
    """The fields of a unit-level record (one of :data:`UNIT_KINDS`) that the parse and
    request health read: what :func:`unit_records` checks the records against (their own
    classes would cost ``runs show`` the import of every domain)."""

    simulated: bool = False
    parse: dict[str, dict[str, int]] | None = None
    requests: UnitRequests = None


#: The status of a run's parse health.
Status = Literal["ok", "warning", "n/a (simulated)", "not recorded"]


@dataclass(frozen=True)
class StageText:
    """How a stage is named in tables and warnings."""

    label: str
    #: "<rate> of <what>", e.g. "100% of SAC scores defaulted to 0.5".
    what: str
    #: What the fall-backs did to the run.
    meaning: str


#: Label and warning wording of every stage.
STAGES: dict[str, StageText] = {
    "score": StageText(
        "SAC score",
        "SAC scores defaulted to 0.5",
        "the model did not follow the scoring format, so nothing was filtered (SAC ran as debate)",
    ),
    "confidence": StageText(
        "CP-WBFT confidence",
        "CP-WBFT confidences defaulted to 0.5",
        "the model did not follow the confidence format, so honest agents' confidences "
        "carried no information",
    ),
    "answer": StageText(
        "answer extraction",
        "initial answers could not be extracted",
        "the model did not follow the answer format, so those agents started without an "
        "answer (counted wrong)",
    ),
    "refine": StageText(
        "refine extraction",
        "refine replies held no extractable answer",
        "the model did not follow the answer format, so those agents kept their previous answer",
    ),
    "move": StageText(
        "WhoDunit move",
        "WhoDunit moves fell back to a pass",
        "the model gave no valid action (after re-prompts), so those turns were passed",
    ),
    "catch": StageText(
        "GovSim catch",
        "GovSim catch decisions fell back to 0 tons",
        # A readable amount outside the action set [0, R_j] (the rogue-agents paper, §4.1)
        # falls back too: a greedy model's catches are not a format problem.
        "the model gave no valid amount (none, a negative one, or more than the lake held) "
        "after re-prompts, so those fishers caught nothing",
    ),
    "utterance": StageText(
        "GovSim meeting replies",
        "GovSim meeting replies were empty",
        "the model wrote nothing, so those fishers said nothing at the meeting",
    ),
    "code": StageText(
        "CodeGen code",
        "coder replies held no code block",
        "those coders kept their previous solution (round 1: an empty one, which fails)",
    ),
    "ratings": StageText(
        "CodeGen helpfulness ratings",
        "coders' ratings of the feedback and tests could not be read",
        "those ratings were recorded as missing",
    ),
    "judge": StageText(
        "CodeGen judge",
        "judge replies held no readable verdict",
        "the judge's verdicts on those solutions were recorded as missing",
    ),
    "tests": StageText(
        "CodeGen tests",
        "tester replies held no readable test (an assert, or an input and its output)",
        "those replies added no generated test to their round",
    ),
    "logprobs": StageText(
        "monitored log-probabilities",
        "monitored turns had no log-probabilities at their decision positions",
        "the server sent none, or tokens that do not spell the reply, so the monitor read "
        "those turns as no uncertainty (its documented default)",
    ),
}


def _text(stage: str) -> StageText:
    return STAGES.get(stage, StageText(stage, f"{stage} replies fell back", "see docs"))


@dataclass(frozen=True)
class StageHealth:
    """One stage over a run: replies parsed and how many fell back."""

    stage: str
    calls: int
    fallbacks: int

    @property
    def label(self) -> str:
        """The stage's name in tables (``"SAC score"``)."""
        return _text(self.stage).label

    @property
    def rate(self) -> float | None:
        """Fall-backs per parsed reply (``None`` without replies)."""
        return self.fallbacks / self.calls if self.calls else None

    def warning(self, threshold: float = WARN_ABOVE) -> str | None:
        """The warning line when the rate is above ``threshold``, else ``None``."""
        rate = self.rate
        if rate is None or rate <= threshold:
            return None
        text = _text(self.stage)
        return (
            f"warning: {100 * rate:.0f}% of {text.what} ({self.fallbacks} of {self.calls}): "
            f"{text.meaning}"
        )


#: A game record's ``parse`` field where each agent turn is one parsed move (WhoDunit, the
#: monitor games): declare ``parse: MoveParse = None``.
MoveParse = Annotated[
    dict[str, dict[str, int]] | None,
    Field(
        description="parse health: {'move': {calls, fallbacks}}, one call per agent turn, a "
        "fallback per turn passed for want of a valid action ({} for simulated agents; None in "
        "records written before it was kept)"
    ),
]


class Coverage:
    """What a run's parse and request health share: how many of its unit records carried
    counts (``units`` read, ``recorded`` with counts, ``simulated``), and so its status."""

    units: int
    recorded: int
    simulated: int
    _notes: tuple[str, str, str]

    def counted(self) -> bool:
        """Whether anything was counted (a table to show)."""
        raise NotImplementedError

    def warnings(self, threshold: float = WARN_ABOVE) -> list[str]:
        raise NotImplementedError

    @property
    def status(self) -> Status:
        """``warning`` (above the threshold), ``ok``, ``n/a (simulated)`` (nothing counted,
        simulated agents) or ``not recorded`` (nothing counted, no counts stored)."""
        if self.counted():
            return "warning" if self.warnings() else "ok"
        if self.recorded < self.units or not self.units:
            return "not recorded"
        return "n/a (simulated)" if self.simulated else "ok"

    @property
    def note(self) -> str | None:
        """One line saying why there is no table, or ``None`` when there is one."""
        simulated, unrecorded, nothing = self._notes
        status = self.status
        if status == "n/a (simulated)":
            return simulated
        if status == "not recorded":
            return unrecorded
        return None if self.counted() else nothing


@dataclass(frozen=True)
class ParseHealth(Coverage):
    """A run's parse health: per-stage totals over its units.

    ``units`` counts the unit records read, ``recorded`` those that carry parse counts
    (records written before parse health was recorded have none), ``simulated`` those of
    simulated runs.
    """

    stages: tuple[StageHealth, ...]
    units: int = 0
    recorded: int = 0
    simulated: int = 0

    #: The line without a table: simulated, not recorded, nothing counted.
    _notes = (
        "parse health: n/a (simulated agents: no model output was parsed)",
        "parse health: not recorded (results written before parse counts were stored)",
        "parse health: no model output was parsed",
    )

    def counted(self) -> bool:
        return any(s.calls for s in self.stages)

    def warnings(self, threshold: float = WARN_ABOVE) -> list[str]:
        """Exactly one line per stage whose fall-back rate is above ``threshold``."""
        return [w for s in self.stages if (w := s.warning(threshold)) is not None]

    def rows(self) -> list[dict[str, Any]]:
        """Table rows: stage, calls, fallbacks, rate (a percentage string)."""
        return [
            {
                "stage": s.label,
                "calls": s.calls,
                "fallbacks": s.fallbacks,
                "rate": "-" if s.rate is None else f"{100 * s.rate:.1f}%",
            }
            for s in self.stages
            if s.calls
        ]

    def to_json(self) -> dict[str, Any]:
        """The JSON form: status, note, threshold, per-stage counts and rates, warnings."""
        return {
            "status": self.status,
            "note": self.note,
            "threshold": WARN_ABOVE,
            "stages": [
                {
                    "stage": s.stage,
                    "label": s.label,
                    "calls": s.calls,
                    "fallbacks": s.fallbacks,
                    "rate": s.rate,
                }
                for s in self.stages
                if s.calls
            ],
            "warnings": self.warnings(),
        }


def from_records(records: Iterable[Mapping[str, Any]]) -> ParseHealth:
    """Sum the ``parse`` counts of unit-level records (dicts from the store, or models)."""
    total = ParseCounts()
    units = recorded = simulated = 0
    for record in records:
        data = record.model_dump() if hasattr(record, "model_dump") else record
        units += 1
        simulated += bool(data.get("simulated"))
        counts = data.get("parse")
        if isinstance(counts, Mapping):
            recorded += 1
            total.merge(counts)
    stages = tuple(
        StageHealth(stage, entry["calls"], entry["fallbacks"])
        for stage, entry in total.to_dict().items()  # in PARSE_STAGES order
    )
    return ParseHealth(stages=stages, units=units, recorded=recorded, simulated=simulated)


def from_store(store: Store, kinds: Sequence[str] = UNIT_KINDS) -> ParseHealth | None:
    """The parse health of every unit-level record in ``store`` (``None``: it has none)."""
    rows = unit_records(store, kinds)
    return from_records(rows) if rows else None


def unit_records(store: Store, kinds: Sequence[str] = UNIT_KINDS) -> list[dict[str, Any]]:
    """Every unit-level record in ``store``, of the ``kinds`` it holds, in ``kinds`` order;
    an :class:`~byzllm.errors.InputError` for one whose counts are not numbers
    (:class:`UnitCounts`)."""
    present = store.kinds()
    return [
        row for kind in kinds if present.get(kind) for row in store.records(kind, check=UnitCounts)
    ]


def logprob_counts(
    turns: Iterable[tuple[bool, Sequence[Sequence[Any]]]], *, simulated: bool
) -> dict[str, dict[str, int]]:
    """A monitored game's ``logprobs`` counts from its monitored turns, each as (fell back to
    its default action, its decision positions' distributions): every turn of an LLM-backed
    game that produced a valid action is one read, one without log-probabilities a fall-back
    (:meth:`~byzllm.agents.ParseCounts.add_logprobs`). Simulated games: ``{}``."""
    counts = ParseCounts()
    if not simulated:
        for fell_back, distributions in turns:
            counts.add_logprobs(distributions, fell_back=fell_back)
    return counts.to_dict()


def move_counts(fallbacks: Iterable[bool], *, simulated: bool) -> dict[str, dict[str, int]]:
    """A WhoDunitEnv game's ``parse`` counts from its turns' fall-back flags.

    Every agent turn of an LLM-backed game is one parsed move (``calls``); a turn that fell
    back to the documented pass (no valid action after the re-prompts, or an action the rules
    reject) is one fall-back. Simulated games parse nothing: ``{}``.
    """
    counts = ParseCounts()
    if not simulated:
        for fell_back in fallbacks:
            counts.add("move", bool(fell_back))
    return counts.to_dict()
