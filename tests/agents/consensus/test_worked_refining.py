"""The worked refining style: the agent sees its own worked solution and writes its check out."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest
from pydantic import ValidationError

from byzllm.agents.consensus import CallContext, LLMAgent, Response
from byzllm.agents.consensus._prompts import render_debate_prompt, render_refine_prompt
from byzllm.experiments.consensus.config import AgentBackend, DatasetConfig
from byzllm.llm import ChatMessage, ChatModel, Completion, GenerateConfig
from byzllm.tasks import Task

MATH = Task(id="m", question="What is 6 * 7?", answer="42", kind="number")
OPEN = Task(id="o", question="Is the sky green? Answer yes or no.", answer="no", kind="boolean")
WORKED = "Six sevens: 7 + 7 + 7 + 7 + 7 + 7 = 42.\nAnswer: 42"


class ScriptedModel(ChatModel):
    """Answers with working the first time, then replies with a fixed refined answer."""

    def __init__(self, refined: str) -> None:
        self.name = "scripted/refiner"
        self.refined = refined
        self.prompts: list[str] = []

    async def generate(
        self, messages: Sequence[ChatMessage], config: GenerateConfig | None = None
    ) -> Completion:
        self.prompts.append(messages[-1]["content"])
        return Completion(text=WORKED if len(self.prompts) == 1 else self.refined)


def test_paper_refine_prompt_is_unchanged_by_default() -> None:
    content = render_refine_prompt(MATH, "Answer: 42", [("Answer: 41", 0.9)], 1)[-1]["content"]
    assert "Your current answer:" in content
    assert content.endswith("Respond using the format:\nAnswer: [your numerical answer]")
    assert "step by step" not in content.split("Your current answer:")[1]


def test_worked_refine_prompt_shows_the_solution_and_asks_for_working() -> None:
    content = render_refine_prompt(MATH, WORKED, [("Answer: 41", 0.9)], 1, worked=True)[-1][
        "content"
    ]
    assert "Your current solution:" in content and WORKED in content
    tail = content.rsplit("reliability scores, but retain", 1)[1]
    assert "step by step" in tail and tail.endswith("Answer: [your numerical answer]")
    # The neighbours are still listed by their answers, with their scores (B.2).
    assert "reliability score: 0.90" in content


def test_worked_changes_only_math_formats() -> None:
    paper = render_refine_prompt(OPEN, "Answer: no", [("Answer: yes", 0.4)], 1)[-1]["content"]
    worked = render_refine_prompt(OPEN, "Answer: no", [("Answer: yes", 0.4)], 1, worked=True)
    assert worked[-1]["content"].replace("Your current solution:", "Your current answer:") == paper


def test_worked_debate_prompt() -> None:
    content = render_debate_prompt(MATH, WORKED, ["Answer: 41"], 1, worked=True)[-1]["content"]
    assert "Your current solution:" in content and WORKED in content
    assert "step by step" in content.rsplit("give your updated answer.", 1)[1]


@pytest.mark.parametrize(("refining", "shown"), [("worked", WORKED), ("paper", "42")])
def test_agent_refines_from_its_own_worked_solution(refining: str, shown: str) -> None:
    model = ScriptedModel("Checking: 6 * 7 = 42 still.\nAnswer: 42")
    agent = LLMAgent("a", model, refining=refining)  # type: ignore[arg-type]

    async def run() -> Response:
        ctx = CallContext()
        own = await agent.answer(MATH, ctx)
        return await agent.refine(MATH, own, [(Response.of("41"), 0.8)], 1, ctx)

    refined = asyncio.run(run())
    assert refined.answer == "42"
    prompt = model.prompts[-1]
    own_block = prompt.split("<response>\n", 1)[1].split("\n</response>", 1)[0]
    assert own_block == shown
    assert agent.describe()["refining"] == refining


def test_agent_keeps_the_worked_reply_behind_a_changed_answer() -> None:
    model = ScriptedModel("I slipped: 6 * 7 = 41.\nAnswer: 41")
    agent = LLMAgent("a", model, refining="worked")

    async def run() -> tuple[Response, Response]:
        ctx = CallContext()
        own = await agent.answer(MATH, ctx)
        refined = await agent.refine(MATH, own, [(Response.of("41"), 0.8)], 1, ctx)
        again = await agent.refine(MATH, refined, [(Response.of("42"), 0.8)], 1, ctx)
        return refined, again

    refined, _ = asyncio.run(run())
    assert refined.answer == "41"
    # The next refinement shows the reply that produced 41, not the bare answer.
    assert "I slipped" in model.prompts[-1]


def test_backend_refining_field() -> None:
    assert AgentBackend().refining == "paper"
    assert AgentBackend(backend="llm", model="openai/m", refining="worked").refining == "worked"
    with pytest.raises(ValidationError):
        AgentBackend(refining="loud")  # type: ignore[arg-type]


def test_dataset_steps_range() -> None:
    assert DatasetConfig(steps=(1, 2)).steps == (1, 2)
    assert DatasetConfig(steps=8).steps == 8
    for bad in (0, 9, (2, 1), (0, 3), (1, 9)):
        with pytest.raises(ValidationError, match="steps must be"):
            DatasetConfig(steps=bad)
