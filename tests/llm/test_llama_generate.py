"""Local generation without a model: numpy top-k, stop strings, and the HTTP server's edges."""

from __future__ import annotations

import http.client
import json
import math
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from byzllm.errors import InputError
from byzllm.llm import _llama_http
from byzllm.llm._llama_generate import _first_stop, top_k_logprobs


def test_top_k_hand_computed() -> None:
    # Probabilities 0.1, 0.2, 0.3, 0.4 as logits (any common shift is absorbed).
    logits = np.log(np.array([0.1, 0.2, 0.3, 0.4], dtype=np.float32)) + 7.0
    best, normalizer = top_k_logprobs(logits, 2)
    assert best.tolist() == [3, 2]
    assert math.isclose(float(logits[3]) - normalizer, math.log(0.4), abs_tol=1e-6)
    assert math.isclose(float(logits[2]) - normalizer, math.log(0.3), abs_tol=1e-6)
    assert top_k_logprobs(logits, 0)[0].size == 0
    assert top_k_logprobs(logits, 99)[0].tolist() == [3, 2, 1, 0]


def test_top_k_ties_keep_the_lower_id_first() -> None:
    best, _ = top_k_logprobs(np.array([1.0, 5.0, 5.0, 5.0, 0.0]), 2)
    assert best.tolist() == [1, 2]


@settings(max_examples=200, deadline=None)
@given(
    arrays(
        np.float32,
        st.integers(1, 3000),
        elements=st.floats(-1e4, 1e4, allow_nan=False, width=32),
    ),
    st.integers(0, 40),
)
def test_top_k_matches_a_full_sort(logits: np.ndarray[Any, Any], k: int) -> None:
    best, normalizer = top_k_logprobs(logits, k)
    row = logits.astype(np.float64)
    expected = sorted(range(row.size), key=lambda i: (-row[i], i))[: min(k, row.size)]
    assert best.tolist() == expected
    peak = row.max()
    assert math.isclose(normalizer, peak + math.log(np.exp(row - peak).sum()), rel_tol=1e-9)
    assert all(row[i] - normalizer <= 1e-9 for i in best)


def test_first_stop() -> None:
    assert _first_stop("abc<end>def", ["<end>"], 0) == 3
    assert _first_stop("abc", ["<end>"], 0) is None
    assert _first_stop("a<x>b<y>", ["<y>", "<x>"], 0) == 1
    # Only matches that end in the newly decoded part count (earlier ones were checked).
    assert _first_stop("<x>abc", ["<x>"], 3) is None
    assert _first_stop("ab<x", ["<x>"], 4) is None and _first_stop("ab<x>", ["<x>"], 4) == 2
    assert _first_stop("abc", ["", "c"], 0) == 2


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200), st.lists(st.text(max_size=6), max_size=4), st.integers(0, 220))
def test_first_stop_is_the_earliest_match(text: str, stops: list[str], start: int) -> None:
    found = _first_stop(text, stops, start)
    candidates = [
        at
        for stop in stops
        if stop
        for at in range(len(text))
        if text.startswith(stop, at) and at + len(stop) > start
    ]
    assert found == (min(candidates) if candidates else None)


# --- the HTTP server, with generation replaced -------------------------------------------


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, int, list[dict[str, Any]]]]:
    seen: list[dict[str, Any]] = []

    def fake_generate(
        llama: Any, body: dict[str, Any], *, model_name: str, context_tokens: int
    ) -> dict[str, Any]:
        seen.append(body)
        if body.get("max_tokens") == -1:
            raise InputError("the prompt has 9999 tokens; the context window holds 64")
        if body.get("max_tokens") == -2:
            raise RuntimeError("llama.cpp failed")
        return {"model": model_name, "choices": [{"message": {"content": "hi"}}]}

    monkeypatch.setattr(_llama_http, "generate_chat", fake_generate)
    httpd = _llama_http.make_server(object(), "tiny", port=0, context_tokens=64)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield "127.0.0.1", int(httpd.server_address[1]), seen
    finally:
        httpd.shutdown()
        httpd.server_close()


def _request(
    where: tuple[str, int, list[dict[str, Any]]], method: str, path: str, body: bytes | None = None
) -> tuple[int, Any]:
    connection = http.client.HTTPConnection(where[0], where[1], timeout=10)
    headers = {"Content-Type": "application/json"} if body is not None else {}
    connection.request(method, path, body=body, headers=headers)
    response = connection.getresponse()
    payload = json.loads(response.read() or b"null")
    connection.close()
    return response.status, payload


def test_models_and_health(server: tuple[str, int, list[dict[str, Any]]]) -> None:
    status, payload = _request(server, "GET", "/v1/models")
    assert status == 200 and [m["id"] for m in payload["data"]] == ["tiny"]
    assert _request(server, "GET", "/health") == (200, {"status": "ok"})
    assert _request(server, "GET", "/v1/nothing")[0] == 404


def test_completion_and_bad_requests(server: tuple[str, int, list[dict[str, Any]]]) -> None:
    ok = json.dumps({"messages": [{"role": "user", "content": "x"}]}).encode()
    status, payload = _request(server, "POST", "/v1/chat/completions", ok)
    assert status == 200 and payload["model"] == "tiny"
    for body, fragment in [
        (b"{not json", "not valid JSON"),
        (b"[1, 2]", "JSON object"),
        (json.dumps({"messages": [], "stream": True}).encode(), "streaming"),
        (json.dumps({"max_tokens": -1}).encode(), "context window"),
    ]:
        status, payload = _request(server, "POST", "/v1/chat/completions", body)
        assert status == 400, body
        assert fragment in payload["error"]["message"]
    status, payload = _request(server, "POST", "/v1/chat/completions", b'{"max_tokens": -2}')
    assert status == 500 and "RuntimeError" in payload["error"]["message"]
    assert _request(server, "POST", "/v1/embeddings", ok)[0] == 404
    # The server is still up after every bad request.
    assert _request(server, "GET", "/health")[0] == 200


def test_json_nested_too_deep_is_a_bad_request(
    server: tuple[str, int, list[dict[str, Any]]],
) -> None:
    # json.loads raised RecursionError: a traceback on the server's stderr and the connection
    # closed without an answer (which a client retries), not a 400.
    deep = b"[" * 100_000 + b"]" * 100_000
    status, payload = _request(server, "POST", "/v1/chat/completions", deep)
    assert status == 400 and "not valid JSON" in payload["error"]["message"]
    assert _request(server, "GET", "/health")[0] == 200


def test_no_body_is_refused(server: tuple[str, int, list[dict[str, Any]]]) -> None:
    status, payload = _request(server, "POST", "/v1/chat/completions", b"")
    assert status == 400 and "JSON body" in payload["error"]["message"]


# --- slots: parallel contexts, each kept for the prompts that share its first message -------


def test_slots_prefer_the_context_that_served_the_same_first_message() -> None:
    served = _llama_http._Served(["ctx0", "ctx1"], "tiny", 64)

    def body(system: str) -> dict[str, Any]:
        return {
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": "x"}]
        }

    with served.slot(body("accuser")) as first, served.slot(body("intel")) as second:
        assert {first, second} == {"ctx0", "ctx1"}
    # Alternating agents each get their own context back (their prompt prefix is cached there).
    for _ in range(3):
        with served.slot(body("intel")) as again:
            assert again == second
        with served.slot(body("accuser")) as again:
            assert again == first


def test_a_request_waits_for_a_free_slot() -> None:
    served = _llama_http._Served(["only"], "tiny", 64)
    order: list[str] = []
    held = threading.Event()
    release = threading.Event()

    def hold() -> None:
        with served.slot({"messages": []}):
            order.append("first")
            held.set()
            release.wait(5)

    thread = threading.Thread(target=hold)
    thread.start()
    held.wait(5)

    def wait_then_take() -> None:
        with served.slot({"messages": []}):
            order.append("second")

    waiter = threading.Thread(target=wait_then_take)
    waiter.start()
    waiter.join(0.2)
    assert order == ["first"]  # still waiting: the only slot is busy
    release.set()
    thread.join(5)
    waiter.join(5)
    assert order == ["first", "second"]
    with pytest.raises(ValueError):
        _llama_http._Served([], "tiny", 64)


async def test_a_request_given_up_while_it_waits_for_the_model_never_generates(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A caller that stops waiting (its deadline, a cancelled run) left its generation queued
    on the model's lock: the requests behind it waited for every abandoned one in turn."""
    import asyncio

    from byzllm.llm import GenerateConfig, _llamacpp

    loaded = _llamacpp._Loaded(llama=None)
    generated: list[object] = []

    def fake_generate(llama: Any, body: Any, **kw: Any) -> dict[str, Any]:
        generated.append(kw.get("abandoned"))
        return {}

    monkeypatch.setattr(_llamacpp, "_load", lambda gguf: loaded)
    monkeypatch.setattr(_llamacpp, "generate_chat", fake_generate)
    api = object.__new__(_llamacpp.LlamaCppAPI)
    api._gguf = None  # type: ignore[assignment]
    api.model = "fake"
    messages = [{"role": "user", "content": "hi"}]
    loaded.lock.acquire()  # another request is generating
    try:
        call = asyncio.ensure_future(api.complete(messages, GenerateConfig()))  # type: ignore[arg-type]
        await asyncio.sleep(0.2)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
    finally:
        loaded.lock.release()
    await asyncio.sleep(0.2)  # the worker thread takes the lock, sees it was abandoned
    assert generated == []


def test_token_limits_and_choices_a_local_model_can_honour() -> None:
    """`serve` read only max_tokens: the SDK's max_completion_tokens=3 gave 291 tokens, n=2
    gave one choice, max_tokens 0 the default and 1e400 an HTTP 500."""
    from byzllm.llm._llama_generate import DEFAULT_MAX_TOKENS, _max_tokens

    assert _max_tokens({}) == DEFAULT_MAX_TOKENS
    assert _max_tokens({"max_tokens": 5, "max_completion_tokens": 9}) == 5
    assert _max_tokens({"max_completion_tokens": 3}) == 3
    assert _max_tokens({"n": 1, "max_tokens": 2}) == 2
    for body in [
        {"n": 2},
        {"max_tokens": 0},
        {"max_tokens": -3},
        {"max_tokens": float("inf")},
        {"max_tokens": True},
        {"max_completion_tokens": "3"},
    ]:
        with pytest.raises(InputError):
            _max_tokens(body)
