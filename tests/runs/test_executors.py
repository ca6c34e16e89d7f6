"""Choosing executors by name, and the Ray executor starting its own local instance (skipped
when ray is not installed; the other Ray executor tests are in test_ray_executor.py)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from byzllm.errors import ConfigError
from byzllm.runs import (
    LocalExecutor,
    ProcessExecutor,
    RayExecutor,
    Store,
    executor_by_name,
    make_unit,
    run_units,
)

IMPORTABLE = Path(__file__).with_name("importable")


def test_executor_by_name() -> None:
    assert isinstance(executor_by_name("local"), LocalExecutor)
    assert isinstance(executor_by_name("process"), ProcessExecutor)
    ray_executor = executor_by_name("ray", ray_address="auto")
    assert isinstance(ray_executor, RayExecutor) and ray_executor.address == "auto"
    with pytest.raises(ConfigError, match="unknown executor 'threads'"):
        executor_by_name("threads")
    with pytest.raises(ConfigError, match="needs the ray executor"):
        executor_by_name("local", ray_address="auto")


def test_ray_executor_rejects_non_positive_cpus() -> None:
    with pytest.raises(ConfigError, match="num_cpus"):
        RayExecutor(num_cpus=0)


async def test_ray_executor_without_ray_says_how_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # makes `import ray` raise ImportError
    with pytest.raises(ConfigError, match=r"pip install 'byzllm\[ray\]'"):
        await RayExecutor().start(4)


def test_process_executor_defaults_to_one_process_per_core() -> None:
    # Checked through start(): no more workers than cores, nor than the run's concurrency.
    import asyncio

    executor = ProcessExecutor()
    asyncio.run(executor.start(64))
    try:
        assert executor._pool is not None
        assert executor._pool._max_workers == min(64, os.cpu_count() or 1)
    finally:
        asyncio.run(executor.aclose())


@pytest.mark.slow
async def test_ray_executor_starts_and_shuts_down_its_own_local_instance(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, require_extra: Callable[..., None]
) -> None:
    # The other Ray tests (test_ray_executor.py) share one instance that they start
    # themselves; this one covers the default: the executor starts one and stops it again.
    require_extra("ray", extra="ray")
    import ray

    assert not ray.is_initialized(), "a Ray instance is already connected in this process"
    monkeypatch.delenv("RAY_ADDRESS", raising=False)  # start a local instance, join none
    monkeypatch.syspath_prepend(str(IMPORTABLE))
    import process_work  # type: ignore[import-not-found]

    # Ray's workers import the work's module by name: put it on their path too (they inherit
    # the environment of the local instance; a runtime_env would cost seconds per worker).
    pythonpath = os.pathsep.join(p for p in (str(IMPORTABLE), os.environ.get("PYTHONPATH")) if p)
    monkeypatch.setenv("PYTHONPATH", pythonpath)
    executor = RayExecutor(init_options={"num_cpus": 2})
    units = [make_unit({"n": n}, label=f"n{n}") for n in [*range(5), -1]]
    summary = await run_units(
        tmp_path, units, process_work.async_square, executor=executor, progress=False
    )
    assert (summary.done, summary.failed) == (5, 1)
    # The work's own exception, not Ray's wrapper.
    assert summary.failures[0].error == "ValueError: negative input"
    with Store.open(tmp_path) as store:
        rows = store.records("computed")
    assert sorted((r["n"], r["square"]) for r in rows) == [(n, n * n) for n in range(5)]
    assert os.getpid() not in {r["pid"] for r in rows}
    assert not ray.is_initialized()  # the instance it started is shut down again
