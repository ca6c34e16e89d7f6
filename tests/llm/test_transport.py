"""The keep-alive HTTP/1.1 transport used for plain-http endpoints."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from byzllm.llm import GenerateConfig, get_model
from byzllm.llm._transport import FastHTTPTransport, fast_transport_enabled
from byzllm.testing import FakeOpenAIServer

Responder = Callable[[int], bytes]  # request number -> raw response bytes


@asynccontextmanager
async def raw_server(
    respond: Responder, close_after: bool = False, heads: list[bytes] | None = None
) -> AsyncIterator[list[int]]:
    """A server answering each request with scripted raw bytes; yields [port, connections]
    and appends each request's raw head to ``heads`` when given."""
    state = [0, 0]
    counter = 0

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal counter
        state[1] += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.decode().split("\r\n"):
                    if line.lower().startswith("content-length:"):
                        length = int(line.split(":")[1])
                await reader.readexactly(length)
                if heads is not None:
                    heads.append(head)
                writer.write(respond(counter))
                counter += 1
                await writer.drain()
                if close_after:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    state[0] = server.sockets[0].getsockname()[1]
    try:
        yield state
    finally:
        server.close()


def ok(body: bytes = b'{"ok": true}') -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)


async def fetch(client: httpx2.AsyncClient, port: int) -> httpx2.Response:
    return await client.post(f"http://127.0.0.1:{port}/v1/x", content=b"{}")


def test_enabled_only_for_plain_http_without_proxies() -> None:
    assert fast_transport_enabled("http://127.0.0.1:8000/v1", {})
    assert not fast_transport_enabled("https://api.openai.com/v1", {})
    assert not fast_transport_enabled("http://h/v1", {"BYZLLM_HTTP_TRANSPORT": "httpx"})
    assert not fast_transport_enabled("http://h/v1", {"HTTP_PROXY": "http://proxy:3128"})


async def test_keep_alive_reuses_one_connection() -> None:
    async with (
        raw_server(lambda i: ok(b'{"n": %d}' % i)) as state,
        httpx2.AsyncClient(transport=FastHTTPTransport()) as client,
    ):
        bodies = [(await fetch(client, state[0])).json() for _ in range(5)]
    assert bodies == [{"n": i} for i in range(5)]
    assert state[1] == 1


async def test_chunked_body_and_informational_response() -> None:
    chunked = (
        b"HTTP/1.1 100 Continue\r\n\r\n"
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nX-Trailer: 1\r\n\r\n"
    )
    async with (
        raw_server(lambda i: chunked) as state,
        httpx2.AsyncClient(transport=FastHTTPTransport()) as client,
    ):
        first = await fetch(client, state[0])
        second = await fetch(client, state[0])  # the connection is still usable
    assert first.status_code == 200 and first.content == b"hello world"
    assert second.content == b"hello world" and state[1] == 1


async def test_connection_close_and_body_until_eof() -> None:
    response = b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nno length given"
    async with (
        raw_server(lambda i: response, close_after=True) as state,
        httpx2.AsyncClient(transport=FastHTTPTransport()) as client,
    ):
        first = await fetch(client, state[0])
        second = await fetch(client, state[0])
    assert first.content == second.content == b"no length given"
    assert state[1] == 2


async def test_idle_connection_closed_by_server_is_not_reused() -> None:
    async with (
        raw_server(lambda i: ok(), close_after=True) as state,
        httpx2.AsyncClient(transport=FastHTTPTransport()) as client,
    ):  # keep-alive, then closes
        await fetch(client, state[0])
        await asyncio.sleep(0.05)  # the loop notices the EOF
        response = await fetch(client, state[0])
    assert response.status_code == 200 and state[1] == 2


@pytest.mark.parametrize(
    ("raw", "error"),
    [
        (b"SPDY/9 200 OK\r\n\r\n", httpx2.RemoteProtocolError),
        (b"HTTP/1.1 200 OK\r\nbroken header\r\n\r\n", httpx2.RemoteProtocolError),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\nshort", httpx2.RemoteProtocolError),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            httpx2.RemoteProtocolError,
        ),
    ],
)
async def test_broken_responses_raise_httpx_errors(raw: bytes, error: type[Exception]) -> None:
    async with (
        raw_server(lambda i: raw, close_after=True) as state,
        httpx2.AsyncClient(transport=FastHTTPTransport()) as client,
    ):
        with pytest.raises(error):
            await fetch(client, state[0])


async def test_connect_error_and_timeout() -> None:
    async with raw_server(lambda i: ok()) as state:
        port = state[0]
    async with httpx2.AsyncClient(transport=FastHTTPTransport()) as client:
        with pytest.raises(httpx2.ConnectError):
            await fetch(client, port)
    hang = FakeOpenAIServer(fault_rate=1.0, faults=["hang"])
    impatient = httpx2.AsyncClient(transport=FastHTTPTransport(), timeout=0.2)
    async with hang as server, impatient as client:
        with pytest.raises(httpx2.ReadTimeout):
            await client.post(server.base_url + "/chat/completions", json={"messages": []})


async def test_https_is_refused() -> None:
    transport = FastHTTPTransport()
    with pytest.raises(httpx2.UnsupportedProtocol):
        await transport.handle_async_request(httpx2.Request("GET", "https://example.com/"))


async def test_model_through_the_transport_sends_headers_and_large_bodies(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("BYZLLM_TEST_KEY", "sk-test-abc")
    big = "x" * 1_000_000
    async with FakeOpenAIServer(lambda r: r["messages"][-1]["content"][:5]) as server:
        model = get_model("openai/m", base_url=server.base_url, api_key_env="BYZLLM_TEST_KEY")
        completion = await model.generate([{"role": "user", "content": big}], GenerateConfig())
        await model.aclose()
    assert completion.text == "xxxxx"
    assert server.requests[0]["messages"][0]["content"] == big


def _parse(data: bytes) -> object:
    from byzllm.llm._transport import _read_response

    async def run() -> object:
        reader = asyncio.StreamReader(limit=1 << 20)
        reader.feed_data(data)
        reader.feed_eof()
        return await _read_response(reader, "POST")

    return asyncio.run(run())


# Exactly the exceptions FastHTTPTransport maps onto httpx2 errors.
_MAPPED = (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError, OSError)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.binary(max_size=200)
    | st.builds(
        lambda status, headers, body: b"HTTP/1.1 %s\r\n%s\r\n%s" % (status, headers, body),
        st.sampled_from([b"200 OK", b"200", b"abc", b"100 Continue", b"204 No Content", b""]),
        st.lists(
            st.sampled_from(
                [
                    b"Content-Length: 5\r\n",
                    b"Content-Length: -1\r\n",
                    b"Content-Length: x\r\n",
                    b"Transfer-Encoding: chunked\r\n",
                    b"Connection: close\r\n",
                    b"junk\r\n",
                ]
            ),
            max_size=3,
        ).map(b"".join),
        st.binary(max_size=40),
    )
)
def test_response_parser_on_garbage(data: bytes) -> None:
    from byzllm.llm._transport import _ProtocolError

    try:
        status, _headers, body, _ = _parse(data)  # type: ignore[misc]
    except (*_MAPPED, _ProtocolError):
        return
    assert isinstance(status, int) and isinstance(body, bytes)


def test_response_parser_on_a_huge_body() -> None:
    body = b"x" * 5_000_000
    status, _, parsed, keep = _parse(  # type: ignore[misc]
        b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
    )
    assert status == 200 and parsed == body and keep


async def test_lean_client_falls_back_for_auth_and_hooks() -> None:
    from byzllm.llm._transport import LeanAsyncClient

    seen: list[str] = []

    async def hook(request: httpx2.Request) -> None:
        seen.append(request.headers.get("authorization", ""))

    async with raw_server(lambda i: ok()) as state:
        url = f"http://127.0.0.1:{state[0]}/v1/x"
        async with LeanAsyncClient(FastHTTPTransport(), event_hooks={"request": [hook]}) as hooked:
            assert (await hooked.post(url, content=b"{}")).status_code == 200
        async with LeanAsyncClient(FastHTTPTransport()) as lean:
            response = await lean.post(url, content=b"{}", auth=("user", "pw"))
            plain = await lean.post(url, content=b"{}")
    assert seen == [""]  # the hook ran: the full send path was used
    assert response.status_code == plain.status_code == 200
    assert plain.request.extensions["timeout"]["read"] is not None


# ---------------------------------------------------------------- the direct path


@asynccontextmanager
async def recording_server(
    reply: Callable[[int], bytes],
) -> AsyncIterator[tuple[int, list[bytes]]]:
    """A server answering request n with ``reply(n)``; yields (port, raw request heads)."""
    heads: list[bytes] = []
    async with raw_server(reply, heads=heads) as state:
        yield state[0], heads


def _without_length(head: bytes) -> bytes:
    return b"\r\n".join(
        line for line in head.split(b"\r\n") if not line.lower().startswith(b"content-length:")
    )


_CHAT_REPLY = ok(
    b'{"model": "m", "choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}]}'
)


async def test_direct_requests_carry_the_bytes_the_sdk_sends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Plain-http calls send the SDK's request captured once, with each call's body: the
    same bytes (header for header) as the SDK sends through the same client itself."""
    from byzllm.llm._openai import OpenAIAPI, _encode_json

    monkeypatch.setenv("BYZLLM_TEST_KEY", "sk-direct-123")
    async with recording_server(lambda n: _CHAT_REPLY) as (port, heads):
        model = get_model(
            "openai/m", base_url=f"http://127.0.0.1:{port}/v1", api_key_env="BYZLLM_TEST_KEY"
        )
        for question in ("one", "a longer second question"):
            await model.generate([{"role": "user", "content": question}], GenerateConfig())
        api = model.api
        assert isinstance(api, OpenAIAPI)
        shard = api._client()
        assert shard.direct is not None and shard.template is not None
        assert "sk-direct-123" not in repr(shard.template)
        # The SDK itself, through the same client and transport:
        await api._post_via_sdk(shard.client, _encode_json({"model": "m", "messages": []}))
        await model.aclose()
    assert len(heads) == 3
    assert b"authorization: bearer sk-direct-123" in heads[0].lower()
    assert _without_length(heads[0]) == _without_length(heads[1]) == _without_length(heads[2])
    assert heads[0] != heads[1]  # the lengths differ


async def _failure(port: int, direct: bool, **settings: Any) -> tuple[str, str]:
    """The error class and message of one failing call (the elapsed time masked), sent on
    the direct path or through the SDK."""
    from byzllm.llm import ModelError
    from byzllm.llm._openai import OpenAIAPI

    model = get_model("openai/m", base_url=f"http://127.0.0.1:{port}/v1", **settings)
    api = model.api
    assert isinstance(api, OpenAIAPI)
    if not direct:
        api._client().direct = None
    with pytest.raises(ModelError) as caught:
        await model.generate([{"role": "user", "content": "q"}], GenerateConfig())
    await model.aclose()
    return type(caught.value).__name__, re.sub(r" in [0-9.]+s;", " in Ts;", str(caught.value))


def _status_reply(status: int, body: bytes, extra: bytes = b"") -> bytes:
    return b"HTTP/1.1 %d X\r\nContent-Length: %d\r\n%s\r\n%s" % (status, len(body), extra, body)


@pytest.mark.parametrize(
    "reply",
    [
        _status_reply(400, b'{"error": {"message": "max_tokens is not supported"}}'),
        _status_reply(401, b'{"error": {"message": "bad key sk-direct-123"}}'),
        _status_reply(404, b'{"error": "no such model"}'),
        _status_reply(422, b"plain text refusal"),
        _status_reply(429, b'{"error": {"message": "slow down"}}', b"Retry-After: 0\r\n"),
        _status_reply(500, b"{not json"),
        _status_reply(302, b""),
        ok(b'{"choices": []}'),
        ok(b"x" * 100),
        b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999\r\n\r\n",
        b"garbage\r\n\r\n",
    ],
)
async def test_direct_path_fails_as_the_sdk_path_does(
    reply: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every failure of a direct call is the one the SDK path gives for the same reply (same
    error class, same message: no key in it), retried alike."""
    monkeypatch.setenv("BYZLLM_TEST_KEY", "sk-direct-123")
    outcomes: list[tuple[str, str, int]] = []
    for direct in (True, False):
        async with recording_server(lambda n: reply) as (port, heads):
            kind, message = await _failure(
                port,
                direct,
                api_key_env="BYZLLM_TEST_KEY",
                retry={"max_attempts": 2, "initial_backoff_s": 0},
            )
        outcomes.append((kind, message.replace(str(port), "PORT"), len(heads)))
    assert outcomes[0] == outcomes[1]
    assert "sk-direct-123" not in outcomes[0][1]


async def test_direct_path_timeouts_and_refused_connections_as_the_sdk_path() -> None:
    writers: list[asyncio.StreamWriter] = []

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writers.append(writer)
        await reader.read()  # never answers

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    open_port = server.sockets[0].getsockname()[1]
    closed = await asyncio.start_server(silent, "127.0.0.1", 0)
    closed_port = closed.sockets[0].getsockname()[1]
    closed.close()
    await closed.wait_closed()
    try:
        for port in (open_port, closed_port):
            outcomes = []
            for direct in (True, False):
                outcomes.append(
                    await _failure(
                        port, direct, api_key_env=None, timeout_s=0.2, retry={"max_attempts": 1}
                    )
                )
            assert outcomes[0] == outcomes[1]
    finally:
        for writer in writers:
            writer.close()
        server.close()


async def test_a_trickling_server_times_out_an_attempt_on_both_stacks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """httpx applies its timeout to each read: on the SDK's own HTTP stack (https://
    endpoints, proxies; forced here with BYZLLM_HTTP_TRANSPORT) a server that sent a byte
    every 0.1 s held one attempt until the call's deadline ("gave up after 1 attempt(s): no
    answer within the call's deadline"). ``timeout_s`` caps the whole attempt on both."""
    writers: list[asyncio.StreamWriter] = []

    async def trickle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writers.append(writer)
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n")
        with contextlib.suppress(Exception):
            while True:
                writer.write(b" ")
                await writer.drain()
                await asyncio.sleep(0.1)

    server = await asyncio.start_server(trickle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    settings: dict[str, Any] = {
        "api_key_env": None, "timeout_s": 0.3, "retry": {"max_attempts": 1, "max_total_s": 30}
    }  # fmt: skip
    try:
        ours = await _failure(port, True, **settings)
        monkeypatch.setenv("BYZLLM_HTTP_TRANSPORT", "httpx")
        httpx_stack = await _failure(port, False, **settings)
    finally:
        for writer in writers:
            writer.close()
        server.close()
    assert ours == httpx_stack
    assert "timed out after 0.3s" in httpx_stack[1]


async def test_each_model_on_an_endpoint_runs_under_its_own_timeout() -> None:
    """Models on one endpoint share their HTTP clients, and a plain-http client sends the
    request its first call captured: a second model with another ``timeout_s`` ran under the
    first one's (timeout_s=0.3 waited a whole 1 s answer; timeout_s=30 was cut at 0.2 s and
    reported "timed out after 30s")."""
    from byzllm.llm import ModelUnavailableError

    once: dict[str, Any] = {"api_key_env": None, "adaptive_timeout": False}
    once["retry"] = {"max_attempts": 1}
    question = [{"role": "user", "content": "q"}]
    async with FakeOpenAIServer(latency=0.6) as server:
        short = get_model("openai/m", base_url=server.base_url, timeout_s=0.2, **once)
        with pytest.raises(ModelUnavailableError, match=r"timed out after 0\.2s"):
            await short.generate(question)
        patient = get_model("openai/m", base_url=server.base_url, timeout_s=30, **once)
        assert (await patient.generate(question)).text == "echo: q"
        hasty = get_model("openai/m", base_url=server.base_url, timeout_s=0.3, **once)
        with pytest.raises(ModelUnavailableError, match=r"timed out after 0\.3s"):
            await hasty.generate(question)
        for model in (short, patient, hasty):
            await model.aclose()
