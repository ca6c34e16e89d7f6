"""The response cache: keys, modes, single-flight, process safety (acceptance 4)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from byzllm.llm import (
    CacheError,
    Completion,
    GenerateConfig,
    ResponseCache,
    cache_key,
    check_cache,
    get_model,
)
from byzllm.llm._cache import _reset_open_caches
from byzllm.testing import FakeOpenAIServer

SECRET = "sk-test-SECRET123"


@pytest.fixture(autouse=True)
def _fresh_cache_handles() -> Iterator[None]:
    yield
    _reset_open_caches()


def script(request: dict[str, object]) -> str:
    messages = request["messages"]
    assert isinstance(messages, list)
    return f"reply {messages[-1]['content']}"


def prompts(n: int) -> list[list[dict[str, str]]]:
    return [[{"role": "user", "content": f"question {i}"}] for i in range(n)]


CONFIG = GenerateConfig(temperature=0, top_logprobs=2)


async def run_all(model: object, batch: list[list[dict[str, str]]]) -> list[Completion]:
    return list(await asyncio.gather(*(model.generate(m, CONFIG) for m in batch)))  # type: ignore[attr-defined]


async def test_rerun_hits_cache_and_salt_misses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BYZLLM_TEST_KEY", SECRET)
    path = tmp_path / "cache.sqlite"
    batch = prompts(200)
    async with FakeOpenAIServer(script) as server:
        kwargs = {"base_url": server.base_url, "api_key_env": "BYZLLM_TEST_KEY", "cache": path}
        first = await run_all(get_model("openai/m", **kwargs), batch)  # type: ignore[arg-type]
        assert server.request_count == 200 and not any(c.cached for c in first)

        server.reset()
        model = get_model("openai/m", **kwargs)  # type: ignore[arg-type]
        again = await run_all(model, batch)
        assert server.request_count == 0
        assert all(c.cached for c in again)
        assert [c.text for c in again] == [c.text for c in first]
        assert [c.logprobs for c in again] == [c.logprobs for c in first]
        assert model.usage.cached_calls == 200 and model.usage.calls == 0

        salted = get_model("openai/m", cache_salt="epoch-2", **kwargs)  # type: ignore[arg-type]
        await run_all(salted, batch)
        assert server.request_count == 200
    assert SECRET.encode() not in path.read_bytes()
    for extra in tmp_path.iterdir():  # WAL and shared-memory files too
        assert SECRET.encode() not in extra.read_bytes()


async def test_read_only_never_writes(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    async with FakeOpenAIServer(script) as server:
        base = {"base_url": server.base_url, "api_key_env": None, "cache": path}
        missing = get_model("openai/m", cache_mode="read-only", **base)  # type: ignore[arg-type]
        await run_all(missing, prompts(5))
        assert not path.exists()  # read-only does not even create the file

        await run_all(get_model("openai/m", **base), prompts(10))  # type: ignore[arg-type]
        assert len(ResponseCache(path)) == 10
        server.reset()
        # Readers may touch the shared-memory index (-shm); nothing else may change.
        before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.suffix != ".sqlite-shm"}
        reader = get_model("openai/m", cache_mode="read-only", **base)  # type: ignore[arg-type]
        results = await run_all(reader, prompts(20))
        assert server.request_count == 10  # the 10 misses went to the server ...
        assert [c.cached for c in results] == [True] * 10 + [False] * 10
        assert len(ResponseCache(path)) == 10  # ... and were not stored
        after = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.suffix != ".sqlite-shm"}
        assert after == before


async def test_refresh_rewrites_and_off_bypasses(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    replies = iter(["old", "new", "uncached", "uncached"])
    async with FakeOpenAIServer(lambda r: next(replies)) as server:
        base = {"base_url": server.base_url, "api_key_env": None, "cache": path}
        msg = prompts(1)
        assert (await run_all(get_model("openai/m", **base), msg))[0].text == "old"  # type: ignore[arg-type]
        refresh = get_model("openai/m", cache_mode="refresh", **base)  # type: ignore[arg-type]
        assert (await run_all(refresh, msg))[0].text == "new"
        hit = (await run_all(get_model("openai/m", **base), msg))[0]  # type: ignore[arg-type]
        assert hit.text == "new" and hit.cached
        off = get_model("openai/m", cache_mode="off", **base)  # type: ignore[arg-type]
        texts = [c.text for c in await run_all(off, msg + msg)]
        assert texts == ["uncached", "uncached"]  # off: no cache, no single-flight
        assert server.request_count == 4


async def test_identical_concurrent_requests_make_one_call(tmp_path: Path) -> None:
    async with FakeOpenAIServer(script, latency=0.05) as server:
        model = get_model(
            "openai/m", base_url=server.base_url, api_key_env=None, cache=tmp_path / "c.sqlite"
        )
        same = prompts(1) * 50
        results = await run_all(model, same)
    assert server.request_count == 1
    assert {c.text for c in results} == {"reply question 0"}
    assert sum(not c.cached for c in results) == 1
    assert model.usage.calls == 1 and model.usage.cached_calls == 49


async def test_single_flight_shares_failures(tmp_path: Path) -> None:
    async with FakeOpenAIServer(status=404, latency=0.05) as server:
        model = get_model(
            "openai/m", base_url=server.base_url, api_key_env=None, cache=tmp_path / "c.sqlite"
        )
        results = await asyncio.gather(
            *(model.generate(prompts(1)[0], CONFIG) for _ in range(10)), return_exceptions=True
        )
    assert server.request_count == 1
    assert all(isinstance(r, Exception) and "HTTP 404" in str(r) for r in results)


async def test_cancelled_leader_hands_over(tmp_path: Path) -> None:
    async with FakeOpenAIServer(script, latency=0.1) as server:
        model = get_model(
            "openai/m", base_url=server.base_url, api_key_env=None, cache=tmp_path / "c.sqlite"
        )
        msg = prompts(1)[0]
        leader = asyncio.create_task(model.generate(msg, CONFIG))
        await asyncio.sleep(0.02)
        follower = asyncio.create_task(model.generate(msg, CONFIG))
        await asyncio.sleep(0.02)
        leader.cancel()
        completion = await follower
    assert completion.text == "reply question 0"
    assert server.request_count == 2


def test_key_covers_what_determines_the_answer_and_nothing_else() -> None:
    msgs = [{"role": "user", "content": "hi"}]
    base = {"provider": "openai", "base_url": "http://h/v1", "model": "m", "messages": msgs}
    key = cache_key(config=GenerateConfig(temperature=0), **base)  # type: ignore[arg-type]
    assert key == cache_key(config=GenerateConfig(temperature=0.0), **base)  # type: ignore[arg-type]
    assert key == cache_key(  # trailing slash of the URL does not matter
        config=GenerateConfig(temperature=0),
        **{**base, "base_url": "http://h/v1/"},  # type: ignore[arg-type]
    )
    variants = [
        cache_key(config=GenerateConfig(temperature=1), **base),  # type: ignore[arg-type]
        cache_key(config=GenerateConfig(temperature=0, top_logprobs=5), **base),  # type: ignore[arg-type]
        cache_key(config=GenerateConfig(temperature=0), salt="s", **base),  # type: ignore[arg-type]
        cache_key(config=GenerateConfig(temperature=0), **{**base, "model": "m2"}),  # type: ignore[arg-type]
        cache_key(config=GenerateConfig(temperature=0), **{**base, "base_url": "http://g/v1"}),  # type: ignore[arg-type]
        cache_key(
            config=GenerateConfig(temperature=0),
            **{**base, "messages": [{"role": "user", "content": "hi!"}]},  # type: ignore[arg-type]
        ),
    ]
    assert len({key, *variants}) == len(variants) + 1


async def test_transport_settings_are_not_in_the_key(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    async with FakeOpenAIServer(script) as server:
        base = {"base_url": server.base_url, "cache": path}
        await run_all(get_model("openai/m", api_key_env=None, **base), prompts(3))  # type: ignore[arg-type]
        server.reset()
        other = get_model(
            "openai/m",
            api_key_env="SOME_OTHER_KEY",
            timeout_s=5,
            max_concurrency=1,
            **base,  # type: ignore[arg-type]
        )
        await run_all(other, prompts(3))
    assert server.request_count == 0


def test_unreadable_entry_is_a_miss(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    assert cache._writer is not None
    cache._writer.execute(
        "INSERT INTO completions (key, value, created_at) VALUES ('k', '{not json', 0)"
    )
    assert cache.get("k") is None
    cache.put("k", Completion(text="ok", cached=True, latency_s=3.0))
    stored = cache.get("k")
    assert stored is not None and stored.text == "ok" and stored.cached is False


# Run as a separate interpreter (not a pickled test function: the test modules are not
# importable by name from a child process).
_WRITER = """
import sys
from byzllm.llm import Completion, ResponseCache
path, start = sys.argv[1], int(sys.argv[2])
cache = ResponseCache(path)
for i in range(start, start + 50):
    cache.put(f"key-{i}", Completion(text=f"text {i}"))
cache.close()
"""


def test_two_processes_share_one_cache_file(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.sqlite")
    ResponseCache(path).close()
    workers = [
        subprocess.Popen([sys.executable, "-c", _WRITER, path, str(start)]) for start in (0, 50)
    ]
    for worker in workers:
        assert worker.wait(timeout=60) == 0
    cache = ResponseCache(path)
    assert len(cache) == 100
    assert cache.get("key-73") == Completion(text="text 73")
    assert os.path.getsize(path) > 0


def test_database_errors_are_misses_not_failures(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    assert cache._writer is not None
    cache._writer.execute("DROP TABLE completions")  # simulate a damaged file
    assert cache.get("k") is None
    cache.put("k", Completion(text="x"))  # logged, not raised
    assert "unreadable" in caplog.text and "not written" in caplog.text


# --- a damaged cache stops a run before it starts (issue 14) -----------------------------


def _filled_cache(path: Path, entries: int = 400) -> Path:
    cache = ResponseCache(path)
    for i in range(entries):
        cache.put(f"key-{i:04d}", Completion(text=f"completion {i} " + "x" * 300))
    cache.close()
    return path


def _damage_middle(path: Path) -> None:
    pages = path.stat().st_size // 4096
    assert pages > 10
    with path.open("r+b") as handle:
        handle.seek(pages // 2 * 4096)
        handle.write(b"\xa5" * 4096 * 3)


def test_check_cache_passes_missing_empty_and_healthy_files(tmp_path: Path) -> None:
    check_cache(tmp_path / "absent.sqlite")
    (tmp_path / "empty.sqlite").touch()
    check_cache(tmp_path / "empty.sqlite")
    check_cache(_filled_cache(tmp_path / "ok.sqlite"))


def test_check_cache_names_the_file_and_the_fix(tmp_path: Path) -> None:
    text = tmp_path / "notes.sqlite"
    text.write_text("not a database\n" * 100)
    damaged = _filled_cache(tmp_path / "damaged.sqlite")
    _damage_middle(damaged)
    before = damaged.read_bytes()
    for path, why in ((text, "not an SQLite database"), (damaged, "is damaged")):
        with pytest.raises(CacheError, match=why) as caught:
            check_cache(path)
        message = str(caught.value)
        assert str(path) in message and "delete it" in message and "cache_mode: off" in message
        assert "\n" not in message
        assert caught.value.exit_code == 2 and caught.value.fatal
    assert damaged.read_bytes() == before  # checking never writes


def test_a_results_store_is_not_taken_for_a_cache(tmp_path: Path) -> None:
    import asyncio as aio

    from byzllm.runs import make_unit, run_units

    aio.run(run_units(tmp_path / "run", [make_unit({"a": 1})], _no_records, progress=False))
    store = tmp_path / "run" / "results.sqlite"
    before = store.read_bytes()
    for opener in (check_cache, ResponseCache):
        with pytest.raises(CacheError, match="not a response cache"):
            opener(store)
    assert store.read_bytes() == before


def _no_records(payload: dict[str, object]) -> None:
    return None


def test_opening_a_non_database_is_refused_before_sqlite_writes(tmp_path: Path) -> None:
    text = tmp_path / "c.sqlite"
    text.write_text("hello\n" * 500)
    before = text.read_bytes()
    with pytest.raises(CacheError, match="not an SQLite database"):
        ResponseCache(text)
    assert text.read_bytes() == before


def test_damaged_pages_met_during_a_run_are_fatal_not_misses(tmp_path: Path) -> None:
    path = _filled_cache(tmp_path / "c.sqlite")
    _damage_middle(path)
    cache = ResponseCache(path)  # the header is fine: opening works
    with pytest.raises(CacheError, match="is damaged") as caught:
        for i in range(400):
            cache.get(f"key-{i:04d}")
    assert caught.value.fatal


def test_a_run_stops_before_its_first_unit_on_a_damaged_cache(tmp_path: Path) -> None:
    import asyncio as aio

    from byzllm.runs import ExperimentConfig, ModelConfig, make_unit, run_units

    class Section(ModelConfig):
        agents: str = "llm"

    class Config(ExperimentConfig):
        players: Section

    cache = _filled_cache(tmp_path / "cache.sqlite")
    _damage_middle(cache)
    config = Config(players=Section(model="openai/x", cache=str(cache), api_key_env=None))
    ran: list[object] = []

    def work(payload: dict[str, object]) -> None:
        ran.append(payload)

    with pytest.raises(CacheError, match="cache_mode: off"):
        aio.run(run_units(tmp_path / "run", [make_unit({"a": 1})], work, config=config))
    assert ran == [] and not (tmp_path / "run").exists()
    # cache_mode: off runs without it; a section without a model never opens it. (The model
    # is a local fake server: the run's endpoint check must find one listening.)

    async def run_both() -> None:
        async with FakeOpenAIServer() as server:
            for section in (
                Section(
                    model="openai/x",
                    base_url=server.base_url,
                    cache=str(cache),
                    cache_mode="off",
                    api_key_env=None,
                ),
                Section(cache=str(cache), api_key_env=None),
            ):
                await run_units(
                    tmp_path / f"run-{len(ran)}",
                    [make_unit({"a": 1})],
                    work,
                    config=Config(players=section),
                    progress=False,
                )

    aio.run(run_both())
    assert len(ran) == 2


def test_cli_run_on_a_damaged_cache_is_one_line_exit_2(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from byzllm.cli import app

    cache = tmp_path / "cache.sqlite"
    cache.write_text("garbage " * 1000)
    result = CliRunner().invoke(
        app,
        [
            "consensus", "run", "--set", "dataset.n=2", "--set", "topologies=[complete]",
            "--model", "openai/nothing", "--base-url", "http://127.0.0.1:9/v1",
            "--set", "agents.strong.api_key_env=null", "--set", "agents.weak.api_key_env=null",
            "--set", f"agents.strong.cache={cache}", "--set", f"agents.weak.cache={cache}",
            "-o", str(tmp_path / "run"),
        ],
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    [line] = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert str(cache) in line and "cache_mode: off" in line
    assert not (tmp_path / "run" / "results.sqlite").exists()
