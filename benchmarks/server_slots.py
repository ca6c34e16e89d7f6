"""Several requests at once on one machine: one server with two threads, or two slots of one.

The same workload goes, ``--parallel`` requests at a time, to byzllm's local server
(:mod:`byzllm.llm._llama_http`) in three set-ups: one slot with one thread (the baseline:
requests queue), one slot with two threads, and two slots with one thread each (two contexts
of the same memory-mapped weights decoding in parallel). The workload is what a WhoDunit game
sends: two agents, each with its own system prompt, taking turns; each request asks for up to
``--tokens`` tokens (temperature 0, top-10 log-probabilities). With two slots each agent's
requests stay on the context that served its system prompt (the server's slot affinity), so
llama.cpp reuses the prompt prefix. Set-ups alternate (A B C A B C ...) so that a change of the
machine's load hits each alike; the figure is the median wall time over ``--repeats``, and
ratios are against the baseline.

Run: ``python benchmarks/server_slots.py [--model qwen0.5b] [--repeats 3]``. Needs the
``local`` extra. Ends with one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from byzllm.llm import LocalServer

SETUPS = {"1 slot x 1 thread": (1, 1), "1 slot x 2 threads": (1, 2), "2 slots x 1 thread": (2, 1)}
SYSTEMS = (
    "You are the Accuser in a deduction game. Five characters, each with a hat, a mood, a "
    "shirt colour and a hobby; you know the culprit's description and must find them by "
    "asking your partner questions. Reply with your thoughts, then one JSON action.",
    "You are the Intel agent in a deduction game. You know every character's hat, mood, shirt "
    "colour and hobby, but not who the culprit is. Answer your partner's questions truthfully. "
    "Reply with your thoughts, then one JSON action.",
)


def _body(system: str, turn: int, tokens: int) -> bytes:
    return json.dumps(
        {
            "model": "m",
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": f"Turn {turn} of 8. The channel is empty. Your move?"},
            ],
            "temperature": 0,
            "max_tokens": tokens,
            "logprobs": True,
            "top_logprobs": 10,
        }
    ).encode()


def _post(url: str, body: bytes) -> int:
    request = urllib.request.Request(url, body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=600) as response:
        return int(json.loads(response.read())["usage"]["completion_tokens"])


def _workload(base_url: str, parallel: int, turns: int, tokens: int) -> tuple[float, int]:
    """``parallel`` games at once, each ``turns`` turns of two alternating agents."""
    url = f"{base_url}/chat/completions"

    def game(g: int) -> int:
        return sum(
            _post(url, _body(SYSTEMS[t % 2] + f" Game {g}.", t + 1, tokens)) for t in range(turns)
        )

    started = time.perf_counter()
    with ThreadPoolExecutor(parallel) as pool:
        generated = sum(pool.map(game, range(parallel)))
    return time.perf_counter() - started, generated


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="qwen0.5b")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--parallel", type=int, default=2)
    parser.add_argument("--turns", type=int, default=4)
    parser.add_argument("--tokens", type=int, default=48)
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    servers = {
        name: LocalServer(args.model, port=0, slots=slots, threads=threads).start()
        for name, (slots, threads) in SETUPS.items()
    }
    walls: dict[str, list[float]] = {name: [] for name in SETUPS}
    tokens: dict[str, int] = {}
    try:
        for _ in range(args.repeats):
            for name, server in servers.items():
                wall, generated = _workload(server.base_url, args.parallel, args.turns, args.tokens)
                walls[name].append(wall)
                tokens[name] = generated
    finally:
        for server in servers.values():
            server.stop()
    base = statistics.median(walls["1 slot x 1 thread"])
    rows: list[dict[str, Any]] = []
    print(f"{args.parallel} games at once, {args.turns} turns each, <= {args.tokens} tokens")
    print("| set-up | median wall s | tokens | speed-up over 1 slot x 1 thread |")
    print("|---|---|---|---|")
    for name in SETUPS:
        median = statistics.median(walls[name])
        walls_s = [round(w, 2) for w in walls[name]]
        rows.append(
            {"setup": name, "median_s": round(median, 2), "walls_s": walls_s,
             "tokens": tokens[name], "speedup": round(base / median, 2)}
        )  # fmt: skip
        print(f"| {name} | {median:.1f} | {tokens[name]} | {base / median:.2f}x |")
    load = {"before": load_before, "after": os.getloadavg()[0]}
    print(
        json.dumps({"benchmark": "server_slots", "model": args.model, "load": load, "rows": rows})
    )


if __name__ == "__main__":
    main()
