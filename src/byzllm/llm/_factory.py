"""``get_model``: the one way to build a model from a name and settings."""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Mapping
from typing import Any

from byzllm._process import looks_secret
from byzllm.errors import InputError

from ._cache import CacheMode, open_cache
from ._model import Model
from ._provider import ProviderSettings, resolve_provider
from ._retry import RetryPolicy

__all__ = ["get_model"]

_CACHE_MODES = ("on", "off", "read-only", "refresh")
#: Query parameters that carry a credential although their names say no secret word.
_SECRET_PARAMS = frozenset({"sig", "signature", "pass", "pwd"})


def url_has_credentials(url: str) -> bool:
    """Whether ``url``'s authority holds a user name (``user:secret@host``), read without a
    URL parser (which refuses some such URLs with a message that quotes them)."""
    authority = url.split("//", 1)[-1].split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
    return "@" in authority


def check_api_key_env(name: str) -> None:
    """One clear :class:`InputError` for an ``api_key_env`` name that does not look like a
    secret's (:func:`byzllm._process.looks_secret`: it contains none of ``KEY``, ``TOKEN``,
    ``SECRET``, ``PASSWORD``, ``PASSWD``, ``CREDENTIAL``, ``AUTH``). Child processes that
    call no model (git, the sqlite3 shell, the workers of a simulated run and the fork
    server every worker starts from) get the environment without such variables: a key
    under any other name would reach them."""
    if not looks_secret(name):
        raise InputError(
            f"api_key_env {name!r} does not look like the name of a secret (it contains none "
            "of KEY, TOKEN, SECRET, PASSWORD, PASSWD, CREDENTIAL, AUTH), so child processes "
            f"would inherit the key; put the key in a variable named e.g. {name}_KEY"
        )


def query_credential(url: str) -> str | None:
    """The name of the first query parameter of ``url`` that looks like a credential
    (``?key=...``, ``api_key=``, ``token=``, ``sig=`` ...), or ``None``."""
    query = url.split("#", 1)[0].partition("?")[2]
    for name, _ in urllib.parse.parse_qsl(query, keep_blank_values=True):
        if looks_secret(name) or name.lower() in _SECRET_PARAMS:
            return name
    return None


def check_base_url(base_url: str) -> None:
    """One clear :class:`InputError` for a server URL byzllm cannot use: not http(s), a port
    that is not a number, no host (the HTTP client refused these later with its own
    exception), or a user name and password in it, which would be stored with the run and
    printed in its errors (the key belongs in the variable ``api_key_env`` names), as is a
    credential in its query (:func:`query_credential`)."""
    # First, and without repeating the URL: every later message quotes it.
    if url_has_credentials(base_url):
        raise InputError(
            "base_url carries a user name or password (user:secret@host), which would be "
            "stored with the run and shown in its errors: put the key in an environment "
            "variable and name it with api_key_env"
        )
    credential = query_credential(base_url)
    if credential is not None:
        raise InputError(
            f"base_url carries a credential in its query ({credential}=...), which would be "
            "stored with the run and shown in its errors: put the key in an environment "
            "variable and name it with api_key_env"
        )
    if not base_url.lower().startswith(("http://", "https://")):
        raise InputError(
            f"base_url must start with http:// or https://, got {base_url!r} "
            "(e.g. http://127.0.0.1:8000/v1)"
        )
    try:
        parts = urllib.parse.urlsplit(base_url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError as exc:
        raise InputError(f"base_url {base_url!r} is not a valid URL: {exc}") from None
    if not parts.hostname:
        raise InputError(f"base_url {base_url!r} names no host (e.g. http://127.0.0.1:8000/v1)")


def get_model(
    name: str,
    *,
    base_url: str | None = None,
    api_key_env: str | None = "OPENAI_API_KEY",
    max_concurrency: int = 16,
    cache: str | os.PathLike[str] | None = None,
    cache_mode: CacheMode = "on",
    cache_salt: str = "",
    cache_endpoint: str | None = None,
    timeout_s: float = 120.0,
    max_top_logprobs: int = 20,
    require_logprobs: bool = True,
    retry: RetryPolicy | Mapping[str, Any] | None = None,
    input_price_per_mtok: float | None = None,
    output_price_per_mtok: float | None = None,
    adaptive_timeout: bool = True,
) -> Model:
    """A chat model by ``"provider/model"`` name, e.g. ``get_model("openai/gpt-4o-mini")``.

    * ``base_url`` -- the server (any OpenAI-compatible one: vLLM, SGLang, Ollama, llama.cpp,
      OpenRouter); default: OpenAI's.
    * ``api_key_env`` -- the environment variable holding the API key (read once, never
      logged; its name must look secret, :func:`check_api_key_env`; the key must be
      printable ASCII, whitespace around it is dropped); ``None`` sends no key (local
      servers).
    * ``max_concurrency`` -- requests in flight at once per endpoint, shared by every model
      on the same ``base_url`` (the smallest live limit wins).
    * ``cache`` -- path of the SQLite response cache (``None``: no cache); ``cache_mode``
      ``"on"``/``"off"``/``"read-only"``/``"refresh"``; ``cache_salt`` -- part of the key
      (a seed / epoch: change it to draw fresh samples); ``cache_endpoint`` -- the name
      the cache keys requests by instead of ``base_url``, for a server whose address changes
      between runs while it serves the same model (``byzllm reproduce --real`` names its own
      servers by model and SHA-256); a local GGUF model is keyed by its file's SHA-256, and
      so is byzllm's own server, which names its file when asked (docs/llm.md, "Cache").
    * ``timeout_s`` -- the cap of one attempt; ``adaptive_timeout`` -- also give up on an
      attempt after 8 times the endpoint's slowest answer once it has answered 5 requests
      (from 20 answers on, the 95th percentile of the latest; at least 2 s; doubled per
      timeout of the same call; docs/llm.md);
      ``retry`` -- a :class:`RetryPolicy` (or its fields).
    * ``max_top_logprobs`` -- the largest ``GenerateConfig.top_logprobs`` accepted (20, as
      OpenAI and vLLM); ``require_logprobs`` -- error (True) or warn and return ``None``
      (False) when requested log-probabilities do not come back.
    * ``input_price_per_mtok`` / ``output_price_per_mtok`` -- prices per million tokens
      for ``model.usage.cost``.

    Raises :class:`InputError` / :class:`~byzllm.errors.ConfigError` for bad settings.
    """
    _provider, model_name, factory = resolve_provider(name)
    if cache_mode not in _CACHE_MODES:
        raise InputError(f"cache_mode must be one of {list(_CACHE_MODES)}, got {cache_mode!r}")
    if base_url is not None:
        check_base_url(base_url)
    if api_key_env:  # (None or empty: no key)
        check_api_key_env(api_key_env)
    if not timeout_s > 0:  # NaN too
        raise InputError(f"timeout_s must be > 0, got {timeout_s}")
    if max_concurrency < 1:
        raise InputError(f"max_concurrency must be >= 1, got {max_concurrency}")
    if retry is not None and not isinstance(retry, RetryPolicy):
        try:
            retry = RetryPolicy.model_validate(dict(retry))
        except ValueError as exc:
            raise InputError(f"invalid retry settings: {exc}") from None
    settings = ProviderSettings(
        base_url=base_url,
        api_key_env=api_key_env,
        timeout_s=timeout_s,
        max_concurrency=max_concurrency,
    )
    api = factory(model_name, settings)
    response_cache = None
    # read-only never creates a cache that does not exist yet: all misses.
    if (
        cache is not None
        and cache_mode != "off"
        and (cache_mode != "read-only" or os.path.exists(cache))
    ):
        response_cache = open_cache(cache, read_only=cache_mode == "read-only")
    return Model(
        api,
        max_concurrency=max_concurrency,
        cache=response_cache,
        cache_mode=cache_mode,
        cache_salt=cache_salt,
        cache_endpoint=cache_endpoint,
        max_top_logprobs=max_top_logprobs,
        require_logprobs=require_logprobs,
        retry=retry,
        input_price_per_mtok=input_price_per_mtok,
        output_price_per_mtok=output_price_per_mtok,
        adaptive_timeout=adaptive_timeout,
    )
