"""Typed result records: what a unit's work returns and the store keeps.

A record is a pydantic model with a ``kind`` (a short name such as ``"sac_answer"``); the
store saves it as JSON under that kind, so reports can query one kind across all units.
"""

from __future__ import annotations

import contextlib
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Self, overload

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from byzllm.errors import InputError

from ._codec import pack_batch, pack_derived, pack_json, parse_record

__all__ = [
    "REQUEST_COUNTS",
    "PackedRecords",
    "Record",
    "UnitRequests",
    "WithDerived",
    "coerce_records",
    "pack_records",
]

_CAMEL_BOUNDARY = re.compile(r"(?<!^)(?=[A-Z])")

#: Field names the store adds to a record read with its unit (or its payload): a record's
#: own field of that name would be overwritten in reports and exports.
RESERVED_FIELDS = frozenset({"unit_id", "unit_label", "payload"})
#: Kinds whose export file would be the units table's.
RESERVED_KINDS = frozenset({"units"})


#: The counts of a unit's model requests (:meth:`byzllm.llm.RequestCounts.to_dict`), besides
#: ``errors`` (``{kind: n}``).
REQUEST_COUNTS = ("requests", "cached", "retries", "timeouts", "failures")


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_request_counts(counts: dict[str, Any] | None) -> dict[str, Any] | None:
    """Refuse request counts that are not whole numbers (a ``null`` or a text in an edited
    record), which the reports that total them cannot add up; other keys are kept as they
    are."""
    if counts is None:
        return None
    for name in REQUEST_COUNTS:
        if name in counts and not _whole(counts[name]):
            raise ValueError(f"its {name!r} count must be a whole number, not {counts[name]!r}")
    errors = counts.get("errors", {})
    if not isinstance(errors, dict) or not all(_whole(n) for n in errors.values()):
        raise ValueError(f"its 'errors' must map each kind to a whole number, not {errors!r}")
    return counts


#: A record's ``requests`` field: the unit's model requests, as
#: :func:`byzllm.llm.track_requests` counts them (declare ``requests: UnitRequests = None``).
UnitRequests = Annotated[
    dict[str, Any] | None,
    AfterValidator(_check_request_counts),
    Field(
        description="the unit's model requests: {requests, cached, retries, timeouts, failures, "
        "errors: {kind: n}} (byzllm.llm.track_requests; all zero for simulated agents; None in "
        "records written before they were counted)"
    ),
]


class Record(BaseModel):
    """Base class of every stored result.

    Subclasses set ``kind`` (a class variable); when they do not, it defaults to the class
    name in snake case (``ConsensusOutcome`` -> ``"consensus_outcome"``).

    Example::

        class Answer(Record):
            kind: ClassVar[str] = "answer"
            agent: int
            correct: bool
    """

    kind: ClassVar[str] = "record"
    #: Set on a record that only restates another record of its unit (the kind named):
    #: such records are not stored, but rebuilt by :meth:`derive` when the store is read.
    #: The work still returns them, and they must be exactly what :meth:`derive` gives.
    derived_from: ClassVar[str | None] = None
    # NaN and infinity are stored as such (JSON's NaN / Infinity tokens, which the store's
    # parser reads back): as null they came back as None, and typed_records refused them.
    model_config = ConfigDict(ser_json_inf_nan="constants")

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        if "kind" not in cls.__dict__:
            cls.kind = _CAMEL_BOUNDARY.sub("_", cls.__name__).lower()
        if not cls.kind or not isinstance(cls.kind, str):
            raise TypeError(f"{cls.__name__}.kind must be a non-empty string")
        if cls.kind in RESERVED_KINDS:
            raise TypeError(
                f"{cls.__name__}.kind {cls.kind!r} is reserved: an export writes the run's "
                f"units table as {cls.kind}.<format>"
            )
        if cls.derived_from is not None:
            if cls.derive.__func__ is Record.derive.__func__:  # type: ignore[attr-defined]
                raise TypeError(f"{cls.__name__} sets derived_from but does not define derive")
            _DERIVED[cls.kind] = cls
        taken = sorted(RESERVED_FIELDS & set(cls.model_fields))
        if taken:
            raise TypeError(
                f"{cls.__name__} has a field named {', '.join(taken)}, which the store adds to "
                "a record it reads with its unit (records(with_unit=True), every export): "
                "rename it"
            )

    @classmethod
    def derive(cls, source: dict[str, Any]) -> list[dict[str, Any]]:
        """The records of this kind that ``source`` (a record of kind :attr:`derived_from`,
        as the store reads it: JSON values) restates, as the store would read them, in the
        order the work returned them."""
        raise NotImplementedError(f"{cls.__name__} is not derived from another record")

    @classmethod
    def of(cls, *sources: object, **values: Any) -> Self:
        """A record of ``values``, its other fields read from the first of ``sources`` with
        an attribute of the same name (a game's result, a turn's features): the fields a
        domain copies unchanged are named once, in the record class."""
        taken: dict[str, Any] = {}
        for name in cls.model_fields:
            if name in values:
                continue
            for source in sources:
                if hasattr(source, name):
                    taken[name] = getattr(source, name)
                    break
        return cls(**taken, **values)


#: The classes of derived records (:attr:`Record.derived_from`), by kind.
_DERIVED: dict[str, type[Record]] = {}


def derived_record_class(kind: str, module: str) -> type[Record]:
    """The class that rebuilds stored records of ``kind``, defined in ``module``: imported
    if it is not yet, when it is one of byzllm's own modules (a store names the module, and
    a file must not make its reader import just any module)."""
    if kind not in _DERIVED and (module == "byzllm" or module.startswith("byzllm.")):
        import importlib

        with contextlib.suppress(ImportError):
            importlib.import_module(module)
    try:
        return _DERIVED[kind]
    except KeyError:
        raise InputError(
            f"the store's {kind} records are rebuilt from another record by {module}, "
            "which is not imported: import it before reading them"
        ) from None


class WithDerived(Sequence[Record]):
    """A unit's records: one ``source`` record and the ``count`` (``derived_count``) records
    of class ``derived`` that restate it (:attr:`Record.derived_from`), those first, as a work
    function returns them when building them would cost more than the rest of the unit (a
    simulated consensus question's 49 round records: a sixth of its time).

    The derived records are built, by :meth:`Record.derive` from the source's JSON, only
    when the sequence is read; the store never reads them (it keeps a count,
    :func:`pack_records`), so a run that stores them never builds them.
    """

    __slots__ = ("_built", "derived", "derived_count", "source")

    def __init__(self, source: Record, derived: type[Record], count: int) -> None:
        if derived.derived_from != type(source).kind:
            raise TypeError(
                f"{derived.__name__} is not derived from {type(source).__name__} records"
            )
        self.source, self.derived, self.derived_count = source, derived, count
        self._built: list[Record] | None = None

    def _records(self) -> list[Record]:
        if self._built is None:
            values = self.derived.derive(parse_record(self.source.model_dump_json()))
            if len(values) != self.derived_count:
                raise ValueError(
                    f"{type(self.source).__name__} restates {len(values)} "
                    f"{self.derived.__name__} records, not {self.derived_count}"
                )
            self._built = [*map(self.derived.model_validate, values), self.source]
        return self._built

    def __len__(self) -> int:
        return self.derived_count + 1

    @overload
    def __getitem__(self, index: int) -> Record: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Record]: ...
    def __getitem__(self, index: int | slice) -> Record | Sequence[Record]:
        return self._records()[index]

    def __iter__(self) -> Iterator[Record]:
        return iter(self._records())

    def __reduce__(self) -> tuple[Any, ...]:
        # What travels between processes is the source alone.
        return (WithDerived, (self.source, self.derived, self.derived_count))


def coerce_records(result: object) -> Sequence[Record]:
    """Normalize what a work function returned into a sequence of records.

    Accepted: ``None`` (no records), one :class:`Record`, an iterable of records, or a
    :class:`WithDerived` (kept as it is, its derived records unbuilt). Anything else raises
    :class:`TypeError`, which the runner records as the unit's failure.
    """
    if result is None:
        return []
    if isinstance(result, Record):
        return [result]
    if isinstance(result, WithDerived):
        return result
    if isinstance(result, (str, bytes, dict)) or not isinstance(result, Iterable):
        raise TypeError(
            f"work returned {type(result).__name__}; expected a Record, a list of Records or None"
        )
    records = list(result)
    for item in records:
        if not isinstance(item, Record):
            raise TypeError(
                f"work returned a list containing {type(item).__name__}; "
                "every item must be a Record"
            )
    return records


@dataclass(frozen=True, slots=True)
class PackedRecords:
    """A unit's records as the store keeps them: one ``(kind, stored value)`` row per kind,
    in the order the kinds first appear (:func:`pack_records`).

    An executor that runs work in another process packs there, so the process that holds
    the store only writes bytes: serializing and compressing a simulated unit's records costs
    more than running it, and the store's process would otherwise do it for every worker.
    """

    rows: tuple[tuple[str, str | bytes], ...]

    def __len__(self) -> int:
        return len(self.rows)


def pack_records(records: Sequence[Record]) -> PackedRecords:
    """``records`` as the store keeps them: one row per kind, a batch where the unit wrote
    several records of the kind (in their order), packed by :mod:`byzllm.runs._codec`.

    Records derived from another record of the unit (:attr:`Record.derived_from`, when the
    unit wrote exactly one record of that kind) are one derived row, which counts them: the
    store rebuilds them from that record when it is read."""
    if isinstance(records, WithDerived):  # (its derived records never built)
        rows: list[tuple[str, str | bytes]] = []
        if records.derived_count:
            rows.append(
                (records.derived.kind, _derived_row(records.derived, records.derived_count))
            )
        rows.append((type(records.source).kind, pack_json(records.source.model_dump_json())))
        return PackedRecords(tuple(rows))
    sources = Counter(type(record).kind for record in records)
    texts: dict[str, list[str]] = {}  # per kind, in the order kinds first appear
    derived: dict[str, type[Record]] = {}
    for record in records:
        cls = type(record)
        if cls.derived_from is not None and sources[cls.derived_from] == 1:
            derived[cls.kind] = cls
            texts.setdefault(cls.kind, [])
        else:
            texts.setdefault(cls.kind, []).append(record.model_dump_json())
    rows = []  # (typed in the branch above)
    for kind, kind_texts in texts.items():
        rebuilt = derived.get(kind)
        if rebuilt is not None:
            rows.append((kind, _derived_row(rebuilt, sources[kind])))
        elif len(kind_texts) == 1:
            rows.append((kind, pack_json(kind_texts[0])))
        else:
            rows.append((kind, pack_batch(kind_texts)))
    return PackedRecords(tuple(rows))


def _derived_row(derived: type[Record], count: int) -> bytes:
    assert derived.derived_from is not None
    return pack_derived(count, derived.__module__, derived.derived_from)
