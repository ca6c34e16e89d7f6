"""Experiment configs: pydantic models loaded from YAML, overridable from the command line.

A config validates completely before any unit runs. Every problem (an unknown key, a wrong
type, an impossible value, a data file that does not exist) is reported in ONE
:class:`~byzllm.errors.ConfigError` whose message lists them all, so the user fixes the file
once instead of once per error.
"""

from __future__ import annotations

import contextlib
import copy
import difflib
import math
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Literal, Self, TypeVar, Union, get_args, get_origin

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    ValidationError,
    ValidationInfo,
    model_validator,
)
from pydantic.fields import FieldInfo
from pydantic_core import PydanticCustomError, PydanticUndefined

from byzllm._files import path_kind
from byzllm._strict import StrictNumbers
from byzllm.errors import ConfigError

__all__ = [
    "MAX_UNITS",
    "ConfigError",
    "ExistingDir",
    "ExistingFile",
    "ExistingPath",
    "ExperimentConfig",
    "PathKind",
    "apply_overrides",
    "check_grid",
    "config_path",
    "format_validation_error",
    "load_config",
    "parse_overrides",
    "resolve_config_path",
    "validation_problems",
]

ConfigT = TypeVar("ConfigT", bound=BaseModel)

#: At most this many problems are spelled out in one message; the rest are counted.
_MAX_LISTED_ERRORS = 8
_MAX_VALUE_CHARS = 60

#: The most units one run (one stage of a pipeline) may have. A config whose grid multiplies
#: past it is refused when it loads, before any unit is built: building a unit takes about
#: 2 KB and 0.04 ms, so a grid of billions filled memory for minutes without a word. The
#: largest documented runs have about 12,000 units.
MAX_UNITS = 10_000_000


def check_grid(axes: Mapping[str, int], stage: str | None = None) -> None:
    """Refuse a grid of more than :data:`MAX_UNITS` units with a
    :class:`~byzllm.errors.ConfigError` naming its axes. ``axes``: each axis's name and
    number of values, the units being their product; ``stage``: which stage of a pipeline
    the grid is (``None`` for a one-stage run)."""
    units = math.prod(axes.values())
    if units > MAX_UNITS:
        factors = " × ".join(f"{size:,} {name}" for name, size in axes.items())
        where = f"the {stage} stage" if stage else "the run"
        raise ConfigError(
            f"{where} would have {units:,} units ({factors}), more than MAX_UNITS = "
            f"{MAX_UNITS:,}: make an axis smaller or split the run"
        )


class ExperimentConfig(StrictNumbers):
    """Base class of experiment configs (and of their nested sections).

    Unknown keys are errors (``extra="forbid"``): a misspelt option must never be silently
    ignored. Defaults are validated too, and assignments after loading are re-validated.
    ``true`` / ``false`` where a number is wanted is refused
    (:class:`byzllm._strict.StrictNumbers`).
    """

    model_config = ConfigDict(extra="forbid", validate_default=True, validate_assignment=True)

    @property
    def cpu_bound(self) -> bool:
        """Whether this config's units only compute (simulated agents, no model calls): then
        ``--executor auto`` may spread a large run over worker processes. False unless a
        config says otherwise (``ConsensusConfig`` does when every agent is simulated)."""
        return False

    def unit_grids(self) -> dict[str, dict[str, int]]:
        """The grids of units this config expands, counted from the config alone: per stage
        (``""`` for a one-stage run), each axis's name and number of values. An axis a file
        or a split decides counts the most the config lets it hold. Checked against
        :data:`MAX_UNITS` when the config validates (:func:`check_grid`); none by default
        (a section, a config of no grid)."""
        return {}

    @model_validator(mode="after")
    def _grids_within_bound(self) -> Self:
        # Here, not when the units are built: that alone would run out of memory first.
        for stage, axes in self.unit_grids().items():
            check_grid(axes, stage or None)
        return self


# --- paths ----------------------------------------------------------------------------------

#: What a path field names: an existing ``file``, ``directory`` or either (``path``), or an
#: ``output`` that may not exist yet (a cache the run creates).
PathKind = Literal["file", "directory", "path", "output"]


def _kind_ok(candidate: Path, kind: PathKind) -> bool:
    if kind == "file":
        return candidate.is_file()
    if kind == "directory":
        return candidate.is_dir()
    return candidate.exists()


def resolve_config_path(
    value: str | os.PathLike[str],
    *,
    config_dir: str | os.PathLike[str] | None,
    kind: PathKind,
    what: str | None = None,
) -> Path:
    """The one rule for every path in a config, as an absolute path.

    ``~`` is expanded. A relative path is looked up beside the config file first
    (``config_dir``; ``None`` when there is no config file), then in the working directory.
    ``kind="output"`` takes the first place where the path already exists, else the one beside
    the config (the working directory without a config file). Raises
    :class:`~byzllm.errors.ConfigError` naming every place it looked (``what``: how the
    message names the missing thing, default the kind: ``file not found: ...``).
    """
    path = Path(value)
    with contextlib.suppress(RuntimeError):  # "~nobody": no such user, keep it as written
        path = path.expanduser()
    places: list[tuple[Path, str]] = []  # (folder looked in, what it is)
    if not path.is_absolute():
        cwd = Path.cwd().resolve()
        base = None if config_dir is None else Path(config_dir).resolve()
        if base is None:
            places = [(cwd, "the working directory")]
        elif base == cwd:
            places = [(cwd, "beside the config, the working directory")]
        else:
            places = [(base, "beside the config"), (cwd, "the working directory")]
    candidates = [folder / path for folder, _ in places] if places else [path]
    for candidate in candidates:
        if _kind_ok(candidate, kind):
            return candidate.resolve()
    if kind == "output":
        return candidates[0].resolve()
    what = what or kind
    for candidate in candidates:
        # There, but of the wrong kind (a folder for a file): "not found" would be untrue.
        found = path_kind(candidate)
        if found is not None:
            wanted = "a folder" if kind == "directory" else "a file"
            raise ConfigError(f"{what} {value}: {candidate} is {found}, not {wanted}")
    looked = " and ".join(f"{folder} ({what_it_is})" for folder, what_it_is in places)
    raise ConfigError(f"{what} not found: {value}" + (f", looked in {looked}" if looked else ""))


def _config_dir(info: ValidationInfo) -> Any:
    context = info.context if isinstance(info.context, Mapping) else {}
    return context.get("config_dir")


def config_path(
    value: str | os.PathLike[str], info: ValidationInfo, kind: PathKind, what: str | None = None
) -> Path:
    """:func:`resolve_config_path` inside a pydantic validator (the config's folder comes from
    :func:`load_config`'s validation context); a missing path is a validation error."""
    try:
        return resolve_config_path(value, config_dir=_config_dir(info), kind=kind, what=what)
    except ConfigError as err:
        raise PydanticCustomError("path_not_found", "{message}", {"message": str(err)}) from None


def recorded_digest(
    path: str | os.PathLike[str],
    given: str,
    digest: str,
    what: str,
    *,
    kind: str = "data_file",
) -> str:
    """``digest``, the content digest of the file at ``path`` now, refusing a ``given`` one
    that differs (a validation error of ``kind``): a config recorded with a file's digest and
    validated again (a resumed run, ``sim fit``, each unit of a run) must find in the file the
    ``what`` ("data", "graph", "problems") its results are of. An empty ``given`` is none."""
    if given and given != digest:
        raise PydanticCustomError(
            kind,
            "{path} no longer holds the {what} this config was recorded with "
            "(digest {given}, now {digest})",
            {"path": str(path), "what": what, "given": given, "digest": digest},
        )
    return digest


def _existing_path(value: Path, info: ValidationInfo) -> Path:
    return config_path(value, info, "path")


def _existing_file(value: Path, info: ValidationInfo) -> Path:
    return config_path(value, info, "file")


def _existing_dir(value: Path, info: ValidationInfo) -> Path:
    return config_path(value, info, "directory")


#: A path that must exist when the config is validated (resolved to an absolute path).
#: Relative paths are looked up beside the config file first, then in the working directory.
ExistingPath = Annotated[Path, AfterValidator(_existing_path)]
#: Like :data:`ExistingPath`, but must be a regular file.
ExistingFile = Annotated[Path, AfterValidator(_existing_file)]
#: Like :data:`ExistingPath`, but must be a directory.
ExistingDir = Annotated[Path, AfterValidator(_existing_dir)]


# --- YAML ------------------------------------------------------------------------------------


class _StrictLoader(yaml.SafeLoader):
    """A safe YAML loader that reads scalars by the YAML 1.2 core schema and refuses duplicate
    keys (PyYAML silently keeps the last one).

    PyYAML follows YAML 1.1, where ``off``/``on``/``yes``/``no`` are booleans, ``012`` is octal
    (10) while ``018`` is 18, and ``1:30`` is 90 (base 60): a config value would silently
    change. Here only ``true``/``false`` are booleans, an integer written in decimal is decimal
    even with leading zeros (``012`` is 12), ``0o``/``0x`` mark octal and hexadecimal, and
    anything else (``on``, ``1:30``, ``1_000``, ``2024-01-01``) is a string. Merge keys
    (``<<: *anchor``) still work, a key written beside them overriding the merged one.
    """

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._flattened: set[int] = set()  # ids of mappings whose merge keys are resolved

    def flatten_mapping(self, node: yaml.MappingNode) -> None:
        """Check a mapping's own keys for duplicates, then merge its ``<<`` mappings in front
        of them (so that its own keys win; of ``<<: [*a, *b]``, ``a``'s win over ``b``'s).
        Merging rewrites the node, so each node is checked and merged once: a merged key
        beside the node's own is an override, not a duplicate. Our own merge, not PyYAML's:
        PyYAML 6.0.4 changed which of two merged mappings wins."""
        if id(node) in self._flattened:
            return
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == _MERGE_TAG:
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                duplicate = key in seen
            except TypeError:  # a list or mapping as a key
                raise yaml.constructor.ConstructorError(
                    None, None, "found unhashable key", key_node.start_mark
                ) from None
            seen.add(key)
            if duplicate:
                mark = key_node.start_mark
                raise ConfigError(
                    f"duplicate key {key!r} at line {mark.line + 1}, column {mark.column + 1}"
                )
        merged: list[tuple[yaml.Node, yaml.Node]] = []
        own: list[tuple[yaml.Node, yaml.Node]] = []
        for key_node, value_node in node.value:
            if key_node.tag != _MERGE_TAG:
                if key_node.tag == "tag:yaml.org,2002:value":
                    key_node.tag = "tag:yaml.org,2002:str"
                own.append((key_node, value_node))
                continue
            sources = (
                value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
            )
            pairs: list[tuple[yaml.Node, yaml.Node]] = []
            # Later pairs override earlier ones when the mapping is built: the first source
            # of a list goes last so that it wins.
            for source in reversed(sources):
                if not isinstance(source, yaml.MappingNode):
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping",
                        node.start_mark,
                        f"expected a mapping or list of mappings for merging, found {source.id}",
                        source.start_mark,
                    )
                self.flatten_mapping(source)
                pairs.extend(source.value)
            merged.extend(pairs)
        node.value = merged + own
        self._flattened.add(id(node))


_MERGE_TAG = "tag:yaml.org,2002:merge"
_INT_DEC = re.compile(r"[-+]?[0-9]+")
_INT_OCT = re.compile(r"0o[0-7]+")
_INT_HEX = re.compile(r"0x[0-9a-fA-F]+")
_FLOAT = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?")
_INF = re.compile(r"[-+]?\.(?:inf|Inf|INF)")
_NAN = re.compile(r"\.(?:nan|NaN|NAN)")
_TRUE = ("true", "True", "TRUE")
_FALSE = ("false", "False", "FALSE")

# A fresh table, so that none of the 1.1 resolvers PyYAML registers on SafeLoader is kept; then
# the YAML 1.2 core schema (ints before floats: "12" matches both patterns).
_StrictLoader.yaml_implicit_resolvers = {}
for _tag, _pattern, _first in [
    ("null", r"~|null|Null|NULL|", ["~", "n", "N", ""]),
    ("bool", "|".join(_TRUE + _FALSE), list("tTfF")),
    ("int", f"{_INT_DEC.pattern}|{_INT_OCT.pattern}|{_INT_HEX.pattern}", list("-+0123456789")),
    ("float", f"{_FLOAT.pattern}|{_INF.pattern}|{_NAN.pattern}", list("-+.0123456789")),
    ("merge", "<<", ["<"]),
]:
    _StrictLoader.add_implicit_resolver(
        f"tag:yaml.org,2002:{_tag}", re.compile(f"^(?:{_pattern})$"), _first
    )


def _scalar_error(node: yaml.ScalarNode, what: str) -> yaml.constructor.ConstructorError:
    return yaml.constructor.ConstructorError(
        None, None, f"{node.value!r} is not {what}", node.start_mark
    )


def _construct_bool(loader: _StrictLoader, node: yaml.ScalarNode) -> bool:
    text = loader.construct_scalar(node)
    if text in _TRUE or text in _FALSE:
        return text in _TRUE
    raise _scalar_error(node, "a boolean (true or false)")


def _construct_int(loader: _StrictLoader, node: yaml.ScalarNode) -> int:
    text = loader.construct_scalar(node)
    if _INT_DEC.fullmatch(text):
        return int(text, 10)  # leading zeros are decimal: 012 is 12
    if _INT_OCT.fullmatch(text):
        return int(text[2:], 8)
    if _INT_HEX.fullmatch(text):
        return int(text[2:], 16)
    raise _scalar_error(node, "an integer")


def _construct_float(loader: _StrictLoader, node: yaml.ScalarNode) -> float:
    text = loader.construct_scalar(node)
    if _FLOAT.fullmatch(text):
        return float(text)
    if _INF.fullmatch(text):
        return float("-inf") if text.startswith("-") else float("inf")
    if _NAN.fullmatch(text):
        return float("nan")
    raise _scalar_error(node, "a number")


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)  # refuses duplicates among the mapping's own keys
    mapping: dict[Any, Any] = {}
    for key_node, value_node in node.value:  # merged keys first: a later key overrides
        key = loader.construct_object(key_node, deep=True)
        mapping[key] = loader.construct_object(value_node, deep=True)
    return mapping


_StrictLoader.add_constructor("tag:yaml.org,2002:bool", _construct_bool)
_StrictLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)
_StrictLoader.add_constructor("tag:yaml.org,2002:float", _construct_float)
_StrictLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
    _construct_mapping,
)


def _read_yaml(path: Path) -> dict[str, Any]:
    if not path.is_file():
        found = path_kind(path)
        if found is None:
            raise ConfigError(f"config file not found: {path}")
        raise ConfigError(f"config file {path} is {found}, not a YAML file")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"cannot read config file {path}: {err}") from None
    try:
        data = yaml.load(text, Loader=_StrictLoader)  # a SafeLoader subclass: safe
    except ConfigError as err:
        raise ConfigError(f"{path}: {err}") from None
    except yaml.YAMLError as err:
        where = ""
        mark = getattr(err, "problem_mark", None)
        if mark is not None:
            where = f" at line {mark.line + 1}, column {mark.column + 1}"
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise ConfigError(f"{path}: invalid YAML{where}: {problem}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(
            f"{path}: the top level must be a mapping of keys to values, got {type(data).__name__}"
        )
    return data


# --- overrides -------------------------------------------------------------------------------


def _parse_scalar(text: str) -> Any:
    """Parse an override value as a YAML scalar (``3`` -> 3, ``true`` -> True, ``[1, 2]``)."""
    try:
        value = yaml.load(text, Loader=_StrictLoader)  # a SafeLoader subclass: safe
    except yaml.YAMLError:
        return text
    # "a: b" is a YAML mapping, but on a command line it almost surely means the string.
    if isinstance(value, (dict, list)) and not text.lstrip().startswith(("{", "[")):
        return text
    return value


def parse_overrides(items: Sequence[str]) -> dict[str, Any]:
    """Parse ``KEY=VALUE`` strings (``--set a.b=3``) into ``{"a.b": 3}``.

    Values are YAML scalars, read as config files are (YAML 1.2): ``3`` is an int (``012`` is
    12), ``0.5`` a float, ``true``/``false`` a bool, ``null`` None, ``[1, 2]`` a list, anything
    else a string (``off``, ``1:30``). Quote to force a string: ``name='"3"'``.

    The mapping keeps the command line's order, a repeated key at its last place:
    :func:`apply_overrides` applies them in that order, so the last word wins.
    """
    overrides: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key or any(not part for part in key.split(".")):
            raise ConfigError(f"--set expects KEY=VALUE with a dotted key (a.b=3), got {item!r}")
        # A repeated key moves to the end: left where it first came, its last value would be
        # applied before a section set in between (`-s d.n=1 -s d={seed: 5} -s d.n=2`),
        # which then replaced it.
        overrides.pop(key, None)
        try:
            overrides[key] = _parse_scalar(raw)
        except ConfigError as err:  # a duplicate key in a {...} value
            raise ConfigError(f"--set {item}: {err}") from None
    return overrides


def apply_overrides(data: dict[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Set dotted keys in a nested mapping (in place; returns it). ``"a.0.b"`` indexes lists."""
    for dotted, value in overrides.items():
        parts = dotted.split(".")
        node: Any = data
        for depth, part in enumerate(parts):
            last = depth == len(parts) - 1
            where = ".".join(parts[:depth]) or "<top>"
            if isinstance(node, dict):
                if last:
                    node[part] = value
                else:
                    child = node.get(part)
                    if child is None:
                        child = node[part] = {}
                    node = child
            elif isinstance(node, list):
                if not part.lstrip("-").isdigit() or not -len(node) <= int(part) < len(node):
                    raise ConfigError(
                        f"cannot set {dotted}: {where} is a list of {len(node)} items "
                        f"and {part!r} is not a valid index"
                    )
                if last:
                    node[int(part)] = value
                else:
                    node = node[int(part)]
            else:
                raise ConfigError(f"cannot set {dotted}: {where} is not a mapping")
    return data


# --- validation ------------------------------------------------------------------------------


def _clip(text: str) -> str:
    return text if len(text) <= _MAX_VALUE_CHARS else text[: _MAX_VALUE_CHARS - 1] + "…"


def _short(value: Any) -> str:
    return _clip(repr(value))


def _section_model(annotation: Any) -> type[BaseModel] | None:
    """The config section an annotation holds (``Section``, ``Section | None``,
    ``list[Section]``, ``dict[str, Section]``), or ``None`` for a plain value."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    models = {m for arg in get_args(annotation) if (m := _section_model(arg)) is not None}
    return models.pop() if len(models) == 1 else None


#: ``json_schema_extra`` of a field whose value enters its units' ids though the config
#: derives it (consensus ``graph_files``, the content of the graph files), or names what its
#: units carry (CodeGen ``problems_digest``: each unit holds its problem): a recorded config
#: without it was written before the field existed and counts as holding its default, so a
#: run recorded then is not taken for one of a config that sets it (its units would run
#: again beside the old ones, and the report would count both).
ABSENT_IS_DEFAULT: dict[str, Any] = {"absent_is_default": True}


def absent_is_default(field: FieldInfo) -> bool:
    """Whether ``field`` is marked :data:`ABSENT_IS_DEFAULT`: derived by the config, never a
    key a user is told to write."""
    extra = field.json_schema_extra
    return isinstance(extra, dict) and extra.get("absent_is_default") is True


def _known_fields(model: type[BaseModel], loc: Sequence[int | str]) -> list[str]:
    """Field names of the (nested) model that ``loc`` points into, for spelling suggestions
    (list indices and dict keys of sections are stepped over)."""
    current: type[BaseModel] | None = model
    for part in loc:
        if current is None:
            return []
        field = current.model_fields.get(str(part))
        if field is None:
            continue  # an index into a list (or a key of a dict) of sections
        current = _section_model(field.annotation)
    if current is None:
        return []
    return [name for name, field in current.model_fields.items() if not absent_is_default(field)]


def _key_paths(model: type[BaseModel], prefix: str = "", depth: int = 0) -> list[str]:
    """Every dotted key of a config model, sections included (``dataset``, ``dataset.n``)."""
    keys: list[str] = []
    for name, field in model.model_fields.items():
        if absent_is_default(field):
            continue  # derived by the config (a file's digest): not a key to suggest
        keys.append(prefix + name)
        section = _section_model(field.annotation)
        if section is not None and depth < 8:
            keys += _key_paths(section, f"{prefix}{name}.", depth + 1)
    return keys


def _single_leaf(value: Any) -> list[str]:
    """The dotted path inside ``value`` when it is a mapping with exactly one leaf
    (``{"n": 10}`` -> ``["n"]``), else ``[]``."""
    path: list[str] = []
    while isinstance(value, Mapping) and len(value) == 1:
        key, value = next(iter(value.items()))
        path.append(str(key))
    return path


def _suggest(model: type[BaseModel], loc: Sequence[int | str], tail: Sequence[str]) -> str | None:
    """The valid key nearest to the unknown one (``loc`` where pydantic found it, ``tail``
    the path the user wrote below it): a sibling spelt alike, the keys below it matched part
    by part, else, for a section that does not exist, the dotted key anywhere in the config
    closest to the whole key (``graph.n`` -> ``dataset.n``) or a key of the same name, the
    top level's too (``dataset.problems`` -> ``problems``). Named as ``--set`` takes it, with
    an index into each list of sections it goes through (:func:`_settable`)."""
    key = str(loc[-1])
    if len(key) > 200:
        return None
    parents = [str(part) for part in loc[:-1]]
    written = [*parents, key, *tail]
    indices = [part for part in written if part.isdigit()]
    everywhere = _key_paths(model)
    sibling = difflib.get_close_matches(key, _known_fields(model, loc[:-1]), n=1)
    if sibling:
        found = [p for p in parents if not p.isdigit()] + sibling
        for part in (p for p in tail if not p.isdigit()):
            below = _children(everywhere, ".".join(found))
            near = [part] if part in below else difflib.get_close_matches(part, below, n=1)
            if not near:
                break
            found.append(near[0])
        return _settable(model, found, indices)
    wanted = ".".join(p for p in written if not p.isdigit())
    if tail:  # a section that does not exist: the whole key may be near a valid one
        close = difflib.get_close_matches(wanted, everywhere, n=1, cutoff=0.7)
        if close:
            return _settable(model, close[0].split("."), indices)
    leaf = wanted.rsplit(".", 1)[-1]
    # The same name in another section, the top level too (`dataset.problems` means
    # `problems`). Under a section that exists, only a top-level key: a key in a list of
    # sections (`compositions.attack`) is ambiguous without the item the user meant.
    same_leaf = [k for k in everywhere if k.rsplit(".", 1)[-1] == leaf and (tail or k == leaf)]
    if same_leaf:
        best = max(same_leaf, key=lambda k: difflib.SequenceMatcher(None, wanted, k).ratio())
        return _settable(model, best.split("."), indices)
    return None


def _children(keys: Sequence[str], section: str) -> list[str]:
    """The names of the keys directly below the dotted ``section`` among ``keys``."""
    prefix = f"{section}."
    return [k[len(prefix) :] for k in keys if k.startswith(prefix) and "." not in k[len(prefix) :]]


def _settable(model: type[BaseModel], names: Sequence[str], indices: Sequence[str]) -> str:
    """The field path ``names`` as a ``--set`` key: after each list of sections that the key
    goes into, the index the user wrote (``indices``, in order), else ``0``. Without it,
    ``compositions.strong`` was suggested, which ``--set`` refuses ("not a valid index")."""
    given = iter(indices)
    parts: list[str] = []
    current: type[BaseModel] | None = model
    for depth, name in enumerate(names):
        parts.append(name)
        field = current.model_fields.get(name) if current is not None else None
        if field is None:
            parts += names[depth + 1 :]
            break
        current = _section_model(field.annotation)
        if depth < len(names) - 1 and _list_of_sections(field.annotation):
            parts.append(next(given, "0"))
    return ".".join(parts)


def _list_of_sections(annotation: Any) -> bool:
    """Whether a field holds a list of sections (``list[Section]``, optional or not)."""
    if get_origin(annotation) in (list, tuple, Sequence):
        return _section_model(annotation) is not None
    return any(_list_of_sections(arg) for arg in get_args(annotation) if arg is not type(None))


#: Error kinds whose message names the value itself: a path (as found, not as written), a
#: profile file, a graph file that does not load, a data-set file that changed, a secret
#: that must not be echoed.
_NAMES_ITS_VALUE = ("path_not_found", "profile_file", "graph_file", "data_file", "secret_in_value")
#: Error kinds of validators (``raise ValueError`` / ``assert``), as opposed to pydantic's own.
_VALIDATOR_KINDS = ("value_error", "assertion_error")


def _got(kind: str, message: str, item: Mapping[str, Any]) -> str:
    """`` (got VALUE)`` after a problem's message, or ``""`` where the value would be said
    twice or would not help: the message names it already (a validator that quotes the
    string it refuses, a path, a secret), or it is a whole section: a model validator is
    handed its section with every default filled in, and its message names the keys at
    fault."""
    if kind in _NAMES_ITS_VALUE or "input" not in item:
        return ""
    value = item["input"]
    if isinstance(value, Mapping | BaseModel) and kind in _VALIDATOR_KINDS:
        return ""
    if isinstance(value, str) and repr(value) in message:
        return ""
    return f" (got {_short(value)})"


def _union_at(model: type[BaseModel], loc: Sequence[int | str]) -> tuple[int, list[str]] | None:
    """Where ``loc`` goes into a union field (``int | tuple[int, int]``, not a mere ``X |
    None``), whose members pydantic names in the loc after it, and the members described;
    ``None`` when it goes into none."""
    annotation: Any = model
    for depth, part in enumerate(loc):
        annotation = _unwrapped(annotation)
        members = [arg for arg in get_args(annotation) if arg is not type(None)]
        if get_origin(annotation) in (Union, UnionType) and len(members) > 1:
            return depth, [_described(member) for member in members]
        args = get_args(annotation)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            field = annotation.model_fields.get(str(part))
            if field is None:
                return None
            annotation = field.annotation
        elif get_origin(annotation) in (list, tuple, Sequence, dict, Mapping) and args:
            # An item: a list's or a mapping's values, a fixed tuple's own place.
            fixed = get_origin(annotation) is tuple and Ellipsis not in args
            at = part if fixed and isinstance(part, int) and part < len(args) else -1
            annotation = args[at]
        else:
            return None
    return None


def _unwrapped(annotation: Any) -> Any:
    """``annotation`` without ``Annotated`` and without ``| None`` around one type."""
    if get_origin(annotation) is Annotated:
        return _unwrapped(get_args(annotation)[0])
    members = [arg for arg in get_args(annotation) if arg is not type(None)]
    if get_origin(annotation) in (Union, UnionType) and len(members) == 1:
        return _unwrapped(members[0])
    return annotation


#: How a config error names what a union member takes, one and many.
_DESCRIBED: dict[Any, tuple[str, str]] = {
    bool: ("true or false", "booleans"),
    int: ("an integer", "integers"),
    float: ("a number", "numbers"),
    str: ("a string", "strings"),
}


def _described(annotation: Any) -> str:
    """What a value of ``annotation`` is, for a user: ``an integer``, ``a list of 2
    integers``, ``a section``, ``one of 'a', 'b'``."""
    annotation = _unwrapped(annotation)
    if annotation in _DESCRIBED:
        return _DESCRIBED[annotation][0]
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Literal:
        return "one of " + ", ".join(repr(arg) for arg in args)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "a section"
    if origin in (dict, Mapping):
        return "a mapping"
    if origin in (list, tuple, Sequence, set, frozenset):
        items = [arg for arg in args if arg is not Ellipsis]
        many = _DESCRIBED.get(items[0], ("", "values"))[1] if len(set(items)) == 1 else "values"
        fixed = origin is tuple and Ellipsis not in args
        return f"a list of {len(items)} {many}" if fixed else f"a list of {many}"
    return getattr(annotation, "__name__", str(annotation))


def validation_problems(
    err: ValidationError, model: type[BaseModel], *, loc: Sequence[int | str] = ()
) -> str:
    """Every problem of ``err`` as ``where: what (got value)``, joined by ``; `` (the first
    few spelt out, the rest counted). ``loc`` is put in front of every ``where``: the place
    of ``model`` inside a larger config, for a validator that checks a section against
    ``model`` and reports its problems as its own."""
    prefix = [str(part) for part in loc]
    problems: list[str] = []
    unions: set[tuple[Any, ...]] = set()  # the union fields already reported
    for item in err.errors(include_url=False):
        inner = tuple(item.get("loc", ()))
        parts = [*prefix, *(str(part) for part in inner)]
        kind = item.get("type", "")
        union = _union_at(model, inner)
        if union is not None:
            # pydantic reports each member of a union that refused the value, named by its
            # type (`steps.int: ...; steps.tuple[int, int].1: ...`): one line says them all.
            depth, members = union
            if inner[:depth] not in unions:
                unions.add(inner[:depth])
                where = _clip(".".join(parts[: len(prefix) + depth]))
                # The value as given: a member's own error holds it (a deeper one, its part).
                whole = [e for e in err.errors() if tuple(e["loc"]) == inner[: depth + 1]]
                got = _got("union", "", whole[0]) if whole else ""
                problems.append(f"{where}: expects {' or '.join(members)}{got}")
            continue
        if kind == "extra_forbidden":
            # A section that does not exist (graph: {n: 10}) is named with the key below
            # it, as the user wrote it (--set graph.n=10).
            tail = _single_leaf(item.get("input"))
            hint = _suggest(model, inner, tail)
            where = _clip(".".join([*parts, *tail]))
            text = f"{where}: unknown key" + (f" (did you mean {hint!r}?)" if hint else "")
        elif kind == "missing":
            text = f"{_clip('.'.join(parts) or '<top>')}: required key is missing"
        else:
            message = str(item.get("msg", "invalid value")).removeprefix("Value error, ")
            # The whole config's own validator (loc ()) names its keys in its message.
            text = f"{_clip('.'.join(parts))}: {message}" if parts else message
            text += _got(kind, message, item)
        problems.append(text)
    shown = problems[:_MAX_LISTED_ERRORS]
    if len(problems) > len(shown):
        shown.append(f"and {len(problems) - len(shown)} more")
    return "; ".join(shown)


def format_validation_error(
    err: ValidationError,
    model: type[BaseModel],
    source: str | None = None,
    *,
    what: str = "config",
) -> str:
    """One line that lists every problem in a config: ``where: what (got value)``, after
    ``invalid <what>`` (and the config's ``source``); see :func:`validation_problems`."""
    prefix = f"invalid {what} {source}" if source else f"invalid {what}"
    return f"{prefix}: " + validation_problems(err, model)


def _field_default(model: type[BaseModel], name: str) -> tuple[Any, Any]:
    """(default value as plain data or None, the field's model class or None)."""
    field = model.model_fields.get(name)
    if field is None:
        return None, None
    annotation = field.annotation
    sub = annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None
    if field.default_factory is not None:
        try:
            value = field.default_factory()  # type: ignore[call-arg]
        except TypeError:  # a factory that needs the other fields' data: leave it to pydantic
            value = None
    elif field.default is PydanticUndefined:
        value = None
    else:
        value = field.default
    return copy.deepcopy(_plain(value)), sub


def _plain(value: Any) -> Any:
    """A default as plain data (sections in lists and dicts too), for dotted overrides to
    descend into (``agents.0.attack=x`` on a default list of sections)."""
    if isinstance(value, BaseModel):
        return value.model_dump()
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value


def _fill_defaults(data: dict[str, Any], model: type[BaseModel], parents: Sequence[str]) -> None:
    """Copy the defaults of the sections a dotted override descends into (``seeds.1=9`` on
    a default list edits that list instead of replacing it by ``{"1": 9}``)."""
    node: Any = data
    current: type[BaseModel] | None = model
    for part in parents:
        if not isinstance(node, dict):
            return
        sub: type[BaseModel] | None = None
        if part not in node and current is not None:
            default, sub = _field_default(current, part)
            if default is None:
                return
            node[part] = default
        elif current is not None:
            sub = _field_default(current, part)[1]
        node = node[part]
        current = sub


def load_config(
    path: str | Path | None,
    model: type[ConfigT],
    overrides: Mapping[str, Any] | None = None,
) -> ConfigT:
    """Load a YAML config into ``model``, apply dotted overrides, validate everything.

    ``path=None`` starts from the model's defaults. ``overrides`` maps dotted keys to values
    (already parsed; see :func:`parse_overrides` for ``--set`` strings). Raises
    :class:`~byzllm.errors.ConfigError` (exit code 2) with every problem in one message.

    >>> class Cfg(ExperimentConfig):
    ...     n: int = 3
    >>> load_config(None, Cfg, {"n": 5}).n
    5
    """
    source: str | None = None
    config_dir: Path | None = None
    data: dict[str, Any] = {}
    if path is not None:
        file = Path(path).expanduser()
        data = _read_yaml(file)
        source = str(file)
        config_dir = file.resolve().parent
    if overrides:
        for dotted in overrides:
            _fill_defaults(data, model, dotted.split(".")[:-1])
        apply_overrides(data, overrides)
    try:
        return model.model_validate(data, context={"config_dir": config_dir})
    except ValidationError as err:
        raise ConfigError(format_validation_error(err, model, source)) from None
