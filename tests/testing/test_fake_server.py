"""The FakeOpenAIServer: wire format, scripting, faults, recording."""

from __future__ import annotations

import asyncio
import http.client
import json
import math
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from byzllm.errors import InputError
from byzllm.llm import TokenLogprob
from byzllm.testing import FakeOpenAIServer, FakeReply, split_tokens
from byzllm.testing._tokens import invent_top_logprobs

# The machine may be busy: a slow example is not a failure.
SLOW_OK = [HealthCheck.too_slow]


@pytest.fixture(scope="module")
def shared_server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


def post(
    server: FakeOpenAIServer,
    body: dict[str, Any],
    headers: dict[str, str] | None = None,
    timeout: float = 5.0,
) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=timeout)
    try:
        conn.request("POST", "/v1/chat/completions", json.dumps(body), headers or {})
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()


def chat(content: str = "hi", **extra: Any) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": content}], **extra}


def test_answers_in_openai_wire_format_with_logprobs() -> None:
    with FakeOpenAIServer(lambda r: "Hello, world!") as server:
        status, headers, raw = post(server, chat(logprobs=True, top_logprobs=3))
    assert status == 200 and headers["Content-Type"] == "application/json"
    data = json.loads(raw)
    choice = data["choices"][0]
    assert choice["message"] == {"role": "assistant", "content": "Hello, world!"}
    assert choice["finish_reason"] == "stop"
    content = choice["logprobs"]["content"]
    assert [c["token"] for c in content] == ["Hello", ",", " world", "!"]
    for entry in content:
        assert len(entry["top_logprobs"]) == 3
        assert entry["top_logprobs"][0]["token"] == entry["token"]
        assert entry["top_logprobs"][0]["logprob"] == entry["logprob"]
        assert bytes(entry["bytes"]).decode() == entry["token"]
    assert data["usage"] == {"prompt_tokens": 1, "completion_tokens": 4, "total_tokens": 5}
    assert data["model"] == "m"


def test_no_logprobs_unless_asked_and_k_zero() -> None:
    with FakeOpenAIServer(lambda r: "a b") as server:
        plain = json.loads(post(server, chat())[2])
        zero = json.loads(post(server, chat(logprobs=True, top_logprobs=0))[2])
    assert plain["choices"][0]["logprobs"] is None
    assert [c["top_logprobs"] for c in zero["choices"][0]["logprobs"]["content"]] == [[], []]


def test_explicit_raw_and_omitted_logprobs() -> None:
    explicit = [TokenLogprob(token="A", logprob=-0.2, top=[("A", -0.2), ("B", -1.7)])]
    replies = iter(
        [
            FakeReply("A", logprobs=explicit),
            FakeReply("A", raw_logprobs={"odd": 1}),
            FakeReply("A", omit_logprobs=True),
        ]
    )
    with FakeOpenAIServer(lambda r: next(replies)) as server:
        first, second, third = (
            json.loads(post(server, chat(logprobs=True, top_logprobs=2))[2])["choices"][0]
            for _ in range(3)
        )
    assert first["logprobs"]["content"][0]["top_logprobs"][1] == {
        "token": "B",
        "logprob": -1.7,
        "bytes": [66],
    }
    assert second["logprobs"] == {"odd": 1}
    assert third["logprobs"] is None


def test_max_tokens_truncates_with_finish_reason_length() -> None:
    with FakeOpenAIServer(lambda r: "one two three four") as server:
        data = json.loads(post(server, chat(max_tokens=2))[2])
    assert data["choices"][0]["message"]["content"] == "one two"
    assert data["choices"][0]["finish_reason"] == "length"


def test_default_script_echoes_and_requests_are_recorded() -> None:
    with FakeOpenAIServer() as server:
        data = json.loads(post(server, chat("ping"))[2])
        assert data["choices"][0]["message"]["content"] == "echo: ping"
        assert server.requests == [chat("ping")]
        assert server.request_count == 1 and server.max_in_flight == 1
        server.reset()
        assert server.requests == [] and server.request_count == 0


def test_script_errors_become_500_and_are_kept() -> None:
    def broken(request: dict[str, Any]) -> str:
        raise KeyError("missing")

    with FakeOpenAIServer(broken) as server:
        status, _, raw = post(server, chat())
    assert status == 500 and b"script failed" in raw
    assert server.script_errors == ["KeyError: 'missing'"]


def test_forced_status_quotes_the_bearer_token_on_401() -> None:
    with FakeOpenAIServer(status=401) as server:
        status, _, raw = post(server, chat(), {"Authorization": "Bearer sk-abc"})
    assert status == 401 and json.loads(raw)["error"]["message"].endswith("sk-abc")


def test_models_listing_and_unknown_routes() -> None:
    with FakeOpenAIServer(model_name="served") as server:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
        conn.request("GET", "/v1/models")
        listing = json.loads(conn.getresponse().read())
        conn.request("GET", "/v1/nothing")  # same keep-alive connection
        missing = conn.getresponse()
        missing.read()
        conn.close()
        assert server.connections == 1
    assert listing["data"][0]["id"] == "served"
    assert missing.status == 404


def test_invalid_json_body_is_400() -> None:
    with FakeOpenAIServer() as server:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
        conn.request("POST", "/v1/chat/completions", b"{nope")
        assert conn.getresponse().status == 400
        conn.close()


@pytest.mark.parametrize("fault", ["429", "500", "503"])
def test_status_faults(fault: str) -> None:
    with FakeOpenAIServer(fault_rate=1.0, faults=[fault], retry_after=1.5) as server:  # type: ignore[list-item]
        status, headers, _ = post(server, chat())
        assert server.faults_injected[fault] == 1
    assert status == int(fault)
    if fault == "429":
        assert headers["Retry-After"] == "1.5"


def test_malformed_and_truncated_bodies() -> None:
    with FakeOpenAIServer(fault_rate=1.0, faults=["malformed"]) as server:
        status, _, raw = post(server, chat())
    assert status == 200
    with pytest.raises(ValueError):
        json.loads(raw)
    with (
        FakeOpenAIServer(fault_rate=1.0, faults=["truncated"]) as server,
        pytest.raises(http.client.IncompleteRead),
    ):
        post(server, chat())


def test_dropped_connection_and_hang() -> None:
    with (
        FakeOpenAIServer(fault_rate=1.0, faults=["drop"]) as server,
        pytest.raises(http.client.RemoteDisconnected),
    ):
        post(server, chat())
    with FakeOpenAIServer(fault_rate=1.0, faults=["hang"]) as server:
        with pytest.raises(socket.timeout):
            post(server, chat(), timeout=0.2)
        # The client gave up and closed; the hung request no longer counts as in flight.
        for _ in range(100):
            if server.in_flight == 0:
                break
            time.sleep(0.01)
        assert server.in_flight == 0


def test_fault_draws_are_seeded_and_near_the_rate() -> None:
    def run(seed: int) -> dict[str, int]:
        with FakeOpenAIServer(fault_rate=0.3, faults=["500", "503"], seed=seed) as server:
            for _ in range(200):
                post(server, chat())
            return dict(server.faults_injected)

    first, again = run(5), run(5)
    assert first == again
    assert 30 <= sum(first.values()) <= 90  # 200 x 0.3 = 60 expected


def test_invalid_settings_are_input_errors() -> None:
    with pytest.raises(InputError):
        FakeOpenAIServer(fault_rate=1.5)
    with pytest.raises(InputError):
        FakeOpenAIServer(faults=["fire"])  # type: ignore[list-item]
    with pytest.raises(InputError):
        FakeOpenAIServer(latency=(0.5, 0.1))
    with pytest.raises(InputError):
        FakeOpenAIServer(latency=-1)


async def test_async_context_manager_and_concurrency_count() -> None:
    async with FakeOpenAIServer(latency=0.5) as server:
        await asyncio.gather(*(asyncio.to_thread(post, server, chat(str(i))) for i in range(5)))
        assert server.max_in_flight == 5
    assert "stopped" in repr(server)


@settings(max_examples=150, deadline=None, suppress_health_check=SLOW_OK)
@given(st.text(max_size=200))
def test_split_tokens_reassembles_the_text(text: str) -> None:
    assert "".join(split_tokens(text)) == text


@settings(max_examples=150, deadline=None, suppress_health_check=SLOW_OK)
@given(st.integers(min_value=0, max_value=10_000), st.text(max_size=30), st.integers(0, 40))
def test_invented_top_k_is_a_sorted_subdistribution(position: int, token: str, k: int) -> None:
    chosen, top = invent_top_logprobs(position, token, k)
    assert (chosen, top) == invent_top_logprobs(position, token, k)  # deterministic
    assert len(top) == k
    assert math.log(0.55) <= chosen < 0
    if k:
        assert top[0] == (token, chosen)
        assert len({t for t, _ in top}) == k
        lps = [lp for _, lp in top]
        assert lps == sorted(lps, reverse=True)
        assert sum(math.exp(lp) for lp in lps) <= 1.0 + 1e-9


@settings(max_examples=40, deadline=None, suppress_health_check=SLOW_OK)
@given(
    st.binary(max_size=300)
    | st.sampled_from(
        [
            b"GET\r\n\r\n",
            b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: nope\r\n\r\n",
            b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 3\r\n\r\n[1]",
            b"POST /v1/chat/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            b"POST /v1/chat/completions HTTP/1.1\r\n" + b"X: " + b"a" * 70_000 + b"\r\n\r\n",
        ]
    )
)
def test_garbage_requests_do_not_break_the_server(
    shared_server: FakeOpenAIServer, garbage: bytes
) -> None:
    server = shared_server
    with socket.create_connection(("127.0.0.1", server.port), timeout=2) as sock:
        sock.sendall(garbage)
        sock.shutdown(socket.SHUT_WR)
        try:
            while sock.recv(65536):
                pass
        except OSError:
            pass
    status, _, raw = post(server, chat("still alive?"))
    assert status == 200 and b"still alive?" in raw
