"""What can be deduced about the culprit from the channel, taking every message at face value.

Shared by the simulated agents (their beliefs) and the environment's analysis (the
"remaining candidates" of every turn record). Character ids are 1-based.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from ._types import ChannelMessage

__all__ = [
    "accuser_deductions",
    "accuser_evidence",
    "consistent_suspects",
    "fact_violations",
    "shared_facts",
]


def accuser_deductions(
    n_suspects: int,
    culprit: Mapping[str, str],
    attributes: Mapping[str, Sequence[str]],
    channel: Iterable[ChannelMessage],
) -> tuple[set[int], dict[int, set[str]]]:
    """Eliminated ids and, per id, the culprit properties it is known to match.

    From Intel's answers (asymmetric variant, §3): a yes/no answer about ``(c, P, V)``
    eliminates ``c`` when it contradicts the culprit's value of ``P``; a broad message
    ``(P, V, L)`` keeps only ``L`` when the culprit has ``P = V`` and removes ``L`` otherwise.
    For two-valued properties "has not V" means "has the other value", which confirms a match.
    """
    # The hard reading is the soft one with "contradicted at least once" as elimination.
    violations, confirmed = accuser_evidence(n_suspects, culprit, attributes, channel)
    eliminated = {c for c, count in enumerate(violations, 1) if count}
    return eliminated, {c: props for c, props in enumerate(confirmed, 1) if props}


def shared_facts(channel: Iterable[ChannelMessage]) -> list[tuple[str, str]]:
    """The ``(property, value)`` facts shared in a symmetric game's channel, in order."""
    out: list[tuple[str, str]] = []
    for msg in channel:
        a = msg.action
        if a.kind == "share" and a.property is not None and a.value is not None:
            out.append((a.property, a.value))
    return out


def consistent_suspects(
    suspects: Sequence[Mapping[str, str]], facts: Iterable[tuple[str, str]]
) -> list[int]:
    """Ids of the suspects that have every ``(property, value)`` in ``facts``."""
    return [i for i, count in enumerate(fact_violations(suspects, facts), 1) if count == 0]


def accuser_evidence(
    n_suspects: int,
    culprit: Mapping[str, str],
    attributes: Mapping[str, Sequence[str]],
    channel: Iterable[ChannelMessage],
) -> tuple[list[int], list[set[str]]]:
    """Per id (index 0 is id 1): how many messages contradict it, and the properties confirmed.

    The soft counterpart of :func:`accuser_deductions`: the same reading of every message,
    but a contradiction is *counted* instead of eliminating the id for good, so a belief
    built on it can weigh evidence and notice when the channel contradicts itself (every
    id contradicted at least once).
    """
    violations = [0] * n_suspects
    confirmed: list[set[str]] = [set() for _ in range(n_suspects)]
    for msg in channel:
        a = msg.action
        if a.property is None or a.property not in culprit:
            continue
        target = culprit[a.property]
        two_valued = len(attributes.get(a.property, ())) == 2
        if a.kind == "respond" and a.character is not None and a.answer is not None:
            if not 1 <= a.character <= n_suspects:
                continue
            if a.answer == (a.value == target):
                if a.answer or two_valued:
                    confirmed[a.character - 1].add(a.property)
            else:
                violations[a.character - 1] += 1
        elif a.kind == "respond_broad":
            listed = set(a.characters)
            for c in range(1, n_suspects + 1):
                inside = c in listed
                if (a.value == target) == inside:
                    if inside or two_valued:
                        confirmed[c - 1].add(a.property)
                else:
                    violations[c - 1] += 1
    return violations, confirmed


def fact_violations(
    suspects: Sequence[Mapping[str, str]], facts: Iterable[tuple[str, str]]
) -> list[int]:
    """Per suspect (index 0 is id 1): how many of ``facts`` it contradicts."""
    fact_list = list(facts)
    return [sum(1 for prop, value in fact_list if s.get(prop) != value) for s in suspects]
