"""The model section of an experiment config: ``model`` plus the client settings, as flat keys.

Every experiment that can run on an LLM inherits :class:`ModelConfig`, so the keys are the
same everywhere (``model``, ``base_url``, ``api_key_env``, ``max_concurrency``, ``cache``,
``timeout_s``, ``retry``, ... -- the fields of :class:`byzllm.llm.ModelSettings`) and so is
the way a unit gets its live model (:meth:`ModelConfig.shared_model`)::

    agents: llm
    model: openai/gpt-4o-mini
    base_url: http://127.0.0.1:8000/v1
    api_key_env: null
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Iterable, Iterator
from typing import Any

from pydantic import BaseModel, Field, ValidationInfo, field_validator

from byzllm.errors import ConfigError
from byzllm.llm import (
    Model,
    ModelError,
    ModelSettings,
    ModelSpec,
    ModelUnreachableError,
    check_cache,
    check_endpoint,
    get_shared_model,
)

from ._config import ExperimentConfig, config_path

__all__ = [
    "ModelConfig",
    "check_caches",
    "check_endpoints",
    "idle_models",
    "request_limit",
]


class ModelConfig(ExperimentConfig, ModelSettings):
    """A config section naming a model (optional until the section runs on an LLM)."""

    model: str | None = Field(default=None, description="e.g. openai/gpt-4o-mini")

    @field_validator("cache")
    @classmethod
    def _resolve_cache(cls, value: str | None, info: ValidationInfo) -> str | None:
        # The config path rule: an existing cache beside the config, else in the working
        # directory; a new one is created beside the config. Absolute from here on.
        return str(config_path(value, info, "output")) if value else value

    def model_spec(self, **changes: Any) -> ModelSpec:
        """The :class:`~byzllm.llm.ModelSpec` of this section, with ``changes`` applied."""
        if not self.model:
            raise ConfigError("no model set (e.g. model: openai/gpt-4o-mini)")
        return ModelSpec(name=self.model, **{**self.kwargs(), **changes})

    def shared_model(self, *, salt: str | None = None) -> Model:
        """The live model, shared by every unit on the running event loop
        (:func:`~byzllm.llm.get_shared_model`).

        ``salt`` is appended to the configured ``cache_salt``: a distinct salt per repeat
        draws fresh samples from a cached run instead of replaying the first repeat.
        """
        changes: dict[str, Any] = {}
        if salt:
            changes["cache_salt"] = f"{self.cache_salt}/{salt}" if self.cache_salt else salt
        return get_shared_model(self.model_spec(**changes))


def _model_sections(config: object) -> Iterator[ModelSettings]:
    """Every :class:`~byzllm.llm.ModelSettings` inside a config (sections, lists, dicts)."""
    for _, section in _sections_at(config, ""):
        yield section


def check_caches(config: object) -> None:
    """Check every response cache a config's model sections would use, before a run starts.

    A section uses its ``cache`` when it names a model and ``cache_mode`` is not ``off``
    (``read-only`` on a cache that does not exist opens nothing). A damaged or foreign
    cache file raises :class:`~byzllm.llm.CacheError` (one line naming the file and the
    fix, exit code 2), so the run stops before its first unit instead of failing them all.
    """
    checked: set[str] = set()
    for section in _model_sections(config):
        name = getattr(section, "model", None) or getattr(section, "name", None)
        cache = section.cache
        if not name or not cache or section.cache_mode == "off":
            continue
        if section.cache_mode == "read-only" and not os.path.exists(cache):
            continue
        if cache not in checked:
            checked.add(cache)
            check_cache(cache)


def _live_sections(config: object) -> Iterator[ModelSpec]:
    """The model of every section a run will call: it names a model and, where the section
    chooses between simulated agents and an LLM (``backend`` or ``agents``), chooses the LLM."""
    for section in _model_sections(config):
        name = getattr(section, "model", None) or getattr(section, "name", None)
        mode = getattr(section, "backend", None) or getattr(section, "agents", None)
        if not isinstance(name, str) or not name or (isinstance(mode, str) and mode != "llm"):
            continue
        yield ModelSpec(name=name, **section.kwargs())


def idle_models(config: object) -> list[str]:
    """One line for each section of ``config`` that names a model or a ``base_url`` but runs
    on simulated agents (its ``backend`` or ``agents`` is not ``llm``): that model is not
    called, which a config file meant for an LLM run would otherwise hide."""
    lines = []
    for where, section in _sections_at(config, ""):
        name = getattr(section, "model", None) or getattr(section, "name", None)
        url = section.base_url
        key = "backend" if hasattr(section, "backend") else "agents"
        mode = getattr(section, key, None)
        if not (name or url) or not isinstance(mode, str) or mode == "llm":
            continue
        named = " and ".join(
            f"{what} {value}" for what, value in (("model", name), ("base_url", url)) if value
        )
        switch = f"{where}.{key}" if where else key
        lines.append(
            f"{where or 'the config'} names {named} but {switch} is {mode}: that model is not "
            f"called; set {switch}=llm to run on it"
        )
    return lines


def _sections_at(value: Any, where: str, depth: int = 0) -> Iterator[tuple[str, ModelSettings]]:
    """Every :class:`~byzllm.llm.ModelSettings` inside a config (sections, lists, dicts) with
    its dotted key."""
    if depth > 20:
        return
    if isinstance(value, ModelSettings):
        yield where, value
    if isinstance(value, BaseModel):
        inner: Iterable[tuple[object, Any]] = (
            (name, getattr(value, name, None)) for name in type(value).model_fields
        )
    elif isinstance(value, dict):
        inner = value.items()
    elif isinstance(value, list | tuple):
        inner = enumerate(value)
    else:
        return
    for key, item in inner:
        yield from _sections_at(item, f"{where}.{key}" if where else str(key), depth + 1)


def request_limit(config: object) -> int | None:
    """The smallest ``max_concurrency`` among the model endpoints a config's sections will
    call (as :func:`check_endpoints` finds them), or ``None`` when it calls none: what the
    runner tells an executor that runs units in several processes
    (:meth:`~byzllm.runs.Executor.limit_requests`)."""
    limits = [spec.max_concurrency for spec in _live_sections(config)]
    return min(limits) if limits else None


async def check_endpoints(config: object) -> ModelError | None:
    """Send one tiny request to each model endpoint a config's sections will call, before
    the run's first unit (:func:`byzllm.llm.check_endpoint`): the first error that would
    stop every unit (nothing listening, a rejected key, an unknown model), or ``None``.

    A section whose response cache exists (``cache_mode`` ``on`` or ``read-only``) may run
    from it with no server: an unreachable endpoint there is a warning on stderr, not a stop.
    """
    specs: dict[tuple[str, str | None, str | None], ModelSpec] = {}
    for spec in _live_sections(config):
        specs.setdefault((spec.name, spec.base_url, spec.api_key_env), spec)
    if not specs:
        return None
    found = await asyncio.gather(*(check_endpoint(spec) for spec in specs.values()))
    for spec, error in zip(specs.values(), found, strict=True):
        if error is None:
            continue
        cached = (
            spec.cache and spec.cache_mode in ("on", "read-only") and os.path.exists(spec.cache)
        )
        if isinstance(error, ModelUnreachableError) and cached:
            print(
                f"warning: {error}; going on with the responses cached in {spec.cache}",
                file=sys.stderr,
                flush=True,
            )
            continue
        return error
    return None
