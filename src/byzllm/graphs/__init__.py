"""Communication graphs: robust topologies and exact r-/(r,s)-robustness with certificates.
May import: the bottom layer only (byzllm.errors, _process, _figures, _lazy, _files).

SAC's guarantees hold on (F+1)-robust graphs (the SAC paper, §3.3, §4.2). This package builds such
graphs and decides, with a checkable certificate, how robust a given graph is::

    from byzllm.graphs import build, r_robustness, rs_robustness, is_r_robust, check_f_local
    G = build("merg", n=7)            # γ-MERG: ⌈n/2⌉-robust with the fewest edges
    res = r_robustness(G)             # res.r, res.exact, res.bounds, res.certificate, ...
    rs_robustness(G, r=res.r).s       # largest s with G (r, s)-robust

Plain functions over ``networkx`` graphs; directed graphs use in-neighbours. The solvers also
take a :class:`GraphView`, the bitmask form they work on: :func:`load_graph_view` reads one from
a file without loading networkx or numpy, so that checking a small graph starts fast. Names load
on first use (``byzllm._lazy``).
"""

from typing import TYPE_CHECKING

from byzllm._lazy import lazy_attributes

if TYPE_CHECKING:
    from ._constructions import CONSTRUCTIONS, build, erdos_renyi_probability
    from ._core import GraphView
    from ._draw import draw_graph
    from ._edge_counts import MAX_EDGES, MAX_NODES, gamma_merg_edge_count
    from ._io import (
        graph_from_json,
        graph_to_json,
        load_graph,
        load_graph_view,
        parse_edge_list,
        save_graph,
        write_edge_list,
    )
    from ._robustness import (
        Certificate,
        RobustnessResult,
        RSRobustnessResult,
        check_f_local,
        is_r_robust,
        r_robustness,
        robustness_bounds,
        rs_robustness,
        spectral_lower_bound,
        tolerable_f,
        verify_certificate,
        verify_rs_certificate,
    )

__getattr__ = lazy_attributes(
    __name__,
    {
        "CONSTRUCTIONS": "._constructions",
        "build": "._constructions",
        "erdos_renyi_probability": "._constructions",
        "GraphView": "._core",
        "draw_graph": "._draw",
        "MAX_EDGES": "._edge_counts",
        "MAX_NODES": "._edge_counts",
        "gamma_merg_edge_count": "._edge_counts",
        "graph_from_json": "._io",
        "graph_to_json": "._io",
        "load_graph": "._io",
        "load_graph_view": "._io",
        "parse_edge_list": "._io",
        "save_graph": "._io",
        "write_edge_list": "._io",
        "Certificate": "._robustness",
        "RobustnessResult": "._robustness",
        "RSRobustnessResult": "._robustness",
        "check_f_local": "._robustness",
        "is_r_robust": "._robustness",
        "r_robustness": "._robustness",
        "robustness_bounds": "._robustness",
        "rs_robustness": "._robustness",
        "spectral_lower_bound": "._robustness",
        "tolerable_f": "._robustness",
        "verify_certificate": "._robustness",
        "verify_rs_certificate": "._robustness",
    },
)

__all__ = [
    "CONSTRUCTIONS",
    "MAX_EDGES",
    "MAX_NODES",
    "Certificate",
    "GraphView",
    "RSRobustnessResult",
    "RobustnessResult",
    "build",
    "check_f_local",
    "draw_graph",
    "erdos_renyi_probability",
    "gamma_merg_edge_count",
    "graph_from_json",
    "graph_to_json",
    "is_r_robust",
    "load_graph",
    "load_graph_view",
    "parse_edge_list",
    "r_robustness",
    "robustness_bounds",
    "rs_robustness",
    "save_graph",
    "spectral_lower_bound",
    "tolerable_f",
    "verify_certificate",
    "verify_rs_certificate",
    "write_edge_list",
]
