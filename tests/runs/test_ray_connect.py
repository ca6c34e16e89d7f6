"""Joining a Ray cluster ends: a cluster that never answers stops the run after
connect_timeout_s with one line (exit 2), and a refusal from Ray is one line too. A stand-in
``ray`` module keeps these tests free of a real cluster."""

from __future__ import annotations

import asyncio
import sys
import threading
import types
from typing import Any

import pytest

from byzllm.errors import ConfigError
from byzllm.runs import RayExecutor


def _fake_ray(init: Any) -> types.ModuleType:
    module = types.ModuleType("ray")
    module.is_initialized = lambda: False  # type: ignore[attr-defined]
    module.init = init  # type: ignore[attr-defined]
    module.remote = lambda **_: lambda fn: fn  # type: ignore[attr-defined]
    return module


def test_a_cluster_that_never_answers_stops_after_the_connect_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    release = threading.Event()

    def hang(**_: Any) -> None:
        release.wait(30)  # as ray.init on an address where nothing answers

    monkeypatch.setitem(sys.modules, "ray", _fake_ray(hang))
    executor = RayExecutor("127.0.0.1:9", connect_timeout_s=0.2)
    try:
        with pytest.raises(ConfigError, match=r"cannot reach the Ray cluster at 127\.0\.0\.1:9"):
            asyncio.run(executor.start(1))
    finally:
        release.set()


def test_a_refusal_from_ray_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(**_: Any) -> None:
        raise ConnectionError("This cluster requires token authentication.\nSet RAY_AUTH_TOKEN")

    monkeypatch.setitem(sys.modules, "ray", _fake_ray(refuse))
    with pytest.raises(ConfigError) as caught:
        asyncio.run(RayExecutor("ray://head:10001", connect_timeout_s=5).start(1))
    message = str(caught.value)
    assert "\n" not in message and "token authentication" in message
    assert caught.value.exit_code == 2


def test_the_connect_timeout_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BYZLLM_RAY_CONNECT_TIMEOUT_S", "7.5")
    assert RayExecutor().connect_timeout_s == 7.5
    monkeypatch.setenv("BYZLLM_RAY_CONNECT_TIMEOUT_S", "soon")
    with pytest.raises(ConfigError, match="number of seconds"):
        RayExecutor()
