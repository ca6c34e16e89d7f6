"""How many threads a llama.cpp server takes by default: half the usable cores, 1 to 8."""

from __future__ import annotations

import os

import pytest

from byzllm import _process
from byzllm.llm import _local


@pytest.mark.parametrize(("cores", "threads"), [(1, 1), (2, 1), (3, 1), (4, 2), (16, 8), (64, 8)])
def test_a_server_takes_half_the_usable_cores(
    monkeypatch: pytest.MonkeyPatch, cores: int, threads: int
) -> None:
    monkeypatch.setattr(_local, "usable_cores", lambda: cores)
    assert _local.default_threads() == threads


def test_usable_cores_follow_the_cpu_affinity(monkeypatch: pytest.MonkeyPatch) -> None:
    # A container or `taskset` may allow fewer cores than the machine has.
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 3}, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 32)
    assert _process.usable_cores() == 2
    monkeypatch.delattr(os, "sched_getaffinity")
    assert _process.usable_cores() == 32
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    assert _process.usable_cores() == 1
