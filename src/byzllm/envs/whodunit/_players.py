"""Ready-made agent line-ups for a game: simulated or LLM-backed, in turn order."""

from __future__ import annotations

from byzllm.agents.whodunit import (
    Decoding,
    FinalMove,
    LLMAgent,
    PromptStyle,
    SimParams,
    SimulatedAgent,
)
from byzllm.llm import ChatModel

from ._env import ASYM_NAMES, SYM_NAMES
from ._games import WhoDunitGame

__all__ = ["agent_names", "llm_agents", "simulated_agents"]


def agent_names(game: WhoDunitGame) -> tuple[str, ...]:
    """The default names in turn order (asym: Accuser then Intel)."""
    if game.variant == "asym":
        return ASYM_NAMES
    return tuple(
        SYM_NAMES[i] if i < len(SYM_NAMES) else f"Player{i + 1}" for i in range(len(game.facts))
    )


def simulated_agents(game: WhoDunitGame, params: SimParams | None = None) -> list[SimulatedAgent]:
    """One simulated agent per seat, sharing ``params``."""
    return [SimulatedAgent(name, params) for name in agent_names(game)]


def llm_agents(
    game: WhoDunitGame,
    model: ChatModel,
    *,
    top_logprobs: int = 10,
    max_reprompts: int = 3,
    max_tokens: int | None = 1024,
    decoding: Decoding = "free",
    prompt: PromptStyle = "paper",
    final_move: FinalMove = "free",
    redo_temperature: float = 0.7,
) -> list[LLMAgent]:
    """One LLM-backed agent per seat, all on ``model`` (``max_tokens`` bounds each reply;
    ``decoding="schema"`` constrains each reply to a valid move, ``prompt="compact"``
    shortens the system prompts, ``final_move="accuse"`` allows only the accusation on an
    agent's last turn of a budget, ``redo_temperature`` samples a resampled turn afresh; see
    :class:`LLMAgent`)."""
    return [
        LLMAgent(
            name,
            model,
            top_logprobs=top_logprobs,
            max_reprompts=max_reprompts,
            max_tokens=max_tokens,
            decoding=decoding,
            prompt=prompt,
            final_move=final_move,
            redo_temperature=redo_temperature,
        )
        for name in agent_names(game)
    ]
