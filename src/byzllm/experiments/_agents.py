"""Who plays a domain's games or debates: simulated agents, or LLM-backed ones on the config's
model (``agents: llm`` needs ``model``), shared by the WhoDunit, GovSim and CodeGen configs."""

from __future__ import annotations

from typing import Literal, Self

from pydantic import model_validator

from byzllm.runs import ModelConfig

__all__ = ["AgentsConfig"]


class AgentsConfig(ModelConfig):
    """A config whose agents are ``simulated`` or ``llm`` (then on :attr:`model`)."""

    agents: Literal["simulated", "llm"] = "simulated"

    @model_validator(mode="after")
    def _llm_needs_a_model(self) -> Self:
        if self.agents == "llm" and not self.model:
            raise ValueError("agents: llm needs a model (e.g. model: openai/gpt-4o-mini)")
        return self
