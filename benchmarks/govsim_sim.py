"""Benchmark: the 20 GovSim test games (App. D.1) of 12 months with simulated fishers (target:
< 10 s on 2 cores, judged only where this process may run on exactly 2 cores, its CPU
affinity; elsewhere "not judged"). Prints one JSON line; the metrics it reports are
*simulated*.

    python benchmarks/govsim_sim.py
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

from _verdict import verdict as judge
from byzllm._process import usable_cores
from byzllm.envs.govsim import GovSimResult, LakeConfig, make_splits, play_game, simulated_fishers

#: The target, and the cores it is stated for.
TARGET_S = 10.0
TARGET_CORES = 2


async def _play_all(seed: int) -> list[GovSimResult]:
    lake = LakeConfig(months=12)
    games = make_splits(lake, seed=seed).test
    return [
        await play_game(g, simulated_fishers(lake, salt=f"bench-{seed}"), config=lake)
        for g in games
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    start = time.perf_counter()
    results = asyncio.run(_play_all(args.seed))
    seconds = time.perf_counter() - start
    n = len(results)
    cores = usable_cores()
    verdict = judge(
        seconds < TARGET_S, judged=cores == TARGET_CORES, target_for=f"{TARGET_CORES} cores"
    )
    print(
        json.dumps(
            {
                "benchmark": "govsim_sim",
                "games": n,
                "months": 12,
                "seconds": round(seconds, 3),
                "cores": cores,
                "target_s": TARGET_S,
                "verdict": verdict,
                "simulated": True,
                "survival_rate": sum(r.survived for r in results) / n,
                "survival_time": sum(r.survival_time for r in results) / n,
                "efficiency": round(sum(r.efficiency for r in results) / n, 4),
            }
        )
    )


if __name__ == "__main__":
    main()
