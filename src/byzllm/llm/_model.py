"""The one abstract interface every model backend implements."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from ._types import ChatMessage, Completion, GenerateConfig

__all__ = ["ChatModel"]


class ChatModel(ABC):
    """An async chat model: ``await model.generate(messages, config) -> Completion``.

    Agents, protocols and environments depend only on this interface, so a simulated
    population, a hosted API and a local server are interchangeable behind it.
    """

    #: ``provider/model`` name, e.g. ``"openai/gpt-4o-mini"``.
    name: str

    @abstractmethod
    async def generate(
        self, messages: Sequence[ChatMessage], config: GenerateConfig | None = None
    ) -> Completion:
        """Return one completion for ``messages`` under ``config``."""
