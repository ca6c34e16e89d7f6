"""``ModelSpec``: which model, on which endpoint, with which client settings -- and how to
build it, once per event loop (:func:`get_shared_model`)."""

from __future__ import annotations

import asyncio
import os
import threading
import weakref
from typing import Any

from pydantic import AliasChoices, ConfigDict, Field, field_validator
from pydantic_core import PydanticCustomError

from byzllm._strict import StrictNumbers

from ._cache import CacheMode
from ._model import Model
from ._retry import RetryPolicy

__all__ = ["ModelSettings", "ModelSpec", "get_shared_model"]


#: ``json_schema_extra`` of a field that only says how requests are sent (see ModelSettings).
TRANSPORT: dict[str, Any] = {"transport": True}


#: The pydantic error type of a config value that holds a secret: its error line does not
#: repeat the value (:func:`byzllm.runs.format_validation_error`).
SECRET_IN_VALUE = "secret_in_value"


class ModelSettings(StrictNumbers):
    """Where a model is served and how it is called: every :func:`get_model` setting but
    the model's name.

    Experiment configs inherit these fields to offer the same flat keys (``base_url``,
    ``api_key_env``, ``cache``, ...) next to their own ``model``. The API key itself never
    appears here: only the name of the variable holding it.

    Fields marked :data:`TRANSPORT` say how requests reach the model, not what is asked of
    it (where the server listens, the key's variable, limits, timeouts, retries, the cache
    file, prices): a run's unit ids leave them out, so the same run against a server
    restarted on another port resumes instead of starting over.
    """

    model_config = ConfigDict(extra="forbid")

    base_url: str | None = Field(
        default=None, description="OpenAI-compatible server URL", json_schema_extra=TRANSPORT
    )
    api_key_env: str | None = Field(
        default="OPENAI_API_KEY",
        description="env var with the key; null for local servers",
        json_schema_extra=TRANSPORT,
    )
    max_concurrency: int = Field(
        default=16, ge=1, description="requests in flight per endpoint", json_schema_extra=TRANSPORT
    )
    cache: str | None = Field(
        default=None, description="path of the SQLite response cache", json_schema_extra=TRANSPORT
    )
    cache_mode: CacheMode = "on"
    cache_salt: str = ""
    cache_endpoint: str | None = Field(
        default=None,
        description="the name the cache keys requests by instead of base_url (a server "
        "whose address changes between runs, serving the same model)",
        json_schema_extra=TRANSPORT,
    )
    timeout_s: float = Field(
        default=120.0, gt=0, description="cap of one request attempt", json_schema_extra=TRANSPORT
    )
    adaptive_timeout: bool = Field(
        default=True,
        description="also give up on an attempt after 8x the endpoint's p95 latency (>= 2 s)",
        json_schema_extra=TRANSPORT,
    )
    max_top_logprobs: int = Field(default=20, ge=0)
    require_logprobs: bool = True
    retry: RetryPolicy = Field(
        default_factory=RetryPolicy,
        description="RetryPolicy fields, e.g. {max_attempts: 8}",
        json_schema_extra=TRANSPORT,
    )
    input_price_per_mtok: float | None = Field(default=None, ge=0, json_schema_extra=TRANSPORT)
    output_price_per_mtok: float | None = Field(default=None, ge=0, json_schema_extra=TRANSPORT)

    @field_validator("base_url")
    @classmethod
    def _usable_url(cls, value: str | None) -> str | None:
        from byzllm.errors import InputError

        from ._factory import check_base_url, query_credential, url_has_credentials

        if value is not None:
            try:
                check_base_url(value)
            except InputError as exc:  # the config's error then names the field
                # A URL with a password or key is not echoed back in the error ("got ...").
                secret = url_has_credentials(value) or query_credential(value) is not None
                kind = SECRET_IN_VALUE if secret else "value_error"
                raise PydanticCustomError(kind, "{reason}", {"reason": str(exc)}) from None
        return value

    @field_validator("api_key_env")
    @classmethod
    def _secret_name(cls, value: str | None) -> str | None:
        from byzllm.errors import InputError

        from ._factory import check_api_key_env

        if value:
            try:
                check_api_key_env(value)
            except InputError as exc:  # the config's error then names the field
                raise PydanticCustomError("value_error", "{reason}", {"reason": str(exc)}) from None
        return value

    @field_validator("cache", mode="before")
    @classmethod
    def _path_to_str(cls, value: Any) -> Any:
        return os.fspath(value) if isinstance(value, os.PathLike) else value

    @field_validator("cache_mode", mode="before")
    @classmethod
    def _bool_to_mode(cls, value: Any) -> Any:
        # A YAML 1.1 reader (and so most YAML tools) reads a bare `off`/`on` as a boolean.
        if isinstance(value, bool):
            return "on" if value else "off"
        return value

    def kwargs(self) -> dict[str, Any]:
        """Keyword arguments of :func:`get_model` (besides the name)."""
        return {field: getattr(self, field) for field in ModelSettings.model_fields}


class ModelSpec(ModelSettings):
    """Everything :func:`get_model` needs, as a validated config block.

    Embed it in an experiment config and build the model with ``spec.build()``, or share one
    live model per event loop with :func:`get_shared_model`::

        class MyConfig(BaseModel):
            model: ModelSpec = ModelSpec(name="openai/gpt-4o-mini")

        model = cfg.model.build()      # same as get_model(cfg.model.name, **cfg.model.kwargs())

    The name may also be given under the key ``model`` (the key experiment configs use).
    """

    name: str = Field(
        validation_alias=AliasChoices("name", "model"),
        description="'provider/model', e.g. 'openai/gpt-4o-mini'",
    )

    def build(self) -> Model:
        """A new model as this spec describes (see :func:`get_shared_model` to share one)."""
        from ._factory import get_model

        return get_model(self.name, **self.kwargs())


# A model owns an HTTP client bound to the event loop that first uses it; building one costs
# a TLS context (~70 ms) and starts with no open connections. So models are shared per
# (running loop, spec) and forgotten with their loop.
_SHARED: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, Model]] = (
    weakref.WeakKeyDictionary()
)
_SHARED_LOCK = threading.Lock()


def get_shared_model(spec: ModelSpec) -> Model:
    """The model ``spec`` describes, built once per running event loop and spec.

    Every caller on the same loop with an equal spec gets the same :class:`Model`, so its
    response cache, usage counters and connections are shared (the per-endpoint concurrency
    limit is shared process-wide by :func:`get_model` anyway). Outside a running loop there
    is nothing to share with: a new model is returned.
    """
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return spec.build()
    key = spec.model_dump_json()
    with _SHARED_LOCK:
        models = _SHARED.setdefault(loop, {})
        model = models.get(key)
        if model is None:
            model = models[key] = spec.build()
    return model
