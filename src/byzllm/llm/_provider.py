"""The provider seam: what a backend implements, and the registry that finds it by name.

As in Inspect AI, a backend (``ModelAPI``) only knows how to send one request to its kind of
server and translate the answer; everything cross-cutting -- concurrency limits, retries,
caching, usage accounting, log-probability checks -- lives once in :class:`byzllm.llm.Model`.
Backends register under a name (``"openai"``) and are chosen by the prefix of the model
name passed to :func:`byzllm.llm.get_model` (``"openai/<model>"``).
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from byzllm.errors import InputError

from ._types import ChatMessage, Completion, GenerateConfig

__all__ = [
    "ModelAPI",
    "ProviderFactory",
    "ProviderSettings",
    "provider_names",
    "register_provider",
    "resolve_provider",
]


@dataclass(frozen=True)
class ProviderSettings:
    """Transport settings a backend needs (none of them is part of the cache key)."""

    base_url: str | None = None
    api_key_env: str | None = "OPENAI_API_KEY"
    timeout_s: float = 120.0
    max_concurrency: int = 16


class ModelAPI(ABC):
    """One backend: sends a request to its server and returns a normalized :class:`Completion`.

    ``complete`` raises :class:`~byzllm.llm._retry.TransientError` for failures worth
    retrying and a :class:`~byzllm.llm.ModelError` for the rest; it never retries itself.
    """

    #: Registry name of the provider, e.g. ``"openai"``.
    provider: str = ""
    #: Whether cancelling ``complete`` frees the request (an HTTP connection is closed).
    #: Only then may an attempt be cut short before ``timeout_s`` (the adaptive timeout).
    cancellable: bool = True

    def __init__(self, model: str, settings: ProviderSettings) -> None:
        self.model = model
        self.settings = settings

    @property
    @abstractmethod
    def endpoint(self) -> str:
        """Where requests go (e.g. the base URL): the unit of concurrency limiting."""

    @property
    def cache_identity(self) -> str:
        """What the response cache keys this backend's requests by in place of a base URL:
        the endpoint, unless the endpoint does not say which model answers (a local file)."""
        return self.endpoint

    async def served_identity(self) -> str | None:
        """What the server says it serves, for the response cache to key requests by in place
        of :attr:`cache_identity`, or ``None`` when it says nothing of the kind (the default:
        a backend whose :attr:`cache_identity` already names the model).

        Raises :class:`~byzllm.llm._retry.TransientError` when the server cannot be asked
        (no answer): then nobody knows which model would answer.
        """
        return None

    @abstractmethod
    async def complete(self, messages: Sequence[ChatMessage], config: GenerateConfig) -> Completion:
        """Send one request and return its completion.

        Set ``latency_s`` to the time the server took, if the backend can measure it
        better than the caller (e.g. excluding a first-use import); leave ``cached`` unset.
        """

    def secrets(self) -> tuple[str, ...]:
        """Credentials to scrub from every message this backend's errors produce."""
        return ()

    def describe_auth_failure(self) -> str:
        """What to do about a 401 (e.g. which environment variable to set)."""
        return "check the credentials"

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release connections (optional)."""


#: Builds a backend from the model name (without the provider prefix) and its settings.
ProviderFactory = Callable[[str, ProviderSettings], ModelAPI]

_PROVIDERS: dict[str, ProviderFactory] = {}

#: The built-in providers, by the module that registers each: imported when first asked for,
#: so that code which never calls a model (reports, simulated runs) does not load the HTTP
#: client and the OpenAI SDK (``openai``) or numpy (``llamacpp``).
_BUILT_IN: dict[str, str] = {"llamacpp": "._llamacpp", "openai": "._openai"}


def register_provider(name: str) -> Callable[[ProviderFactory], ProviderFactory]:
    """Decorator registering a backend factory under ``name`` (``"openai"``, ...)."""

    def decorate(factory: ProviderFactory) -> ProviderFactory:
        _PROVIDERS[name] = factory
        return factory

    return decorate


def provider_names() -> list[str]:
    """Names of the registered providers (the built-in ones included)."""
    return sorted(_PROVIDERS.keys() | _BUILT_IN.keys())


def resolve_provider(name: str) -> tuple[str, str, ProviderFactory]:
    """Split ``"provider/model"`` and find the provider; :class:`InputError` if impossible."""
    provider, sep, model = name.partition("/")
    if not sep or not provider or not model:
        raise InputError(
            f"model name {name!r} must look like 'provider/model', e.g. 'openai/gpt-4o-mini' "
            f"(providers: {', '.join(provider_names())})"
        )
    factory = _PROVIDERS.get(provider)
    if factory is None and provider in _BUILT_IN:
        importlib.import_module(_BUILT_IN[provider], __package__)  # registers it
        factory = _PROVIDERS.get(provider)
    if factory is None:
        raise InputError(
            f"unknown model provider {provider!r} in {name!r}; "
            f"available: {', '.join(provider_names())}"
        )
    return provider, model, factory
