"""The subset dynamic programme of :mod:`._subset_dp` as vectorised numpy tables.

Tables are int8/uint8 (2^n bytes each); ``f`` is built block-wise as the sum of a table over the
low half of the bits and one over the high half, so each node costs one broadcast add. Same
answers, pair for pair, as the pure-Python tables of :mod:`._subset_dp` (the first minimising
subset in index order wins in both).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ._core import GraphView
from ._subset_dp import INF as _INF
from ._subset_dp import descend

__all__ = ["table_r_robustness", "table_rs_robustness"]

_ABSENT = 100  # subtracted from nodes outside S so that they never win the max


def _split(n: int) -> tuple[int, int]:
    low = n // 2
    return low, n - low


def _popcounts(width: int, mask: int) -> npt.NDArray[np.int16]:
    idx = np.arange(1 << width, dtype=np.uint32)
    counts: npt.NDArray[np.int16] = np.bitwise_count(idx & np.uint32(mask)).astype(np.int16)
    return counts


def _node_tables(
    view: GraphView,
) -> list[tuple[npt.NDArray[np.int8], npt.NDArray[np.int8]]]:
    """Per node i: (high, low) so that high[b] + low[a] = |N_i \\ S| if i ∈ S, else < 0.

    ``S`` has index ``b·2^L + a`` (``a``: the L low bits, ``b``: the high bits).
    """
    n = view.n
    low_bits, high_bits = _split(n)
    low_mask = (1 << low_bits) - 1
    tables = []
    for i in range(n):
        nbr = view.in_masks[i]
        deg = nbr.bit_count()
        low = -_popcounts(low_bits, nbr & low_mask)
        high = deg - _popcounts(high_bits, nbr >> low_bits)
        if i < low_bits:
            member = (np.arange(1 << low_bits) >> i) & 1
            low = low - _ABSENT * (1 - member)
        else:
            member = (np.arange(1 << high_bits) >> (i - low_bits)) & 1
            high = high - _ABSENT * (1 - member)
        tables.append((high.astype(np.int8), low.astype(np.int8)))
    return tables


def _f_table(view: GraphView) -> npt.NDArray[np.int8]:
    """``f(S)`` for every subset, with ``f(∅) = +∞`` (``_INF``)."""
    n = view.n
    low_bits, high_bits = _split(n)
    f = np.full((1 << high_bits, 1 << low_bits), -_INF, dtype=np.int8)
    tmp = np.empty_like(f)
    for high, low in _node_tables(view):
        np.add(high[:, None], low[None, :], out=tmp)
        np.maximum(f, tmp, out=f)
    flat = f.reshape(-1)
    flat[0] = _INF
    return flat


def _subset_min(values: npt.NDArray[np.int8] | npt.NDArray[np.uint8], n: int) -> None:
    """In place: ``values[T] <- min over S ⊆ T of values[S]`` (include ``∅``: keep it at +∞)."""
    for j in range(n):
        view = values.reshape(-1, 2, 1 << j)
        np.minimum(view[:, 1, :], view[:, 0, :], out=view[:, 1, :])


def table_r_robustness(view: GraphView) -> tuple[int, int, int]:
    """:func:`._subset_dp.dp_r_robustness` on numpy tables."""
    n = view.n
    f = _f_table(view)
    g = f.copy()
    _subset_min(g, n)
    # g[::-1][S] is g[V \ S]: complement of index S is (2^n - 1) - S.
    both = np.maximum(f, g[::-1])
    s1 = int(np.argmin(both))
    r = int(both[s1])
    s2 = descend(f, g, view.full ^ s1)
    return r, s1, s2


def _reachable_counts(view: GraphView, r: int) -> npt.NDArray[np.uint8]:
    """``x(S) = |X_S^r|`` for every subset."""
    n = view.n
    low_bits, high_bits = _split(n)
    x = np.zeros((1 << high_bits, 1 << low_bits), dtype=np.uint8)
    tmp = np.empty(x.shape, dtype=np.int8)
    hit = np.empty(x.shape, dtype=bool)
    for high, low in _node_tables(view):
        np.add(high[:, None], low[None, :], out=tmp)
        np.greater_equal(tmp, r, out=hit)
        x += hit
    return x.reshape(-1)


def table_rs_robustness(view: GraphView, r: int) -> tuple[int, int, int] | None:
    """:func:`._subset_dp.dp_rs_robustness` on numpy tables."""
    n = view.n
    x = _reachable_counts(view, r)
    sizes = np.bitwise_count(np.arange(1 << n, dtype=np.uint32)).astype(np.uint8)
    # uint8 with +∞ = 127: a sum of two table entries stays below 255.
    h = np.where(x < sizes, x, np.uint8(_INF)).astype(np.uint8)
    h[0] = _INF
    best = h.copy()
    _subset_min(best, n)
    total = h.astype(np.uint8) + best[::-1]
    s1 = int(np.argmin(total))
    value = int(total[s1])
    if value >= _INF:
        return None
    s2 = descend(h, best, view.full ^ s1)
    return value, s1, s2
