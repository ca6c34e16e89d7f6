"""Normalization of per-token log-probabilities from every server shape (fuzzed)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from byzllm.llm import ModelResponseError, TokenLogprob, normalize_logprobs
from byzllm.llm._logprobs import LOGPROB_FLOOR

EXPECTED = [
    TokenLogprob(token="Yes", logprob=-0.1, top=[("Yes", -0.1), ("No", -2.4)]),
    TokenLogprob(token="!", logprob=-0.5, top=[("!", -0.5), (".", -1.0)]),
]

# The machine may be busy: a slow example is not a failure.
SLOW_OK = [HealthCheck.too_slow]


def openai_shape() -> dict[str, Any]:
    return {
        "content": [
            {
                "token": "Yes",
                "logprob": -0.1,
                "bytes": [89, 101, 115],
                "top_logprobs": [
                    {"token": "Yes", "logprob": -0.1, "bytes": [89, 101, 115]},
                    {"token": "No", "logprob": -2.4, "bytes": [78, 111]},
                ],
            },
            {
                "token": "!",
                "logprob": -0.5,
                "top_logprobs": [{"token": "!", "logprob": -0.5}, {"token": ".", "logprob": -1.0}],
            },
        ]
    }


@pytest.mark.parametrize(
    "raw",
    [
        openai_shape(),
        openai_shape()["content"],  # a bare list
        {  # mapping-valued top_logprobs, unsorted (vLLM / some proxies)
            "content": [
                {"token": "Yes", "logprob": -0.1, "top_logprobs": {"No": -2.4, "Yes": -0.1}},
                {"token": "!", "logprob": -0.5, "top_logprobs": {".": -1.0, "!": -0.5}},
            ]
        },
        {  # legacy completions layout
            "tokens": ["Yes", "!"],
            "token_logprobs": [-0.1, -0.5],
            "top_logprobs": [{"Yes": -0.1, "No": -2.4}, {"!": -0.5, ".": -1.0}],
        },
        {  # old llama.cpp: probabilities, not log-probabilities
            "content": [
                {
                    "tok_str": "Yes",
                    "prob": math.exp(-0.1),
                    "probs": [
                        {"tok_str": "Yes", "prob": math.exp(-0.1)},
                        {"tok_str": "No", "prob": math.exp(-2.4)},
                    ],
                },
                {
                    "tok_str": "!",
                    "prob": math.exp(-0.5),
                    "probs": [
                        {"tok_str": ".", "prob": math.exp(-1.0)},
                        {"tok_str": "!", "prob": math.exp(-0.5)},
                    ],
                },
            ]
        },
    ],
    ids=["openai", "bare-list", "dict-top", "legacy", "llama-probs"],
)
def test_every_shape_normalizes_to_the_same_entries(raw: Any) -> None:
    result = normalize_logprobs(raw)
    assert result is not None
    assert [e.token for e in result] == ["Yes", "!"]
    for got, want in zip(result, EXPECTED, strict=True):
        assert got.logprob == pytest.approx(want.logprob)
        assert [t for t, _ in got.top] == [t for t, _ in want.top]
        assert [lp for _, lp in got.top] == pytest.approx([lp for _, lp in want.top])


def test_absent_logprobs_are_none() -> None:
    assert normalize_logprobs(None) is None
    assert normalize_logprobs({"content": None}) is None
    assert normalize_logprobs({}) is None
    assert normalize_logprobs({"content": []}) == []


def test_missing_top_is_empty_and_top_k_cuts() -> None:
    entry = normalize_logprobs({"content": [{"token": "a", "logprob": -1.0}]})
    assert entry == [TokenLogprob(token="a", logprob=-1.0, top=[])]
    vllm_k_plus_one = {  # vLLM adds the sampled token when it is outside the top k
        "content": [
            {
                "token": "z",
                "logprob": -5.0,
                "top_logprobs": [
                    {"token": "a", "logprob": -0.2},
                    {"token": "b", "logprob": -1.9},
                    {"token": "z", "logprob": -5.0},
                ],
            }
        ]
    }
    cut = normalize_logprobs(vllm_k_plus_one, top_k=2)
    assert cut is not None and cut[0].top == [("a", -0.2), ("b", -1.9)]


def test_values_are_clamped_into_valid_range() -> None:
    raw = {
        "content": [
            {
                "token": "a",
                "logprob": float("-inf"),
                "top_logprobs": [
                    {"token": "a", "logprob": -1e30},
                    {"token": "b", "logprob": 1e-9},
                    {"token": "c", "logprob": float("nan")},
                    {"token": "d", "logprob": 3.0},
                    {"token": "e", "logprob": "-0.25"},
                    {"token": "f", "logprob": True},
                    "junk",
                ],
            }
        ]
    }
    result = normalize_logprobs(raw)
    assert result is not None
    assert result[0].logprob == LOGPROB_FLOOR
    assert result[0].top == [("b", 0.0), ("e", -0.25), ("a", LOGPROB_FLOOR)]


def test_token_from_bytes_or_id_when_text_is_missing() -> None:
    raw = [{"bytes": [0xC3, 0xA9], "logprob": -0.3}, {"id": 17, "logprob": -0.2}]
    result = normalize_logprobs(raw)
    assert result is not None and [e.token for e in result] == ["é", "<id:17>"]


@pytest.mark.parametrize(
    "raw",
    [
        "a string",
        42,
        {"content": "not a list"},
        {"content": [1, 2]},
        {"content": [{"logprob": -1.0}]},
        {"content": [{"token": "a"}]},
        {"content": [{"token": "a", "logprob": float("nan")}]},
        {"content": [{"token": "a", "logprob": 0.7}]},
        {"content": [{"token": "a", "prob": 1.7}]},
        {"tokens": ["a", "b"], "token_logprobs": [-1.0]},
        {"tokens": "ab", "token_logprobs": [-1.0]},
        {"weird": 1},
        {"content": [{"token": "a", "logprob": -1.0, "top_logprobs": "abc"}]},
        [{"tok_str": "a", "prob": 0.5, "top_probs": 3}],
        {"tokens": ["a"], "token_logprobs": [-1.0], "top_logprobs": "abc"},
        {"tokens": ["a"], "token_logprobs": [-1.0], "top_logprobs": ["abc"]},
    ],
)
def test_unusable_blocks_raise_a_clear_error(raw: Any) -> None:
    with pytest.raises(ModelResponseError, match="logprobs"):
        normalize_logprobs(raw)


#: Values that are no container of alternatives: read as "none", they hid a broken server.
not_alternatives = (
    st.text(max_size=40)
    | st.integers()
    | st.floats(allow_nan=True)
    | st.booleans()
    | st.just("x" * 1_000_000)
)


@settings(max_examples=150, deadline=None, suppress_health_check=SLOW_OK)
@given(
    top=not_alternatives,
    shape=st.sampled_from(["openai", "bare", "probs", "legacy", "legacy-position"]),
    position=st.integers(min_value=0, max_value=3),
)
def test_alternatives_of_the_wrong_type_are_a_malformed_block(
    top: Any, shape: str, position: int
) -> None:
    """ "top_logprobs": "abc" read as no alternatives, as if the server had sent none."""
    entries: list[dict[str, Any]] = [{"token": "a", "logprob": -1.0} for _ in range(4)]
    if shape in ("openai", "bare"):
        entries[position]["top_logprobs"] = top
        raw: Any = {"content": entries} if shape == "openai" else entries
        field = f"entry {position} top_logprobs"
    elif shape == "probs":
        raw = [{"tok_str": "a", "prob": 0.5} for _ in range(4)]
        raw[position]["top_probs"] = top
        field = f"entry {position} top_probs"
    else:
        tops: Any = top if shape == "legacy" else [[], [], [], []]
        if shape == "legacy-position":
            tops[position] = top
        raw = {"tokens": ["a"] * 4, "token_logprobs": [-1.0] * 4, "top_logprobs": tops}
        field = "top_logprobs" if shape == "legacy" else f"top_logprobs {position}"
    with pytest.raises(ModelResponseError) as info:
        normalize_logprobs(raw, top_k=5)
    message = str(info.value)
    assert field in message and "must be a list" in message and len(message) < 300


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=5)
        | st.dictionaries(
            st.sampled_from(
                [
                    "token",
                    "logprob",
                    "top_logprobs",
                    "content",
                    "bytes",
                    "prob",
                    "tokens",
                    "token_logprobs",
                    "probs",
                    "tok_str",
                    "id",
                    "x",
                ]
            ),
            children,
            max_size=6,
        )
    ),
    max_leaves=40,
)


@settings(max_examples=150, deadline=None, suppress_health_check=SLOW_OK)
@given(json_values, st.none() | st.integers(min_value=0, max_value=25))
def test_garbage_gives_entries_or_a_model_response_error(raw: Any, top_k: int | None) -> None:
    try:
        result = normalize_logprobs(raw, top_k=top_k)
    except ModelResponseError:
        return
    if result is None:
        return
    for entry in result:
        assert isinstance(entry.token, str)
        assert LOGPROB_FLOOR <= entry.logprob <= 0.0
        lps = [lp for _, lp in entry.top]
        assert all(LOGPROB_FLOOR <= lp <= 0.0 for lp in lps)
        assert lps == sorted(lps, reverse=True)
        if top_k is not None:
            assert len(entry.top) <= top_k


@settings(max_examples=100, deadline=None, suppress_health_check=SLOW_OK)
@given(
    st.lists(
        st.tuples(
            st.text(max_size=8),
            st.floats(min_value=-50, max_value=0),
            st.lists(
                st.tuples(st.text(max_size=8), st.floats(min_value=-50, max_value=0)), max_size=6
            ),
        ),
        max_size=20,
    )
)
def test_well_formed_openai_blocks_round_trip(
    entries: list[tuple[str, float, list[tuple[str, float]]]],
) -> None:
    raw = {
        "content": [
            {
                "token": t,
                "logprob": lp,
                "top_logprobs": [{"token": a, "logprob": b} for a, b in top],
            }
            for t, lp, top in entries
        ]
    }
    result = normalize_logprobs(json.loads(json.dumps(raw)))
    assert result is not None
    assert [(e.token, e.logprob) for e in result] == [(t, lp) for t, lp, _ in entries]
    for entry, (_, _, top) in zip(result, entries, strict=True):
        assert sorted(entry.top, key=lambda p: -p[1]) == entry.top
        assert sorted(entry.top) == sorted(top)


def test_huge_block_is_handled() -> None:
    n = 20_000  # ~1 MB of JSON
    raw = {
        "content": [
            {"token": "tok", "logprob": -0.5, "top_logprobs": [{"token": "tok", "logprob": -0.5}]}
        ]
        * n
    }
    assert len(json.dumps(raw)) > 1_000_000
    result = normalize_logprobs(raw, top_k=1)
    assert result is not None and len(result) == n


def test_adversarial_huge_token_strings_do_not_flood_messages() -> None:
    raw = {"content": [{"token": "x" * 1_000_000, "logprob": "not a number"}]}
    with pytest.raises(ModelResponseError) as info:
        normalize_logprobs(raw)
    assert len(str(info.value)) < 300


openai_entries = st.lists(
    st.fixed_dictionaries(
        {
            "token": st.text(max_size=6),
            "logprob": st.floats(min_value=-20000, max_value=0.5) | st.just(float("nan")),
        },
        optional={
            "top_logprobs": st.none()
            | st.lists(
                st.fixed_dictionaries(
                    {
                        "token": st.text(max_size=6),
                        "logprob": st.floats(min_value=-20000, max_value=0.5) | st.integers(-3, 0),
                    }
                ),
                max_size=6,
            ),
            "bytes": st.lists(st.integers(0, 255), max_size=4),
        },
    ),
    max_size=12,
)


@settings(max_examples=150, deadline=None, suppress_health_check=SLOW_OK)
@given(openai_entries, st.none() | st.integers(min_value=0, max_value=8))
def test_fast_path_agrees_with_the_general_path(content: list[Any], top_k: int | None) -> None:
    from byzllm.llm._logprobs import _entry, _fast_openai

    fast = _fast_openai(content, top_k)
    try:
        general = [_entry(item, i, top_k) for i, item in enumerate(content)]
    except ModelResponseError:
        assert fast is None  # whatever the general path rejects, the fast path declines
        return
    if fast is not None:
        assert fast == general


@pytest.mark.parametrize("top", [[], [("a", -0.5), ("b", -1.0)]])
def test_fast_token_is_the_object_model_construct_builds(top: list[tuple[str, float]]) -> None:
    from pydantic import BaseModel, ValidationError

    from byzllm.llm._logprobs import _token

    fast = _token("a", -0.5, top)
    built = TokenLogprob.model_construct(token="a", logprob=-0.5, top=top)
    assert type(fast) is TokenLogprob and fast == built
    for slot in BaseModel.__slots__:
        assert getattr(fast, slot) == getattr(built, slot), slot
    assert fast.model_dump() == built.model_dump() and hash(fast.token) == hash(built.token)
    with pytest.raises(ValidationError):
        fast.token = "b"  # frozen, as the model it is


@pytest.mark.parametrize(
    "top_logprobs",
    [
        ["a"],
        [{"token": "a"}],
        [{"logprob": -1.0}],
        [{"token": "a", "logprob": -1.0}, None],
        [{"token": "a", "logprob": 1}],
        {},
        "",
        0,
        {"a": -1.0},
    ],
)
def test_fast_path_declines_every_other_alternatives_shape(top_logprobs: Any) -> None:
    from byzllm.llm._logprobs import _fast_openai

    content = [{"token": "a", "logprob": -1.0, "top_logprobs": top_logprobs}]
    assert _fast_openai(content, None) is None
