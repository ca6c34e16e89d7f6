"""GovSim fishers (Piatti et al. 2024; the rogue-agents paper, §4.1): LLM-backed and simulated,
one interface.

The environment (``byzllm.envs.govsim``) gives a fisher a :class:`FisherView` and gets back a
:class:`CatchTurn` (the month's harvest) or a :class:`SpeechTurn` (one utterance of the
meeting); the prompts, the reply parser and both fisher families live here, below the
environment.

>>> from byzllm.agents.govsim import FisherParams, SimulatedFisher, read_catch
>>> read_catch("I will be careful. Answer: 12 tons", stock=100).value.amount
12
>>> read_catch("lots", stock=100).fell_back
True
>>> quiet = FisherParams(fault_signal=0.0)  # rogue turns leave no trace a monitor can read
"""

from ._llm import LLMFisher, amount_distributions
from ._parse import (
    FALLBACK_CATCH,
    MAX_AMOUNT_DIGITS,
    MAX_REPLY_CHARS,
    ParsedCatch,
    find_amounts,
    read_catch,
)
from ._prompts import render_catch_prompt, render_speech_prompt, render_system_prompt
from ._sim import FisherParams, SimulatedFisher, sustainable_share
from ._types import CatchTurn, Fisher, FisherView, SpeechTurn, TopLogprobs, Utterance

__all__ = [
    "FALLBACK_CATCH",
    "MAX_AMOUNT_DIGITS",
    "MAX_REPLY_CHARS",
    "CatchTurn",
    "Fisher",
    "FisherParams",
    "FisherView",
    "LLMFisher",
    "ParsedCatch",
    "SimulatedFisher",
    "SpeechTurn",
    "TopLogprobs",
    "Utterance",
    "amount_distributions",
    "find_amounts",
    "read_catch",
    "render_catch_prompt",
    "render_speech_prompt",
    "render_system_prompt",
    "sustainable_share",
]
