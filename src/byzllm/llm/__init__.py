"""One async interface to chat models (OpenAI-compatible servers and more).
May import: the bottom layer only (byzllm.errors, _process, _figures, _lazy, _files).

>>> from byzllm.llm import get_model, GenerateConfig
>>> model = get_model("openai/my-model", base_url="http://127.0.0.1:8000/v1")  # doctest: +SKIP
>>> msgs = [{"role": "user", "content": "2+2?"}]
>>> c = await model.generate(msgs, GenerateConfig(top_logprobs=5))  # doctest: +SKIP

Backends register by name (:func:`register_provider`); everything cross-cutting -- the
per-endpoint concurrency limit, retries, the response cache, usage accounting -- lives once
in :class:`Model`, which :func:`get_model` returns.
"""

from typing import TYPE_CHECKING

from byzllm._lazy import lazy_attributes

from ._cache import CacheError, CacheMode, ResponseCache, cache_key, check_cache
from ._concurrency import limit_share, limits_shared
from ._errors import (
    LogprobsUnavailableError,
    ModelAuthError,
    ModelError,
    ModelNotFoundError,
    ModelRefusedError,
    ModelRequestError,
    ModelResponseError,
    ModelUnavailableError,
    ModelUnreachableError,
    ModelWrongServerError,
)
from ._factory import get_model
from ._local import SHIPPED_MODEL, resolve_gguf
from ._logprobs import normalize_logprobs
from ._model import ChatModel, Model
from ._probe import check_endpoint
from ._provider import ModelAPI, ProviderSettings, provider_names, register_provider
from ._response import parse_chat_completion
from ._retry import RetryPolicy, TransientError
from ._serve import LocalServer, default_threads
from ._spec import ModelSettings, ModelSpec, get_shared_model
from ._tracking import RequestCounts, error_kind, track_requests
from ._types import (
    ChatMessage,
    Completion,
    GenerateConfig,
    JsonSchema,
    TokenLogprob,
    Usage,
    chat_messages,
)
from ._usage import ModelUsage

if TYPE_CHECKING:
    from ._llamacpp import LlamaCppAPI

__all__ = [
    "SHIPPED_MODEL",
    "CacheError",
    "CacheMode",
    "ChatMessage",
    "ChatModel",
    "Completion",
    "GenerateConfig",
    "JsonSchema",
    "LlamaCppAPI",
    "LocalServer",
    "LogprobsUnavailableError",
    "Model",
    "ModelAPI",
    "ModelAuthError",
    "ModelError",
    "ModelNotFoundError",
    "ModelRefusedError",
    "ModelRequestError",
    "ModelResponseError",
    "ModelSettings",
    "ModelSpec",
    "ModelUnavailableError",
    "ModelUnreachableError",
    "ModelUsage",
    "ModelWrongServerError",
    "ProviderSettings",
    "RequestCounts",
    "ResponseCache",
    "RetryPolicy",
    "TokenLogprob",
    "TransientError",
    "Usage",
    "cache_key",
    "chat_messages",
    "check_cache",
    "check_endpoint",
    "default_threads",
    "error_kind",
    "get_model",
    "get_shared_model",
    "limit_share",
    "limits_shared",
    "normalize_logprobs",
    "parse_chat_completion",
    "provider_names",
    "register_provider",
    "resolve_gguf",
    "track_requests",
]


# The llama.cpp backend (numpy, the HTTP client) loads on first use, as its provider does.
__getattr__ = lazy_attributes(__name__, {"LlamaCppAPI": "._llamacpp"})
