"""Loading a monitors file never fails with anything but one InputError naming the file."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from byzllm.errors import InputError
from byzllm.monitor import MonitorSet, train_monitor_set

from ._fixtures import train_set, validation_set

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=20,
)
_GOOD = train_monitor_set(train_set(), validation_set(), roles=["accuser"])[0].to_dict()


def _replace_leaf(data: Any, path: list[int], value: Any) -> Any:
    """``data`` with the leaf that ``path`` (indices into keys) picks replaced by ``value``."""
    if not path or not isinstance(data, dict | list) or not data:
        return value
    keys = list(data) if isinstance(data, dict) else list(range(len(data)))
    key = keys[path[0] % len(keys)]
    copy: Any = dict(data) if isinstance(data, dict) else list(data)
    copy[key] = _replace_leaf(data[key], path[1:], value)
    return copy


def _load(content: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "monitors.json"
        path.write_bytes(content)
        try:
            loaded = MonitorSet.load(path)
        except InputError as err:
            message = str(err)
            assert str(path) in message and "\n" not in message
        else:
            assert loaded.source == str(path)


@settings(max_examples=150, deadline=None)
@given(_JSON)
def test_any_json_document(data: Any) -> None:
    _load(json.dumps(data).encode())


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=50), max_size=6), _JSON)
def test_a_monitor_set_with_any_part_replaced(path: list[int], value: Any) -> None:
    _load(json.dumps(_replace_leaf(_GOOD, path, value)).encode())


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=64))
def test_any_bytes(content: bytes) -> None:
    _load(content)


def test_the_good_set_loads(tmp_path: Path) -> None:
    path = tmp_path / "monitors.json"
    path.write_text(json.dumps(_GOOD), encoding="utf-8")
    assert MonitorSet.load(path).roles.keys() == {"accuser"}
