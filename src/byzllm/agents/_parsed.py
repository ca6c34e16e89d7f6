"""What a reply parser read, and whether it fell back to its documented default.

Every parser of model output in :mod:`byzllm.agents` has a documented default for a reply it
cannot read (a score of 0.5, the current answer kept, a passed turn). A run on a model that
ignores the output format therefore still finishes, but silently measures the defaults: a SAC
run whose every score is 0.5 filters nothing and is a debate. The ``read_*`` parsers return a
:class:`Parsed` (the value *and* whether it is the default because nothing could be read), and
:class:`ParseCounts` tallies them per *stage* so that reports can say so
(:mod:`byzllm.experiments.parse_health`).

Stages (:data:`ParseStage`): ``score`` (SAC's receiver-side score), ``confidence`` (CP-WBFT's
self-reported confidence), ``answer`` (the initial answer's extraction), ``refine`` (the
refined answer's extraction), ``move`` (a WhoDunitEnv turn's action), ``catch`` (a GovSim
fisher's catch), ``utterance`` (its reply at a meeting), ``code``, ``ratings``, ``judge``,
``tests`` (CodeGen's roles), ``logprobs`` (a monitored turn's log-probabilities at its
decision positions, which the monitor reads).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar, get_args

__all__ = ["PARSE_STAGES", "ParseCounts", "ParseStage", "Parsed"]

_T = TypeVar("_T")

#: The stages whose parsing is counted (what :class:`ParseCounts` keys are).
ParseStage = Literal[
    "score",
    "confidence",
    "answer",
    "refine",
    "move",
    "catch",
    "utterance",
    "code",
    "ratings",
    "judge",
    "tests",
    "logprobs",
]

#: Every stage, in report order.
PARSE_STAGES: tuple[ParseStage, ...] = get_args(ParseStage)


@dataclass(frozen=True)
class Parsed(Generic[_T]):
    """A parser's result: ``value``, and ``fell_back`` when ``value`` is the documented default
    because the reply held nothing the parser could read (``reason`` then says why).

    ``fell_back`` is false whenever something was read, even when the value read happens to
    equal the default (a reply of ``"0.5"`` is a score of 0.5 that was read).
    """

    value: _T
    fell_back: bool = False
    reason: str = ""


@dataclass
class ParseCounts:
    """Replies parsed and fall-backs, per stage (``{stage: [calls, fallbacks]}``)."""

    counts: dict[str, list[int]] = field(default_factory=dict)

    def add(self, stage: ParseStage, fell_back: bool) -> None:
        """Count one parsed reply of ``stage`` (and one fall-back when ``fell_back``)."""
        entry = self.counts.setdefault(stage, [0, 0])
        entry[0] += 1
        entry[1] += int(fell_back)

    def add_logprobs(self, distributions: Sequence[Sequence[Any]], *, fell_back: bool) -> None:
        """Count one monitored turn's log-probabilities (stage ``logprobs``): one without any
        at its decision positions is a fall-back (the monitor reads it as no uncertainty,
        :mod:`byzllm.monitor.features`); a turn that fell back to its default action is its
        own stage's fall-back and is not counted again."""
        if not fell_back:
            self.add("logprobs", not any(distributions))

    def merge(self, other: ParseCounts | Mapping[str, Any] | None) -> None:
        """Add ``other``'s counts: a :class:`ParseCounts` or a :meth:`to_dict` mapping.

        Malformed entries of a mapping (hand-edited or foreign records) are ignored.
        """
        if other is None:
            return
        items = other.to_dict() if isinstance(other, ParseCounts) else other
        for stage, entry in items.items():
            if not isinstance(entry, Mapping):
                continue
            calls, fallbacks = entry.get("calls", 0), entry.get("fallbacks", 0)
            if not isinstance(calls, int) or not isinstance(fallbacks, int):
                continue
            mine = self.counts.setdefault(str(stage), [0, 0])
            mine[0] += max(0, calls)
            mine[1] += max(0, min(fallbacks, calls))

    def to_dict(self) -> dict[str, dict[str, int]]:
        """``{stage: {"calls": n, "fallbacks": k}}``, stages in :data:`PARSE_STAGES` order."""
        if not self.counts:  # agents that parse nothing (simulated ones): every round record
            return {}
        order: dict[str, int] = {stage: i for i, stage in enumerate(PARSE_STAGES)}
        return {
            stage: {"calls": calls, "fallbacks": fallbacks}
            for stage, (calls, fallbacks) in sorted(
                self.counts.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0])
            )
        }

    @classmethod
    def of(cls, *parts: ParseCounts | Mapping[str, Any] | None) -> ParseCounts:
        """The sum of ``parts``."""
        total = cls()
        for part in parts:
            if part:  # (an empty mapping adds nothing: a summary sums 100,000s of them)
                total.merge(part)
        return total

    @property
    def calls(self) -> int:
        """Replies parsed, all stages together."""
        return sum(calls for calls, _ in self.counts.values())
