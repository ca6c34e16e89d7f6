"""``ModelSpec``: the model part of an experiment configuration."""

from __future__ import annotations

import os
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ._cache import CacheMode
from ._model import Model
from ._retry import RetryPolicy

__all__ = ["ModelSpec"]


class ModelSpec(BaseModel):
    """Everything :func:`get_model` needs, as a validated config block.

    Embed it in an experiment config and build the model with ``spec.build()``::

        class MyConfig(BaseModel):
            model: ModelSpec = ModelSpec(name="openai/gpt-4o-mini")

        model = cfg.model.build()      # same as get_model(**cfg.model.kwargs())

    The API key itself never appears here: only the name of the variable holding it.
    """

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="'provider/model', e.g. 'openai/gpt-4o-mini'")
    base_url: str | None = Field(default=None, description="OpenAI-compatible server URL")
    api_key_env: str | None = Field(default="OPENAI_API_KEY", description="variable with the key")
    max_concurrency: int = Field(default=16, ge=1)
    cache: str | None = Field(default=None, description="path of the SQLite response cache")
    cache_mode: CacheMode = "on"
    cache_salt: str = ""
    timeout_s: float = Field(default=120.0, gt=0)
    max_top_logprobs: int = Field(default=20, ge=0)
    require_logprobs: bool = True
    retry: RetryPolicy = Field(default_factory=RetryPolicy)
    input_price_per_mtok: float | None = Field(default=None, ge=0)
    output_price_per_mtok: float | None = Field(default=None, ge=0)

    @field_validator("cache", mode="before")
    @classmethod
    def _path_to_str(cls, value: Any) -> Any:
        return os.fspath(value) if isinstance(value, os.PathLike) else value

    def kwargs(self) -> dict[str, Any]:
        """Keyword arguments of :func:`get_model` (besides ``name``)."""
        values = {field: getattr(self, field) for field in type(self).model_fields}
        values.pop("name")
        return values

    def build(self) -> Model:
        """The model this spec describes."""
        from ._factory import get_model

        return get_model(self.name, **self.kwargs())
