"""Fatal answers stop an endpoint after one request; hangs cost an adaptive timeout, not the
cap; every attempt is counted per tally (track_requests) and in model.usage by kind."""

from __future__ import annotations

import asyncio
import time

import pytest

from byzllm.llm import (
    ModelAuthError,
    ModelNotFoundError,
    ModelRequestError,
    RetryPolicy,
    _guard,
    get_model,
    track_requests,
)
from byzllm.llm._guard import EndpointGuard
from byzllm.testing import FakeOpenAIServer

FAST_RETRY = RetryPolicy(max_attempts=12, initial_backoff_s=0.005, max_backoff_s=0.05)


def user(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


def echo(request: dict[str, object]) -> str:
    messages = request["messages"]
    assert isinstance(messages, list)
    return f"re: {messages[-1]['content']}"


async def test_a_rejected_key_sends_one_request_however_many_calls_wait(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("BYZLLM_GUARD_KEY", "sk-wrong-1234")
    async with FakeOpenAIServer(echo, api_key="sk-right-5678", latency=0.05) as server:
        model = get_model(
            "openai/m",
            base_url=server.base_url,
            api_key_env="BYZLLM_GUARD_KEY",
            max_concurrency=16,
            retry=FAST_RETRY,
        )
        with track_requests() as counts:
            results = await asyncio.gather(
                *(model.generate(user(f"q{i}")) for i in range(50)), return_exceptions=True
            )
            later = await asyncio.gather(model.generate(user("later")), return_exceptions=True)
    assert server.request_count == 1  # the others never left
    assert all(isinstance(r, ModelAuthError) for r in [*results, *later])
    assert len({str(r) for r in results}) == 1 and "BYZLLM_GUARD_KEY" in str(results[0])
    assert model.usage.requests == 1 and model.usage.failures == 51
    assert model.usage.errors == {"http_401": 1} and model.usage.retries == 0
    assert counts.to_dict() == {
        "requests": 1,
        "cached": 0,
        "retries": 0,
        "timeouts": 0,
        "failures": 51,
        "errors": {"http_401": 1},
    }


async def test_a_corrected_key_is_not_blocked_by_the_rejected_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with FakeOpenAIServer(echo, api_key="sk-right-5678") as server:
        monkeypatch.setenv("BYZLLM_GUARD_KEY", "sk-wrong-1234")
        bad = get_model("openai/m", base_url=server.base_url, api_key_env="BYZLLM_GUARD_KEY")
        with pytest.raises(ModelAuthError):
            await bad.generate(user("x"))
        monkeypatch.setenv("BYZLLM_GUARD_KEY", "sk-right-5678")
        good = get_model("openai/m", base_url=server.base_url, api_key_env="BYZLLM_GUARD_KEY")
        assert (await good.generate(user("x"))).text == "re: x"


async def test_a_missing_model_is_fatal_and_exits_2_for_its_model_only() -> None:
    async with FakeOpenAIServer(status=404) as server:
        model = get_model("openai/nope", base_url=server.base_url, api_key_env=None)
        results = await asyncio.gather(
            *(model.generate(user(f"q{i}")) for i in range(10)), return_exceptions=True
        )
    assert server.request_count == 1
    assert all(isinstance(r, ModelNotFoundError) for r in results)
    error = results[0]
    assert isinstance(error, ModelRequestError) and error.fatal and error.exit_code == 2
    assert "wrong base_url or model name" in str(error)


async def test_other_client_errors_are_not_fatal() -> None:
    async with FakeOpenAIServer(status=400) as server:
        model = get_model("openai/m", base_url=server.base_url, api_key_env=None)
        results = await asyncio.gather(
            *(model.generate(user(f"q{i}")) for i in range(5)), return_exceptions=True
        )
    assert server.request_count == 5  # each request is refused on its own merits
    assert all(isinstance(r, ModelRequestError) and not r.fatal for r in results)


async def test_first_requests_go_one_at_a_time_until_one_succeeds() -> None:
    patient = RetryPolicy(max_attempts=100, initial_backoff_s=0.005, max_backoff_s=0.02)
    async with FakeOpenAIServer(echo, latency=0.03, fault_rate=1.0, faults=["503"]) as server:
        model = get_model("openai/m", base_url=server.base_url, api_key_env=None, retry=patient)
        calls = asyncio.gather(*(model.generate(user(f"q{i}")) for i in range(20)))
        await asyncio.sleep(0.4)
        failing = server.request_count
        assert failing >= 3 and server.max_in_flight == 1  # never two at once while failing
        server.fault_rate = 0.0
        server.reset()
        results = await calls
    assert [r.text for r in results] == [f"re: q{i}" for i in range(20)]
    assert server.max_in_flight > 1  # after the first success, all at once
    assert model.usage.errors == {"http_503": failing}


async def test_hangs_cost_the_adaptive_timeout_not_the_cap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_guard, "ADAPTIVE_FLOOR_S", 0.2)
    async with FakeOpenAIServer(echo, latency=0.01) as server:
        model = get_model(
            "openai/m", base_url=server.base_url, api_key_env=None, timeout_s=60, retry=FAST_RETRY
        )
        # Warm up: the endpoint's latencies are learned from answered requests.
        await asyncio.gather(*(model.generate(user(f"w{i}")) for i in range(30)))
        server.fault_rate, server.faults = 0.3, ("hang",)
        started = time.monotonic()
        with track_requests() as counts:
            results = await asyncio.gather(*(model.generate(user(f"q{i}")) for i in range(60)))
        elapsed = time.monotonic() - started
    hangs = server.faults_injected["hang"]
    assert hangs > 5 and [r.text for r in results] == [f"re: q{i}" for i in range(60)]
    assert elapsed < 10, elapsed  # each hang costs ~0.2 s (up to a few in a row), not 60 s
    # Every hang is cut by a timeout; on a loaded machine an answer slower than the 0.2 s
    # bound may be cut too, and is retried the same way.
    assert counts.timeouts >= hangs
    assert counts.timeouts == model.usage.errors["timeout"] == counts.retries
    assert counts.requests == 60 + counts.retries


async def test_without_adaptive_timeout_a_hang_waits_for_the_cap() -> None:
    async with FakeOpenAIServer(echo) as server:
        model = get_model(
            "openai/m",
            base_url=server.base_url,
            api_key_env=None,
            timeout_s=0.5,
            adaptive_timeout=False,
            retry=FAST_RETRY,
        )
        await asyncio.gather(*(model.generate(user(f"w{i}")) for i in range(30)))
        server.fault_rate, server.faults = 1.0, ("hang",)
        server.reset()
        started = time.monotonic()
        task = asyncio.ensure_future(model.generate(user("hang")))
        await asyncio.sleep(0.3)
        server.fault_rate = 0.0
        assert (await task).text == "re: hang"
    assert time.monotonic() - started >= 0.5  # the first attempt waited for the cap


def test_adaptive_bound_follows_the_tail_doubles_per_timeout_and_respects_the_cap() -> None:
    guard = EndpointGuard()
    for _ in range(_guard.ADAPTIVE_MIN_SAMPLES - 1):
        guard.record(1.0)
    assert guard.attempt_timeout(120, 0) is None  # too few answers: only the cap
    guard.record(1.5)
    assert guard.attempt_timeout(120, 0) == pytest.approx(12.0)  # 8 x the slowest
    assert guard.attempt_timeout(120, 1) == pytest.approx(24.0)  # after one timeout
    assert guard.attempt_timeout(120, 4) is None  # 192 s > the cap: the cap applies
    for _ in range(200):
        guard.record(1.0)
    assert guard.attempt_timeout(120, 0) == pytest.approx(8.0)  # 8 x p95: 1.5 s is an outlier
    fast = EndpointGuard()
    for _ in range(40):
        fast.record(0.01)
    assert fast.attempt_timeout(120, 0) == pytest.approx(_guard.ADAPTIVE_FLOOR_S)


async def test_tallies_nest_and_count_cache_hits(tmp_path: object) -> None:
    from pathlib import Path

    assert isinstance(tmp_path, Path)
    async with FakeOpenAIServer(echo) as server:
        model = get_model(
            "openai/m", base_url=server.base_url, api_key_env=None, cache=tmp_path / "c.sqlite"
        )
        with track_requests() as outer:
            await model.generate(user("a"))
            with track_requests() as inner:
                await model.generate(user("a"))  # a cache hit
                await model.generate(user("b"))
    assert inner.to_dict()["requests"] == 1 and inner.cached == 1
    assert outer.to_dict()["requests"] == 2 and outer.cached == 1
    assert outer.in_flight == 0 and outer.oldest_in_flight_s() is None


async def test_a_hung_first_request_holds_up_nobody_and_is_cut_once_others_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_guard, "ADAPTIVE_FLOOR_S", 0.2)
    monkeypatch.setattr("byzllm.llm._model.PROBE_WAIT_S", 0.3)
    async with FakeOpenAIServer(echo, latency=0.01, fault_rate=1.0, faults=["hang"]) as server:
        model = get_model(
            "openai/m", base_url=server.base_url, api_key_env=None, timeout_s=60, retry=FAST_RETRY
        )
        started = time.monotonic()
        calls = asyncio.gather(*(model.generate(user(f"q{i}")) for i in range(10)))
        while server.request_count < 1:
            await asyncio.sleep(0.01)
        server.fault_rate = 0.0  # only the very first request hangs
        results = await calls
        elapsed = time.monotonic() - started
    assert [r.text for r in results] == [f"re: q{i}" for i in range(10)]
    assert server.faults_injected == {"hang": 1}
    # The others waited 0.3 s for it, then went; their answers set the bound (0.2 s), which
    # cut the hung attempt at once -- not after the 60 s cap.
    assert elapsed < 5, elapsed
    # The hang is cut once; on a loaded machine a slow answer may be cut by the bound too.
    assert set(model.usage.errors) == {"timeout"} and model.usage.errors["timeout"] >= 1
    assert model.usage.retries == model.usage.errors["timeout"]
