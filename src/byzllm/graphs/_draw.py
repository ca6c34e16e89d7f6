"""Draw a communication graph to PNG (matplotlib, Agg backend), Byzantine nodes highlighted."""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from pathlib import Path
from typing import Any

import networkx as nx

from byzllm.errors import InputError

from ._core import GraphView, graph_view, mask_of, nodes_of

__all__ = ["draw_graph", "locality"]


def locality(G: nx.Graph[Any], byzantine: Iterable[Hashable]) -> int:
    """Smallest F for which ``byzantine`` is F-local (the SAC paper, Def. 3.2)."""
    return _locality(graph_view(G, min_nodes=1), byzantine)


def _locality(view: GraphView, byzantine: Iterable[Hashable]) -> int:
    bad = mask_of(view, byzantine, what="byzantine nodes")
    return max(
        ((m & bad).bit_count() for i, m in enumerate(view.in_masks) if not bad >> i & 1),
        default=0,
    )


def draw_graph(
    G: nx.Graph[Any],
    path: str | Path,
    *,
    byzantine: Iterable[Hashable] = (),
    title: str | None = None,
) -> Path:
    """Write a circular-layout drawing of ``G`` to ``path`` (PNG); returns the path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # The drawing needs the networkx graph itself: a bitmask view is refused here.
    view = graph_view(G, min_nodes=1, allow_view=False)
    # Each node once, in node order: the title named a node given twice twice ("[3, 3]", as
    # if two agents were Byzantine) and sorted numbers as text ("[10, 2, 3]").
    bad = nodes_of(view, mask_of(view, byzantine, what="byzantine nodes"))
    f_local = _locality(view, bad)
    target = Path(path)
    if target.suffix.lower() != ".png":
        raise InputError(f"draw writes PNG files; got {target.name!r}")
    pos = nx.circular_layout(G)
    marked = set(bad)
    colors = ["#d62728" if v in marked else "#1f77b4" for v in G.nodes]
    fig, ax = plt.subplots(figsize=(5, 5))
    try:
        nx.draw_networkx(
            G,
            pos=pos,
            ax=ax,
            node_color=colors,
            font_color="white",
            node_size=420,
            arrows=G.is_directed(),
            edge_color="#999999",
        )
        label = title or str(G.graph.get("construction", "graph"))
        if bad:
            label += f"  (Byzantine {bad}: {f_local}-local)"
        ax.set_title(label, fontsize=9)
        ax.set_axis_off()
        fig.savefig(target, dpi=120, bbox_inches="tight")
    except OSError as err:
        raise InputError(f"cannot write {target}: {err.strerror or err}") from None
    finally:
        plt.close(fig)
    return target
