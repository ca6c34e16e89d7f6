"""Consensus agents (the SAC paper, §3-§4, Appendix B): LLM-backed, simulated and Byzantine.

One interface (:class:`ConsensusAgent`: answer, score, refine, confidence) behind three
families: :class:`LLMAgent` renders the prompts of ``_prompts`` and reads replies with
``_parse``; :class:`SimulatedAgent` is the documented behavioural model of ``_sim``;
:class:`ByzantineAgent` and its attacks (``_byzantine``) play the adversary.

>>> from byzllm.agents.consensus import SimulatedAgent, STRONG_PROFILE, make_adversary
>>> strong = SimulatedAgent("strong-0", STRONG_PROFILE, seed=0)
"""

from __future__ import annotations

from ._answers import answer_key, is_right, same_answer, wrong_answers
from ._byzantine import ATTACKS, ORACLE_ATTACKS, ByzantineAgent, make_adversary
from ._llm import LLMAgent
from ._parse import (
    DEFAULT_CONFIDENCE,
    DEFAULT_SCORE,
    clean_reply,
    parse_confidence,
    parse_refined_answer,
    parse_score,
    read_answer,
    read_confidence,
    read_refined_answer,
    read_score,
)
from ._prompts import (
    MAX_RESPONSE_CHARS,
    format_response,
    render_answer_prompt,
    render_confidence_prompt,
    render_debate_prompt,
    render_refine_prompt,
    render_score_prompt,
)
from ._replay_pool import ReplayPool
from ._sim import (
    PROFILE_SOURCES,
    STRONG_PROFILE,
    WEAK_PROFILE,
    SimulatedAgent,
    SimulatedProfile,
    looks_like_injection,
)
from ._types import (
    AgentGroup,
    CallContext,
    CallMeter,
    ConsensusAgent,
    Response,
    Retained,
    RoundView,
    ScoredResponse,
)

__all__ = [
    "ATTACKS",
    "DEFAULT_CONFIDENCE",
    "DEFAULT_SCORE",
    "MAX_RESPONSE_CHARS",
    "ORACLE_ATTACKS",
    "PROFILE_SOURCES",
    "STRONG_PROFILE",
    "WEAK_PROFILE",
    "AgentGroup",
    "ByzantineAgent",
    "CallContext",
    "CallMeter",
    "ConsensusAgent",
    "LLMAgent",
    "ReplayPool",
    "Response",
    "Retained",
    "RoundView",
    "ScoredResponse",
    "SimulatedAgent",
    "SimulatedProfile",
    "answer_key",
    "clean_reply",
    "format_response",
    "is_right",
    "looks_like_injection",
    "make_adversary",
    "parse_confidence",
    "parse_refined_answer",
    "parse_score",
    "read_answer",
    "read_confidence",
    "read_refined_answer",
    "read_score",
    "render_answer_prompt",
    "render_confidence_prompt",
    "render_debate_prompt",
    "render_refine_prompt",
    "render_score_prompt",
    "same_answer",
    "wrong_answers",
]
