"""Byzantine-robust consensus protocols over a communication graph, on one round engine.
May import: agents, testing and the layers below them (errors, graphs, tasks, llm, sandbox).

>>> from byzllm.protocols import make_protocol, Network, run_consensus, compute_metrics
>>> protocol = make_protocol("sac", F=3)          # or "cp-wbft", "debate", "majority", "w-msr"
"""

from __future__ import annotations

from typing import Any

from byzllm.errors import InputError

from ._engine import ConsensusProtocol, Network, QuestionState, run_consensus, run_question
from ._trace import AgentRound, QuestionTrace
from .cpwbft import CPWBFT, confidence_vote
from .debate import Debate
from .majority import MajorityVote, plurality
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
from .sac import SAC, sac_filter
from .wmsr import WMSR, wmsr_update

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

#: Protocols by registry name.
PROTOCOLS: dict[str, type[ConsensusProtocol]] = {
    "sac": SAC,
    "cp-wbft": CPWBFT,
    "debate": Debate,
    "majority": MajorityVote,
    "w-msr": WMSR,
}


def make_protocol(name: str, F: int = 0, **options: Any) -> ConsensusProtocol:
    """A protocol by name (one of :data:`PROTOCOLS`) with adversary bound ``F``.

    ``options`` are the protocol's own keyword arguments (CP-WBFT: ``confidence_threshold``).
    """
    try:
        cls = PROTOCOLS[name.lower()]
    except KeyError:
        raise InputError(
            f"unknown protocol {name!r}; choose one of {', '.join(PROTOCOLS)}"
        ) from None
    try:
        return cls(F=F, **options)
    except TypeError:
        raise InputError(f"protocol {name!r} takes no option(s) {', '.join(options)}") from None
