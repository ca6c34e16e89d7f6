"""How close the round engine gets to the critical path of SAC with LLM-backed agents.

Setting: SAC, n = 7 (4 strong, 2 weak honest, 1 replaying adversary), complete graph, F = 3,
T = 6, 30 synthetic questions, every agent an LLM-backed agent talking to a FakeOpenAIServer
with 100 ms latency per request and no server-side limit.

* critical-path bound: (1 + 2T)·latency: one answer stage, then per round one scoring stage
  (self-score alongside neighbour scores) and one refine stage, each of which asks the server
  something new (the weak model's answer drifts every round, see :func:`make_script`);
* reference structure: the research code's call order, questions one after another and, in
  each round, self-score, then neighbour scores, then refine: 30·(1 + 3T)·latency;
* calls per question: server calls actually made, against the naive count (every request the
  protocol issues, without sharing identical temperature-0 requests).

Targets, for this setting only (30 questions, T = 6, 100 ms latency): wall time within 1.3x
the critical-path bound, and at least 30x faster than the reference structure. Another
setting moves both ceilings (the reference over the bound is 30·(1 + 3T) / (1 + 2T): 43.8x
here, 14.3x with ``--quick``), so its figures are printed but not judged.

Run: ``python benchmarks/consensus_orchestration.py`` (``--quick``: 10 questions, T = 3).
Ends with one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import multiprocessing
import re
import time
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection
from typing import Any

import networkx as nx

from _verdict import verdict as judge
from byzllm.agents.consensus import CallMeter, LLMAgent, make_adversary
from byzllm.llm import GenerateConfig, get_model
from byzllm.protocols import SAC, Network, run_consensus
from byzllm.tasks import Task, synthetic_tasks
from byzllm.testing import FakeOpenAIServer

#: The setting the targets are stated for: questions, rounds T, latency (s).
TARGET_SETTING = (30, 6, 0.1)
TARGET_RATIO = 1.3
TARGET_SPEEDUP = 30.0

_RESPONSE = re.compile(r"<response>\n(.*?)\n</response>", re.S)


def benchmark_tasks(questions: int) -> tuple[list[Task], list[Task]]:
    """The evaluated questions and the replay attack's out-of-distribution pool."""
    return synthetic_tasks(questions, seed=0), synthetic_tasks(20, seed=9_999)


def make_script(tasks: list[Task]) -> Any:
    """Strong model: solves, scores the truth 0.9; weak: answers a distractor, scores it 0.9,
    and gives a new wrong answer at every refinement.

    The weak model's drift makes every stage of every round ask the server something new (its
    answers are in the next prompts): with answers that settle, the identical requests of
    later rounds are answered once and never reach the server, and (1 + 2T)·latency was no
    bound at all (0.85 s against 1.30 s).
    """
    by_question = {t.question: t for t in tasks}
    drift = itertools.count(1)

    def script(request: dict[str, Any]) -> str:
        content = str(request["messages"][-1]["content"])
        task = next((t for q, t in by_question.items() if q in content), None)
        if task is None:
            return "pong"  # connection warm-up
        strong = request["model"] == "strong"
        truth, wrong = task.answer, task.meta["distractors"][0]
        responses = [r.strip() for r in _RESPONSE.findall(content)]
        if "Proposed answer:" in content:
            liked = truth if strong else wrong
            return "0.9" if responses[0] == liked else "0.1"
        if "Your current answer:" in content:
            if strong:
                return f"Answer: {truth}"
            return f"Answer: {int(wrong) + 1000 * next(drift)}"
        return f"Answer: {truth if strong else wrong}"

    return script


def serve(questions: int, latency: float, conn: Connection) -> None:
    """Child process: the model server lives apart from the client, as a real one would."""
    tasks, ood = benchmark_tasks(questions)
    with FakeOpenAIServer(make_script(tasks + ood), latency=latency) as server:
        conn.send(server.base_url)
        conn.recv()  # until the parent is done
        conn.send(len(server.requests))


@contextlib.contextmanager
def server_process(questions: int, latency: float) -> Iterator[tuple[str, Callable[[], int]]]:
    """Run :func:`serve` in a child process; yields its URL and a request counter."""
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    process = ctx.Process(target=serve, args=(questions, latency, child), daemon=True)
    process.start()
    counted: list[int] = []

    def requests() -> int:
        if not counted:
            parent.send("stop")
            counted.append(int(parent.recv()))
        return counted[0]

    try:
        yield str(parent.recv()), requests
    finally:
        requests()
        process.join(timeout=10)


async def run(questions: int, rounds: int, latency: float) -> dict[str, Any]:
    tasks, ood = benchmark_tasks(questions)
    with server_process(questions, latency) as (base_url, server_requests_total):
        # "No server-side limit": allow every request of a stage in flight at once.
        limit = 10_000
        strong = get_model(
            "openai/strong", base_url=base_url, api_key_env=None, max_concurrency=limit
        )
        weak = get_model("openai/weak", base_url=base_url, api_key_env=None, max_concurrency=limit)
        agents: list[Any] = [LLMAgent(f"strong-{k}", strong) for k in range(4)]
        agents += [LLMAgent(f"weak-{k}", weak, group="weak") for k in range(2)]
        source = LLMAgent("replay-source", weak, group="weak")
        agents.append(make_adversary("replay", "byzantine-0", ood_tasks=ood, replay_source=source))
        network = Network(nx.complete_graph(7), agents)
        # Connection set-up is not orchestration: open the client before timing.
        warm = GenerateConfig(temperature=0.0, max_tokens=1)
        await asyncio.gather(
            *(m.generate([{"role": "user", "content": "ping"}], warm) for m in (strong, weak))
        )
        warmup_requests = 2
        started = time.perf_counter()
        traces = await run_consensus(SAC(F=3), network, tasks, T=rounds)
        wall = time.perf_counter() - started
        server_requests = server_requests_total() - warmup_requests
    meter = CallMeter()
    for trace in traces:
        for rnd in trace.rounds:
            for row in rnd:
                meter.calls += row.calls
                meter.saved_calls += row.saved_calls
                meter.cached_calls += row.cached_calls
    naive = meter.calls + meter.saved_calls + meter.cached_calls
    bound = (1 + 2 * rounds) * latency
    reference = questions * (1 + 3 * rounds) * latency
    return {
        "wall_s": wall,
        "bound_s": bound,
        "reference_s": reference,
        "ratio_to_bound": wall / bound,
        "speedup_vs_reference": reference / wall,
        "calls_per_question": meter.calls / questions,
        "naive_calls_per_question": naive / questions,
        "server_requests": server_requests,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10 questions, T = 3")
    parser.add_argument("--latency", type=float, default=0.1)
    args = parser.parse_args()
    questions, rounds = (10, 3) if args.quick else (30, 6)
    result = asyncio.run(run(questions, rounds, args.latency))
    latency_ms = args.latency * 1000
    print(
        f"SAC, n=7 complete graph, T={rounds}, {questions} questions, latency {latency_ms:.0f} ms"
    )
    print(f"wall time:                 {result['wall_s']:.2f} s")
    print(
        f"critical-path bound:       {result['bound_s']:.2f} s  "
        f"(ratio {result['ratio_to_bound']:.2f})"
    )
    print(
        f"reference call structure:  {result['reference_s']:.1f} s  "
        f"(speed-up {result['speedup_vs_reference']:.1f}x)"
    )
    print(
        f"model calls per question:  {result['calls_per_question']:.1f} "
        f"(naive {result['naive_calls_per_question']:.1f}; server saw {result['server_requests']})"
    )
    targets = f"ratio <= {TARGET_RATIO:g}, speed-up >= {TARGET_SPEEDUP:g}x"
    verdict = judge(
        result["ratio_to_bound"] <= TARGET_RATIO
        and result["speedup_vs_reference"] >= TARGET_SPEEDUP,
        judged=(questions, rounds, args.latency) == TARGET_SETTING,
        target_for="30 questions, T = 6, 100 ms latency",
    )
    print(f"targets: {targets}: {verdict}")
    print(
        json.dumps(
            {
                "benchmark": "consensus_orchestration",
                "questions": questions,
                "rounds": rounds,
                "latency_s": args.latency,
                "wall_s": round(result["wall_s"], 3),
                "bound_s": round(result["bound_s"], 3),
                "reference_s": round(result["reference_s"], 3),
                "ratio_to_bound": round(result["ratio_to_bound"], 3),
                "speedup_vs_reference": round(result["speedup_vs_reference"], 1),
                "calls_per_question": round(result["calls_per_question"], 2),
                "naive_calls_per_question": round(result["naive_calls_per_question"], 2),
                "server_requests": result["server_requests"],
                "targets": targets,
                "verdict": verdict,
            }
        )
    )


if __name__ == "__main__":
    main()
