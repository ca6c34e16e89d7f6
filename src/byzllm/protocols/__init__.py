"""Byzantine-robust consensus protocols over a communication graph, on one round engine.
May import: agents, testing and the layers below them (errors, graphs, tasks, llm, sandbox).

>>> from byzllm.protocols import make_protocol, Network, run_consensus, compute_metrics
>>> protocol = make_protocol("sac", F=3)          # or "cp-wbft", "debate", "majority", "w-msr"
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from byzllm._lazy import lazy_attributes
from byzllm.errors import InputError

from ._trace import AgentRound, QuestionTrace
from .metrics import (
    COUNT_FIELDS,
    ROUND_FIELDS,
    ConsensusMetrics,
    RoundMetrics,
    compute_metrics,
    majority_correct,
    metrics_from_counts,
    round_counts,
    round_values,
    vote_counts,
)

if TYPE_CHECKING:
    from ._engine import ConsensusProtocol, Network, QuestionState, run_consensus, run_question
    from .cpwbft import CPWBFT, confidence_vote
    from .debate import Debate
    from .majority import MajorityVote, plurality
    from .sac import SAC, sac_filter
    from .wmsr import WMSR, wmsr_update

    PROTOCOLS: dict[str, type[ConsensusProtocol]]

__all__ = [
    "COUNT_FIELDS",
    "CPWBFT",
    "PROTOCOLS",
    "ROUND_FIELDS",
    "SAC",
    "WMSR",
    "AgentRound",
    "ConsensusMetrics",
    "ConsensusProtocol",
    "Debate",
    "MajorityVote",
    "Network",
    "QuestionState",
    "QuestionTrace",
    "RoundMetrics",
    "compute_metrics",
    "confidence_vote",
    "majority_correct",
    "make_protocol",
    "metrics_from_counts",
    "plurality",
    "round_counts",
    "round_values",
    "run_consensus",
    "run_question",
    "sac_filter",
    "vote_counts",
    "wmsr_update",
]

#: The round engine and the protocols load on first use (PEP 562): they bring the agents, the
#: model layer's types and networkx, which the metrics (reports, the viewer) do not need.
_LAZY: dict[str, str] = {
    "ConsensusProtocol": "._engine",
    "Network": "._engine",
    "QuestionState": "._engine",
    "run_consensus": "._engine",
    "run_question": "._engine",
    "CPWBFT": ".cpwbft",
    "confidence_vote": ".cpwbft",
    "Debate": ".debate",
    "MajorityVote": ".majority",
    "plurality": ".majority",
    "SAC": ".sac",
    "sac_filter": ".sac",
    "WMSR": ".wmsr",
    "wmsr_update": ".wmsr",
}

#: Protocols by registry name (:data:`PROTOCOLS` maps each to its class).
_REGISTRY: dict[str, str] = {
    "sac": "SAC",
    "cp-wbft": "CPWBFT",
    "debate": "Debate",
    "majority": "MajorityVote",
    "w-msr": "WMSR",
}


_load = lazy_attributes(__name__, _LAZY)


@functools.cache
def _protocols() -> dict[str, type[ConsensusProtocol]]:
    return {key: _load(cls) for key, cls in _REGISTRY.items()}


def __getattr__(name: str) -> Any:
    return _protocols() if name == "PROTOCOLS" else _load(name)


def make_protocol(name: str, F: int = 0, **options: Any) -> ConsensusProtocol:
    """A protocol by name (one of :data:`PROTOCOLS`) with adversary bound ``F``.

    ``options`` are the protocol's own keyword arguments (CP-WBFT: ``confidence_threshold``).
    """
    protocols = _protocols()
    try:
        cls = protocols[name.lower()]
    except KeyError:
        raise InputError(
            f"unknown protocol {name!r}; choose one of {', '.join(protocols)}"
        ) from None
    try:
        return cls(F=F, **options)
    except TypeError:
        raise InputError(f"protocol {name!r} takes no option(s) {', '.join(options)}") from None
