"""`byzllm graph`: Build communication graphs and verify their r-/(r,s)-robustness."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import typer

from byzllm.errors import InputError
from byzllm.graphs import MAX_EDGES

from ._common import cli_errors, console
from ._unfinished import json_option_given, note_json_written

__all__ = ["app"]

app = typer.Typer(
    help="Build communication graphs and verify their r-/(r,s)-robustness.", no_args_is_help=True
)


def _parse_params(items: list[str]) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise InputError(f"--param expects key=value, got {item!r}")
        try:
            params[key.replace("-", "_")] = json.loads(value)
        except ValueError:
            params[key.replace("-", "_")] = value
    return params


@app.command("build")
def build_command(
    name: str = typer.Argument(
        ...,
        help="merg, gg-merg, complete, preferential, erdos-renyi, "
        "k-circulant, ring-lattice, star, chain, tree, layered",
    ),
    n: int = typer.Option(..., "-n", "--nodes", help="Number of nodes."),
    out: Path = typer.Option(..., "--out", "-o", help="Output file: .json, or an edge list."),
    seed: int | None = typer.Option(None, "--seed", help="Seed for the random constructions."),
    r: int | None = typer.Option(
        None, "--r", help="Target robustness (preferential, erdos-renyi)."
    ),
    k: int | None = typer.Option(None, "--k", help="k for k-circulant and ring-lattice."),
    param: list[str] = typer.Option([], "--param", "-p", help="Extra key=value parameters."),
    max_edges: int = typer.Option(
        MAX_EDGES,
        "--max-edges",
        help="Refuse, before building, a graph of more edges (about 0.5 KB of memory each).",
    ),
) -> None:
    """Build a named topology and save it.

    Examples:

        byzllm graph build merg -n 7 --out g.json

        byzllm graph build erdos-renyi -n 12 --r 3 --seed 1 --out er.json

        byzllm graph build ring-lattice -n 10 --k 2 --out ring.edges
    """
    from byzllm.graphs import build, save_graph

    with cli_errors():
        params = _parse_params(param)
        for key, flag in (("n", "-n"), ("seed", "--seed"), ("max_edges", "--max-edges")):
            if key in params:
                raise InputError(f"--param {key}=...: give it as {flag}")
        if r is not None:
            params["r"] = r
        if k is not None:
            params["k"] = k
        G = build(name, n=n, seed=seed, max_edges=max_edges, **params)
        path = save_graph(G, out)
    typer.echo(f"wrote {path} ({G.number_of_nodes()} nodes, {G.number_of_edges()} edges)")
    made = G.graph.get("params", {})
    if "p_default" in made:
        typer.echo(
            f"note: no {made['r']}-robust sample at the default p = {made['p_default']:.3f} "
            f"(Zhang et al.'s, asymptotic); this graph is G({n}, {made['p']:.3f})",
            err=True,
        )


def _min_edges_note(n: int, r: int, directed: bool) -> dict[str, Any]:
    """Fewest edges an r-robust graph on n nodes can have, where we know it."""
    from byzllm.graphs import gamma_merg_edge_count

    if directed or r <= 0:
        return {"minimum": None, "basis": "unknown for this case"}
    if r == (n + 1) // 2:
        return {"minimum": gamma_merg_edge_count(n), "basis": "γ-MERG (Lee & Panagou, Thm. 1)"}
    if r == 1:
        return {"minimum": n - 1, "basis": "spanning tree"}
    # r ≥ 2 forces every degree ≥ r (pair {u}, V∖{u}); 3r(r-1)/2 is Lee & Panagou's Cor. 1.
    lower = max((n * r + 1) // 2, 3 * r * (r - 1) // 2)
    return {"minimum": None, "lower_bound": lower, "basis": "degree ≥ r; |E| ≥ 3r(r-1)/2"}


@contextlib.contextmanager
def _working(what: str, *, quiet: bool) -> Iterator[Callable[[str], None]]:
    """A spinner on stderr ("computing <what>…") while a solver runs, on a terminal only.

    Yields a function that changes what the spinner says.
    """
    import sys

    if quiet or not sys.stderr.isatty():
        yield lambda _what: None
        return
    with console(stderr=True).status(f"computing {what}…") as status:
        yield lambda new: status.update(f"computing {new}…")


@app.command("check")
def check_command(
    path: Path = typer.Argument(..., help="Graph file (.json or edge list)."),
    as_json: bool = typer.Option(
        False, "--json", help="Print one JSON object.", callback=json_option_given
    ),
    time_limit: float | None = typer.Option(
        None,
        "--time-limit",
        help="Seconds per solve; past it, report proven bounds (s: 60 s above 26 nodes).",
    ),
    method: str = typer.Option("auto", "--method", help="auto, dp, search or milp."),
    no_s: bool = typer.Option(False, "--no-s", help="Skip (r,s)-robustness."),
) -> None:
    """Exact r- and (r,s)-robustness of a graph, with a certificate you can check by hand.

    The certificate is two disjoint node sets S1, S2 where no node has more than r
    in-neighbours outside its own set: the graph is therefore not (r+1)-robust.

    Examples:

        byzllm graph check g.json

        byzllm graph check big.edges --time-limit 60 --json
    """
    # The bitmask view, not a networkx graph: a small graph is then checked without loading
    # networkx or numpy (the solvers load them where the graph's size needs them).
    from byzllm.graphs import load_graph_view, r_robustness, rs_robustness

    with cli_errors(), _working("r-robustness", quiet=as_json) as status:
        G = load_graph_view(path)
        res = r_robustness(G, method=method, time_limit=time_limit)  # type: ignore[arg-type]
        # Above 26 nodes s may fall to a MILP: bound it by default so that check always ends.
        s_limit = time_limit if time_limit is not None or res.n <= 26 else 60.0
        if not no_s:
            status("(r,s)-robustness")
        rs = None if no_s else rs_robustness(G, r=res.r, time_limit=s_limit)
    report: dict[str, Any] = {
        "graph": str(path),
        "n": res.n,
        "edges": G.edge_count,
        "directed": res.directed,
        "r": res.r,
        "exact": res.exact,
        "bounds": list(res.bounds),
        "method": res.method,
        "seconds": round(res.seconds, 4),
        "certificate": {
            "S1": res.certificate.s1,
            "S2": res.certificate.s2,
            "proves_not_robust_at": res.bounds[1] + 1,
        },
        "tolerable_F": res.r - 1,
        "min_edges_for_r": _min_edges_note(res.n, res.r, res.directed),
    }
    if rs is not None:
        report["s"] = rs.s
        report["s_exact"] = rs.exact
        report["s_bounds"] = list(rs.bounds)
        report["s_method"] = rs.method
        if rs.certificate is not None:
            # Which level it proves, as for r: a timed-out search's pair witnesses its upper
            # bound, not s + 1.
            report["s_certificate"] = {
                "S1": rs.certificate.s1,
                "S2": rs.certificate.s2,
                "proves_not_rs_robust_at": [report["r"], rs.certificate.value + 1],
            }
    if as_json:
        typer.echo(json.dumps(report))
        note_json_written()
        return
    _print_report(report)


def _print_report(report: dict[str, Any]) -> None:
    from rich.table import Table

    table = Table(title=f"robustness of {report['graph']}", show_header=False)
    exact = "exact" if report["exact"] else f"bounds {report['bounds'][0]}..{report['bounds'][1]}"
    table.add_row(
        "nodes / edges",
        f"{report['n']} / {report['edges']}" + (" (directed)" if report["directed"] else ""),
    )
    table.add_row("r", f"{report['r']} ({exact}, {report['method']}, {report['seconds']:.3f} s)")
    if "s" in report:
        s_note = "exact" if report["s_exact"] else f"bounds {report['s_bounds']}"
        table.add_row("s (largest with (r,s)-robust)", f"{report['s']} ({s_note})")
    table.add_row("tolerable F (r - 1)", str(report["tolerable_F"]))
    cert = report["certificate"]
    table.add_row(
        f"certificate: not {cert['proves_not_robust_at']}-robust",
        f"S1={cert['S1']}  S2={cert['S2']}",
    )
    note = report["min_edges_for_r"]
    if note.get("minimum") is not None:
        table.add_row(
            "edges vs minimum for r", f"{report['edges']} vs {note['minimum']} ({note['basis']})"
        )
    elif note.get("lower_bound") is not None:
        table.add_row(
            "edges vs minimum for r",
            f"{report['edges']} vs ≥ {note['lower_bound']} ({note['basis']})",
        )
    out = console()
    out.print(table)
    if report["method"] == "search" and report["n"] <= 64:
        out.print(
            "[dim]tip: pip install 'byzllm\\[fast]' for the compiled search "
            "(about 50 times faster on graphs of up to 64 nodes)[/dim]"
        )


@app.command("draw")
def draw_command(
    path: Path = typer.Argument(..., help="Graph file (.json or edge list)."),
    out: Path = typer.Option(..., "--out", "-o", help="PNG file to write."),
    byzantine: str = typer.Option("", "--byzantine", help="Comma-separated Byzantine nodes."),
    title: str | None = typer.Option(None, "--title", help="Figure title."),
) -> None:
    """Draw a graph to PNG, Byzantine nodes in red.

    Example:

        byzllm graph draw g.json --byzantine 3,5 --out g.png
    """
    from byzllm.graphs import draw_graph, load_graph

    with cli_errors():
        G = load_graph(path)
        bad: list[int] = []
        for part in filter(None, (p.strip() for p in byzantine.split(","))):
            # Not str.isdigit: it passes "²", which int refuses; nor an unbounded run of
            # digits (int refuses over 4,300). No graph has 10-digit node numbers.
            if not re.fullmatch(r"[0-9]{1,9}", part):
                raise InputError(f"--byzantine expects node numbers, got {part!r:.40}")
            bad.append(int(part))
        draw_graph(G, out, byzantine=bad, title=title)
    typer.echo(f"wrote {out}")
