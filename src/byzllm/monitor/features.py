"""Uncertainty features of one agent turn (the rogue-agents paper, §2 "Monitoring agent
uncertainty", App. A).

At every *decision position* of a turn (for WhoDunitEnv: where the agent generated a character
id or the action number, §4.1) we have the model's top-k alternatives as ``(token, logprob)``
pairs. For each position's probability vector ``p`` we compute

* entropy      ``H(p) = -Σ p log p``
* varentropy   ``V(p) = Σ p (log p + H)²``  — the variance of the surprisal ``-log p``.
  Appendix A prints this with a leading minus sign (``-Σ p (log p + H)²``), which would make it
  non-positive; that sign is a typo (a variance cannot be negative, and the kurtosis formula
  divides by ``V²``, which the sign would not change). We implement the non-negative quantity.
* kurtosis     ``K(p) = Σ p (-log p - H)⁴ / V²`` — the standardized fourth moment of the
  surprisal. When ``V = 0`` (every alternative equally surprising: a point mass or a uniform
  top-k) the ratio is ``0/0``; we define ``K = 0`` there (no tail at all), see
  :data:`VARENTROPY_EPS`.

The turn's features are the **maximum** of each quantity over its decision positions, plus the
total turn count (§2: "take their maximum values over all selected positions, in addition to
the current turn count").

**Truncated top-k.** APIs return only the k most likely tokens (the paper used k = 10 for
proprietary models, footnote 2), so ``Σ p < 1``. Two readings are offered:

* ``renormalize=True`` (default): divide by ``Σ p`` so the top-k is a proper distribution.
  Then H, V and K keep their meaning (``V ≥ 0`` is the variance of a real random variable,
  ``K ≥ 1`` whenever ``V > 0``), and the features do not depend on how much mass the server
  happened to leave out, which differs across providers and k. This is the approximation of
  footnote 2 ("we approximate p with the top k tokens").
* ``renormalize=False``: use the raw truncated probabilities; the sums then run over the
  top-k only, which under-counts uncertainty spread over the tail and mixes a "missing
  mass" signal into the features. Useful to compare with implementations that do so.

**No decision position.** A turn without any (e.g. the agent's reply could not be parsed, or
an environment with nothing to monitor in that turn) gets ``H = V = K = 0``: all three are
non-negative, and the maximum over an empty set is taken at that lower bound, i.e. "no
observed uncertainty". ``n_positions = 0`` records that this happened, and the turn count is
still a feature, so a monitor still scores the turn. Positions whose top-k list is empty count
as absent.

Malformed log-probabilities (NaN, ``+inf``, a positive log-probability; with
``renormalize=False`` also raw top-k mass above 1) raise :class:`~byzllm.errors.InputError`;
``-inf`` (probability 0) is accepted. Renormalized, a top-k mass above 1 is divided out like
any other: what the features read is the shape of the top-k distribution.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict

from byzllm.envs import TopLogprobs, TurnObservation
from byzllm.errors import InputError

__all__ = [
    "FEATURE_COLUMNS",
    "UNCERTAINTY_FEATURES",
    "VARENTROPY_EPS",
    "TurnFeatures",
    "check_alternatives",
    "distribution_stats",
    "features_matrix",
    "observation_features",
    "position_entropies",
    "turn_features",
]

#: The three uncertainty features a monitor may choose from (the rogue-agents paper, App. A).
UNCERTAINTY_FEATURES: tuple[str, str, str] = ("entropy", "varentropy", "kurtosis")
#: Column order of every feature matrix in :mod:`byzllm.monitor` (turn count last).
FEATURE_COLUMNS: tuple[str, str, str, str] = (*UNCERTAINTY_FEATURES, "turn")
#: Varentropy at or below this is treated as zero, where kurtosis is defined as 0.
VARENTROPY_EPS = 1e-12
#: Slack for rounding in servers' log-probabilities (a logprob of 1e-9 is a rounded 0).
_LOGPROB_TOL = 1e-6

FloatArray = npt.NDArray[np.float64]


class TurnFeatures(BaseModel):
    """The monitor's input for one turn: max H, V, K over decision positions, and the turn."""

    model_config = ConfigDict(frozen=True)

    entropy: float = 0.0
    varentropy: float = 0.0
    kurtosis: float = 0.0
    turn: int = 1
    n_positions: int = 0

    def as_array(self) -> FloatArray:
        """The features in :data:`FEATURE_COLUMNS` order, shape ``(4,)``."""
        return np.array([self.entropy, self.varentropy, self.kurtosis, float(self.turn)])


def check_alternatives(top_logprobs: int, *, renormalize: bool) -> None:
    """Refuse one alternative per decision position where the top-k is renormalized: a lone
    token renormalized is a point mass (H = V = K = 0 whatever its probability), so a
    monitor would read the turn count alone. Raises :class:`~byzllm.errors.InputError`."""
    if renormalize and top_logprobs < 2:
        raise InputError(
            f"top_logprobs: {top_logprobs} alternative per decision position gives every "
            "turn entropy 0 once renormalized; use at least 2 (the paper's k is 10), or "
            "renormalize: false"
        )


def _padded_logprobs(distributions: Sequence[TopLogprobs]) -> FloatArray:
    """Stack the non-empty positions into a ``(positions, k_max)`` array padded with ``-inf``
    (p = 0). An error names the position by its index among all of ``distributions``."""
    # (index among all positions, top-k list): empty positions count as absent.
    rows = [(i, d) for i, d in enumerate(distributions) if len(d) > 0]
    if not rows:
        return np.empty((0, 0))
    width = max(len(r) for _, r in rows)
    out = np.full((len(rows), width), -np.inf)
    for k, (i, row) in enumerate(rows):
        try:
            out[k, : len(row)] = [float(lp) for _, lp in row]
        except (TypeError, ValueError) as err:
            raise InputError(
                f"decision position {i}: top-k entries must be (token, logprob)"
            ) from err
    if np.isnan(out).any() or np.isposinf(out).any():
        raise InputError("log-probabilities must be finite numbers or -inf (got NaN or +inf)")
    if (out > _LOGPROB_TOL).any():
        raise InputError(f"log-probabilities must be <= 0 (got {float(out.max())!r})")
    return np.asarray(np.minimum(out, 0.0), dtype=np.float64)


def distribution_stats(
    logprobs: FloatArray, *, renormalize: bool = True
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Entropy, varentropy and kurtosis of each row of a ``(positions, k)`` logprob array.

    Rows may be padded with ``-inf`` (probability 0, contributes nothing). Vectorized over
    rows; returns three arrays of shape ``(positions,)``. See the module docstring for the
    formulas, the ``renormalize`` choice and ``V = 0``.
    """
    lp = np.asarray(logprobs, dtype=np.float64)
    if lp.ndim != 2:
        raise InputError(f"expected a 2-D (positions, k) array, got shape {lp.shape}")
    if lp.shape[0] == 0:
        empty = np.zeros(0)
        return empty, empty.copy(), empty.copy()
    p = np.exp(lp)
    mass = p.sum(axis=1, keepdims=True)
    if renormalize:
        if (mass <= 0).any():
            raise InputError("a decision position has zero probability mass in its top-k")
        p = p / mass
        # A probability is at most 1: rounding must not make a lone token's surprisal
        # (or the entropy) slightly negative.
        log_p = np.minimum(lp - np.log(mass), 0.0)
    else:
        if (mass > 1.0 + 1e-3).any():
            raise InputError(f"top-k probabilities sum to {float(mass.max()):.4f} > 1")
        log_p = lp
    present = p > 0
    # Surprisal -log p; zero-probability entries are masked out (0 * inf would be NaN).
    surprisal = np.where(present, -log_p, 0.0)
    entropy = np.sum(p * surprisal, axis=1)
    centred = np.where(present, surprisal - entropy[:, None], 0.0)
    varentropy = np.sum(p * centred**2, axis=1)
    fourth = np.sum(p * centred**4, axis=1)
    degenerate = varentropy <= VARENTROPY_EPS
    kurtosis = np.where(degenerate, 0.0, fourth / np.where(degenerate, 1.0, varentropy**2))
    return entropy, varentropy, kurtosis


def position_entropies(
    distributions: Sequence[TopLogprobs], *, renormalize: bool = True
) -> list[float]:
    """The entropy (nats) of each non-empty decision position, in order (what a viewer
    colours a decision token by; :func:`distribution_stats` over the positions)."""
    entropy, _, _ = distribution_stats(_padded_logprobs(distributions), renormalize=renormalize)
    return [float(h) for h in entropy]


def turn_features(
    distributions: Sequence[TopLogprobs], turn: int, *, renormalize: bool = True
) -> TurnFeatures:
    """Features of one turn: max H, V, K over its decision positions plus the turn count.

    A turn with no decision position gets ``H = V = K = 0`` and ``n_positions = 0``.
    """
    if turn < 1:
        raise InputError(f"turn must be >= 1 (1-based total turn count), got {turn}")
    lp = _padded_logprobs(distributions)
    if lp.shape[0] == 0:
        return TurnFeatures(turn=turn, n_positions=0)
    h, v, k = distribution_stats(lp, renormalize=renormalize)
    return TurnFeatures(
        entropy=float(h.max()),
        varentropy=float(v.max()),
        kurtosis=float(k.max()),
        turn=turn,
        n_positions=int(lp.shape[0]),
    )


def observation_features(obs: TurnObservation, *, renormalize: bool = True) -> TurnFeatures:
    """:func:`turn_features` of a game loop's :class:`~byzllm.envs.TurnObservation`."""
    return turn_features(obs.distributions, obs.turn, renormalize=renormalize)


def features_matrix(rows: Sequence[TurnFeatures]) -> FloatArray:
    """Stack turn features into an ``(n, 4)`` array in :data:`FEATURE_COLUMNS` order."""
    if not rows:
        return np.zeros((0, len(FEATURE_COLUMNS)))
    return np.array(
        [[r.entropy, r.varentropy, r.kurtosis, float(r.turn)] for r in rows], dtype=np.float64
    )
