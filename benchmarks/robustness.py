"""Exact r-robustness: byzllm's solver versus the plain Usevitch–Panagou MILP, side by side.

Erdős–Rényi graphs G(n, 1/2), five per size, each solved by

* ours: ``byzllm.graphs.r_robustness`` (subset DP up to 26 nodes; above, bounds plus the
  branch and bound over k-closed sets, compiled with numba when it is installed, as with
  ``pip install -e ".[dev]"`` or ``byzllm[fast]``; the first lines say which), then
  ``rs_robustness`` at the r found (the largest s), both certificates re-checked with the
  solver-independent ``verify_certificate`` / ``verify_rs_certificate``, and
* plain MILP: the model of Usevitch & Panagou (Automatica 2020) on HiGHS through
  ``scipy.optimize.milp``, with no extra bounds and no warm start,

under the same per-solve time limit. Then, per size, the γ-MERG (Lee & Panagou, Theorem 1) on
the largest odd node count not above it, which must come out exactly ⌈n/2⌉-robust.

Prints one line per graph (wall and CPU seconds: on a shared machine the wall time mostly
measures the load, which the first line and the JSON report), a summary per size (median
seconds, how many solves finished exactly, the ratio of medians) and ends with one JSON line,
which also lists each graph's r and s with their bounds, exactness and wall and CPU seconds.

    python benchmarks/robustness.py            # n = 16 20 24 30 40 50, 120 s limit (long)
    python benchmarks/robustness.py --quick    # n = 16 20 24, 3 graphs, 30 s limit
    python benchmarks/robustness.py --sizes 64 --no-milp

Target (issue: exact robustness to n = 64): at n = 64 every graph exact within 120 s, judged
at that size only: its summary line and its ``target_verdict`` in the JSON say met or NOT
met, every other size's says "not judged: target is for n = 64"; with the MILP run,
``milp_over_ours`` is the ratio of median seconds.

Measured with ``--sizes 64 --no-milp`` (one run, 2-core machine, load average 2.2 at the start,
4.4 at the end): r exact for 4 of the 5 graphs (22, 39, 56 and 69 s of wall time; seed 64002
ends with bounds (16, 17)), s for none: the (r,s) budget search does not get through budget 1
in its 120 s and ends with bounds (1, 12), (1, 6), (1, 11) and (1, 8) (98 to 118 s of CPU), so
the target is not met. On 30 to 50 nodes every s comes out exact, in at most 15 s of CPU
(docs/graphs.md, Limits). With the proof of r on two threads, ``--sizes 64 --no-milp --no-rs
--no-merg`` on a quiet 2-core machine (load average 1.3): r exact for all five (8.6, 19.1, 67.8,
24.1 and 34.9 s of wall time), so the r half of the target is met; the (r,s) budget search is
unchanged, so the target with s is not.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from typing import Any

import networkx as nx

from _verdict import verdict as judge
from byzllm.graphs import (
    build,
    r_robustness,
    rs_robustness,
    verify_certificate,
    verify_rs_certificate,
)
from byzllm.graphs._closed_sets import compiled_search_available
from byzllm.graphs._core import graph_view
from byzllm.graphs._milp import milp_r_robustness


def _clocks() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def _since(start: tuple[float, float]) -> tuple[float, float]:
    wall, cpu = _clocks()
    return wall - start[0], cpu - start[1]


def _solve_ours(G: nx.Graph[int], limit: float, rs: bool) -> dict[str, Any]:
    start = _clocks()
    res = r_robustness(G, time_limit=limit)
    wall, cpu = _since(start)
    cert = res.certificate
    # The pair shows G is not (r+1)-robust; when exact, no pair exists one level down.
    certified = verify_certificate(G, cert.s1, cert.s2, res.bounds[1] + 1)
    out: dict[str, Any] = {
        "r": res.r,
        "r_exact": res.exact,
        "r_bounds": res.bounds,
        "r_wall_s": wall,
        "r_cpu_s": cpu,
        "certified": certified,
    }
    if rs and res.exact:
        start = _clocks()
        srs = rs_robustness(G, r=res.r, time_limit=limit)
        wall, cpu = _since(start)
        if srs.certificate is not None:
            c = srs.certificate
            # The pair witnesses the upper bound: G is not (r, upper + 1)-robust.
            upper = srs.bounds[1]
            certified = certified and verify_rs_certificate(G, c.s1, c.s2, res.r, upper + 1)
        out.update(
            s=srs.s,
            s_exact=srs.exact,
            s_bounds=srs.bounds,
            s_wall_s=wall,
            s_cpu_s=cpu,
            certified=certified,
        )
    return out


def _solve_plain(G: nx.Graph[int], limit: float) -> tuple[float, bool, int | None]:
    start = time.perf_counter()
    out = milp_r_robustness(graph_view(G), time_limit=limit, plain=True)
    return time.perf_counter() - start, out.optimal, out.value


def _merg(n: int, limit: float) -> dict[str, Any]:
    """γ-MERG on the largest odd ``m ≤ n``: exactly ⌈m/2⌉-robust, within ``limit``?"""
    m = n if n % 2 else n - 1
    start = _clocks()
    res = r_robustness(build("merg", n=m), time_limit=limit)
    wall, cpu = _since(start)
    ok = res.exact and res.r == (m + 1) // 2
    print(
        f"γ-MERG n={m:3d}: r={res.r} {'exact' if res.exact else f'bounds {res.bounds}'}"
        f" {wall:7.2f} s wall {cpu:7.2f} s CPU{'' if ok else '  NOT CERTIFIED'}",
        flush=True,
    )
    return {"n": m, "r": res.r, "certified": ok, "wall_s": round(wall, 3), "cpu_s": round(cpu, 3)}


def _ours_line(n: int, g: int, ours: dict[str, Any]) -> str:
    line = f"n={n:3d} graph {g}: ours r={ours['r']}"
    line += " exact" if ours["r_exact"] else f" bounds {ours['r_bounds']}"
    line += f" {ours['r_wall_s']:7.2f} s ({ours['r_cpu_s']:6.2f} CPU)"
    if "s" in ours:
        exact = " exact" if ours["s_exact"] else f" bounds {ours['s_bounds']}"
        line += f", s={ours['s']}{exact} {ours['s_wall_s']:7.2f} s ({ours['s_cpu_s']:6.2f} CPU)"
    if not ours["certified"]:
        line += "  CERTIFICATE FAILED"
    return line


#: The size the target (every graph exact within 120 s) is stated for.
TARGET_N = 64


def _target_verdict(n: int, met: bool) -> str:
    """The target's verdict at size ``n``: judged at :data:`TARGET_N` only (smaller graphs
    meet it at no merit, larger ones were never promised it)."""
    return judge(met, judged=n == TARGET_N, target_for=f"n = {TARGET_N}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, 3 graphs, 30 s")
    parser.add_argument("--sizes", type=int, nargs="*", help="node counts to run")
    parser.add_argument("--graphs", type=int, help="graphs per size (default 5)")
    parser.add_argument("--time-limit", type=float, help="seconds per solve (default 120)")
    parser.add_argument("--merg-limit", type=float, default=60.0, help="seconds per γ-MERG")
    parser.add_argument("--no-milp", action="store_true", help="skip the plain MILP")
    parser.add_argument("--no-rs", action="store_true", help="skip (r,s)-robustness")
    parser.add_argument("--no-merg", action="store_true", help="skip the γ-MERG solves")
    args = parser.parse_args()
    sizes = args.sizes or ([16, 20, 24] if args.quick else [16, 20, 24, 30, 40, 50])
    count = args.graphs or (3 if args.quick else 5)
    limit = args.time_limit or (30.0 if args.quick else 120.0)

    compiled = compiled_search_available()
    load_start = os.getloadavg()
    print(
        "search: "
        + ("compiled (numba)" if compiled else "pure Python (pip install 'byzllm[fast]')")
        + f"; load average {load_start[0]:.2f}",
        flush=True,
    )
    if compiled:
        # Load (or build, on a fresh install) the compiled search outside the timings.
        r_robustness(nx.gnp_random_graph(30, 0.5, seed=0), method="search")
    results = []
    mergs = []
    for n in sizes:
        ours_t, ours_ok, milp_t, milp_ok = [], 0, [], 0
        ours_cpu, both_ok, per_graph = [], 0, []
        for g in range(count):
            G = nx.gnp_random_graph(n, 0.5, seed=1000 * n + g)
            ours = _solve_ours(G, limit, rs=not args.no_rs)
            t = ours["r_wall_s"]
            ours_t.append(min(t, limit))
            ours_ok += ours["r_exact"]
            total_wall = t + ours.get("s_wall_s", 0.0)
            ours_cpu.append(ours["r_cpu_s"])  # the r solve's, as ours_t and ours_ok
            both_ok += (
                ours["r_exact"]
                and ours.get("s_exact", True)
                and ours["certified"]
                and total_wall < limit
            )
            per_graph.append(
                {key: round(v, 3) if isinstance(v, float) else v for key, v in ours.items()}
            )
            line = _ours_line(n, g, ours)
            if not args.no_milp:
                mt, mexact, mr = _solve_plain(G, limit)
                milp_t.append(min(mt, limit))
                milp_ok += mexact
                line += f" | plain MILP {'r=' + str(mr) if mexact else 'unfinished'} {mt:7.2f} s"
                if ours["r_exact"] and mexact and mr != ours["r"]:
                    line += "  MISMATCH"
            print(line, flush=True)
        ours_med = statistics.median(ours_t)
        row: dict[str, Any] = {
            "n": n,
            "ours_median_s": round(ours_med, 3),
            "ours_exact": ours_ok,
            "ours_r_and_s_exact_within_limit": None if args.no_rs else both_ok,
            "ours_median_cpu_s": round(statistics.median(ours_cpu), 3),
            "milp_median_s": round(statistics.median(milp_t), 3) if milp_t else None,
            "milp_exact": milp_ok if milp_t else None,
            "milp_over_ours": (
                round(statistics.median(milp_t) / max(ours_med, 1e-9), 2) if milp_t else None
            ),
            "target_verdict": _target_verdict(n, ours_ok == count and max(ours_t) < 120),
            "graphs": per_graph,
        }
        summary = f"n={n:3d}: ours median {ours_med:7.2f} s, exact {ours_ok}/{count}"
        if not args.no_rs:
            summary += f", r and s exact and certified within {limit:g} s {both_ok}/{count}"
        if milp_t:
            milp_med = statistics.median(milp_t)
            capped = " (capped at the limit)" if milp_ok < count else ""
            summary += f" | plain MILP median {milp_med:7.2f} s{capped}, exact {milp_ok}/{count}"
            summary += f" | ratio {milp_med / max(ours_med, 1e-9):6.1f}x"
        if n == TARGET_N:
            summary += f" | target: every graph exact within 120 s: {row['target_verdict']}"
        print(summary, flush=True)
        results.append(row)
        if not args.no_merg:
            mergs.append(_merg(n, args.merg_limit))
    report = {
        "benchmark": "robustness",
        "compiled": compiled,
        "load_average": [round(load_start[0], 2), round(os.getloadavg()[0], 2)],
        "results": results,
        "merg": mergs,
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
