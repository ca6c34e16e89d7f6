"""WhoDunitEnv on a real model: free decoding against schema-constrained decoding.

The same games (``--games`` seeds from ``--seed``, asymmetric by default: 5 characters,
4 properties, 8 turns), played once per mode (``--modes``: decoding:prompt pairs, by default
``free:paper schema:paper schema:compact``) by LLM agents on one
OpenAI-compatible server (``byzllm serve --model qwen0.5b`` is the reference), temperature
0, 10 top log-probabilities, the default re-prompt budget (3) and ``--max-tokens`` per
reply, no response cache. Per mode it reports what a monitor run needs from the agents
(the rogue-agents paper, §4.1): the share of agent turns that were a valid move (not the
fallback pass), the rejected replies (parse failures, each re-prompted), the turns with
decision positions for the monitor, the environment's truth flags (false moves: a
hallucinated answer or list; repeated moves: a message already in the channel),
accusations and successes, and wall seconds per agent turn.

Run: ``python benchmarks/whodunit_decoding.py --base-url http://127.0.0.1:PORT/v1
[--model qwen0.5b] [--games 3] [--modes free:paper schema:paper]``. Ends with one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

from byzllm.agents.whodunit import Decoding, PromptStyle
from byzllm.envs.whodunit import GameConfig, GameResult, generate_games, llm_agents, play_game
from byzllm.llm import get_model

DECODINGS: tuple[Decoding, ...] = ("free", "schema")
PROMPTS: tuple[PromptStyle, ...] = ("paper", "compact")
MODES = [f"{d}:{p}" for d in DECODINGS for p in PROMPTS]


class _Tally:
    """One mode's counts over the games played so far."""

    def __init__(self, mode: str) -> None:
        decoding, prompt = mode.split(":")
        assert decoding in DECODINGS and prompt in PROMPTS
        self.decoding: Decoding = decoding
        self.prompt: PromptStyle = prompt
        self.counts = dict.fromkeys(
            ("games", "turns", "valid", "parse_failures", "with_positions", "accusations"), 0
        )
        self.counts |= {"successes": 0, "requests": 0, "hallucinations": 0, "repetitions": 0}
        self.wall = 0.0

    def add(self, result: GameResult, requests: int, wall: float) -> None:
        c = self.counts
        c["games"] += 1
        c["turns"] += result.total_turns
        c["valid"] += sum(not t.fallback for t in result.turns)
        c["parse_failures"] += result.parse_failures
        c["with_positions"] += sum(bool(t.obs.distributions) for t in result.turns)
        c["accusations"] += int(result.accused)
        c["successes"] += int(result.success)
        c["requests"] += requests
        c["hallucinations"] += result.hallucinations
        c["repetitions"] += result.repetitions
        self.wall += wall

    def row(self) -> dict[str, Any]:
        turns = max(1, self.counts["turns"])
        return {
            "decoding": self.decoding,
            "prompt": self.prompt,
            **self.counts,
            "valid_rate": self.counts["valid"] / turns,
            "seconds_per_turn": self.wall / turns,
            "seconds_per_request": self.wall / max(1, self.counts["requests"]),
            "wall_s": self.wall,
        }


async def _play(args: argparse.Namespace) -> list[dict[str, Any]]:
    config = GameConfig(
        variant=args.variant,
        n_suspects=args.suspects,
        n_attributes=args.attributes,
        max_turns=args.turns,
    )
    model = get_model(
        f"openai/{args.model}",
        base_url=args.base_url,
        api_key_env=None,
        # One slot on a CPU server: a long reply is slow, not dead.
        adaptive_timeout=False,
        timeout_s=900,
    )
    tallies = [_Tally(mode) for mode in args.modes]
    # Modes alternate game by game, so a change of machine load hits both alike.
    for seed in range(args.seed, args.seed + args.games):
        game = generate_games(1, config, seed=seed)[0]
        for tally in tallies:
            agents = llm_agents(
                game,
                model,
                max_tokens=args.max_tokens,
                final_move=args.final_move if tally.decoding == "schema" else "free",
                decoding=tally.decoding,
                prompt=tally.prompt,
                top_logprobs=10,
            )
            before = model.usage.calls
            started = time.perf_counter()
            result = await play_game(game, agents, rng=seed, wording=args.wording)
            wall = time.perf_counter() - started
            tally.add(result, model.usage.calls - before, wall)
            if args.transcripts is not None:
                with args.transcripts.open("a", encoding="utf-8") as out:
                    entry = {"decoding": tally.decoding, "prompt": tally.prompt, "seed": seed}
                    out.write(json.dumps(entry | {"game": result.model_dump(mode="json")}) + "\n")
            print(
                f"  {tally.decoding}/{tally.prompt} seed {seed}: {result.total_turns} turns, "
                f"{sum(t.fallback for t in result.turns)} fallbacks, "
                f"{result.parse_failures} parse failures, accused {result.accused_suspect} "
                f"(culprit {result.culprit}), {wall:.0f} s",
                flush=True,
            )
    await model.aclose()
    return [tally.row() for tally in tallies]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--model", default="qwen0.5b")
    parser.add_argument("--games", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--variant", default="asym", choices=["asym", "sym"])
    parser.add_argument("--suspects", type=int, default=5)
    parser.add_argument("--attributes", type=int, default=4)
    parser.add_argument("--turns", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=1024)
    parser.add_argument("--final-move", default="free", choices=["free", "accuse"])
    parser.add_argument("--wording", default="award", choices=["award", "original"])
    modes = ["free:paper", "schema:paper", "schema:compact"]
    parser.add_argument("--modes", nargs="+", default=modes, choices=MODES)
    parser.add_argument(
        "--transcripts", type=Path, default=None, help="append every game's record (JSON lines)"
    )
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    rows = asyncio.run(_play(args))
    print(
        "| decoding | prompt | games | agent turns | valid moves | parse failures "
        "| turns with positions | false moves | repeated moves | accusations | successes "
        "| s / turn |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['decoding']} | {r['prompt']} | {r['games']} | {r['turns']} | {r['valid']} "
            f"({r['valid_rate']:.0%}) | {r['parse_failures']} | {r['with_positions']} "
            f"| {r['hallucinations']} | {r['repetitions']} | {r['accusations']} "
            f"| {r['successes']} | {r['seconds_per_turn']:.1f} |"
        )
    settings = {k: getattr(args, k) for k in ("variant", "suspects", "attributes", "turns")}
    settings |= {"max_tokens": args.max_tokens, "wording": args.wording, "seed": args.seed}
    settings |= {"final_move": args.final_move}
    load = {"before": load_before, "after": os.getloadavg()[0]}  # 1-minute load averages
    out = {"benchmark": "whodunit_decoding", "model": args.model, "settings": settings}
    print(json.dumps(out | {"load": load, "rows": rows}))


if __name__ == "__main__":
    main()
