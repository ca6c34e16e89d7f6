"""Agents of the consensus protocols: LLM-backed, simulated and Byzantine, one interface.

>>> from byzllm.agents import SimulatedAgent, STRONG_PROFILE, make_adversary
>>> strong = SimulatedAgent("strong-0", STRONG_PROFILE, seed=0)
"""

from __future__ import annotations

from ._answers import answer_key, is_right, same_answer, wrong_answers
from ._base import (
    AgentGroup,
    CallContext,
    CallMeter,
    ConsensusAgent,
    Response,
    RoundView,
    ScoredResponse,
)
from .byzantine import ATTACKS, ByzantineAgent, make_adversary
from .llm import LLMAgent
from .simulated import STRONG_PROFILE, WEAK_PROFILE, SimulatedAgent, SimulatedProfile

__all__ = [
    "ATTACKS",
    "STRONG_PROFILE",
    "WEAK_PROFILE",
    "AgentGroup",
    "ByzantineAgent",
    "CallContext",
    "CallMeter",
    "ConsensusAgent",
    "LLMAgent",
    "Response",
    "RoundView",
    "ScoredResponse",
    "SimulatedAgent",
    "SimulatedProfile",
    "answer_key",
    "is_right",
    "make_adversary",
    "same_answer",
    "wrong_answers",
]
