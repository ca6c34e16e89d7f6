"""The response cache beside other writers, read-only files, and shared requests' accounting."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from byzllm.llm import Completion, GenerateConfig, ModelError, get_model, track_requests
from byzllm.llm._cache import _reset_open_caches
from byzllm.testing import FakeOpenAIServer

CONFIG = GenerateConfig(temperature=0)
FAST = {"max_attempts": 2, "initial_backoff_s": 0.0, "max_backoff_s": 0.0}


@pytest.fixture(autouse=True)
def _fresh_cache_handles() -> Iterator[None]:
    yield
    _reset_open_caches()


def ask(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


def echo(request: dict[str, object]) -> str:
    messages = request["messages"]
    assert isinstance(messages, list)
    return f"reply {messages[-1]['content']}"


async def test_a_write_lock_held_elsewhere_stops_neither_the_loop_nor_cache_hits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "cache.sqlite"
    async with FakeOpenAIServer(echo) as server:
        model = get_model(
            "openai/m", base_url=server.base_url, api_key_env=None, cache=path, retry=FAST
        )
        await model.generate(ask("seen"), CONFIG)
        cache = model.cache
        assert cache is not None
        writing = threading.Event()
        original_put = cache.put

        def put(key: str, completion: Completion) -> None:
            writing.set()
            original_put(key, completion)

        monkeypatch.setattr(cache, "put", put)

        # Another connection (another process, as far as SQLite knows) holds the write
        # lock until the loop says so, or for 10 s at most if the loop never can.
        locked, release = threading.Event(), threading.Event()
        released_by: list[str] = []

        def hold() -> None:
            conn = sqlite3.connect(path, isolation_level=None)
            conn.execute("BEGIN IMMEDIATE")
            locked.set()
            released_by.append("loop" if release.wait(10) else "timeout")
            conn.execute("ROLLBACK")
            conn.close()

        holder = threading.Thread(target=hold)
        holder.start()
        await asyncio.to_thread(locked.wait)
        # A new reply, whose write now waits for the lock ...
        writer = asyncio.create_task(model.generate(ask("new"), CONFIG))
        await asyncio.to_thread(writing.wait, 10)
        await asyncio.sleep(0.05)  # (lets the write reach SQLite's busy wait)
        # ... while the loop goes on and a cache hit is still read.
        hit = await model.generate(ask("seen"), CONFIG)
        assert hit.cached and hit.text == "reply seen"
        release.set()
        fresh = await writer
        await asyncio.to_thread(holder.join)
        await model.aclose()
    assert released_by == ["loop"]
    assert fresh.text == "reply new" and not fresh.cached


async def test_a_write_lock_held_elsewhere_does_not_hold_the_reply_past_the_deadline(
    tmp_path: Path,
) -> None:
    path = tmp_path / "cache.sqlite"
    async with FakeOpenAIServer(echo) as server:
        model = get_model(
            "openai/m",
            base_url=server.base_url,
            api_key_env=None,
            cache=path,
            retry={**FAST, "max_total_s": 0.5},
        )
        await model.generate(ask("seen"), CONFIG)
        # Another connection holds the write lock: SQLite makes the write wait up to 60 s.
        holder = sqlite3.connect(path, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        try:
            started = time.monotonic()
            # The reply waited for the write: 60 s, past the call's 0.5 s deadline.
            fresh = await asyncio.wait_for(model.generate(ask("new"), CONFIG), 10)
            assert time.monotonic() - started < 5
            assert fresh.text == "reply new" and not fresh.cached
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        # The write went on meanwhile, and lands once the lock is free.
        for _ in range(200):
            hit = await model.generate(ask("new"), CONFIG)
            if hit.cached:
                break
            await asyncio.sleep(0.05)
        assert hit.cached and hit.text == "reply new"
        await model.aclose()


async def test_read_only_mode_opens_the_file_read_only(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    async with FakeOpenAIServer(echo) as server:
        writer = get_model("openai/m", base_url=server.base_url, api_key_env=None, cache=path)
        await writer.generate(ask("q"), CONFIG)
        _reset_open_caches()
        # A file in rollback-journal mode (as another tool may leave it): opening it for
        # writing would switch it to WAL mode, a write.
        conn = sqlite3.connect(path, isolation_level=None)
        assert conn.execute("PRAGMA journal_mode=DELETE").fetchone()[0] == "delete"
        conn.close()
        before = path.read_bytes()
        reader = get_model(
            "openai/m",
            base_url=server.base_url,
            api_key_env=None,
            cache=path,
            cache_mode="read-only",
        )
        hit = await reader.generate(ask("q"), CONFIG)
        miss = await reader.generate(ask("other"), CONFIG)
        assert path.read_bytes() == before  # not even switched to WAL mode
        assert reader.cache is not None and reader.cache.read_only
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            reader.cache._reader.execute("DELETE FROM completions")
        await reader.aclose()
        await writer.aclose()
    assert hit.cached and not miss.cached
    assert not path.with_name("cache.sqlite-wal").exists()


async def test_without_a_cache_identical_requests_are_not_merged() -> None:
    # No cache: every request draws its own sample (temperature > 0 means distinct replies).
    async with FakeOpenAIServer(echo, latency=0.05) as server:
        model = get_model("openai/m", base_url=server.base_url, api_key_env=None, cache=None)
        config = GenerateConfig(temperature=1.0)
        replies = await asyncio.gather(*(model.generate(ask("q"), config) for _ in range(3)))
        await model.aclose()
    assert server.request_count == 3 and not any(reply.cached for reply in replies)


async def test_every_caller_of_a_shared_failed_request_counts_its_failure(
    tmp_path: Path,
) -> None:
    async def one(model: object) -> dict[str, object]:
        with track_requests() as counts, pytest.raises(ModelError):
            await model.generate(ask("q"), CONFIG)  # type: ignore[attr-defined]
        return counts.to_dict()

    async with FakeOpenAIServer(echo, status=400, latency=0.2) as server:
        model = get_model(
            "openai/m",
            base_url=server.base_url,
            api_key_env=None,
            cache=tmp_path / "cache.sqlite",
            retry=FAST,
        )
        tallies = await asyncio.gather(*(one(model) for _ in range(3)))
        await model.aclose()
    assert server.request_count == 1  # one request, shared by the three calls
    assert model.usage.failures == 3 and model.usage.requests == 1
    assert [tally["failures"] for tally in tallies] == [1, 1, 1]
    assert sorted(tally["requests"] for tally in tallies) == [0, 0, 1]
