"""End-to-end behaviour of get_model/Model against the FakeOpenAIServer (acceptance 2, 3, 5)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from byzllm.errors import InputError
from byzllm.llm import (
    GenerateConfig,
    LogprobsUnavailableError,
    Model,
    ModelAuthError,
    ModelError,
    ModelRequestError,
    ModelSpec,
    ModelUnavailableError,
    RetryPolicy,
    TokenLogprob,
    get_model,
    track_requests,
)
from byzllm.testing import ALL_FAULTS, FakeOpenAIServer, FakeReply

SECRET = "sk-test-SECRET123"
FAST_RETRY = RetryPolicy(max_attempts=12, initial_backoff_s=0.005, max_backoff_s=0.05)


def answer_script(request: dict[str, object]) -> str:
    messages = request["messages"]
    assert isinstance(messages, list)
    return f"answer to {messages[-1]['content']}"


def user(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


async def test_generate_returns_text_usage_and_latency() -> None:
    async with FakeOpenAIServer(answer_script, latency=0.01) as server:
        model = get_model("openai/fake-model", base_url=server.base_url, api_key_env=None)
        completion = await model.generate(user("2+2?"), GenerateConfig(temperature=0))
        await model.aclose()
    assert completion.text == "answer to 2+2?"
    assert completion.logprobs is None
    assert completion.cached is False
    assert completion.latency_s >= 0.01
    assert completion.finish_reason == "stop"
    assert completion.usage.output_tokens == 6  # "answer", " to", " 2", "+", "2", "?"
    assert model.usage.calls == 1 and model.usage.retries == 0
    assert model.name == "openai/fake-model"
    body = server.requests[0]
    assert body["model"] == "fake-model" and body["temperature"] == 0
    assert "logprobs" not in body


async def test_request_mapping_of_generate_config() -> None:
    async with FakeOpenAIServer(answer_script) as server:
        model = get_model("openai/m", base_url=server.base_url, api_key_env=None)
        config = GenerateConfig(
            temperature=0.7,
            max_tokens=50,
            top_p=0.9,
            top_logprobs=3,
            seed=7,
            stop=("\n",),
            response_format="json_object",
        )
        await model.generate(user("x"), config)
    body = server.requests[0]
    assert body["logprobs"] is True and body["top_logprobs"] == 3
    assert body["max_tokens"] == 50 and body["top_p"] == 0.9 and body["seed"] == 7
    assert body["stop"] == ["\n"]
    assert body["response_format"] == {"type": "json_object"}


async def test_logprobs_come_back_normalized() -> None:
    async with FakeOpenAIServer(lambda r: "Yes, it is 42.") as server:
        model = get_model("openai/m", base_url=server.base_url, api_key_env=None)
        completion = await model.generate(user("?"), GenerateConfig(top_logprobs=5))
    assert completion.logprobs is not None
    assert "".join(t.token for t in completion.logprobs) == "Yes, it is 42."
    for entry in completion.logprobs:
        assert isinstance(entry, TokenLogprob)
        assert len(entry.top) == 5
        assert entry.top[0] == (entry.token, entry.logprob)
        assert [lp for _, lp in entry.top] == sorted((lp for _, lp in entry.top), reverse=True)
        assert all(lp <= 0 for _, lp in entry.top)


async def test_explicit_and_vllm_style_logprobs_normalize_to_one_shape() -> None:
    explicit = [TokenLogprob(token="A", logprob=-0.1, top=[("A", -0.1), ("B", -2.5)])]
    vllm_dict_top = {
        "content": [{"token": "A", "logprob": -0.1, "top_logprobs": {"B": -2.5, "A": -0.1}}]
    }
    replies = iter([FakeReply("A", logprobs=explicit), FakeReply("A", raw_logprobs=vllm_dict_top)])
    async with FakeOpenAIServer(lambda r: next(replies)) as server:
        model = get_model("openai/m", base_url=server.base_url, api_key_env=None)
        first = await model.generate(user("1"), GenerateConfig(top_logprobs=2))
        second = await model.generate(user("2"), GenerateConfig(top_logprobs=2))
    assert first.logprobs == second.logprobs == explicit


async def test_top_logprobs_above_cap_fails_clearly_without_a_call() -> None:
    async with FakeOpenAIServer() as server:
        model = get_model("openai/m", base_url=server.base_url, api_key_env=None)
        with pytest.raises(InputError, match=r"top_logprobs=21 exceeds the cap of 20"):
            await model.generate(user("x"), GenerateConfig(top_logprobs=21))
        assert server.request_count == 0
        await model.generate(user("x"), GenerateConfig(top_logprobs=20))
        roomy = get_model(
            "openai/m", base_url=server.base_url, api_key_env=None, max_top_logprobs=30
        )
        completion = await roomy.generate(user("y"), GenerateConfig(top_logprobs=21))
    assert completion.logprobs is not None and len(completion.logprobs[0].top) == 21


async def test_missing_logprobs_error_or_warning(caplog: pytest.LogCaptureFixture) -> None:
    async with FakeOpenAIServer(lambda r: FakeReply("hi", omit_logprobs=True)) as server:
        strict = get_model("openai/m", base_url=server.base_url, api_key_env=None)
        with pytest.raises(LogprobsUnavailableError, match="returned no log-probabilities"):
            await strict.generate(user("x"), GenerateConfig(top_logprobs=3))
        lenient = get_model(
            "openai/m", base_url=server.base_url, api_key_env=None, require_logprobs=False
        )
        with caplog.at_level(logging.WARNING, logger="byzllm.llm"):
            completion = await lenient.generate(user("x"), GenerateConfig(top_logprobs=3))
    assert completion.text == "hi" and completion.logprobs is None
    assert "no log-probabilities" in caplog.text


async def test_a_reply_without_logprobs_fails_a_strict_model_cached_or_fresh(
    tmp_path: Path,
) -> None:
    """A lax run filled the cache with a reply without log-probabilities: a strict model read
    it back as a success (``logprobs=None``). And a refused reply counted as a successful
    call: it is a failure, of kind ``no_logprobs``."""
    async with FakeOpenAIServer(lambda r: FakeReply("hi", omit_logprobs=True)) as server:
        shared = {"base_url": server.base_url, "api_key_env": None, "cache": tmp_path / "c.db"}
        lax = get_model("openai/m", require_logprobs=False, **shared)
        await lax.generate(user("x"), GenerateConfig(top_logprobs=3))
        strict = get_model("openai/m", **shared)
        with track_requests() as counts, pytest.raises(LogprobsUnavailableError):
            await strict.generate(user("x"), GenerateConfig(top_logprobs=3))
        assert counts.to_dict()["cached"] == 1 and counts.to_dict()["failures"] == 1
        fresh = get_model("openai/m", base_url=server.base_url, api_key_env=None)
        with track_requests() as counts, pytest.raises(LogprobsUnavailableError):
            await fresh.generate(user("x"), GenerateConfig(top_logprobs=3))
    assert counts.to_dict()["failures"] == 1
    assert counts.to_dict()["errors"] == {"no_logprobs": 1}
    assert fresh.usage.failures == 1 and fresh.usage.errors == {"no_logprobs": 1}


async def test_all_fault_kinds_at_20_percent_every_request_completes(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("BYZLLM_TEST_KEY", SECRET)
    async with FakeOpenAIServer(
        answer_script, latency=(0.0, 0.005), fault_rate=0.2, retry_after=0.01, seed=3
    ) as server:
        model = get_model(
            "openai/m",
            base_url=server.base_url,
            api_key_env="BYZLLM_TEST_KEY",
            timeout_s=0.5,
            max_concurrency=32,
            retry=FAST_RETRY,
        )
        with caplog.at_level(logging.DEBUG):  # every logger, the SDK's and httpx's included
            results = await asyncio.gather(*(model.generate(user(f"q{i}")) for i in range(500)))
        faults = server.faults_injected
    assert [r.text for r in results] == [f"answer to q{i}" for i in range(500)]
    assert set(faults) == set(ALL_FAULTS), faults
    assert model.usage.calls == 500
    # Every injected fault costs one retry; on a loaded machine a slow, unfaulted reply can
    # also pass the 0.5 s timeout and be retried, so count the server's requests exactly.
    assert model.usage.retries >= sum(faults.values())
    # And a retry after a connection error can be one the server never read (a request sent on
    # a pooled connection the server had just closed): at most that many retries are unseen.
    unseen = 500 + model.usage.retries - server.request_count
    assert 0 <= unseen <= model.usage.errors.get("connection", 0)
    assert "retrying" in caplog.text and SECRET not in caplog.text


async def test_401_one_clear_error_no_retries_no_key(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("BYZLLM_TEST_KEY", SECRET)
    async with FakeOpenAIServer(status=401) as server:
        model = get_model(
            "openai/m", base_url=server.base_url, api_key_env="BYZLLM_TEST_KEY", retry=FAST_RETRY
        )
        with pytest.raises(ModelAuthError) as info, caplog.at_level(logging.DEBUG):
            await model.generate(user("x"))
    assert SECRET not in caplog.text
    assert server.request_count == 1
    assert model.usage.retries == 0 and model.usage.failures == 1
    message = str(info.value)
    assert "\n" not in message
    assert "401" in message and "BYZLLM_TEST_KEY" in message and server.base_url in message
    assert info.value.exit_code == 2
    chain: BaseException | None = info.value
    while chain is not None:  # nothing chained to the error carries the key either
        assert SECRET not in str(chain) and SECRET not in repr(chain)
        chain = chain.__cause__ or chain.__context__
    assert SECRET not in repr(model) and SECRET not in repr(model.api)


async def test_401_without_key_says_which_variable_to_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BYZLLM_UNSET_KEY", raising=False)
    async with FakeOpenAIServer(status=401) as server:
        model = get_model("openai/m", base_url=server.base_url, api_key_env="BYZLLM_UNSET_KEY")
        with pytest.raises(ModelAuthError, match="set the environment variable BYZLLM_UNSET_KEY"):
            await model.generate(user("x"))


@pytest.mark.parametrize("status", [400, 403, 404, 422])
async def test_client_errors_are_not_retried(status: int) -> None:
    async with FakeOpenAIServer(status=status) as server:
        model = get_model("openai/m", base_url=server.base_url, api_key_env=None, retry=FAST_RETRY)
        with pytest.raises(ModelRequestError, match=f"HTTP {status} from {server.base_url}"):
            await model.generate(user("x"))
    assert server.request_count == 1


async def test_retry_budget_runs_out_with_a_clear_error() -> None:
    async with FakeOpenAIServer(status=503) as server:
        policy = RetryPolicy(max_attempts=3, initial_backoff_s=0.001, max_backoff_s=0.002)
        model = get_model("openai/m", base_url=server.base_url, api_key_env=None, retry=policy)
        with pytest.raises(ModelUnavailableError, match=r"gave up after 3 attempt\(s\).*HTTP 503"):
            await model.generate(user("x"))
    assert server.request_count == 3 and model.usage.retries == 2


async def test_retry_after_is_honoured() -> None:
    async with FakeOpenAIServer(fault_rate=1.0, faults=["429"], retry_after=0.2) as server:
        policy = RetryPolicy(max_attempts=2, initial_backoff_s=0.0, max_backoff_s=5.0)
        model = get_model("openai/m", base_url=server.base_url, api_key_env=None, retry=policy)
        loop = asyncio.get_running_loop()
        started = loop.time()
        with pytest.raises(ModelUnavailableError, match="HTTP 429"):
            await model.generate(user("x"))
        waited = loop.time() - started
    # Without Retry-After the wait would be 0 (initial_backoff_s=0); with it, >= 0.2 s.
    assert waited >= 0.2


async def test_max_concurrency_bounds_requests_in_flight() -> None:
    async with FakeOpenAIServer(answer_script, latency=0.02) as server:
        model = get_model("openai/m", base_url=server.base_url, api_key_env=None, max_concurrency=8)
        results = await asyncio.gather(*(model.generate(user(f"q{i}")) for i in range(200)))
    assert len(results) == 200
    assert server.request_count == 200
    assert 1 < server.max_in_flight <= 8  # concurrent, never above the limit


async def test_models_on_one_endpoint_share_the_limit() -> None:
    async with FakeOpenAIServer(answer_script, latency=0.02) as server:
        first = get_model("openai/a", base_url=server.base_url, api_key_env=None, max_concurrency=4)
        second = get_model(
            "openai/b", base_url=server.base_url, api_key_env=None, max_concurrency=4
        )
        calls = [m.generate(user(f"q{i}")) for i in range(40) for m in (first, second)]
        await asyncio.gather(*calls)
    assert 1 < server.max_in_flight <= 4  # 80 calls from two models, one shared limit


def test_fresh_event_loops_each_work() -> None:
    with FakeOpenAIServer(answer_script) as server:
        model = get_model("openai/m", base_url=server.base_url, api_key_env=None, max_concurrency=2)
        for i in range(3):  # a model outlives loops: clients and limiters are per loop
            completion = asyncio.run(model.generate(user(f"q{i}")))
            assert completion.text == f"answer to q{i}"


async def test_cost_accounting_with_prices() -> None:
    async with FakeOpenAIServer(lambda r: "one two three") as server:
        model = get_model(
            "openai/m",
            base_url=server.base_url,
            api_key_env=None,
            input_price_per_mtok=2.0,
            output_price_per_mtok=10.0,
        )
        await model.generate(user("a b"))
    usage = model.usage
    assert (usage.input_tokens, usage.output_tokens) == (2, 3)
    assert usage.cost == pytest.approx((2 * 2.0 + 3 * 10.0) / 1e6)


@pytest.mark.parametrize(
    "bad",
    [
        "just a string",
        [],
        ["not a dict"],
        [{"content": "no role"}],
        [{"role": "user"}],
    ],
)
async def test_bad_messages_are_input_errors(bad: object) -> None:
    model = get_model("openai/m", base_url="http://127.0.0.1:9/v1", api_key_env=None)
    with pytest.raises(InputError):
        await model.generate(bad, GenerateConfig())  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("name", "match"),
    [
        ("gpt-4o", "provider/model"),
        ("nope/model", "unknown model provider"),
        ("openai/", "provider/model"),
    ],
)
def test_get_model_rejects_bad_names(name: str, match: str) -> None:
    with pytest.raises(InputError, match=match):
        get_model(name)


def test_get_model_rejects_bad_settings() -> None:
    with pytest.raises(InputError, match="cache_mode"):
        get_model("openai/m", cache_mode="sometimes")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="max_concurrency"):
        get_model("openai/m", max_concurrency=0)
    with pytest.raises(InputError, match="retry"):
        get_model("openai/m", retry={"max_attempts": 0})
    with pytest.raises(InputError, match="base_url must start with http"):
        get_model("openai/m", base_url="127.0.0.1:8000/v1")
    # The HTTP client refused these later with its own exceptions (a traceback in the CLI).
    with pytest.raises(InputError, match="not a valid URL"):
        get_model("openai/m", base_url="http://127.0.0.1:port/v1")
    with pytest.raises(InputError, match="names no host"):
        get_model("openai/m", base_url="http://:80/v1")
    with pytest.raises(InputError, match="timeout_s"):
        get_model("openai/m", timeout_s=float("nan"))
    # A password in the URL would be stored with the run and printed in its errors.
    with pytest.raises(InputError, match="user name or password"):
        get_model("openai/m", base_url="http://alice:s3cret-pass@127.0.0.1:9/v1")


def test_a_config_with_a_password_in_base_url_is_refused_without_repeating_it() -> None:
    from pydantic import ValidationError

    from byzllm.llm import ModelSettings
    from byzllm.runs import format_validation_error

    with pytest.raises(ValidationError) as caught:
        ModelSettings(base_url="http://alice:s3cret-pass@127.0.0.1:9/v1")
    line = format_validation_error(caught.value, ModelSettings)
    assert "user name or password" in line and "s3cret-pass" not in line
    # Whatever else is wrong with the URL (a bad port, a broken IPv6 host), the password is
    # found first, and no message quotes the URL.
    for url in ("http://u:s3cret-pass@host:80a/v1", "http://u:s3cret-pass@[::1/v1"):
        with pytest.raises(ValidationError) as caught:
            ModelSettings(base_url=url)
        assert "s3cret-pass" not in format_validation_error(caught.value, ModelSettings)
        with pytest.raises(InputError) as refused:
            get_model("openai/m", base_url=url)
        assert "s3cret-pass" not in str(refused.value)


async def test_messages_that_are_not_json_are_an_input_error_with_or_without_cache(
    tmp_path: Path,
) -> None:
    async with FakeOpenAIServer(lambda r: "hi") as server:
        for cache in (None, tmp_path / "c.db"):
            model = get_model("openai/m", base_url=server.base_url, api_key_env=None, cache=cache)
            with pytest.raises(InputError, match="not JSON-serializable"):
                await model.generate([{"role": "user", "content": b"x"}])  # type: ignore[list-item]


async def test_model_spec_builds_the_same_model(tmp_path: object) -> None:
    spec = ModelSpec.model_validate(
        {
            "name": "openai/m",
            "base_url": "http://127.0.0.1:9/v1",
            "max_concurrency": 3,
            "retry": {"max_attempts": 2},
            "api_key_env": None,
        }
    )
    model = spec.build()
    assert isinstance(model, Model)
    assert model.max_concurrency == 3 and model.retry.max_attempts == 2
    assert model.endpoint == "http://127.0.0.1:9/v1"
    with pytest.raises(ValueError):
        ModelSpec.model_validate({"name": "openai/m", "api_key": "sk-nope"})


async def test_models_share_clients_and_close_them_last() -> None:
    async with FakeOpenAIServer(answer_script) as server:
        first = get_model("openai/a", base_url=server.base_url, api_key_env=None)
        second = get_model("openai/b", base_url=server.base_url, api_key_env=None)
        await first.generate(user("1"))
        await second.generate(user("2"))
        await first.aclose()  # the second model still uses the shared client
        assert (await second.generate(user("3"))).text == "answer to 3"
        await second.aclose()
        assert (await first.generate(user("4"))).text == "answer to 4"  # reopened lazily
        await first.aclose()
    assert server.connections == 2  # one keep-alive connection, reopened once after closing


async def test_unicode_and_lone_surrogates_reach_the_server_intact() -> None:
    texts = ["naïve café 数学 🧮", "broken \ud800 surrogate"]
    async with FakeOpenAIServer(lambda r: r["messages"][-1]["content"]) as server:
        model = get_model("openai/m", base_url=server.base_url, api_key_env=None)
        replies = [(await model.generate(user(text))).text for text in texts]
    assert [r["messages"][0]["content"] for r in server.requests] == texts
    assert replies == texts


class _QuotingServer(FakeOpenAIServer):
    """Answers every request with an error whose message quotes the caller's key after
    ``pad`` characters (as some proxies do), so that a length limit can cut through it."""

    pad = 0

    async def _write_status(self, writer, status, headers, keep_alive):  # type: ignore[no-untyped-def]
        token = headers.get("authorization", "").removeprefix("Bearer ").strip()
        message = "x" * self.pad + f"bad request for key {token}"
        body = {"error": {"message": message, "type": "fake_error", "code": status}}
        await self._write(writer, status, body, keep_alive)


@pytest.mark.parametrize("status", [400, 500])
async def test_a_quoted_key_is_hidden_even_where_a_length_limit_cuts_it(
    status: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Error texts are cut to a length before they are redacted: a key cut off there lost
    its last characters and then matched nothing (25 of 26 characters were shown)."""
    monkeypatch.setenv("BYZLLM_TEST_KEY", SECRET)
    pieces = {SECRET[i : i + 8] for i in range(len(SECRET) - 7)}
    for pad in range(240, 300, 3):  # one of these cuts through the key
        _QuotingServer.pad = pad
        async with _QuotingServer(status=status) as server:
            model = get_model(
                "openai/m", base_url=server.base_url, api_key_env="BYZLLM_TEST_KEY",
                retry=RetryPolicy(max_attempts=1),
            )  # fmt: skip
            with pytest.raises(ModelError) as info:
                await model.generate(user("x"))
            await model.aclose()
        shown = str(info.value)
        assert not any(piece in shown for piece in pieces), (pad, shown)
