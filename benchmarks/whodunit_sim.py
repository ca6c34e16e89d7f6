"""Benchmark: 180 WhoDunitEnv-Asym test games with simulated agents (target: < 10 s on 2 cores,
judged only where this process may run on exactly 2 cores, its CPU affinity; elsewhere "not
judged").

Also reports the simulated Success-Rate / Precision / Game-Length and the success rate as the
suspect count grows (6 -> 10 -> 14, cf. the rogue-agents paper, Fig. 6). All results are
*simulated*.

    python benchmarks/whodunit_sim.py           # full
    python benchmarks/whodunit_sim.py --quick   # fewer games for the suspect sweep
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

from _verdict import verdict as judge
from byzllm._process import usable_cores
from byzllm.agents.whodunit import SimParams
from byzllm.envs.whodunit import (
    GameConfig,
    GameResult,
    WhoDunitGame,
    game_metrics,
    generate_games,
    make_splits,
    play_game,
    simulated_agents,
)

#: The target, and the cores it is stated for.
TARGET_S = 10.0
TARGET_CORES = 2


async def _play_all(games: list[WhoDunitGame], params: SimParams) -> list[GameResult]:
    return [await play_game(g, simulated_agents(g, params), rng=i) for i, g in enumerate(games)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller suspect sweep")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    params = SimParams()

    games = make_splits(GameConfig(variant="asym"), seed=args.seed).test
    start = time.perf_counter()
    results = asyncio.run(_play_all(games, params))
    seconds = time.perf_counter() - start
    m = game_metrics(results)
    cores = usable_cores()
    verdict = judge(
        seconds < TARGET_S, judged=cores == TARGET_CORES, target_for=f"{TARGET_CORES} cores"
    )
    print(
        f"simulated WhoDunitEnv-Asym, {len(games)} test games in {seconds:.2f} s "
        f"(target < {TARGET_S:g} s on {TARGET_CORES} cores: {verdict})"
    )
    print(
        f"  Success-Rate {m.success_rate:.1%}  Precision {m.precision:.1%}  "
        f"Game-Length {m.game_length:.1f}  (simulated)"
    )

    sweep: dict[str, float] = {}
    n_sweep = 60 if args.quick else 180
    for n in (6, 10, 14):
        sweep_games = generate_games(n_sweep, GameConfig(n_suspects=n), seed=args.seed)
        rate = game_metrics(asyncio.run(_play_all(sweep_games, params))).success_rate
        sweep[str(n)] = round(rate, 4)
        print(f"  {n:>2} suspects: Success-Rate {rate:.1%} over {n_sweep} games (simulated)")

    print(
        json.dumps(
            {
                "benchmark": "whodunit_sim",
                "games": len(games),
                "seconds": round(seconds, 3),
                "games_per_s": round(len(games) / seconds, 1),
                "cores": cores,
                "target_s": TARGET_S,
                "verdict": verdict,
                "success_rate": round(m.success_rate, 4),
                "precision": round(m.precision, 4),
                "game_length": round(m.game_length, 2),
                "success_by_suspects": sweep,
                "games_per_suspect_count": n_sweep,
                "simulated": True,
                "sim_params": params.model_dump(),
                "seed": args.seed,
            }
        )
    )


if __name__ == "__main__":
    main()
