"""How fast ``byzllm`` commands start: ``--help`` and two small commands.

Each command runs as a fresh process (the installed entry point, ``byzllm.cli:main``), five
times, interleaved with two anchors measured in the same run: a bare interpreter
(``python -c pass``) and the ``--help`` of a two-command typer app with rich help (the floor
that typer and rich set for any command rendered the way byzllm renders its help). Bytecode
is written on a warm-up run first, as an installed package has it, and so is the help cache
(``byzllm.cli._help_cache``, in a temporary folder): a help page shown before is replayed
without typer. ``byzllm --help (rendered)`` is the same page with the cache off -- what the
first ``--help`` in a new terminal setting costs.

    python benchmarks/cli_startup.py
    python benchmarks/cli_startup.py --repeats 9

Target: ``byzllm --help`` in < 150 ms (median of 5) where the bare interpreter takes 28 ms;
on a busier machine read the ratio to the bare interpreter (target <= 150/28 = 5.4). Small
commands (``graph check``, ``runs list``): < 300 ms each.
Ends with one JSON line, which holds every figure printed: each case's median and its ratios
to the bare interpreter and to the typer floor (``cases``), and the verdicts.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _verdict import verdict as judge

_ENTRY = "from byzllm.cli import main; main()"

_TYPER_FLOOR = '''
import typer

app = typer.Typer(rich_markup_mode="rich")


@app.command()
def one(x: int = 1) -> None:
    """One."""


@app.command()
def two(x: int = 1) -> None:
    """Two."""


app()
'''


def _graph_file(folder: Path) -> Path:
    """A 7-node ring with chords, small enough that ``graph check`` measures its start."""
    path = folder / "g.edges"
    edges = [(i, (i + k) % 7) for i in range(7) for k in (1, 2)]
    path.write_text("\n".join(f"{a} {b}" for a, b in edges) + "\n")
    return path


def _time(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["COLUMNS"] = "100"
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        env["BYZLLM_HELP_CACHE"] = str(folder / "help")
        floor = folder / "floor.py"
        floor.write_text(_TYPER_FLOOR)
        graph = _graph_file(folder)
        (folder / "runs").mkdir()
        py = sys.executable
        cases: dict[str, list[str]] = {
            "python -c pass": [py, "-c", "pass"],
            "typer floor --help": [py, str(floor), "--help"],
            "byzllm --help": [py, "-c", _ENTRY, "--help"],
            "byzllm --help (rendered)": [
                "env",
                "BYZLLM_HELP_CACHE=off",
                py,
                "-c",
                _ENTRY,
                "--help",
            ],
            "byzllm consensus run --help": [py, "-c", _ENTRY, "consensus", "run", "--help"],
            "byzllm graph check --help": [py, "-c", _ENTRY, "graph", "check", "--help"],
            "byzllm graph check g.edges": [py, "-c", _ENTRY, "graph", "check", str(graph)],
            "byzllm runs list": [py, "-c", _ENTRY, "runs", "list", str(folder / "runs")],
        }
        for argv in cases.values():  # warm-up: bytecode, file cache
            _time(argv, env)
        times: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(args.repeats):  # interleaved, so load drifts hit every case alike
            for name, argv in cases.items():
                times[name].append(_time(argv, env))

    median = {name: statistics.median(t) * 1000 for name, t in times.items()}
    bare = median["python -c pass"]
    floor_ms = median["typer floor --help"]
    for name, ms in median.items():
        print(
            f"{name:32s} {ms:7.1f} ms  ({ms / bare:4.1f}x bare, {ms / floor_ms:4.2f}x typer floor)"
        )
    help_ms = median["byzllm --help"]
    graph_ms, runs_ms = median["byzllm graph check g.edges"], median["byzllm runs list"]
    small = max(graph_ms, runs_ms)
    help_met = help_ms < 150 or help_ms / bare <= 150 / 28
    print(f"target: byzllm --help < 150 ms (ratio to bare <= 5.4): {judge(help_met)}")
    # The issue asks it of every --help: the subcommands measured here are judged alike.
    sub_help = max(median["byzllm consensus run --help"], median["byzllm graph check --help"])
    sub_met = sub_help < 150 or sub_help / bare <= 150 / 28
    print(f"target: subcommand --help < 150 ms (slowest measured): {judge(sub_met)}")
    small_met = {"graph check": graph_ms < 300, "runs list": runs_ms < 300}
    for name, ms in (("graph check", graph_ms), ("runs list", runs_ms)):
        # Absolute: the bare interpreter here (40-60 ms) swings too much for a ratio to judge.
        print(f"target: byzllm {name} < 300 ms: {judge(small_met[name])} ({ms / bare:.1f}x bare)")
    print(
        json.dumps(
            {
                "benchmark": "cli_startup",
                "repeats": args.repeats,
                "bare_ms": round(bare, 1),
                "typer_floor_ms": round(floor_ms, 1),
                "help_ms": round(help_ms, 1),
                "help_ratio_to_bare": round(help_ms / bare, 2),
                "help_ratio_to_typer_floor": round(help_ms / floor_ms, 2),
                "help_rendered_ms": round(median["byzllm --help (rendered)"], 1),
                "help_rendered_ratio_to_bare": round(median["byzllm --help (rendered)"] / bare, 2),
                "help_met": help_met,
                "subcommand_help_met": sub_met,
                "slowest_subcommand_help_ms": round(sub_help, 1),
                "subcommand_help_ms": round(median["byzllm consensus run --help"], 1),
                "subcommand_help_ratio_to_bare": round(
                    median["byzllm consensus run --help"] / bare, 2
                ),
                "small_command_ms": round(small, 1),
                "small_command_ratio_to_bare": round(small / bare, 2),
                "graph_check_ms": round(graph_ms, 1),
                "graph_check_met": small_met["graph check"],
                "runs_list_ms": round(runs_ms, 1),
                "runs_list_met": small_met["runs list"],
                "graph_check_help_ms": round(median["byzllm graph check --help"], 1),
                "cases": {
                    name: {
                        "ms": round(ms, 1),
                        "ratio_to_bare": round(ms / bare, 1),
                        "ratio_to_typer_floor": round(ms / floor_ms, 2),
                    }
                    for name, ms in median.items()
                },
            }
        )
    )


if __name__ == "__main__":
    main()
