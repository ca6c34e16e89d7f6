"""SAC on a real model: byzllm's round engine against the reference code's sequential calls.

Setting (the SAC paper's): n = 7 (4 strong, 2 weak honest, 1 replaying adversary), F = 3,
γ-MERG, T = 2, 5 one-step synthetic questions, every honest agent on a shipped model
(``--model``: ``qwen0.5b``, the default, or ``smollm2``, ``qwen1.5b``) behind llama.cpp's
OpenAI-compatible server on 127.0.0.1 (started here with :class:`byzllm.llm.LocalServer`),
temperature 0, at most 64 tokens per reply. Both runs use the same server and no response
cache.

* **byzllm**: :func:`byzllm.protocols.run_consensus`: every independent call of a stage at
  once, identical temperature-0 requests answered once;
* **sequential reference**: the research code's call structure: questions one after
  another; per agent the answer, then per round its self-score, each neighbour's score and
  its refine call, each awaited before the next (the naive count of calls);
* **single stream**: llama.cpp's own generation speed, one request of 128 tokens, for the
  tokens/s comparison.

Target: byzllm at least 2x faster than the sequential reference, judged in the setting above
only (5 questions, T = 2, any shipped model); ``--quick`` prints its speed-up with the verdict
"not judged": its fewer questions give the engine fewer calls to run at once.

Run: ``python benchmarks/real_model.py [--model qwen0.5b]`` (``--quick``: 2 questions,
T = 1). Needs the ``local`` extra. Ends with one JSON line, which carries every printed
figure, the target and its verdict.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from typing import Any

import networkx as nx

from _verdict import verdict as judge
from byzllm.agents.consensus import (
    CallMeter,
    LLMAgent,
    Response,
    make_adversary,
    parse_refined_answer,
    parse_score,
    render_answer_prompt,
    render_refine_prompt,
    render_score_prompt,
)
from byzllm.graphs import build
from byzllm.llm import GenerateConfig, LocalServer, Model, get_model
from byzllm.protocols import SAC, Network, run_consensus
from byzllm.tasks import Task, extract_answer, synthetic_tasks

N_STRONG, N_WEAK, F = 4, 2, 3
MAX_TOKENS = 64
#: The setting the target is stated for (questions, rounds T), and the target.
TARGET_SETTING = (5, 2)
TARGET_SPEEDUP = 2.0
CONFIG = GenerateConfig(temperature=0.0, max_tokens=MAX_TOKENS)


def _tasks(questions: int) -> tuple[list[Task], list[Task]]:
    return synthetic_tasks(questions, seed=0, steps=1), synthetic_tasks(20, seed=9_999, steps=1)


def _model(server: LocalServer) -> Model:
    return get_model(
        f"openai/{server.model_name}",
        base_url=server.base_url,
        api_key_env=None,
        max_concurrency=64,
        timeout_s=600,
    )


def _graph() -> nx.Graph[Any]:
    return build("merg", n=N_STRONG + N_WEAK + 1)


async def _byzllm(server: LocalServer, questions: int, rounds: int) -> dict[str, Any]:
    tasks, ood = _tasks(questions)
    model = _model(server)
    agents: list[Any] = [
        LLMAgent(f"strong-{k}", model, max_tokens=MAX_TOKENS) for k in range(N_STRONG)
    ]
    agents += [
        LLMAgent(f"weak-{k}", model, group="weak", max_tokens=MAX_TOKENS) for k in range(N_WEAK)
    ]
    source = LLMAgent("replay-source", model, group="weak", max_tokens=MAX_TOKENS)
    agents.append(make_adversary("replay", "byzantine-0", ood_tasks=ood, replay_source=source))
    started = time.perf_counter()
    traces = await run_consensus(SAC(F=F), Network(_graph(), agents), tasks, T=rounds)
    wall = time.perf_counter() - started
    meter = CallMeter()
    for trace in traces:
        for rnd in trace.rounds:
            for row in rnd:
                meter.calls += row.calls
                meter.saved_calls += row.saved_calls
                meter.cached_calls += row.cached_calls
    usage = model.usage
    return {
        "wall_s": wall,
        "calls": meter.calls,
        "naive_calls": meter.calls + meter.saved_calls + meter.cached_calls,
        "tokens": usage.input_tokens + usage.output_tokens,
        "output_tokens": usage.output_tokens,
    }


async def _sequential(server: LocalServer, questions: int, rounds: int) -> dict[str, Any]:
    """The reference structure: every call awaited in turn, nothing shared between agents."""
    tasks, _ = _tasks(questions)
    model = _model(server)
    graph = _graph()
    honest = list(range(N_STRONG + N_WEAK))
    adversary = N_STRONG + N_WEAK
    calls = 0

    async def ask(messages: list[dict[str, str]]) -> str:
        nonlocal calls
        calls += 1
        return (await model.generate(messages, CONFIG)).text

    started = time.perf_counter()
    for task in tasks:
        responses: dict[int, Response] = {}
        for i in honest:
            text = await ask(render_answer_prompt(task))
            answer = extract_answer(task, text)
            responses[i] = Response.of(answer, answer if answer is not None else text[:2000])
        # The adversary replays a wrong answer: no model call in either structure's count.
        responses[adversary] = Response.of(str(task.meta["distractors"][0]))
        for _ in range(rounds):
            updated: dict[int, Response] = {}
            for i in honest:
                own = parse_score(await ask(render_score_prompt(task, responses[i].text, F)))
                scores = {}
                for j in graph.neighbors(i):
                    reply = await ask(render_score_prompt(task, responses[j].text, F))
                    scores[j] = parse_score(reply)
                low = sorted((s, j) for j, s in scores.items() if s < own)[:F]
                dropped = {j for _, j in low}
                retained = [(responses[j].text, s) for j, s in scores.items() if j not in dropped]
                reply = await ask(render_refine_prompt(task, responses[i].text, retained, F))
                answer = parse_refined_answer(task, reply, responses[i].answer or "")
                updated[i] = Response.of(answer) if answer else responses[i]
            responses.update(updated)
    wall = time.perf_counter() - started
    usage = model.usage
    return {
        "wall_s": wall,
        "calls": calls,
        "tokens": usage.input_tokens + usage.output_tokens,
        "output_tokens": usage.output_tokens,
    }


async def _single_stream(server: LocalServer) -> float:
    """llama.cpp's own generation speed: output tokens per second of one long request."""
    model = _model(server)
    prompt = [{"role": "user", "content": "Write a long story about a lighthouse keeper."}]
    started = time.perf_counter()
    completion = await model.generate(prompt, GenerateConfig(temperature=0.0, max_tokens=128))
    return completion.usage.output_tokens / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 questions, T = 1")
    parser.add_argument("--model", default="qwen0.5b", help="a shipped model (byzllm models list)")
    args = parser.parse_args()
    questions, rounds = (2, 1) if args.quick else (5, 2)
    with LocalServer(args.model, port=0) as server:
        asyncio.run(_single_stream(server))  # warm-up: model pages in, first-call costs
        stream_tps = asyncio.run(_single_stream(server))
        ours = asyncio.run(_byzllm(server, questions, rounds))
        reference = asyncio.run(_sequential(server, questions, rounds))
    speedup = reference["wall_s"] / ours["wall_s"]
    verdict = judge(
        speedup >= TARGET_SPEEDUP,
        judged=(questions, rounds) == TARGET_SETTING,
        target_for="5 questions, T = 2",
    )
    ours_tps = ours["output_tokens"] / ours["wall_s"]
    reference_tps = reference["output_tokens"] / reference["wall_s"]
    print(
        f"SAC on {server.model_name} (llama.cpp server), n=7 γ-MERG, F={F}, T={rounds}, "
        f"{questions} questions, max {MAX_TOKENS} tokens per reply"
    )
    print(f"byzllm:               {ours['wall_s']:.1f} s, {ours['calls'] / questions:.1f} calls/q")
    print(
        f"sequential reference: {reference['wall_s']:.1f} s, "
        f"{reference['calls'] / questions:.1f} calls/q  "
        f"(speed-up {speedup:.2f}x, target >= {TARGET_SPEEDUP:g}x: {verdict})"
    )
    print(
        f"naive calls/q (engine's own count): {ours['naive_calls'] / questions:.1f}; "
        f"tokens/q: byzllm {ours['tokens'] / questions:.0f}, "
        f"reference {reference['tokens'] / questions:.0f}"
    )
    print(
        f"output tokens/s: byzllm {ours_tps:.1f}, reference {reference_tps:.1f}, "
        f"llama.cpp single stream {stream_tps:.1f}"
    )
    print(
        json.dumps(
            {
                "benchmark": "real_model",
                "model": server.model_name,
                "questions": questions,
                "rounds": rounds,
                "wall_s": round(ours["wall_s"], 2),
                "sequential_wall_s": round(reference["wall_s"], 2),
                "speedup_vs_sequential": round(speedup, 2),
                "target_speedup": TARGET_SPEEDUP,
                "verdict": verdict,
                "calls_per_question": round(ours["calls"] / questions, 2),
                # What the protocol asked before identical requests were shared (the printed
                # "naive calls/q"), and what the sequential reference sent.
                "naive_calls_per_question": round(ours["naive_calls"] / questions, 2),
                "sequential_calls_per_question": round(reference["calls"] / questions, 2),
                "tokens_per_question": round(ours["tokens"] / questions, 1),
                "sequential_tokens_per_question": round(reference["tokens"] / questions, 1),
                "output_tokens_per_s": round(ours_tps, 1),
                "sequential_output_tokens_per_s": round(reference_tps, 1),
                "single_stream_tokens_per_s": round(stream_tps, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
