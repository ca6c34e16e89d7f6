"""LLM-backed agents: prompts, re-prompting, fallback, decision-position distributions."""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

import pytest

from byzllm.agents.whodunit import AgentView, LLMAgent, WhoDunitAction, render_prompt
from byzllm.agents.whodunit._llm import decision_distributions
from byzllm.llm import ChatModel, Completion, GenerateConfig, TokenLogprob

from .conftest import make_view

A = WhoDunitAction


def tokens_of(text: str, *, split_digits: bool = False) -> list[TokenLogprob]:
    """Tokenize ``text``; every token's top-k list is unique so mapping errors show."""
    pattern = r"\d|\w+|\s+|." if split_digits else r"\d+|\w+|\s+|."
    out = []
    for i, piece in enumerate(re.findall(pattern, text, flags=re.S)):
        top = [(piece, -0.05), (f"alt{i}a", -3.0 - i / 1000), (f"alt{i}b", -4.0)]
        out.append(TokenLogprob(token=piece, logprob=-0.05, top=top))
    return out


class ScriptedModel(ChatModel):
    name = "scripted/test"

    def __init__(self, replies: Sequence[str | Completion]) -> None:
        self.replies = list(replies)
        self.calls: list[list[dict[str, str]]] = []
        self.configs: list[GenerateConfig | None] = []

    async def generate(
        self, messages: Sequence[dict[str, str]], config: GenerateConfig | None = None
    ) -> Completion:
        self.calls.append(list(messages))
        self.configs.append(config)
        reply = self.replies.pop(0)
        if isinstance(reply, Completion):
            return reply
        return Completion(text=reply, logprobs=tokens_of(reply))


def test_decision_distributions_pick_the_overlapping_tokens() -> None:
    text = '{"action": 3, "character": 10}'
    toks = tokens_of(text, split_digits=True)
    a = text.index("3")
    c = text.index("10")
    got = decision_distributions(toks, [(a, a + 1), (c, c + 2)])
    expected = [t.top for t in toks if t.token in ("3", "1", "0")]
    assert got == expected and len(got) == 3
    # A token without a top-k list still yields its own probability.
    bare = [TokenLogprob(token="7", logprob=-0.2)]
    assert decision_distributions(bare, [(0, 1)]) == [[("7", -0.2)]]
    assert decision_distributions(toks, []) == []


async def test_prompts_and_config(accuser_view: AgentView) -> None:
    model = ScriptedModel(['Thoughts. {"thoughts": "t", "action": 2, "character": 0}'])
    agent = LLMAgent("Beth", model)
    turn = await agent.act(accuser_view, random.Random(0))
    assert turn.action == A(kind="request_broad") and not turn.parse_errors
    cfg = model.configs[0]
    assert cfg is not None and cfg.top_logprobs == 10 and cfg.temperature == 0.0
    system, user = model.calls[0]
    assert system["role"] == "system" and "Winner" in system["content"]
    assert "The current turn is 1 out of 31." in user["content"]
    assert turn.thoughts == "t" and not turn.simulated
    assert [d[0][0] for d in turn.distributions] == ["2"]


async def test_a_resampled_turn_is_sampled_afresh(accuser_view: AgentView) -> None:
    """The same view asked again after a monitor's resample (§6.1) was the same request at
    temperature 0 (and a cache hit): the resample changed nothing with LLM agents."""
    reply = 'Thoughts. {"thoughts": "t", "action": 2, "character": 0}'
    model = ScriptedModel([reply, reply, reply])
    agent = LLMAgent("Beth", model)
    for draw in (0, 1, 2):
        await agent.act(accuser_view.model_copy(update={"draw": draw}), random.Random(0))
    settings = [(c.temperature, c.seed) for c in model.configs if c is not None]
    assert settings == [(0.0, None), (0.7, 1), (0.7, 2)]
    assert model.calls[0] == model.calls[1]  # the prompt is the same; the sampling is not


async def test_reprompt_with_hints_then_success(accuser_view: AgentView) -> None:
    model = ScriptedModel(
        [
            "I think character 3.",
            '{"action": 3, "character": 99}',
            '{"action": 3, "character": 3}',
        ]
    )
    turn = await LLMAgent("Beth", model).act(accuser_view, random.Random(0))
    assert turn.action == A(kind="accuse", character=3)
    assert len(turn.parse_errors) == 2 and not turn.fallback
    assert "no JSON object" in turn.parse_errors[0] and "does not exist" in turn.parse_errors[1]
    third = model.calls[2]
    assert [m["role"] for m in third] == [
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    assert "does not exist" in third[-1]["content"]
    assert len(turn.replies) == 3


async def test_a_reply_cut_off_at_max_tokens_is_said_to_be_cut_off(
    accuser_view: AgentView,
) -> None:
    """A reply the server cut at ``max_tokens`` was rejected as "no JSON object": the model
    was told it ignored the format (and wrote as much again), and the records blamed the
    model for a limit set too low."""
    cut = '{"thoughts": "Character 3 has a brown hat, and the Winner also has a brown hat, so'
    model = ScriptedModel(
        [
            Completion(text=cut, logprobs=tokens_of(cut), finish_reason="length"),
            "I think character 3.",
            '{"action": 3, "character": 3}',
        ]
    )
    turn = await LLMAgent("Beth", model).act(accuser_view, random.Random(0))
    assert turn.action == A(kind="accuse", character=3) and not turn.fallback
    first, second = turn.parse_errors
    assert first.startswith("Your reply was cut off at the length limit") and "no JSON" in first
    assert "cut off" not in second  # a reply that ended on its own is not said to be cut off
    assert "cut off at the length limit" in model.calls[1][-1]["content"]


async def test_fallback_after_the_reprompt_limit(player_view: AgentView) -> None:
    model = ScriptedModel(["nope"] * 10)
    turn = await LLMAgent("Alex", model, max_reprompts=3).act(player_view, random.Random(0))
    assert turn.fallback and turn.action == A(kind="pass")
    assert len(model.calls) == 4 and len(turn.parse_errors) == 4
    assert turn.distributions == []
    model = ScriptedModel(["nope"])
    turn = await LLMAgent("Alex", model, max_reprompts=0).act(player_view, random.Random(0))
    assert turn.fallback and len(model.calls) == 1
    with pytest.raises(ValueError):
        LLMAgent("Alex", model, max_reprompts=-1)


async def test_distributions_when_tokens_differ_from_text(intel_view: AgentView) -> None:
    text = '{"action": 2, "value": "hat-brown", "character": [1, 3]}'
    # The server's tokens spell the same JSON with different spacing.
    token_text = '{"action":2,"value":"hat-brown","character":[1,3]}'
    completion = Completion(text=text, logprobs=tokens_of(token_text))
    turn = await LLMAgent("Alex", ScriptedModel([completion])).act(intel_view, random.Random(0))
    assert turn.action.characters == (1, 3)
    assert [d[0][0] for d in turn.distributions] == ["2", "1", "3"]
    # Tokens that say something else: no distributions rather than wrong ones.
    other = Completion(text=text, logprobs=tokens_of(token_text.replace("[1,3]", "[1,4]")))
    turn = await LLMAgent("Alex", ScriptedModel([other])).act(intel_view, random.Random(0))
    assert turn.distributions == []
    none = Completion(text=text, logprobs=None)
    turn = await LLMAgent("Alex", ScriptedModel([none])).act(intel_view, random.Random(0))
    assert turn.distributions == [] and turn.action.kind == "respond_broad"


def test_every_role_renders_both_wordings() -> None:
    for role in ("accuser", "intel", "player"):
        for wording in ("award", "original"):
            view = make_view(role, wording=wording)
            system, user = render_prompt(view)
            words = ["Winner"] if wording == "award" else ["Culprit", "suspect"]
            if role != "intel":  # Intel never awards (Fig. 14)
                words.append("award" if wording == "award" else "accuse")
            assert all(w in system["content"] for w in words), (role, wording)
            other = "Culprit" if wording == "award" else "Winner"
            assert other not in system["content"] + user["content"]
            assert '"action"' in system["content"] and "thoughts" in system["content"]
            if role == "accuser":
                assert "hat: brown, eye_color: green" in system["content"]
                assert "Character 1:" not in system["content"]
            else:
                assert "1: hat: brown, eye_color: blue" in system["content"]
            if role == "player":
                assert "1. The" in user["content"]


def test_the_accusers_recap_names_whom_to_accuse_in_both_wordings() -> None:
    # Fig. 13's recap, "Award as soon as you are sure of who the Winner is": the award
    # wording's verb needs its object ("award the prize to ..."), which the line once lacked
    # ("Award the prize to as soon as you are sure ...").
    expected = {
        "award": "- Award the prize to the Winner as soon as you are sure who it is.",
        "original": "- Accuse the Culprit as soon as you are sure who it is.",
    }
    for wording, line in expected.items():
        system, _ = render_prompt(make_view("accuser", wording=wording))
        assert line in system["content"].splitlines(), wording
        assert " to as soon" not in system["content"]


def test_view_fixture_sanity(intel_view: AgentView) -> None:
    assert intel_view.pending_request is not None
    assert intel_view.n_suspects == 12
