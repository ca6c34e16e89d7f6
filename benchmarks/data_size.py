"""Whether a unit's cost depends on the size of the data file it samples from.

Generates a GSM8K-format file of ``--lines`` questions (default 100,000) and a second file of
only the ``--questions`` questions (default 20) a run samples from the first, then runs
``byzllm consensus run`` on each, as a user would from the shell (interpreter start, loading,
units, store): SAC, CP-WBFT and majority on the complete graph against the replay adversary,
whose out-of-distribution pool is the data file's other questions (the SAC paper, App. B.4).
Reports, per file, the median CPU time (user + system of the run's process), wall time and
peak memory (maximum resident set) of ``--repeats`` runs, each in a fresh folder, the two
files alternating; and their ratios. The time ratio is taken on CPU time: a run is one
process on one core, so on an idle machine its wall time is its CPU time, and on a shared one
CPU time still measures its work where wall time measures the neighbours.

    python benchmarks/data_size.py                 # 100,000 lines against 20
    python benchmarks/data_size.py --lines 10000   # quicker

Target (issue: unit cost independent of data size): the large file within 1.5x the time and
memory of the small one, judged for the default setting only (100,000 lines, 20 questions);
another ``--lines`` or ``--questions`` prints its ratios with the verdict "not judged" (a
smaller file meets the target at no merit). Ends with one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _verdict import verdict as judge
from byzllm.tasks import sample_tasks

TARGET_RATIO = 1.5
#: The setting the target is stated for: lines in the large file, questions sampled.
TARGET_SETTING = (100_000, 20)

CONFIG = """\
protocols: [sac, cp-wbft, majority]
topologies: [complete]
compositions:
  - {{strong: 4, weak: 2, byzantine: 1, attack: replay}}
F: [3]
T: [6]
seeds: [0]
dataset: {{name: gsm8k, path: {path}, n: {n}, seed: 0}}
"""


def _question(rng: random.Random) -> str:
    a, b, c = rng.randint(2, 999), rng.randint(2, 999), rng.randint(2, 9)
    return json.dumps(
        {
            "question": f"A shop sells {a} pens on Monday and {b} on Tuesday, in boxes of "
            f"{c}. How many pens does it sell in the two days?",
            "answer": f"It sells {a} + {b} = {a + b} pens.\n#### {a + b}",
        }
    )


def _files(folder: Path, lines: int, questions: int) -> tuple[Path, Path]:
    """The large file and the small one holding the questions a run samples from it."""
    rng = random.Random(0)
    rows = [_question(rng) for _ in range(lines)]
    large, small = folder / "large.jsonl", folder / "small.jsonl"
    large.write_text("\n".join(rows) + "\n", encoding="utf-8")
    # The questions the run draws (the data set's seed, 0), in file order.
    small.write_text("\n".join(sample_tasks(rows, questions, 0)) + "\n", encoding="utf-8")
    return large, small


def _run(command: list[str], config: Path, run_dir: Path) -> tuple[float, float, float]:
    """CPU seconds, wall seconds and peak resident memory (MB) of one run."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        [*command, "consensus", "run", str(config), "-o", str(run_dir)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    assert proc.stderr is not None
    err = proc.stderr.read().decode(errors="replace")
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(f"the run failed ({proc.returncode}):\n{err}")
    return usage.ru_utime + usage.ru_stime, seconds, usage.ru_maxrss / 1024  # Linux: kB


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--questions", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    byzllm = shutil.which("byzllm")
    command = [byzllm] if byzllm else [sys.executable, "-c", "from byzllm.cli import main; main()"]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        files = dict(
            zip(("large", "small"), _files(folder, args.lines, args.questions), strict=True)
        )
        configs = {}
        for name, path in files.items():
            configs[name] = folder / f"{name}.yaml"
            configs[name].write_text(CONFIG.format(path=path, n=args.questions), encoding="utf-8")
        measured: dict[str, list[tuple[float, float, float]]] = {"small": [], "large": []}
        for i in range(args.repeats):
            for name in ("small", "large"):
                measured[name].append(_run(command, configs[name], folder / f"run-{name}-{i}"))
    cpu, wall, memory = (
        {k: statistics.median(m[field] for m in v) for k, v in measured.items()}
        for field in range(3)
    )
    time_ratio = cpu["large"] / cpu["small"]
    memory_ratio = memory["large"] / memory["small"]
    for name, lines in (("small", args.questions), ("large", args.lines)):
        print(
            f"{lines:>7} lines: {cpu[name]:6.2f} s CPU, {wall[name]:6.2f} s wall, "
            f"{memory[name]:6.0f} MB peak (median of {args.repeats})",
            file=sys.stderr,
        )
    verdict = judge(
        time_ratio <= TARGET_RATIO and memory_ratio <= TARGET_RATIO,
        judged=(args.lines, args.questions) == TARGET_SETTING,
        target_for="100,000 lines, 20 questions",
    )
    print(
        f"large / small: CPU time {time_ratio:.2f}x, memory {memory_ratio:.2f}x "
        f"(target <= {TARGET_RATIO}x): {verdict}; "
        f"wall time {wall['large'] / wall['small']:.2f}x",
        file=sys.stderr,
    )
    result = {
        "benchmark": "data_size",
        "lines": args.lines,
        "questions": args.questions,
        "units": 3 * args.questions,
        "repeats": args.repeats,
        "small_cpu_s": round(cpu["small"], 2),
        "large_cpu_s": round(cpu["large"], 2),
        "small_wall_s": round(wall["small"], 2),
        "large_wall_s": round(wall["large"], 2),
        "small_mb": round(memory["small"]),
        "large_mb": round(memory["large"]),
        "time_ratio": round(time_ratio, 2),
        "memory_ratio": round(memory_ratio, 2),
        "wall_ratio": round(wall["large"] / wall["small"], 2),
        "target_ratio": TARGET_RATIO,
        "verdict": verdict,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
