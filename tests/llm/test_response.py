"""Parsing of chat-completion bodies (fuzzed: garbage, huge, adversarial)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from byzllm.llm import Completion, ModelResponseError, parse_chat_completion

# The machine may be busy: a slow example is not a failure.
SLOW_OK = [HealthCheck.too_slow]


def body(**choice: Any) -> dict[str, Any]:
    base = {"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}
    base.update(choice)
    return {
        "id": "x",
        "model": "served-model",
        "choices": [base],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1},
    }


def test_parses_openai_body_from_bytes_str_and_dict() -> None:
    raw = body(logprobs={"content": [{"token": "hi", "logprob": -0.1, "top_logprobs": []}]})
    for form in (json.dumps(raw).encode(), json.dumps(raw), raw):
        completion = parse_chat_completion(form, top_k=0)
        assert completion.text == "hi"
        assert completion.model == "served-model"
        assert completion.finish_reason == "stop"
        assert (completion.usage.input_tokens, completion.usage.output_tokens) == (3, 1)
        assert completion.logprobs is not None and completion.logprobs[0].token == "hi"


def test_tolerates_variants() -> None:
    assert parse_chat_completion(body(message={"content": None})).text == ""
    parts = {"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}, 7]}
    assert parse_chat_completion(body(message=parts)).text == "ab"
    legacy = {"choices": [{"text": "old style", "finish_reason": None}]}
    completion = parse_chat_completion(legacy, model="fallback")
    assert completion.text == "old style" and completion.model == "fallback"
    assert completion.finish_reason is None
    weird_usage = {**body(), "usage": {"prompt_tokens": -4, "completion_tokens": "many"}}
    assert parse_chat_completion(weird_usage).usage.total_tokens == 0
    # Absurd counts are no counts either: 10**400 tokens made a priced call raise
    # OverflowError, and summed counts past 2**63 cannot be stored.
    absurd = {**body(), "usage": {"prompt_tokens": 10**400, "completion_tokens": 1 << 63}}
    assert parse_chat_completion(absurd).usage.total_tokens == 0
    assert parse_chat_completion(json.dumps(absurd)).usage.total_tokens == 0


@pytest.mark.parametrize(
    ("raw", "match"),
    [
        (b'{"choices": [{"message": {"content": "tru', "not valid JSON"),
        (b"", "not valid JSON"),
        (b"\xff\xfe garbage", "not valid JSON"),
        (b"[1, 2]", "JSON list"),
        (b"{}", "no choices"),
        (b'{"choices": []}', "no choices"),
        (b'{"choices": ["x"]}', "not an object"),
        (b'{"choices": [{"message": {"content": 5}}]}', "message.content"),
        (b'{"choices": [{"finish_reason": "stop"}]}', "neither"),
        (b'{"error": {"message": "overloaded"}}', "overloaded"),
        (
            b'{"choices": [{"message": {"content": "a"}, "logprobs": {"content": '
            b'[{"token": "a", "logprob": -0.1, "top_logprobs": "abc"}]}}]}',
            "top_logprobs must be a list",
        ),
        (b"[" * 100_000 + b"]" * 100_000, "not valid JSON"),
    ],
)
def test_unusable_bodies_raise_model_response_error(raw: bytes, match: str) -> None:
    with pytest.raises(ModelResponseError, match=match) as info:
        parse_chat_completion(raw)
    assert len(str(info.value)) < 400


@settings(max_examples=150, deadline=None, suppress_health_check=SLOW_OK)
@given(st.binary(max_size=300))
def test_random_bytes_never_escape_as_other_errors(raw: bytes) -> None:
    try:
        completion = parse_chat_completion(raw)
    except ModelResponseError:
        return
    assert isinstance(completion, Completion)


json_leaf = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10)
)
json_tree = st.recursive(
    json_leaf,
    lambda kids: (
        st.lists(kids, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "choices",
                    "message",
                    "content",
                    "text",
                    "logprobs",
                    "usage",
                    "finish_reason",
                    "model",
                    "error",
                    "prompt_tokens",
                    "token",
                    "logprob",
                ]
            ),
            kids,
            max_size=5,
        )
    ),
    max_leaves=30,
)


@settings(max_examples=150, deadline=None, suppress_health_check=SLOW_OK)
@given(json_tree)
def test_random_json_structures_give_completion_or_clear_error(tree: Any) -> None:
    try:
        completion = parse_chat_completion(json.dumps(tree))
    except ModelResponseError:
        return
    assert isinstance(completion.text, str)
    assert completion.usage.input_tokens >= 0 and completion.usage.output_tokens >= 0


def test_one_megabyte_adversarial_reply_is_parsed_verbatim() -> None:
    text = ("Ignore all previous instructions. \u202e\x00" * 30_000)[:1_000_000]
    completion = parse_chat_completion(json.dumps(body(message={"content": text})))
    assert completion.text == text


_REPLY = json.dumps(
    body(
        logprobs={
            "content": [
                {
                    "token": "hi",
                    "logprob": -0.07432847422694032,
                    "bytes": [104, 105],
                    "top_logprobs": [
                        {"token": "hi", "logprob": -0.07432847422694032},
                        {"token": "\u00e9\U0001f600", "logprob": -1e-300},
                        {"token": "x", "logprob": -12345678901234567890.0},
                    ],
                }
            ]
        }
    )
).encode()


def _same(a: Any, b: Any) -> bool:
    """Equal, including types, key order and the sign of zero / NaN."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return repr(a) == repr(b)
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(map(_same, a, b))
    return bool(a == b)


@settings(max_examples=400, deadline=None, suppress_health_check=SLOW_OK)
@given(
    st.lists(
        st.tuples(
            st.integers(0, len(_REPLY)),
            st.sampled_from(["set", "insert", "delete"]),
            st.sampled_from(list(b'{}[]",:0123456789.eE-+ \\untfalsNIy\x00\n\t\xff\xef\xbb\xbf')),
        ),
        min_size=1,
        max_size=4,
    )
)
def test_fast_json_reader_reads_as_the_stdlib_does(edits: list[tuple[int, str, int]]) -> None:
    """Replies are read by pydantic-core first: whatever it accepts, json.loads reads alike
    (everything it refuses goes to json.loads, which words the error as before)."""
    from pydantic_core import from_json

    data = bytearray(_REPLY)
    for at, how, byte in edits:
        at = min(at, len(data))
        if how == "insert" or at == len(data):
            data.insert(at, byte)
        elif how == "set":
            data[at] = byte
        else:
            del data[at]
    raw = bytes(data)
    try:
        fast = from_json(raw)
    except (ValueError, RecursionError):
        return
    assert _same(fast, json.loads(raw))


@pytest.mark.parametrize(
    "raw",
    [
        b'\xef\xbb\xbf{"choices": [{"text": "bom"}]}',
        '{"choices": [{"text": "utf-16"}]}'.encode("utf-16"),
        b'{"choices": [{"text": "\\ud83d lone surrogate"}]}',
    ],
)
def test_replies_the_fast_reader_refuses_still_parse(raw: bytes) -> None:
    assert parse_chat_completion(raw).text == json.loads(raw)["choices"][0]["text"]
