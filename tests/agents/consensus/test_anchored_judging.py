"""The anchored judging style: own worked solution beside the judged answer, P(Yes) as score."""

from __future__ import annotations

import math
from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from byzllm.agents.consensus import CallContext, LLMAgent, Response
from byzllm.agents.consensus._parse import read_yes_probability
from byzllm.llm import ChatMessage, ChatModel, Completion, GenerateConfig, TokenLogprob, Usage
from byzllm.tasks import Task

TASK = Task(id="t", question="What is 6 * 7?", answer="42", kind="number")


class JudgeModel(ChatModel):
    """Answers with working; judges with Yes/No log-probabilities chosen by a rule."""

    def __init__(self, p_yes: float) -> None:
        self.name = "scripted/judge"
        self.p_yes = p_yes
        self.requests: list[tuple[str, GenerateConfig | None]] = []

    async def generate(
        self, messages: Sequence[ChatMessage], config: GenerateConfig | None = None
    ) -> Completion:
        content = messages[-1]["content"]
        self.requests.append((content, config))
        if config is not None and config.max_tokens == 1:  # a judging request
            top = [("Yes", math.log(self.p_yes)), (" no", math.log(1 - self.p_yes)), ("!", -9.0)]
            return Completion(
                text="Yes", logprobs=[TokenLogprob(token="Yes", logprob=top[0][1], top=top)]
            )
        return Completion(text="6 times 7 is 42.\nAnswer: 42", usage=Usage(output_tokens=9))


def test_hand_computed_yes_probability() -> None:
    top = [(" Yes", math.log(0.6)), ("yes", math.log(0.1)), ("No", math.log(0.1)), ("x", -1.0)]
    found = read_yes_probability(top, "")
    assert math.isclose(found.value, 0.7 / 0.8) and not found.fell_back
    assert read_yes_probability(None, "No, it is wrong").value == 0.0
    assert read_yes_probability([], "yes.").value == 1.0
    fallback = read_yes_probability([("maybe", -0.1)], "I think so")
    assert fallback.value == 0.5 and fallback.fell_back


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.one_of(st.text(max_size=12), st.sampled_from(["Yes", " no", "NO.", "\x1b[0mYes"])),
            st.floats(allow_nan=True, allow_infinity=True),
        ),
        max_size=25,
    ),
    st.one_of(st.text(max_size=300), st.just("Yes " * 100_000), st.just("\x00" * 5000)),
)
def test_yes_probability_never_raises_and_stays_in_range(
    top: list[tuple[str, float]], text: str
) -> None:
    found = read_yes_probability(top, text)
    assert 0.0 <= found.value <= 1.0
    assert found.fell_back == (found.value == 0.5 and found.reason != "")


async def test_the_judge_sees_its_own_working_and_reads_p_yes() -> None:
    model = JudgeModel(p_yes=0.8)
    agent = LLMAgent("a", model, judging="anchored")
    ctx = CallContext(f=3)
    own = await agent.answer(TASK, ctx)
    score = await agent.score(TASK, own, Response.of("41"), ctx)
    assert math.isclose(score, (0 + 0.8) / 2)  # disagrees with its own 42
    prompt, config = model.requests[-1]
    assert "6 times 7 is 42." in prompt  # the worked solution, not just "42"
    assert "Your final answer: 42" in prompt
    assert "41" in prompt and "up to 3 responses may be malicious" in prompt
    agreeing = await agent.score(TASK, own, Response.of("42.0"), ctx)
    assert math.isclose(agreeing, (1 + 0.8) / 2)  # the same answer, written differently
    self_score = await agent.score(TASK, own, own, ctx)
    assert self_score >= 0.5 > score
    assert config is not None and config.max_tokens == 1 and config.temperature == 0.0
    assert config.top_logprobs == 20
    confidence = await agent.confidence(TASK, own, ctx)
    assert math.isclose(confidence, 0.8)
    assert ctx.meter.parse.to_dict()["score"]["fallbacks"] == 0


async def test_verbal_judging_is_still_the_papers_b1_prompt() -> None:
    model = JudgeModel(p_yes=0.5)
    agent = LLMAgent("a", model)
    await agent.score(TASK, None, Response.of("42"), CallContext(f=1))
    assert "Output ONLY a single decimal number" in model.requests[-1][0]


def test_sampling_agents_get_distinct_stable_seeds() -> None:
    from byzllm.experiments.consensus.setup import agent_seed

    assert agent_seed(0, "strong-0") == agent_seed(0, "strong-0")
    assert len({agent_seed(0, f"strong-{k}") for k in range(4)}) == 4
    assert agent_seed(0, "strong-0") != agent_seed(1, "strong-0")


async def test_the_judge_asks_for_no_more_alternatives_than_the_model_allows() -> None:
    """A model capped below 20 alternatives refused every anchored judging request (before
    sending it: "top_logprobs=20 exceeds the cap of 10"), so a run on such a server with
    ``judging: anchored`` could not score anything; P(Yes) needs only Yes and No among them."""
    from byzllm.llm import get_model
    from byzllm.testing import FakeOpenAIServer

    with FakeOpenAIServer(lambda _: "Yes") as server:
        model = get_model(
            "openai/fake", base_url=server.base_url, api_key_env=None, max_top_logprobs=10
        )
        agent = LLMAgent("a", model, judging="anchored")
        ctx = CallContext(f=1)
        score = await agent.score(TASK, Response.of("42"), Response.of("42"), ctx)
        confidence = await agent.confidence(TASK, Response.of("42"), ctx)
        requests = server.requests
    assert [r["top_logprobs"] for r in requests] == [10, 10]
    assert score > 0.5 and 0.0 <= confidence <= 1.0  # the same answer, and P(Yes) read
