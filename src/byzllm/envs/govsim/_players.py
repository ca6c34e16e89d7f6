"""Ready-made line-ups of fishers for a game: simulated or LLM-backed, in seat order."""

from __future__ import annotations

from byzllm.agents.govsim import FisherParams, LLMFisher, SimulatedFisher
from byzllm.llm import ChatModel

from ._games import LakeConfig

__all__ = ["llm_fishers", "simulated_fishers"]


def simulated_fishers(
    config: LakeConfig | None = None, params: FisherParams | None = None, *, salt: str = ""
) -> list[SimulatedFisher]:
    """One simulated fisher per seat, sharing ``params`` (``salt`` keys their draws)."""
    return [SimulatedFisher(n, params, salt=salt) for n in (config or LakeConfig()).names()]


def llm_fishers(
    model: ChatModel,
    config: LakeConfig | None = None,
    *,
    top_logprobs: int = 10,
    max_reprompts: int = 2,
    max_tokens: int | None = 256,
) -> list[LLMFisher]:
    """One LLM-backed fisher per seat, all on ``model``."""
    return [
        LLMFisher(
            n,
            model,
            top_logprobs=top_logprobs,
            max_reprompts=max_reprompts,
            max_tokens=max_tokens,
        )
        for n in (config or LakeConfig()).names()
    ]
