"""``read_action``: the WhoDunit move parser's fall-back flag (parse health)."""

from __future__ import annotations

import random
from collections.abc import Sequence

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from byzllm.agents.whodunit import (
    FALLBACK_ACTION,
    ActionParseError,
    AgentView,
    LLMAgent,
    WhoDunitAction,
    parse_action,
    read_action,
)
from byzllm.llm import ChatModel, Completion, GenerateConfig

from .conftest import make_view

_VIEWS = [make_view("accuser"), make_view("intel"), make_view("player")]
_JSONISH = st.text(alphabet="{}[]\"':,/\\*#-0123456789 actionchrvluefTFNn\n\x1b", max_size=300)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.text(max_size=400), _JSONISH), st.sampled_from(_VIEWS))
def test_the_flag_is_exactly_a_rejected_reply(text: str, view: AgentView) -> None:
    reading = read_action(text, view)
    try:
        parsed = parse_action(text, view)
    except ActionParseError as err:
        assert reading.fell_back and reading.reason == err.hint
        assert reading.value.action == FALLBACK_ACTION
        assert reading.value.decision_spans == [] and reading.value.thoughts == ""
        return
    assert not reading.fell_back and reading.reason == ""
    assert reading.value == parsed


def test_valid_and_huge_replies(accuser_view: AgentView) -> None:
    ok = read_action('{"thoughts": "x", "action": 3, "character": 2}', accuser_view)
    assert not ok.fell_back and ok.value.action == WhoDunitAction(kind="accuse", character=2)
    huge = read_action("{" * 200_000, accuser_view)
    assert huge.fell_back and "too long" in huge.reason
    assert WhoDunitAction(kind="pass") == FALLBACK_ACTION


def test_blanks_in_an_id_string_are_read_in_one_pass(accuser_view: AgentView) -> None:
    """A run of spaces inside a string value backtracked between three optional blank
    matches: 4,000 spaces took minutes (the suite's 300 s timeout fails the old code)."""
    blank = read_action('{"action": 3, "character": "' + " " * 60_000 + '"}', accuser_view)
    assert blank.fell_back
    # An integer too long for int() (4,300 digits) is a fall-back, not a crash.
    assert read_action('{"action": ' + "1" * 5_000 + "}", accuser_view).fell_back
    text = '{"action": 3, "character": "  suspect #4 "}'
    read = read_action(text, accuser_view)
    assert read.value.action.character == 4
    assert [text[a:b] for a, b in read.value.decision_spans] == ["3", "4"]


class _Garbage(ChatModel):
    name = "scripted/garbage"

    def __init__(self) -> None:
        self.calls = 0

    async def generate(
        self, messages: Sequence[dict[str, str]], config: GenerateConfig | None = None
    ) -> Completion:
        self.calls += 1
        return Completion(text="\x1b[31m[1,2,")


async def test_an_agent_that_never_complies_falls_back_to_a_pass(accuser_view: AgentView) -> None:
    model = _Garbage()
    turn = await LLMAgent("Beth", model, max_reprompts=2).act(accuser_view, random.Random(0))
    assert turn.fallback and turn.action == FALLBACK_ACTION
    assert model.calls == 3 and len(turn.parse_errors) == 3 and not turn.simulated
