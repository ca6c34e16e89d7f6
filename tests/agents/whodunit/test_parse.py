"""Parsing and validating JSON actions (the rogue-agents paper, Appendix F): every action, every
failure."""

from __future__ import annotations

import contextlib
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from byzllm.agents.whodunit import (
    MAX_REPLY_CHARS,
    ActionParseError,
    AgentView,
    WhoDunitAction,
    find_action_object,
    parse_action,
)

from .conftest import make_view

A = WhoDunitAction


# -- every action of every role -----------------------------------------------------------


def test_accuser_actions(accuser_view: AgentView) -> None:
    text = (
        'Thoughts first. {"thoughts": "ask", "action": 1, "character": 3, '
        '"property": "hat", "value": "brown"}'
    )
    p = parse_action(text, accuser_view)
    assert p.action == A(kind="request_specific", character=3, property="hat", value="brown")
    assert p.thoughts == "ask"
    assert [text[s:e] for s, e in p.decision_spans] == ["1", "3"]
    p = parse_action('{"thoughts": "", "action": 2, "character": 0}', accuser_view)
    assert p.action == A(kind="request_broad")
    p = parse_action('{"action": 3, "character": 12}', accuser_view)
    assert p.action == A(kind="accuse", character=12)


def test_intel_actions(intel_view: AgentView) -> None:
    p = parse_action('{"thoughts": "t", "action": 1, "value": true}', intel_view)
    assert p.action == A(kind="respond", answer=True, character=3, property="hat", value="brown")
    p = parse_action('{"action": 1, "value": "False"}', intel_view)
    assert p.action.answer is False
    text = '{"action": 2, "value": "shirt-button-up", "character": [2, 3, 7, 10, 11, 12]}'
    p = parse_action(text, intel_view)
    assert p.action == A(
        kind="respond_broad", property="shirt", value="button-up", characters=(2, 3, 7, 10, 11, 12)
    )
    assert [text[s:e] for s, e in p.decision_spans] == ["2", "2", "3", "7", "10", "11", "12"]
    # property given separately, value alone
    p = parse_action(
        '{"action": 2, "property": "shirt color", "value": "Pink", "character": [1]}', intel_view
    )
    assert p.action.property == "shirt_color" and p.action.value == "pink"
    # an empty list is a (possibly false) statement, not a format error
    p = parse_action('{"action": 2, "value": "hat-brown", "character": []}', intel_view)
    assert p.action.characters == ()


def test_player_actions(player_view: AgentView) -> None:
    p = parse_action('{"thoughts": "x", "action": 1, "fact": 2}', player_view)
    assert p.action == A(kind="share", fact=2, property="eye_color", value="green")
    p = parse_action('{"action": 2, "character": "Character 3"}', player_view)
    assert p.action == A(kind="accuse", character=3)
    p = parse_action('{"action": "3"}', player_view)
    assert p.action == A(kind="skip")


# -- lenient formats ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        '```json\n{"thoughts": "a", "action": 3, "character": 3}\n```',
        "Sure! {'thoughts': 'single quotes', 'action': 3, 'character': 3,}",
        '{"thoughts": "a {brace} and \\"quote\\"", "action": 3, // award\n "character": "3"}',
        '{\n  thoughts: "bare keys",\n  action: 3,\n  character: 3\n}',
        '{"action": 3.0, "character": 3} trailing words',
        'Example: {"action": 1} ... final: {"thoughts": "t", "action": 3, "character": 3}',
        '{"Thoughts": "t", "ACTION": 3, "Character": "#3"}',
        '{"thoughts": "multi\nline", "action": 3, /* c */ "character": 3}',
    ],
)
def test_lenient_json(text: str, accuser_view: AgentView) -> None:
    p = parse_action(text, accuser_view)
    assert p.action == A(kind="accuse", character=3)
    spans = [text[s:e] for s, e in p.decision_spans]
    assert spans[0] in ("3", "3.0") and spans[1] == "3"


# -- every failure and its hint -------------------------------------------------------------


@pytest.mark.parametrize(
    ("role", "text", "hint"),
    [
        ("accuser", "I will award character 3.", "no JSON object"),
        ("accuser", '{"thoughts": "no action key"}', "no JSON object"),
        ("accuser", '{"action": 4}', "must be one of the numbers 1, 2, 3"),
        ("accuser", '{"action": "award"}', "must be one of the numbers"),
        ("accuser", '{"action": true}', "must be one of the numbers"),
        ("accuser", '{"action": 3}', '"character" must be a single number'),
        ("accuser", '{"action": 3, "character": 13}', "does not exist"),
        ("accuser", '{"action": 3, "character": [1, 2]}', "single number"),
        ("accuser", '{"action": 1, "character": 2, "property": "wings"}', '"property" must be'),
        ("accuser", '{"action": 1, "character": 2, "property": "hat", "value": "red"}', "brown"),
        ("intel", '{"action": 1, "value": "maybe"}', "true or false"),
        ("intel", '{"action": 2, "value": "hat:red", "character": [1]}', "property-value"),
        ("intel", '{"action": 2, "value": 5, "character": [1]}', "property-value"),
        ("intel", '{"action": 2, "value": "hat-brown"}', "list of ids"),
        ("intel", '{"action": 2, "value": "hat-brown", "character": [0]}', "between 1 and 12"),
        ("intel", '{"action": 2, "value": "hat-brown", "character": ["x"]}', "between 1 and"),
        ("player", '{"action": 1, "fact": 3}', "1 to 2"),
        ("player", '{"action": 1}', '"fact" must be'),
        ("player", '{"action": 2, "character": -1}', '"character"'),
    ],
)
def test_failures_raise_hints(role: str, text: str, hint: str) -> None:
    view = (
        make_view(role, pending_request=None)
        if role != "intel"
        else make_view(
            "intel",
            pending_request=A(kind="request_specific", character=1, property="hat", value="brown"),
        )
    )
    with pytest.raises(ActionParseError) as err:
        parse_action(text, view)
    assert hint in err.value.hint
    assert str(err.value) == err.value.hint


def test_intel_cannot_answer_without_a_question() -> None:
    view = make_view("intel", pending_request=A(kind="request_broad"))
    with pytest.raises(ActionParseError, match="no yes/no question"):
        parse_action('{"action": 1, "value": true}', view)
    view = make_view("intel", pending_request=None)
    with pytest.raises(ActionParseError, match="no yes/no question"):
        parse_action('{"action": 1, "value": true}', view)


def test_huge_reply_is_rejected_quickly(accuser_view: AgentView) -> None:
    huge = '{"action": 3, "character": 3}' + "x" * (1 << 20)
    with pytest.raises(ActionParseError, match="too long"):
        parse_action(huge, accuser_view)
    assert len(huge) > MAX_REPLY_CHARS


# -- fuzzing ---------------------------------------------------------------------------------

_VIEWS = [make_view("accuser"), make_view("intel"), make_view("player")]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=400), st.sampled_from(_VIEWS))
def test_garbage_never_crashes(text: str, view: AgentView) -> None:
    try:
        p = parse_action(text, view)
    except ActionParseError as err:
        assert err.hint
        return
    assert p.action.kind in (
        "request_specific",
        "request_broad",
        "accuse",
        "respond",
        "respond_broad",
        "share",
        "skip",
    )


_JSONISH = st.text(alphabet="{}[]\"':,/\\*#-0123456789 actionchrvluefTFNn\n", max_size=300)


@settings(max_examples=300, deadline=None)
@given(_JSONISH, st.sampled_from(_VIEWS))
def test_json_like_garbage_never_crashes(text: str, view: AgentView) -> None:
    with contextlib.suppress(ActionParseError):
        parse_action(text, view)
    find_action_object(text)


@settings(max_examples=30, deadline=None)
@given(st.integers(min_value=1, max_value=12), st.text(max_size=200))
def test_valid_action_survives_surrounding_noise(char: int, noise: str) -> None:
    view = _VIEWS[0]
    clean = noise.replace("{", "(").replace("}", ")")
    text = f'{clean}\n{{"thoughts": "x", "action": 3, "character": {char}}}\n{clean}'
    p = parse_action(text, view)
    assert p.action == A(kind="accuse", character=char)
    assert text[p.decision_spans[1][0] : p.decision_spans[1][1]] == str(char)


@pytest.mark.parametrize(
    "text",
    [
        "{" * 100_000,
        "[" * 60_000,
        '{"action": ' + "[" * 60_000,
        '{"a": "' + "\\" * 60_000,
        ("{" + '"action": 3, ' * 3000 + "}"),
        "{}" * 30_000,
    ],
    ids=["braces", "brackets", "open-array", "backslashes", "repeated-keys", "empty-objects"],
)
def test_adversarial_inputs_are_bounded(text: str, accuser_view: AgentView) -> None:
    with pytest.raises(ActionParseError):
        parse_action(text, accuser_view)


def test_find_action_object_is_bounded_on_huge_input() -> None:
    huge = "{" * (1 << 20)
    assert find_action_object(huge) is None
    assert find_action_object('{"action": 2}' + "x" * (1 << 20)) is not None


_ATTR = st.sampled_from(sorted(_VIEWS[0].attributes))


@st.composite
def _accuser_actions(draw: st.DrawFn) -> WhoDunitAction:
    kind = draw(st.sampled_from(["request_specific", "request_broad", "accuse"]))
    if kind == "request_broad":
        return A(kind=kind)
    char = draw(st.integers(min_value=1, max_value=12))
    if kind == "accuse":
        return A(kind=kind, character=char)
    prop = draw(_ATTR)
    value = draw(st.sampled_from(_VIEWS[0].attributes[prop]))
    return A(kind=kind, character=char, property=prop, value=value)


@settings(max_examples=150, deadline=None)
@given(
    _accuser_actions(),
    st.sampled_from(["", " ", "\n  "]),
    st.booleans(),
    st.booleans(),
    st.text(alphabet="abc {}[]\"',:", max_size=40),
)
def test_rendered_actions_round_trip(
    action: WhoDunitAction, space: str, quote_numbers: bool, fenced: bool, thoughts: str
) -> None:
    """Any valid action, written in any of the accepted styles, parses back to itself."""
    number = {"request_specific": 1, "request_broad": 2, "accuse": 3}[action.kind]

    def num(n: int) -> str:
        return f'"{n}"' if quote_numbers else str(n)

    fields = [f'"thoughts":{space}{json.dumps(thoughts)}', f'"action":{space}{num(number)}']
    fields.append(f'"character":{space}{num(action.character or 0)}')
    if action.property:
        fields += [f'"property":{space}"{action.property}"', f'"value":{space}"{action.value}"']
    body = "{" + f",{space}".join(fields) + "}"
    text = f"Thinking...\n```json\n{body}\n```" if fenced else body
    parsed = parse_action(text, _VIEWS[0])
    assert parsed.action == action
    assert parsed.thoughts == thoughts
    s, e = parsed.decision_spans[0]
    assert text[s:e] == str(number)
