"""Fishers: the LLM-backed one against a scripted model (log-prob positions, fallbacks), and the
simulated one's parameters."""

from __future__ import annotations

import asyncio
import inspect
import random
from collections.abc import Sequence

from byzllm.agents.govsim import FisherParams, FisherView, LLMFisher, SimulatedFisher
from byzllm.agents.govsim import _llm as fisher_module
from byzllm.llm import ChatMessage, ChatModel, Completion, GenerateConfig, TokenLogprob

VIEW = FisherView(
    game_id="g",
    name="Ana",
    fishers=("Ana", "Ben"),
    month=2,
    months=12,
    stock=80,
    capacity=100,
    collapse_below=5,
    catches=({"Ana": 10, "Ben": 10},),
)


class Scripted(ChatModel):
    name = "scripted"

    def __init__(self, replies: list[list[str]]) -> None:
        self.replies = replies
        self.configs: list[GenerateConfig | None] = []

    async def generate(
        self, messages: Sequence[ChatMessage], config: GenerateConfig | None = None
    ) -> Completion:
        self.configs.append(config)
        tokens = self.replies.pop(0)
        return Completion(
            text="".join(tokens),
            logprobs=[
                TokenLogprob(token=t, logprob=-0.1, top=[(t, -0.1), ("x", -2.5)]) for t in tokens
            ],
        )


def test_catch_positions_are_the_amount_tokens() -> None:
    model = Scripted([["I", " will", " take", " 1", "2", ".", " Answer", ":", " 1", "5", " tons"]])
    turn = asyncio.run(LLMFisher("Ana", model).catch(VIEW, random.Random(0)))
    assert turn.wish == 15 and not turn.fallback
    assert [d[0][0] for d in turn.distributions] == [" 1", "5"]


def test_bad_replies_reprompt_then_fall_back() -> None:
    model = Scripted([["lots"], [""], ["Answer: 900"]])
    turn = asyncio.run(LLMFisher("Ana", model, max_reprompts=2).catch(VIEW, random.Random(0)))
    assert turn.fallback and turn.wish == 0 and len(turn.parse_errors) == 3
    assert turn.distributions == []


def test_speech_amounts_and_repeated_meeting_sampling() -> None:
    model = Scripted([["We", " should", " take", " 8", " each"]] * 2)
    fisher = LLMFisher("Ana", model)
    speech = asyncio.run(fisher.speak(VIEW, random.Random(0)))
    assert speech.amounts == (8,) and len(speech.distributions) == 1
    asyncio.run(fisher.speak(VIEW.model_copy(update={"attempt": 1}), random.Random(0)))
    first, again = model.configs
    assert first is not None and first.temperature == 0.0
    assert again is not None and again.temperature == fisher.redo_temperature and again.seed == 1


def test_speech_reads_only_amounts_of_fish() -> None:
    """ "month 3" and "5 of us" are no amounts (§4.1 reads mentions of resource amounts): they
    were the utterance's first amount, the proposal the fit reads, and decision positions."""
    tokens = ["In", " month", " 3", ",", " the", " 5", " of", " us", " take", " 10", " tons"]
    speech = asyncio.run(LLMFisher("Ana", Scripted([tokens])).speak(VIEW, random.Random(0)))
    assert speech.amounts == (10,)
    assert [d[0][0] for d in speech.distributions] == [" 10"]


def test_simulated_fault_signal_and_greed() -> None:
    rogue = FisherParams(rogue_rate=1.0)
    quiet = FisherParams(rogue_rate=1.0, fault_signal=0.0)
    clean = FisherParams(rogue_rate=0.0)
    a = SimulatedFisher("Ana", rogue, salt="s").decide_catch(VIEW)
    b = SimulatedFisher("Ana", clean, salt="s").decide_catch(VIEW)
    c = SimulatedFisher("Ana", quiet, salt="s").decide_catch(VIEW)
    assert a.rogue and not b.rogue and a.wish > b.wish
    # fault_signal 0: the rogue turn reports the confidence a clean one would.
    top = [d[0][1] for d in a.distributions]
    top_quiet = [d[0][1] for d in c.distributions]
    assert min(top) < min(top_quiet)
    greedy = SimulatedFisher("Ana", FisherParams(rogue_rate=0.0, greed=2.0), salt="s")
    assert greedy.decide_catch(VIEW).wish > b.wish


def test_the_llm_fishers_top_k_cites_the_papers_footnote_where_it_is() -> None:
    # The rogue-agents paper's k = 10 is footnote 2 of §2 (its monitoring section); the
    # module once cited it as §4.1's.
    doc = fisher_module.__doc__ or ""
    assert "(``top_logprobs=10``, §2, footnote 2)" in doc
    assert inspect.signature(LLMFisher).parameters["top_logprobs"].default == 10
