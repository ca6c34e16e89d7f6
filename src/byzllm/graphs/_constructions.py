"""Graph constructions: robust topologies and the baselines other systems use.

Every builder returns an undirected ``networkx.Graph`` on nodes ``0..n-1`` with
``G.graph["construction"]`` naming it and ``G.graph["params"]`` holding its parameters.
"""

from __future__ import annotations

import inspect
import math
import random
from collections.abc import Callable
from itertools import combinations, pairwise
from typing import Any

import networkx as nx

from byzllm.errors import InputError

from ._edge_counts import MAX_EDGES, gamma_merg_edge_count
from ._edge_counts import check_node_count as _check_n

__all__ = [
    "CONSTRUCTIONS",
    "build",
    "chain",
    "complete",
    "erdos_renyi",
    "erdos_renyi_probability",
    "gamma_gamma_merg",
    "gamma_merg",
    "k_circulant",
    "layered",
    "preferential_attachment",
    "ring_lattice",
    "star",
    "tree",
]


def _graph(n: int, edges: Any, name: str, **params: Any) -> nx.Graph[int]:
    G: nx.Graph[int] = nx.Graph(construction=name, params={"n": n, **params})
    G.add_nodes_from(range(n))
    G.add_edges_from(edges)
    return G


def gamma_merg(n: int) -> nx.Graph[int]:
    """γ-Minimal Edge Robust Graph (Lee & Panagou, Theorem 1; the SAC paper, App. A), γ = ⌈n/2⌉.

    Odd n: a clique X on γ+1 nodes; each of the other γ-2 nodes joins γ nodes of X (we leave out
    a different X node each time, to spread degrees). Even n: γ nodes X adjacent to every other
    node, then ⌈(γ-2)/2⌉ disjoint pairs inside X lose their edge.
    """
    _check_n(n)
    gamma = (n + 1) // 2
    edges: list[tuple[int, int]] = []
    if n % 2:
        core = list(range(gamma + 1))
        edges += list(combinations(core, 2))
        for j, v in enumerate(range(gamma + 1, n)):
            skipped = core[j % len(core)]
            edges += [(v, x) for x in core if x != skipped]
    else:
        core = list(range(gamma))
        removed = {(2 * p, 2 * p + 1) for p in range(math.ceil((gamma - 2) / 2))}
        edges += [e for e in combinations(core, 2) if e not in removed]
        edges += [(x, v) for x in core for v in range(gamma, n)]
    return _graph(n, edges, "merg")


def gamma_gamma_merg(n: int) -> nx.Graph[int]:
    """(γ,γ)-robust graph with minimal edges, γ = ⌈n/2⌉ (after Lee & Panagou, Theorem 2).

    Odd n: the complete graph (no edge of K_n can go). Even n: K_n minus ⌊γ/2⌋ disjoint edges
    (0-1, 2-3, …). The tests check (γ,γ)-robustness exactly up to n = 14, that removing any
    edge breaks it up to n = 10, and, exhaustively up to n = 8, that no graph with fewer edges
    is (γ,γ)-robust. Our own construction: it has not been compared with the theorem's text.
    """
    _check_n(n)
    gamma = (n + 1) // 2
    removed = set() if n % 2 else {(2 * p, 2 * p + 1) for p in range(gamma // 2)}
    edges = [e for e in combinations(range(n), 2) if e not in removed]
    return _graph(n, edges, "gg-merg")


def complete(n: int) -> nx.Graph[int]:
    """K_n: ⌈n/2⌉-robust (LeBlanc et al. 2013, Lemma 4)."""
    _check_n(n)
    return _graph(n, combinations(range(n), 2), "complete")


def preferential_attachment(n: int, r: int | None = None, seed: int | None = 0) -> nx.Graph[int]:
    """r-robust preferential-attachment graph (the SAC paper, App. A; LeBlanc et al. 2013, Thm. 5).

    A clique on 2r-1 nodes (r-robust by Lemma 4), then each remaining node joins r nodes of the
    clique, chosen uniformly at random with ``seed``. ``r`` defaults to ``max(1, ⌈n/2⌉ - 1)``.
    """
    _check_n(n)
    r = _default_r(n, r)
    if 2 * r - 1 > n:
        raise InputError(f"preferential attachment needs n ≥ 2r - 1 = {2 * r - 1}, got n = {n}")
    rng = random.Random(seed)
    clique = list(range(2 * r - 1))
    edges = list(combinations(clique, 2))
    for v in range(2 * r - 1, n):
        edges += [(v, x) for x in rng.sample(clique, r)]
    return _graph(n, edges, "preferential", r=r, seed=seed)


def _default_r(n: int, r: int | None) -> int:
    if r is None:
        return max(1, (n + 1) // 2 - 1)
    if isinstance(r, bool) or not isinstance(r, int) or r < 1:
        raise InputError(f"r must be a positive integer, got {r!r}")
    if r > (n + 1) // 2:
        raise InputError(f"no graph on {n} nodes is {r}-robust (the maximum is ⌈n/2⌉)")
    return r


def erdos_renyi_probability(n: int, r: int) -> float:
    """``p = (ln n + (r-1) ln ln n)/n`` (Zhang, Fata & Sundaram 2015, Thm. 3), clipped to (0, 1]."""
    if n < 3:
        return 1.0
    p = (math.log(n) + (r - 1) * math.log(math.log(n))) / n
    return min(1.0, max(p, 1.0 / n))


def erdos_renyi(
    n: int,
    r: int | None = None,
    seed: int | None = 0,
    p: float | None = None,
    max_tries: int = 1000,
) -> nx.Graph[int]:
    """Erdős–Rényi G(n, p) resampled until it is verified r-robust (the SAC paper, App. A).

    ``p`` defaults to :func:`erdos_renyi_probability`; ``r`` to ``max(1, ⌈n/2⌉ - 1)``. Each
    sample is checked exactly; after ``max_tries`` failures an :class:`InputError` says so.

    That ``p`` makes G r-robust with high probability as n grows (Zhang, Fata & Sundaram 2015,
    Thm. 3); at a dozen nodes and the default r it almost never does. So a *default* ``p``
    that fails ``max_tries`` times is raised halfway to 1, up to :data:`_P_RAISES` times, with
    ``max(1, max_tries // 10)`` samples at each step (at p = 1 the complete graph, which is
    ⌈n/2⌉-robust, always passes); the graph's ``params`` then hold the ``p`` used and
    ``p_default``, the one raised. A ``p`` given is never changed.
    """
    from ._robustness import is_r_robust

    _check_n(n)
    r = _default_r(n, r)
    raise_p = p is None
    if p is None:
        p = erdos_renyi_probability(n, r)
    if not 0.0 < p <= 1.0:
        raise InputError(f"p must be in (0, 1], got {p!r}")
    if max_tries < 1:
        raise InputError("max_tries must be at least 1")
    rng = random.Random(seed)
    p_default = p
    steps = [(p, max_tries)]
    if raise_p:
        for step in range(1, _P_RAISES + 1):
            raised = 1.0 if step == _P_RAISES else 1.0 - (1.0 - p) / 2**step
            steps.append((raised, max(1, max_tries // 10)))
    attempt = 0
    for p_used, tries in steps:
        extra = {} if p_used == p_default else {"p_default": p_default}
        for _ in range(tries):
            edges = [e for e in combinations(range(n), 2) if rng.random() < p_used]
            G = _graph(n, edges, "erdos-renyi", r=r, p=p_used, seed=seed, attempt=attempt, **extra)
            attempt += 1
            if is_r_robust(G, r):
                return G
    raise InputError(
        f"no {r}-robust G({n}, {p:.3f}) in {max_tries} samples; raise p or max_tries, or lower r"
    )


#: How often :func:`erdos_renyi` raises a default ``p`` that fails (the last step is p = 1).
_P_RAISES = 6


def k_circulant(n: int, k: int = 2) -> nx.Graph[int]:
    """k-regular circulant (Harary graph H_{k,n}): node i joins i ± 1..⌊k/2⌋, and for odd k
    (n even) also the diametric node i + n/2."""
    _check_n(n)
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= n - 1:
        raise InputError(f"k must be an integer in 1..n-1, got {k!r}")
    if k % 2 and n % 2:
        raise InputError("an odd-degree circulant needs an even number of nodes")
    edges = {tuple(sorted((i, (i + d) % n))) for i in range(n) for d in range(1, k // 2 + 1)}
    if k % 2:
        edges |= {tuple(sorted((i, (i + n // 2) % n))) for i in range(n)}
    return _graph(n, sorted(edges), "k-circulant", k=k)


def ring_lattice(n: int, k: int = 2) -> nx.Graph[int]:
    """Ring lattice C_n(1..k): each node joined to its k nearest nodes on either side."""
    _check_n(n)
    if isinstance(k, bool) or not isinstance(k, int) or not k >= 1 or 2 * k > n - 1:
        raise InputError(f"k must be an integer with 1 ≤ k and 2k ≤ n - 1, got {k!r}")
    edges = {tuple(sorted((i, (i + d) % n))) for i in range(n) for d in range(1, k + 1)}
    return _graph(n, sorted(edges), "ring-lattice", k=k)


def star(n: int) -> nx.Graph[int]:
    """Star: node 0 joined to all others (a baseline; 1-robust)."""
    _check_n(n)
    return _graph(n, [(0, v) for v in range(1, n)], "star")


def chain(n: int) -> nx.Graph[int]:
    """Chain (path) 0-1-…-(n-1) (a baseline; 1-robust)."""
    _check_n(n)
    return _graph(n, [(v, v + 1) for v in range(n - 1)], "chain")


def tree(n: int, branching: int = 2) -> nx.Graph[int]:
    """Complete ``branching``-ary tree in breadth-first order: parent of i is (i-1)//branching."""
    _check_n(n)
    if isinstance(branching, bool) or not isinstance(branching, int) or branching < 1:
        raise InputError(f"branching must be a positive integer, got {branching!r}")
    return _graph(n, [((v - 1) // branching, v) for v in range(1, n)], "tree", branching=branching)


def layered(n: int, layers: int = 3) -> nx.Graph[int]:
    """Layered graph: nodes split into ``layers`` consecutive groups of near-equal size, each
    group fully connected to the next one (a feed-forward baseline, undirected here)."""
    _check_n(n)
    if isinstance(layers, bool) or not isinstance(layers, int) or not 2 <= layers <= n:
        raise InputError(f"layers must be an integer in 2..n, got {layers!r}")
    edges = [(a, b) for g, h in pairwise(_layer_groups(n, layers)) for a in g for b in h]
    return _graph(n, edges, "layered", layers=layers)


def _layer_groups(n: int, layers: int) -> list[range]:
    """The ``layers`` consecutive groups of near-equal size that :func:`layered` links."""
    bounds = [round(i * n / layers) for i in range(layers + 1)]
    return [range(bounds[i], bounds[i + 1]) for i in range(layers)]


CONSTRUCTIONS: dict[str, Callable[..., nx.Graph[int]]] = {
    "merg": gamma_merg,
    "gg-merg": gamma_gamma_merg,
    "complete": complete,
    "preferential": preferential_attachment,
    "erdos-renyi": erdos_renyi,
    "k-circulant": k_circulant,
    "ring-lattice": ring_lattice,
    "star": star,
    "chain": chain,
    "tree": tree,
    "layered": layered,
}

_RANDOM = {"preferential", "erdos-renyi"}


def build(
    name: str,
    n: int,
    *,
    seed: int | None = None,
    max_edges: int = MAX_EDGES,
    **params: Any,
) -> nx.Graph[int]:
    """Build a named topology on nodes ``0..n-1``.

    Names: ``merg`` (γ-MERG), ``gg-merg`` ((γ,γ)-robust), ``complete``, ``preferential``
    (``r=``), ``erdos-renyi`` (``r=``, ``p=``, ``max_tries=``), ``k-circulant`` (``k=``),
    ``ring-lattice`` (``k=``), ``star``, ``chain``, ``tree`` (``branching=``), ``layered``
    (``layers=``). ``seed`` is used by the random ones (default 0) and ignored otherwise.

    A topology of more than ``max_edges`` edges (default :data:`MAX_EDGES`, a million) is an
    :class:`InputError` before anything is built: its count comes from the construction's
    own formula (:func:`_edge_count`), so ``complete`` on 100,000 nodes is refused at once
    instead of running until memory runs out. Raise ``max_edges`` to build more (about
    0.5 KB of memory an edge).

    >>> build("merg", n=7).number_of_edges()
    18
    """
    if not isinstance(name, str):  # name.strip() raised an AttributeError
        raise InputError(f"unknown graph {name!r:.40}; choose from {', '.join(CONSTRUCTIONS)}")
    key = name.strip().lower().replace("_", "-")
    aliases = {
        "gamma-merg": "merg",
        "gamma-gamma-merg": "gg-merg",
        "er": "erdos-renyi",
        "path": "chain",
        "circulant": "k-circulant",
        "pa": "preferential",
    }
    key = aliases.get(key, key)
    if key not in CONSTRUCTIONS:
        raise InputError(f"unknown graph {name!r}; choose from {', '.join(CONSTRUCTIONS)}")
    if key in _RANDOM:
        params["seed"] = 0 if seed is None else seed
    _check_params(key, params)
    _check_edge_count(key, _check_n(n), params, max_edges)
    try:
        return CONSTRUCTIONS[key](n, **params)
    except TypeError as err:
        raise InputError(f"bad parameters for {key!r}: {err}") from None


def _check_params(key: str, params: dict[str, Any]) -> None:
    """Each parameter is one the construction takes, of its type (a number where it wants a
    number: ``p=nan`` or ``p=abc`` from the command line otherwise reached a comparison)."""
    signature = inspect.signature(CONSTRUCTIONS[key]).parameters
    takes = [name for name in signature if name != "n"]
    for name, value in params.items():
        if name not in takes:
            accepted = ", ".join(takes) or "none"
            raise InputError(f"{key!r} takes no parameter {name!r} (it takes: {accepted})")
        # The annotations are text here (postponed): "int", "float | None", ...
        allowed = {part.strip() for part in str(signature[name].annotation).split("|")}
        if value is None and "None" in allowed:
            continue
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if "float" in allowed and number and math.isfinite(value):
            continue
        if "int" in allowed and isinstance(value, int) and not isinstance(value, bool):
            continue
        kind = "a number" if "float" in allowed else "an integer"
        raise InputError(f"{key!r}: {name} must be {kind}, got {value!r}")


def _check_edge_count(key: str, n: int, params: dict[str, Any], max_edges: int) -> None:
    if isinstance(max_edges, bool) or not isinstance(max_edges, int) or max_edges < 0:
        raise InputError(f"max_edges must be a non-negative integer, got {max_edges!r:.40}")
    count = _edge_count(key, n, params)
    if count > max_edges:
        raise InputError(
            f"{key!r} on {n:,} nodes would have up to {count:,} edges, over the limit of "
            f"{max_edges:,} (about 0.5 KB of memory an edge); raise max_edges "
            "(graph build --max-edges) to build it"
        )


def _edge_count(key: str, n: int, params: dict[str, Any]) -> int:
    """The most edges ``build(key, n, **params)`` makes, from the construction's formula,
    without building it: exact for a valid ``merg``, ``gg-merg``, ``complete``,
    ``preferential``, ``k-circulant``, ``ring-lattice``, ``layered`` and the trees; ``n(n-1)/2``
    for ``erdos-renyi``, whose default ``p`` may be raised up to 1 (and whose every sample draws
    all ``n(n-1)/2`` pairs). Parameters the construction would refuse give at most ``n(n-1)/2``
    (it refuses them once the count passes)."""
    pairs = n * (n - 1) // 2
    if key == "merg":
        count = gamma_merg_edge_count(n)  # Lee & Panagou, Theorem 1
    elif key == "gg-merg":  # K_n, less ⌊γ/2⌋ disjoint edges for even n
        count = pairs - (0 if n % 2 else (n + 1) // 2 // 2)
    elif key == "preferential":  # K_{2r-1}, then r edges for each other node
        r = _default_r(n, params.get("r"))
        count = (2 * r - 1) * (r - 1) + max(0, n - 2 * r + 1) * r
    elif key in ("k-circulant", "ring-lattice"):
        k = params.get("k", _default(key, "k"))
        count = n * k // 2 if key == "k-circulant" else n * k
    elif key == "layered":
        layers = params.get("layers", _default(key, "layers"))
        count = 0  # fewer than 2 or more than n layers: layered() refuses them
        if 2 <= layers <= n:
            groups = _layer_groups(n, layers)
            count = sum(len(g) * len(h) for g, h in pairwise(groups))
    elif key in ("star", "chain", "tree"):
        count = n - 1
    else:  # complete, erdos-renyi: every pair
        count = pairs
    return min(count, pairs)


def _default(key: str, name: str) -> Any:
    """The default of the construction's parameter ``name`` (one place says it: the signature)."""
    return inspect.signature(CONSTRUCTIONS[key]).parameters[name].default
