"""WhoDunitEnv agents (the rogue-agents paper, §3, Appendix F): LLM-backed and simulated, one
interface.

The environment (``byzllm.envs.whodunit``) gives an agent an :class:`AgentView` and gets back
an :class:`AgentTurn`; the plain data types, the prompts of Appendix F, the reply parser and
the deductions both agents and environment use live here, below the environment.

>>> from byzllm.agents.whodunit import SimulatedAgent, SimParams
>>> accuser = SimulatedAgent("Beth", SimParams(hallucination_rate=0.1))
>>> silent = SimParams(fault_signal=0.0)  # faults act, but leave no trace a monitor can read
"""

from ._deduce import accuser_deductions, consistent_suspects, shared_facts
from ._llm import LLMAgent
from ._parse import (
    FALLBACK_ACTION,
    MAX_REPLY_CHARS,
    ActionParseError,
    JsonField,
    ParsedAction,
    find_action_object,
    parse_action,
    read_action,
)
from ._prompts import (
    WORDINGS,
    render_message,
    render_prompt,
    render_system_prompt,
    render_user_prompt,
)
from ._schema import (
    DEFAULT_MAX_THOUGHTS,
    action_schema,
    broad_values,
    last_own_turn,
    thoughts_budget,
)
from ._sim import SimParams, SimulatedAgent
from ._types import (
    ActionKind,
    AgentTurn,
    AgentView,
    ChannelMessage,
    Decoding,
    FinalMove,
    PromptStyle,
    Role,
    TopLogprobs,
    Variant,
    WhoDunitAction,
    WhoDunitAgent,
    WordingName,
    action_kinds,
    action_number,
)

__all__ = [
    "DEFAULT_MAX_THOUGHTS",
    "FALLBACK_ACTION",
    "MAX_REPLY_CHARS",
    "WORDINGS",
    "ActionKind",
    "ActionParseError",
    "AgentTurn",
    "AgentView",
    "ChannelMessage",
    "Decoding",
    "FinalMove",
    "JsonField",
    "LLMAgent",
    "ParsedAction",
    "PromptStyle",
    "Role",
    "SimParams",
    "SimulatedAgent",
    "TopLogprobs",
    "Variant",
    "WhoDunitAction",
    "WhoDunitAgent",
    "WordingName",
    "accuser_deductions",
    "action_kinds",
    "action_number",
    "action_schema",
    "broad_values",
    "consistent_suspects",
    "find_action_object",
    "last_own_turn",
    "parse_action",
    "read_action",
    "render_message",
    "render_prompt",
    "render_system_prompt",
    "render_user_prompt",
    "shared_facts",
    "thoughts_budget",
]
