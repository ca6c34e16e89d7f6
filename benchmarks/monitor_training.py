"""Speed of the monitor selection grid (the rogue-agents paper, D.2) on synthetic per-turn data.

The full grid — 2 roles × 7 feature subsets × 5 degrees × 101 thresholds, plus the random
baseline — on ``--turns`` turns (default 10,000; 70% train games, 30% validation games).
Target, for 10,000 turns on 2 cores only: under 10 s (another ``--turns``, ``--quick``
included, or a process that may run on another number of cores, its CPU affinity, prints its
time with the verdict "not judged"). The data are synthetic (features
drawn so that failing games are more uncertain), only their size matters here.

    python benchmarks/monitor_training.py            # 10,000 turns
    python benchmarks/monitor_training.py --quick    # 2,000 turns
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from _verdict import verdict as judge
from byzllm._process import usable_cores
from byzllm.monitor import TurnDataset, format_table5, train_monitor_set

#: The size and cores the target is stated for, and the target.
TARGET_TURNS = 10_000
TARGET_CORES = 2
TARGET_S = 10.0


def synthetic_turns(n_turns: int, seed: int) -> tuple[TurnDataset, TurnDataset]:
    """Games of 2–31 alternating accuser/intel turns; failing games are more uncertain."""
    rng = np.random.default_rng(seed)
    rows: list[dict[str, object]] = []
    game = 0
    while len(rows) < n_turns:
        success = bool(rng.random() < 0.6)
        length = int(rng.integers(2, 32))
        for turn in range(1, length + 1):
            if len(rows) == n_turns:
                break
            noise = 0.6 if success else 1.0
            entropy = float(rng.gamma(2.0, 0.3 * noise))
            rows.append(
                {
                    "game_id": f"g{game}",
                    "role": "accuser" if turn % 2 else "intel",
                    "entropy": entropy,
                    "varentropy": float(entropy * rng.gamma(2.0, 0.4)),
                    "kurtosis": float(1.0 + rng.gamma(1.5, 1.0)),
                    "turn": turn,
                    "success": success,
                }
            )
        game += 1
    # The split is by game: validation starts at the first game that starts at 70% or later.
    cut = next((i for i, r in enumerate(rows) if i >= 0.7 * len(rows) and r["turn"] == 1), None)
    if cut is None:
        raise SystemExit(f"{n_turns} turns leave no game for validation: pass more --turns")
    return TurnDataset.from_rows(rows[:cut]), TurnDataset.from_rows(rows[cut:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=TARGET_TURNS)
    parser.add_argument("--quick", action="store_true", help="2,000 turns")
    args = parser.parse_args()
    n_turns = 2_000 if args.quick else args.turns
    train, validation = synthetic_turns(n_turns, seed=0)
    start = time.perf_counter()
    import sklearn.linear_model  # noqa: F401  (imported once per process; timed separately)

    import_seconds = time.perf_counter() - start
    start = time.perf_counter()
    monitors, selections = train_monitor_set(train, validation)
    seconds = time.perf_counter() - start
    print(f"turns: {n_turns} ({train.n_turns} train, {validation.n_turns} validation)")
    candidates = sum(len(s.grid) for s in selections)
    print(f"candidates: {candidates} monitors x 101 thresholds")
    print(format_table5(monitors))
    print(f"scikit-learn import: {import_seconds:.2f} s (once per process, not in the grid time)")
    cores = usable_cores()
    verdict = judge(
        seconds < TARGET_S,
        judged=(n_turns, cores) == (TARGET_TURNS, TARGET_CORES),
        target_for=f"{TARGET_TURNS:,} turns on {TARGET_CORES} cores",
    )
    print(f"full selection grid: {seconds:.2f} s (target < {TARGET_S:g} s on 2 cores: {verdict})")
    record = {
        "benchmark": "monitor_training",
        "turns": n_turns,
        "train_turns": train.n_turns,
        "validation_turns": validation.n_turns,
        "candidates": candidates,
        "cores": cores,
        "seconds": round(seconds, 3),
        "import_seconds": round(import_seconds, 3),
        "target_s": TARGET_S,
        "verdict": verdict,
    }
    print(json.dumps(record))


if __name__ == "__main__":
    main()
