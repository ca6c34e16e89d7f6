"""Exact r-robustness: byzllm's solver versus the plain Usevitch–Panagou MILP, side by side.

Erdős–Rényi graphs G(n, 1/2), five per size, each solved by

* ours: ``byzllm.graphs.r_robustness`` (subset DP up to 26 nodes; above, bounds plus the
  branch and bound over k-closed sets, compiled with numba when it is installed, as with
  ``pip install -e ".[dev]"`` or ``byzllm[fast]``; the first lines say which), and
* plain MILP: the model of Usevitch & Panagou (Automatica 2020) on HiGHS through
  ``scipy.optimize.milp``, with no extra bounds and no warm start,

under the same per-solve time limit. Prints one line per graph, a summary per size (median
seconds, how many solves finished exactly, the ratio of medians) and ends with one JSON line.

    python benchmarks/robustness.py            # n = 16 20 24 30 40 50, 120 s limit (long)
    python benchmarks/robustness.py --quick    # n = 16 20 24, 3 graphs, 30 s limit
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import networkx as nx

from byzllm.graphs import r_robustness
from byzllm.graphs._closed_sets import compiled_search_available
from byzllm.graphs._core import graph_view
from byzllm.graphs._milp import milp_r_robustness


def _solve_ours(G: nx.Graph[int], limit: float) -> tuple[float, bool, int, tuple[int, int]]:
    start = time.perf_counter()
    res = r_robustness(G, time_limit=limit)
    return time.perf_counter() - start, res.exact, res.r, res.bounds


def _solve_plain(G: nx.Graph[int], limit: float) -> tuple[float, bool, int | None]:
    start = time.perf_counter()
    out = milp_r_robustness(graph_view(G), time_limit=limit, plain=True)
    return time.perf_counter() - start, out.optimal, out.value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, 3 graphs, 30 s")
    parser.add_argument("--sizes", type=int, nargs="*", help="node counts to run")
    parser.add_argument("--graphs", type=int, help="graphs per size (default 5)")
    parser.add_argument("--time-limit", type=float, help="seconds per solve (default 120)")
    parser.add_argument("--no-milp", action="store_true", help="skip the plain MILP")
    args = parser.parse_args()
    sizes = args.sizes or ([16, 20, 24] if args.quick else [16, 20, 24, 30, 40, 50])
    count = args.graphs or (3 if args.quick else 5)
    limit = args.time_limit or (30.0 if args.quick else 120.0)

    compiled = compiled_search_available()
    print(
        "search: "
        + ("compiled (numba)" if compiled else "pure Python (pip install 'byzllm[fast]')"),
        flush=True,
    )
    if compiled:
        # Load (or build, on a fresh install) the compiled search outside the timings.
        r_robustness(nx.gnp_random_graph(30, 0.5, seed=0), method="search")
    results = []
    for n in sizes:
        ours_t, ours_ok, milp_t, milp_ok = [], 0, [], 0
        for g in range(count):
            G = nx.gnp_random_graph(n, 0.5, seed=1000 * n + g)
            t, exact, r, bounds = _solve_ours(G, limit)
            ours_t.append(min(t, limit))
            ours_ok += exact
            line = f"n={n:3d} graph {g}: ours r={r} {'exact' if exact else f'bounds {bounds}'}"
            line += f" {t:7.2f} s"
            if not args.no_milp:
                mt, mexact, mr = _solve_plain(G, limit)
                milp_t.append(min(mt, limit))
                milp_ok += mexact
                line += f" | plain MILP {'r=' + str(mr) if mexact else 'unfinished'} {mt:7.2f} s"
                if exact and mexact and mr != r:
                    line += "  MISMATCH"
            print(line, flush=True)
        ours_med = statistics.median(ours_t)
        row: dict[str, float | int | None] = {
            "n": n,
            "ours_median_s": round(ours_med, 3),
            "ours_exact": ours_ok,
            "milp_median_s": round(statistics.median(milp_t), 3) if milp_t else None,
            "milp_exact": milp_ok if milp_t else None,
        }
        summary = f"n={n:3d}: ours median {ours_med:7.2f} s, exact {ours_ok}/{count}"
        if milp_t:
            milp_med = statistics.median(milp_t)
            capped = " (capped at the limit)" if milp_ok < count else ""
            summary += f" | plain MILP median {milp_med:7.2f} s{capped}, exact {milp_ok}/{count}"
            summary += f" | ratio {milp_med / max(ours_med, 1e-9):6.1f}x"
        print(summary, flush=True)
        results.append(row)
    print(json.dumps({"benchmark": "robustness", "compiled": compiled, "results": results}))


if __name__ == "__main__":
    main()
