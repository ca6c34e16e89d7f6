"""A run folder is bound to its config: a rerun resumes only the config it holds.

Every invocation records its resolved config in the store (``runs.config``). Rerunning into
the same folder with a different config would pool two experiments' units into one report,
so :func:`check_config` refuses it with one line naming the keys that differ. Keys that only
say how requests reach a model (the transport fields of :class:`byzllm.llm.ModelSettings`:
server URL, key variable, limits, timeouts, cache file) are not differences: a resumed
real-model run starts its server on a new port. ``force`` replaces the folder's config
instead: the units the new config shares with the old one (same id, same work) are kept,
the others are removed (:meth:`Store.drop_units_except`).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from byzllm.errors import ConfigError

from ._config import absent_is_default
from ._store import STORE_FILENAME, Store
from ._units import _transport_fields

__all__ = ["check_config", "config_differences"]

#: At most this many differing keys are named; the rest are counted.
_MAX_NAMED = 6


def _leaves(
    config: BaseModel, recorded: Mapping[str, Any], prefix: str = ""
) -> Iterator[tuple[str, Any, Any]]:
    """(dotted key, new value, recorded value) of every field both configs have (and of the
    :data:`ABSENT_IS_DEFAULT` fields the recorded one lacks, at their default), descending
    into nested config sections; transport fields are left out."""
    transport = _transport_fields(config) or {}
    for name, field in type(config).model_fields.items():
        if transport.get(name) is True:
            continue
        if name in recorded:
            old = recorded[name]
        elif absent_is_default(field):
            old = to_jsonable_python(field.get_default(call_default_factory=True))
        else:
            continue  # a field added since the run started has no recorded value
        value = getattr(config, name)
        key = f"{prefix}{name}"
        if isinstance(value, BaseModel) and isinstance(old, Mapping):
            yield from _leaves(value, old, f"{key}.")
        else:
            new = config.model_dump(mode="json", include={name}).get(name)
            yield key, new, old


def config_differences(recorded: Mapping[str, Any], config: BaseModel) -> list[str]:
    """The dotted keys whose values differ between a recorded config (its JSON dump) and
    ``config``, in field order; transport fields and fields only one side knows (added to
    or removed from the config class since) do not count, except a field marked
    :data:`ABSENT_IS_DEFAULT` that the recorded config lacks: it counts as at its default."""
    return [key for key, new, old in _leaves(config, recorded) if new != old]


def _recorded(store: Store) -> tuple[dict[str, Any], str | None] | None:
    for run in reversed(store.runs()):
        if run.get("config") is not None:
            return dict(run["config"]), run.get("config_class")
    return None


def check_config(
    run_dir: str | Path, config: BaseModel, unit_ids: Collection[str], *, force: bool = False
) -> int:
    """Refuse to run ``config`` into a folder that holds another config's run.

    Returns how many units ``force`` removed (0 when the folder is new, holds no recorded
    config, or holds the same config). Raises :class:`~byzllm.errors.ConfigError` (one
    line, exit code 2) naming the differing keys unless ``force``; with ``force`` the units
    not in ``unit_ids`` (the new grid) are removed, the shared ones kept.
    """
    folder = Path(run_dir)
    if not (folder / STORE_FILENAME).is_file():
        return 0
    with Store.open(folder) as store:
        found = _recorded(store)
    if found is None:
        return 0
    recorded, recorded_class = found
    cls = type(config)
    new_class = f"{cls.__module__}.{cls.__qualname__}"
    if recorded_class is not None and recorded_class != new_class:
        what = f"a {recorded_class.rsplit('.', 1)[-1]} run, not {cls.__name__}"
    else:
        keys = config_differences(recorded, config)
        if not keys:
            return 0
        named = ", ".join(keys[:_MAX_NAMED])
        if len(keys) > _MAX_NAMED:
            named += f" and {len(keys) - _MAX_NAMED} more"
        what = f"a run of another config (differs in {named})"
    if not force:
        raise ConfigError(
            f"{folder} holds {what}; rerun with the same config to resume it, choose "
            "another --run-dir, or add --force to replace it (units the two configs "
            "share are kept)"
        )
    with Store(folder, create=False) as store:
        return store.drop_units_except(unit_ids)
