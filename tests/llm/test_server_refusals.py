"""Replies at the edges: refusals that cannot change are not retried (whatever their status),
replies too large are cut at the limit without being read whole, and a call never outlives
its deadline, not even on an endless stream."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import pytest
from hypothesis import given
from hypothesis import strategies as st

from byzllm.llm import (
    ModelNotFoundError,
    ModelRefusedError,
    ModelRequestError,
    ModelUnavailableError,
    RetryPolicy,
    _transport,
    get_model,
    track_requests,
)
from byzllm.llm._retry import permanent_refusal
from byzllm.llm._transport import FastHTTPTransport

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
HI = [{"role": "user", "content": "hi"}]
FAST = RetryPolicy(max_attempts=3, initial_backoff_s=0.0, max_backoff_s=0.0)


@asynccontextmanager
async def serve(handler: Handler) -> AsyncIterator[tuple[str, list[int]]]:
    """A raw HTTP server on 127.0.0.1 running ``handler`` per request; yields its base URL
    and the list of requests seen (one entry each)."""
    seen: list[int] = []

    async def on_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.decode("latin-1").split("\r\n"):
                    name, _, value = line.partition(":")
                    if name.strip().lower() == "content-length":
                        length = int(value)
                await reader.readexactly(length)
                seen.append(1)
                await handler(reader, writer)
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass  # the client went away, or the test is over
        finally:
            writer.close()

    server = await asyncio.start_server(on_connection, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/v1", seen
    finally:
        server.close()


def _respond(status: int, body: bytes) -> Handler:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(
            b"HTTP/1.1 %d X\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
            % (status, len(body), body)
        )
        await writer.drain()

    return handler


def _error(status: int, message: str) -> Handler:
    return _respond(status, json.dumps({"error": {"code": status, "message": message}}).encode())


LLAMA_LOGPROBS = "logprobs is not supported for models created with logits_all=False"


async def test_llama_cpps_500_for_logprobs_fails_at_once_with_the_servers_reason() -> None:
    async with serve(_error(500, LLAMA_LOGPROBS)) as (url, seen):
        model = get_model("openai/m", base_url=url, api_key_env=None, retry=FAST)
        with pytest.raises(ModelRefusedError) as caught:
            await model.generate(HI)
        await model.aclose()
    assert len(seen) == 1  # not retried
    assert caught.value.fatal and caught.value.exit_code == 2
    assert LLAMA_LOGPROBS in str(caught.value) and "HTTP 500" in str(caught.value)


@pytest.mark.parametrize(
    ("status", "message", "error"),
    [
        (500, "model 'qwen' not found", ModelNotFoundError),
        (503, "This model's maximum context length is 4096 tokens", ModelRequestError),
        (400, "Unsupported parameter: 'top_logprobs'", ModelRefusedError),
    ],
)
async def test_refusals_are_classified_by_what_they_say(
    status: int, message: str, error: type[Exception]
) -> None:
    async with serve(_error(status, message)) as (url, seen):
        model = get_model("openai/m", base_url=url, api_key_env=None, retry=FAST)
        with pytest.raises(error) as caught:
            await model.generate(HI)
        await model.aclose()
    assert type(caught.value) is error and len(seen) == 1
    assert message in str(caught.value)


async def test_a_passing_500_is_still_retried() -> None:
    async with serve(_error(500, "the model is loading, try again")) as (url, seen):
        model = get_model("openai/m", base_url=url, api_key_env=None, retry=FAST)
        with pytest.raises(ModelUnavailableError):
            await model.generate(HI)
        await model.aclose()
    assert len(seen) == 3


@given(st.text(max_size=300))
def test_permanent_refusal_reads_any_text(text: str) -> None:
    assert permanent_refusal(text) in (None, "context", "model", "unsupported")


@given(st.text(max_size=80), st.text(max_size=80))
def test_a_known_refusal_is_found_anywhere_in_the_message(before: str, after: str) -> None:
    assert permanent_refusal(f"{before} {LLAMA_LOGPROBS} {after}") is not None


# -- bounded replies --------------------------------------------------------------------------


def _huge(total: int, *, chunked: bool, sent: list[int] | None = None) -> Handler:
    """A reply of ``total`` bytes, in chunks of 64 KiB or with its ``Content-Length``; how
    many bytes of each reply went out before the client hung up is appended to ``sent``."""
    block = b"x" * 65536
    tally = [] if sent is None else sent

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        reply = len(tally)  # this reply's slot in the tally
        tally.append(0)
        framing = b"Transfer-Encoding: chunked" if chunked else b"Content-Length: %d" % total
        writer.write(b"HTTP/1.1 200 OK\r\n%s\r\n\r\n" % framing)
        try:
            while tally[reply] < total:
                piece = block[: total - tally[reply]]
                writer.write(b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece)
                await writer.drain()
                tally[reply] += len(piece)
            if chunked:
                writer.write(b"0\r\n\r\n")
            await writer.drain()
        except ConnectionError:
            pass

    return handler


@pytest.mark.parametrize("chunked", [False, True])
async def test_a_10mb_reply_is_cut_at_the_limit_and_counted_as_bad_response(
    chunked: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    limit = 1 << 20
    original = FastHTTPTransport.__init__

    def small(self: FastHTTPTransport, *, max_body_bytes: int = limit) -> None:
        original(self, max_body_bytes=max_body_bytes)

    monkeypatch.setattr(FastHTTPTransport, "__init__", small)
    handler = _huge(10 << 20, chunked=chunked)
    async with serve(handler) as (url, seen):
        model = get_model("openai/m", base_url=url, api_key_env=None, retry=FAST)
        with track_requests() as counts, pytest.raises(ModelUnavailableError) as caught:
            await model.generate(HI)
        await model.aclose()
    message = str(caught.value)
    assert "over 1048576 bytes" in message
    assert counts.errors == {"bad_response": 3} and len(seen) == 3
    if chunked:  # read up to the chunk that crosses the limit, no further
        assert f"chunks of {limit + 65536} bytes announced" in message
    else:  # refused from its Content-Length: no byte of the body read
        assert "Content-Length 10485760" in message


async def test_a_10mb_reply_is_refused_by_default() -> None:
    """The default bound, unpatched: a 10 MB reply is refused from its Content-Length."""
    async with serve(_huge(10 << 20, chunked=False)) as (url, seen):
        model = get_model("openai/m", base_url=url, api_key_env=None, retry=FAST)
        with pytest.raises(ModelUnavailableError) as caught:
            await model.generate(HI)
        await model.aclose()
    assert f"over {_transport.MAX_RESPONSE_BYTES} bytes" in str(caught.value)
    assert "Content-Length 10485760" in str(caught.value) and len(seen) == 3


@pytest.mark.parametrize("chunked", [False, True])
async def test_the_sdks_own_stack_cuts_a_10mb_reply_at_the_limit_too(
    chunked: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What https:// endpoints use (forced here on http:// with BYZLLM_HTTP_TRANSPORT)."""
    limit = 1 << 20
    monkeypatch.setenv("BYZLLM_HTTP_TRANSPORT", "httpx")
    monkeypatch.setattr(_transport, "MAX_RESPONSE_BYTES", limit)
    sent: list[int] = []
    async with serve(_huge(10 << 20, chunked=chunked, sent=sent)) as (url, seen):
        model = get_model("openai/m", base_url=url, api_key_env=None, retry=FAST)
        with track_requests() as counts, pytest.raises(ModelUnavailableError) as caught:
            await model.generate(HI)
        await model.aclose()
    message = str(caught.value)
    assert f"over {limit} bytes" in message
    assert counts.errors == {"bad_response": 3} and len(seen) == 3
    if chunked:  # read up to the limit, no further
        assert "bytes read); abandoned" in message
    else:  # refused from its Content-Length
        assert "Content-Length 10485760" in message
    assert max(sent) < 10 << 20  # no reply was sent whole: the client hung up first


async def test_an_endless_stream_gives_up_at_the_calls_deadline() -> None:
    async def endless(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        while True:
            writer.write(b"1\r\n \r\n")
            await writer.drain()
            await asyncio.sleep(0.01)

    policy = RetryPolicy(max_attempts=100, max_total_s=0.5, initial_backoff_s=0.0)
    async with serve(endless) as (url, _seen):
        model = get_model("openai/m", base_url=url, api_key_env=None, retry=policy, timeout_s=60.0)
        with pytest.raises(ModelUnavailableError, match=r"max_total_s=0\.5s"):
            await model.generate(HI)
        await model.aclose()


async def test_a_retry_after_date_past_year_9999_gets_the_usual_backoff() -> None:
    body = json.dumps({"error": {"message": "busy"}}).encode()

    async def far_future(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(
            b"HTTP/1.1 503 X\r\nRetry-After: Wed, 21 Oct 10000 07:28:00 GMT\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
        )
        await writer.drain()

    async with serve(far_future) as (url, seen):
        model = get_model("openai/m", base_url=url, api_key_env=None, retry=FAST)
        # A ValueError from the date arithmetic escaped the call, uncounted.
        with track_requests() as counts, pytest.raises(ModelUnavailableError, match="HTTP 503"):
            await model.generate(HI)
        await model.aclose()
    assert len(seen) == 3 and counts.failures == 1


async def test_an_absurd_token_count_is_no_count_and_does_not_break_pricing() -> None:
    reply = {
        "choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10**400, "completion_tokens": 2},
    }
    async with serve(_respond(200, json.dumps(reply).encode())) as (url, seen):
        model = get_model(
            "openai/m", base_url=url, api_key_env=None, input_price_per_mtok=1.0, retry=FAST
        )
        # OverflowError (int too large to convert to float) escaped generate().
        completion = await model.generate(HI)
        await model.aclose()
    assert completion.text == "hi" and len(seen) == 1
    assert completion.usage.input_tokens == 0 and completion.usage.output_tokens == 2
    assert model.usage.input_tokens == 0 and model.usage.cost == 0.0
