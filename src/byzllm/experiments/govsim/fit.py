"""Fit the simulated GovSim fishers to a run, and compare the two (``byzllm sim``).

:func:`fit_govsim` estimates :class:`~byzllm.agents.govsim.FisherParams` (the profile's one
group, ``sim``) from the ``govsim_game`` records of a ``byzllm govsim run``. It reads only
what a run with LLM fishers records: per month the stock before the harvest, every fisher's
wish (capped at the stock), the stock after it and whether a catch fell back to the parse
default; per meeting each utterance's speaker and the amounts it wrote (the first one is
its proposal, the amount a simulated fisher reads from a discussion; GovSim's framework, Piatti
et al. 2024, likewise extracts an agreed per-fisher limit from each conversation). It never
reads ``sim_params`` or a simulated fisher's ``rogue`` label, so fitting a simulated run is an
honest test.

**The simulator's rules the fit inverts** (:mod:`byzllm.agents.govsim`, after GovSim's code
for the sustainable share ``s* = ⌊⌊stock / 2⌋ / n⌋``). With ``S = stock / n`` and the lake's
stock next month ``R = min(2 · stock_after, R_0)``:

* a fisher's *proposal* at the meeting of month ``j`` is its estimate of next month's share,
  ``E = max(0, s*(R) + N(0, (σ S(R))²))``, rounded; in a rogue episode (probability
  ``ρ`` per fisher and meeting) it is ``E · k`` rounded, ``k = (1 + greed) ·
  rogue_multiplier``;
* its *catch* in month ``j + 1`` uses the same estimate and the same episode: clean,
  ``round((1 − π) (1 + greed) E + π G)`` with ``G`` the median of the meeting's proposals;
  rogue, ``E · k`` again;
* its catch in month 1 (no meeting yet) is ``round((1 + greed) E)`` (``· rogue_multiplier``
  in a rogue episode).

**Estimates.**

* ``rogue_rate`` ``ρ``, ``estimate_noise`` ``σ`` and the rogue factor ``k``: the maximum
  likelihood of the proposals under that two-part mixture, each proposal's probability
  taken exactly as the rounded (and at 0 clipped) normal it is, so proposals on a small
  stock weigh what they say. Every proposal's posterior probability of being rogue comes
  with it. Only a positive amount on a positive share identifies them: on a zero share (a
  stock below two tons per fisher) both parts are 0, and any ``σ`` up to the default's
  rounds the estimate to 0; an amount of 0 stands for every draw below half a ton, a
  probability that stays near ½ however large ``σ`` grows. Without such an *informative*
  proposal the likelihood is flat, its search stops near its start, and the three keep
  their defaults (so does ``persuadability``, whose clean proposals the mixture names).
* ``greed``: the maximum likelihood of month 1's catches (no meeting yet), a clean one being
  ``min(stock, round((1 + greed) E))`` and a rogue one ``min(stock, round(k E))`` with the
  proposals' ``ρ``, ``σ`` and ``k`` (when the proposals identify ``ρ`` and ``σ``), searched
  first at the greeds where a catch's rounding changes (with a small ``σ`` the likelihood
  is a narrow spike there). A catch capped at the stock is censored: it contributes
  ``P(round((1 + greed) E) ≥ stock)``, not its rounded value (:func:`month_one_greed`).
  Without proposals (an LLM that never names an amount, or games whose lake month 1
  emptied), or with proposals that leave ``ρ`` or ``σ`` unfitted, it is the median of month
  1's ``wish / s*`` less one: the likelihood needs the noise the catches scatter with, the
  median needs none, and a default noise is an assumption that a greed fitted through it
  would pass off as data (a noise fitted too small read noisy catches as greed). There a
  capped catch counts at its cap: a lower bound once half the catches are capped, and its
  source says so (the evidence keeps that median ratio and the capped count in every
  case).
* ``persuadability`` ``π``: the least squares of ``wish = (1 − π) u + π G``, ``u = (1 +
  greed) · proposal``, over the catches of month ``j + 1`` whose fisher's proposal at meeting
  ``j`` looks clean (posterior below one half), not capped at the stock and not a parse
  fall-back (the fitted ``greed``; a rounded proposal stands for ``E``).
* ``rogue_multiplier``: ``k / (1 + greed)`` (clipped to its range), when the informative
  proposals hold at least two rogue ones in expectation.
* ``top_k``: the run's own top-k (not the rogue factor ``k``), the most alternatives a
  catch decision's position reported (each decision keeps its most;
  :func:`~byzllm.experiments._fitting.put_top_k`), so the twin's monitor features are
  computed over as many as the run's; a top-k above 10 (a digit has ten alternatives) is
  written as 10, saying so. Records written before decisions kept it leave the default.

**Not identified here** (they keep ``base``, and their sources say why): the digit
confidences (``confidence_logit``, ``confidence_sd``, ``rogue_confidence_drop``,
``fault_signal``: game records keep no token distributions) and ``resample_persistence`` (it
shows only when a decision is resampled, the §6.1 ablation of the rogue-agents paper, which
a ``govsim run`` never does). The monitor pipeline's GovSim
records (``byzllm monitor``, ``reproduce ra-table2``) keep monitored turns only, without
the stock, the month-1 catches or the meetings: fit a ``byzllm govsim run`` of the same
fishers. An LLM's proposal may mean something other than a per-fisher limit (a total for
the group); the fit reads it as the simulator does, and such amounts mostly inflate the
clean part's noise rather than land in the rogue part (group totals of five fishers fitted
``estimate_noise`` 2.0 against 0.15). An estimate at the top of its search range is not
written, nor are the mixture's parameters without an informative proposal (the parameter
keeps its default, and its source says why). Recovery on simulated
runs (``tests/experiments/test_govsim_fit.py``, ``docs/govsim.md``) states the tolerances.

:func:`compare_govsim_run` replays every game of the run (the stored units: the same games,
lake and repeats) with simulated fishers on the fitted parameters and returns
Survival-Rate, Survival-Time and Efficiency (the rogue-agents paper, §4.1) of both, each
with a percentile bootstrap interval over games (a game's repeats averaged first).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import median
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy.optimize import minimize, minimize_scalar
from scipy.special import log_ndtr

from byzllm.agents.govsim import FisherParams, sustainable_share
from byzllm.errors import InputError
from byzllm.runs import Store

from .._fitting import (
    ComparisonRow,
    Estimates,
    FittedProfile,
    profile_params,
    put_top_k,
    run_name,
    sim_profile,
)
from .._twin import Metric, grouped_comparison, replay_games
from .experiment import work
from .records import GovSimGameRecord

__all__ = [
    "GOVSIM_METRICS",
    "GOVSIM_RATES",
    "CatchObservation",
    "ProposalMixture",
    "ProposalObservation",
    "compare_govsim_run",
    "fit_govsim",
    "fit_govsim_run",
    "month_one_greed",
    "observations",
    "persuadability_slope",
    "proposal_mixture",
    "simulate_twin",
]

#: The metrics compared, in table order (the rogue-agents paper, §4.1): per game, on the
#: records' scale (rates as fractions).
GOVSIM_METRICS: dict[str, Metric] = {
    "Survival-Rate": lambda r: float(r["survival_rate"]),
    "Survival-Time": lambda r: float(r["survival_time"]),
    "Efficiency": lambda r: float(r["efficiency"]),
}
#: The metrics that are rates (a game survives or not); Efficiency is a share per game, and
#: a Wilson interval at 100% would claim games that could have done worse (as in the report).
GOVSIM_RATES = frozenset({"Survival-Rate"})

#: Why the parameters no govsim run identifies keep their value.
_UNSEEN = {
    "confidence_logit": "GovSim game records keep no token distributions",
    "confidence_sd": "GovSim game records keep no token distributions",
    "rogue_confidence_drop": "GovSim game records keep no token distributions",
    "fault_signal": "GovSim game records keep no token distributions",
    "resample_persistence": "it shows only when a decision is resampled (the rogue-agents "
    "paper's §6.1 ablation), which a govsim run never does",
}
#: Fewer expected rogue proposals than this: the rogue factor is not estimated.
_MIN_ROGUE = 2.0
#: Fewer paired catches than this: persuadability is not fitted.
_MIN_PAIRED = 10


@dataclass(frozen=True)
class ProposalObservation:
    """One fisher's proposal at one meeting (the first amount of its first utterance that
    names one), with the sustainable share ``share`` and the scale ``stock / n`` of the
    stock it reasons on (next month's, ``min(2 · stock_after, R_0)``)."""

    play: str
    month: int
    fisher: str
    amount: int
    share: int
    scale: float


@dataclass(frozen=True)
class CatchObservation:
    """One fisher's wish in one month, with the month's sustainable share, stock and number
    of fishers, and (from month 2) its own proposal and the median proposal of the meeting
    before (``None`` when it or the meeting named no amount)."""

    play: str
    month: int
    fisher: str
    wish: int
    share: int
    stock: int
    fishers: int
    proposal: int | None
    agreed: float | None


def _play(game: Mapping[str, Any]) -> str:
    return f"{game['game_id']}/r{int(game.get('repeat', 0))}"


def observations(
    games: Sequence[Mapping[str, Any]],
) -> tuple[list[ProposalObservation], list[CatchObservation]]:
    """The proposals and the catches of ``games`` (``govsim_game`` records), in game order.

    A catch that fell back to the parse default is left out (it is the parser's number, not
    the fisher's). A fisher who speaks twice at a meeting is counted once: a simulated
    fisher repeats itself, and an LLM's first proposal is the one the others heard first.
    """
    proposals: list[ProposalObservation] = []
    catches: list[CatchObservation] = []
    for game in games:
        play = _play(game)
        r0 = int(game["r0"])
        harvests = list(game.get("harvests") or [])
        meetings = list(game.get("meetings") or [])
        fell_back = {
            (int(d["month"]), str(d["fisher"]))
            for d in game.get("decisions") or []
            if d.get("applied", True) and d.get("fallback")
        }
        before: dict[str, int] = {}  # the last meeting's proposal per fisher
        agreed: float | None = None
        for h in harvests:
            month = int(h["month"])
            stock = int(h["stock_before"])
            wishes = {str(k): int(v) for k, v in dict(h["wishes"]).items()}
            n = max(1, len(wishes))
            for fisher, wish in wishes.items():
                if (month, fisher) in fell_back:
                    continue
                catches.append(
                    CatchObservation(
                        play=play,
                        month=month,
                        fisher=fisher,
                        wish=wish,
                        share=sustainable_share(stock, n),
                        stock=stock,
                        fishers=n,
                        proposal=before.get(fisher),
                        agreed=agreed,
                    )
                )
            meeting = meetings[month - 1] if month - 1 < len(meetings) else []
            regrown = min(2 * int(h["stock_after"]), r0)
            first: dict[str, int] = {}
            said: list[int] = []
            for u in meeting:
                amounts = list(u.get("amounts") or [])
                if not amounts:
                    continue
                said.append(int(amounts[0]))
                first.setdefault(str(u["speaker"]), int(amounts[0]))
            for fisher, amount in first.items():
                if regrown > 0:
                    proposals.append(
                        ProposalObservation(
                            play=play,
                            month=month,
                            fisher=fisher,
                            amount=amount,
                            share=sustainable_share(regrown, n),
                            scale=regrown / n,
                        )
                    )
            before = first
            agreed = float(median(said)) if said else None
    return proposals, catches


# -- the proposals' mixture ------------------------------------------------------------------


def _log_rounded(
    amount: npt.NDArray[np.float64], mean: npt.NDArray[np.float64], sd: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    """log P(round(max(0, X)) = amount) for X ~ N(mean, sd²), elementwise and stable."""
    hi = (amount + 0.5 - mean) / sd
    lo = (amount - 0.5 - mean) / sd
    # Subtract in the tail where both terms are small: Φ(b) − Φ(a) = Φ(−a) − Φ(−b).
    upper = lo > 0
    big = np.where(upper, log_ndtr(-lo), log_ndtr(hi))
    small = np.where(upper, log_ndtr(-hi), log_ndtr(lo))
    # amount 0 also takes every negative draw (the clip at 0).
    small = np.where(amount <= 0, -np.inf, small)
    with np.errstate(divide="ignore"):
        out = big + np.log1p(-np.exp(np.minimum(small - big, 0.0)))
    return np.asarray(np.maximum(out, -700.0), dtype=float)


def _log_catch(
    wish: npt.NDArray[np.float64],
    cap: npt.NDArray[np.float64],
    mean: npt.NDArray[np.float64],
    sd: npt.NDArray[np.float64],
) -> npt.NDArray[np.float64]:
    """log P(min(cap, round(max(0, X))) = wish) for X ~ N(mean, sd²), elementwise: a
    simulated fisher's catch, its intention rounded, at 0 clipped and capped at the stock.

    Below the cap it is :func:`_log_rounded`; at the cap (a censored catch) it is every
    intention that rounds to the cap or above, ``P(X ≥ cap − ½) = Φ((mean − cap + ½) / sd)``
    (a cap of 0 takes every draw). Leaving capped catches out instead keeps only the lower
    intentions where many are capped, which biases the fit low at a high greed.
    """
    tail = np.where(cap <= 0, 0.0, log_ndtr((mean - cap + 0.5) / sd))
    return np.asarray(
        np.where(wish >= cap, np.maximum(tail, -700.0), _log_rounded(wish, mean, sd)), dtype=float
    )


@dataclass(frozen=True)
class ProposalMixture:
    """The proposals' fitted two-part mixture (module docstring): ``rate`` ``ρ``,
    ``noise`` ``σ``, ``factor`` ``k``; ``rogue`` the posterior of each proposal being rogue
    (input order); ``informative`` the proposals that can identify the mixture (a positive
    amount on a positive share, :func:`_informative`) and ``expected_rogue`` the sum of their
    posteriors."""

    rate: float
    noise: float
    factor: float
    rogue: tuple[float, ...]
    expected_rogue: float
    log_likelihood: float
    informative: int


def _informative(
    amount: npt.NDArray[np.float64], share: npt.NDArray[np.float64]
) -> npt.NDArray[np.bool_]:
    """Which proposals can tell the mixture's parameters apart (module docstring).

    On a zero share both parts have the mean 0 (``k · 0``), so the proposal says nothing of
    ``ρ`` or ``k``, and its scale ``S`` is below 2 tons (the stock is below two per
    fisher): any noise up to the default's rounds it to 0 almost surely, a bound on ``σ``
    far looser than the proposals on a full lake need. An amount of 0 is censored: it
    stands for every draw below half a ton, a probability that tends to ½ however large
    ``σ`` grows, so it bounds ``σ`` from one side only. Only a positive amount on a positive
    share is an interval of the normal in both parts.
    """
    return np.asarray((amount > 0) & (share > 0), dtype=np.bool_)


def _arrays(
    props: Sequence[ProposalObservation],
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    amount = np.array([p.amount for p in props], dtype=float)
    share = np.array([p.share for p in props], dtype=float)
    scale = np.array([p.scale for p in props], dtype=float)
    return amount, share, scale


def _parts(
    theta: Sequence[float],
    amount: npt.NDArray[np.float64],
    share: npt.NDArray[np.float64],
    scale: npt.NDArray[np.float64],
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """log(ρ · P(rogue)) and log((1 − ρ) · P(clean)) per proposal."""
    rate, noise, factor = theta
    clean = math.log1p(-rate) + _log_rounded(amount, share, noise * scale)
    rogue = math.log(rate) + _log_rounded(amount, factor * share, factor * noise * scale)
    return rogue, clean


#: The tops of the mixture's search ranges (rogue share, noise, rogue factor).
_RATE_TOP, _NOISE_TOP, _FACTOR_TOP = 0.5, 5.0, 200.0
#: Why a parameter at the top of its range keeps its default.
_AT_THE_BOUND = (
    "the fit reached the top of its range ({value:.4g} of at most {top:g}): the proposals do "
    "not identify it (read them: an amount for the whole group, or another unit than tons?)"
)
#: Why the mixture's parameters keep their defaults when no proposal can identify them.
_UNINFORMATIVE = (
    "none of the {n} proposals is a positive amount on a positive sustainable share: amounts "
    "of 0 and proposals on a zero share fit any noise up to the default's about equally and "
    "cannot tell a rogue proposal from a clean one (a flat likelihood)"
)


def proposal_mixture(
    props: Sequence[ProposalObservation], *, start_factor: float = 3.9
) -> ProposalMixture:
    """Maximum-likelihood ``(ρ, σ, k)`` of the proposals (module docstring).

    ``ρ`` is kept in ``(0, 0.5]`` (rogue episodes are the minority, which names the two
    parts), ``σ`` in ``[0.001, 5]`` and ``k`` in ``[1, 200]``. Several starts of ``k`` (the
    given one, 2, and the 95th percentile of proposal / share) guard against a local optimum.
    Raises InputError without proposals.
    """
    if not props:
        raise InputError("no proposals to fit")
    amount, share, scale = _arrays(props)
    z = (amount - share) / scale
    spread = float(np.median(np.abs(z - np.median(z)))) * 1.4826
    noise0 = min(5.0, max(0.01, spread))
    ratios = amount[share > 0] / share[share > 0]
    high = float(np.quantile(ratios, 0.95)) if ratios.size else start_factor
    bounds = [(1e-6, _RATE_TOP), (1e-3, _NOISE_TOP), (1.0, _FACTOR_TOP)]

    def nll(theta: npt.NDArray[np.float64]) -> float:
        rogue, clean = _parts(list(theta), amount, share, scale)
        return -float(np.logaddexp(rogue, clean).sum())

    best = None
    for k0 in sorted({start_factor, 2.0, max(1.5, min(200.0, high))}):
        result = minimize(nll, np.array([0.05, noise0, k0]), method="L-BFGS-B", bounds=bounds)
        if best is None or result.fun < best.fun:
            best = result
    assert best is not None
    theta = [float(x) for x in best.x]
    rogue, clean = _parts(theta, amount, share, scale)
    posterior = np.exp(rogue - np.logaddexp(rogue, clean))
    # An uninformative proposal's posterior is (nearly) the prior ρ: it counts no rogue one.
    telling = _informative(amount, share)
    return ProposalMixture(
        rate=theta[0],
        noise=theta[1],
        factor=theta[2],
        rogue=tuple(float(p) for p in posterior),
        expected_rogue=float(posterior[telling].sum()),
        log_likelihood=-float(best.fun),
        informative=int(telling.sum()),
    )


# -- the catches -----------------------------------------------------------------------------

#: The range of the fitted greed (its parameter's).
_GREED = (0.0, 10.0)


def _month_one(catches: Sequence[CatchObservation]) -> list[CatchObservation]:
    """Month 1's catches on a positive share, those capped at the stock included."""
    return [c for c in catches if c.month == 1 and c.share > 0]


def month_one_greed(
    catches: Sequence[CatchObservation], mixture: ProposalMixture | None
) -> float | None:
    """``greed`` from month 1's catches (module docstring), ``None`` without any.

    With the proposals' mixture: the maximum likelihood of the catches, a clean one being
    ``min(stock, round((1 + greed) E))`` and a rogue one ``min(stock, round(k E))`` with the
    proposals' ``ρ``, ``σ`` and ``k`` (the rogue part does not move with ``greed``), on
    ``[0, 10]``. A catch below the stock contributes the probability of its rounded value; a
    catch at the stock (capped: the environment caps every wish at the stock, the
    rogue-agents paper, §4.1, ``a ∈ [0, R_j]``) is censored and contributes the probability
    that the intention reached it, ``P(round((1 + greed) E) ≥ stock) = Φ(((1 + greed) s* −
    stock + ½) / ((1 + greed) σ S))`` with ``S = stock / n`` (:func:`_log_catch`). Without
    it: the median of ``wish / s*`` less one, a capped catch counted at its cap (a lower
    bound of its intention): the intentions' median while fewer than half the catches are
    capped, a lower bound of it beyond.

    The likelihood is searched where it changes fastest, the greeds at which some catch's
    rounding changes (``(wish ± 1/2) / s* − 1``) and each catch's own ratio
    (:func:`_minimize_on`): accurate estimates (a small ``σ``) make it a narrow spike at the
    greeds that round every catch right, flat elsewhere, which one search over the whole
    range misses.
    """
    first = _month_one(catches)
    if not first:
        return None
    if mixture is None:
        # A capped catch's ratio is its cap's, the least its intention's can be: it ranks
        # above the median whenever fewer than half the catches are capped.
        return median(c.wish / c.share for c in first) - 1.0
    wish = np.array([c.wish for c in first], dtype=float)
    share = np.array([c.share for c in first], dtype=float)
    stock = np.array([c.stock for c in first], dtype=float)
    scale = stock / np.array([c.fishers for c in first], dtype=float)
    rate, noise, factor = mixture.rate, mixture.noise, mixture.factor
    rogue = math.log(rate) + _log_catch(wish, stock, factor * share, factor * noise * scale)

    def nll(g: float) -> float:
        up = 1.0 + g
        clean = math.log1p(-rate) + _log_catch(wish, stock, up * share, up * noise * scale)
        return -float(np.logaddexp(rogue, clean).sum())

    # Where a catch's rounding changes, and each catch's own ratio.
    ends = np.clip(np.concatenate([(wish + d) / share - 1.0 for d in (-0.5, 0.0, 0.5)]), *_GREED)
    return _minimize_on(nll, ends, *_GREED)


def _minimize_on(
    f: Callable[[float], float], ends: npt.NDArray[np.float64], lo: float, hi: float
) -> float:
    """The x in [lo, hi] minimizing ``f``, a function that changes fastest at ``ends``.

    A grid and the quantiles of ``ends`` find the best region (between the best sample's
    neighbours, where a unimodal ``f`` has its minimum); there every end, and every midpoint
    between two ends, is tried (``f`` may be a step between ends); a bounded search then
    refines between the best point's neighbours. The cost grows with the ends inside that
    region only.
    """

    def best_of(points: npt.NDArray[np.float64]) -> tuple[float, float, float, float]:
        xs = np.unique(points)
        values = [f(float(x)) for x in xs]
        k = int(np.argmin(values))
        return float(xs[max(0, k - 1)]), float(xs[min(len(xs) - 1, k + 1)]), float(xs[k]), values[k]

    coarse = np.concatenate([np.linspace(lo, hi, 101), np.quantile(ends, np.linspace(0, 1, 201))])
    left, right, _, _ = best_of(coarse)
    fine = np.unique(np.concatenate([[left, right], ends[(ends > left) & (ends < right)]]))
    left, right, x, value = best_of(np.concatenate([fine, (fine[1:] + fine[:-1]) / 2]))
    if right <= left:
        return x
    refined = minimize_scalar(f, bounds=(left, right), method="bounded")
    return float(refined.x) if refined.fun <= value else x


def persuadability_slope(paired: Sequence[CatchObservation], greed: float) -> float | None:
    """``π`` minimizing ``Σ (wish − (1 − π) u − π G)²`` with ``u = (1 + greed) · proposal``
    (module docstring), or ``None`` with fewer than ``_MIN_PAIRED`` catches or none whose
    own intention differs from the meeting's median."""
    if len(paired) < _MIN_PAIRED:
        return None
    u = np.array([(1.0 + greed) * float(c.proposal or 0) for c in paired])
    g = np.array([float(c.agreed or 0.0) for c in paired])
    w = np.array([float(c.wish) for c in paired])
    spread = float(((g - u) ** 2).sum())
    if spread <= 0.0:
        return None
    return float(((w - u) * (g - u)).sum() / spread)


# -- the fit ---------------------------------------------------------------------------------


def fit_govsim(
    games: Sequence[Mapping[str, Any]], *, run: str, base: FisherParams | None = None
) -> FittedProfile:
    """Estimate :class:`FisherParams` from one run's ``govsim_game`` records (see the module
    docstring for what is read and how it maps).

    ``base`` holds every parameter the run cannot identify (default: the declared defaults).
    Raises InputError when there is no game or no catch to fit.
    """
    if not games:
        raise InputError(f"{run} has no GovSim games to fit a profile from")
    base = base or FisherParams()
    props, catches = observations(games)
    if not catches:
        raise InputError(f"{run} has no GovSim catches to fit a profile from")
    # A game played again (a repeat) is another play of the same game, not another game.
    n_games, n_plays = len({str(g["game_id"]) for g in games}), len(games)
    plays = f" ({n_plays} plays)" if n_plays != n_games else ""
    fit = Estimates(f"fitted from {run} on {n_games} games{plays}", dict(_UNSEEN))
    first = _month_one(catches)
    ratios = [c.wish / c.share for c in first]
    capped = sum(c.wish >= c.stock for c in first)
    fit.evidence |= {
        "catches": {
            "games": n_games,
            "plays": n_plays,
            "catches": len(catches),
            "month_one_catches": len(first),
            "month_one_capped": capped,
            "month_one_median_ratio": round(median(ratios), 4) if ratios else None,
        },
        "proposals": {"proposals": len(props)},
    }
    # The mixture fitted to the proposals, and the one month 1's greed is fitted with: only
    # once the proposals identify its rate and noise (the median path otherwise, module
    # docstring).
    found: ProposalMixture | None = None
    mixture: ProposalMixture | None = None
    if props:
        found = proposal_mixture(props, start_factor=(1.0 + base.greed) * base.rogue_multiplier)
        fit.evidence["proposals"] |= {
            "informative": found.informative,
            "rogue_rate": round(found.rate, 4),
            "estimate_noise": round(found.noise, 4),
            "rogue_factor": round(found.factor, 4),
            "expected_rogue": round(found.expected_rogue, 2),
            "log_likelihood": round(found.log_likelihood, 2),
        }
        # An estimate at the top of its search range is where the proposals pushed it, not
        # a value they identify (all proposals 0 fitted a noise of 5.0, all huge a rogue rate
        # of 0.5); without an informative proposal the likelihood is flat and the search
        # stops near its start (five proposals of 0 on a zero share fitted a noise of 0.01
        # for a truth of 0.15). Such a parameter keeps its default and says why.
        for name, value, top, what in (
            (
                "rogue_rate",
                found.rate,
                _RATE_TOP,
                "share of rogue proposals, maximum likelihood of the rounded-normal mixture",
            ),
            (
                "estimate_noise",
                found.noise,
                _NOISE_TOP,
                "sd of the clean proposals around the sustainable share, per stock / fisher "
                "(the same mixture)",
            ),
        ):
            if value >= top * (1 - 1e-3):
                fit.unseen[name] = _AT_THE_BOUND.format(value=value, top=top)
            elif not found.informative:
                fit.unseen[name] = _UNINFORMATIVE.format(n=len(props))
            else:
                fit.put(name, value, what, found.informative)
        if not found.informative:
            for name in ("rogue_multiplier", "persuadability"):
                fit.unseen[name] = _UNINFORMATIVE.format(n=len(props))
            found = None
        elif "rogue_rate" in fit.values and "estimate_noise" in fit.values:
            mixture = found
    else:
        for name in ("rogue_rate", "estimate_noise", "rogue_multiplier", "persuadability"):
            fit.unseen[name] = "no utterance of the run names an amount (no proposals)"

    greed = month_one_greed(catches, mixture)
    if greed is None:
        fit.unseen["greed"] = "no month-1 catch on a positive sustainable share"
        greed = base.greed
    else:
        how = (
            "maximum likelihood of month 1's catches (no meeting yet) as (1 + greed) times "
            "an estimate, with the proposals' noise and rogue mixture (a catch at the stock "
            "censored)"
            if mixture is not None
            else "median of month 1's wish / sustainable share, less one (no meeting yet"
            + ("; the proposals do not identify the noise" if props else "")
            + "; a catch at the stock counted at it"
            + ("; at least half were: a lower bound)" if 2 * capped >= len(first) else ")")
        )
        fit.put("greed", min(_GREED[1], max(_GREED[0], greed)), how, len(first))
        greed = fit.values["greed"]

    if found is not None:
        rogue_at = {(p.play, p.month, p.fisher): r for p, r in zip(props, found.rogue, strict=True)}
        paired = [
            c
            for c in catches
            if c.proposal is not None
            and c.agreed is not None
            and c.wish < c.stock
            and rogue_at.get((c.play, c.month - 1, c.fisher), 1.0) < 0.5
        ]
        fit.evidence["catches"]["paired_catches"] = len(paired)
        slope = persuadability_slope(paired, greed)
        if slope is None:
            fit.unseen["persuadability"] = (
                f"fewer than {_MIN_PAIRED} catches after a clean proposal of the same fisher, "
                "or none whose intention differs from the meeting's median"
            )
        else:
            fit.evidence["catches"]["persuadability_slope"] = round(slope, 4)
            fit.put(
                "persuadability",
                min(1.0, max(0.0, slope)),
                "least squares of wish = (1 - p) (1 + greed) own proposal + p median proposal "
                "over the catches after a clean proposal (not capped)",
                len(paired),
            )
        if found.factor >= _FACTOR_TOP * (1 - 1e-3):
            fit.unseen["rogue_multiplier"] = _AT_THE_BOUND.format(
                value=found.factor, top=_FACTOR_TOP
            )
        elif found.expected_rogue >= _MIN_ROGUE:
            fit.put(
                "rogue_multiplier",
                min(100.0, max(1.0, found.factor / (1.0 + greed))),
                f"rogue factor {found.factor:.4f} of the proposals / (1 + greed)",
                found.informative,
            )
        else:
            fit.unseen["rogue_multiplier"] = (
                f"fewer than {_MIN_ROGUE:g} of the {found.informative} informative proposals "
                "look rogue"
            )
    _fit_top_k(games, fit)
    return sim_profile("govsim", base, fit, run, games)


def _fit_top_k(games: Sequence[Mapping[str, Any]], fit: Estimates) -> None:
    """``top_k``: the most alternatives a catch decision's position reported (module
    docstring), where the records keep it."""
    decisions = [d for g in games for d in g.get("decisions") or []]
    kept = [int(d["alternatives"]) for d in decisions if d.get("alternatives") is not None]
    if decisions and not kept:
        fit.unseen["top_k"] = (
            "the run's catch decisions do not say how many alternatives they reported "
            "(records written before it was kept)"
        )
        return
    put_top_k(fit, FisherParams, kept, "the catch decisions' positions")


def _read(run_dir: str | Path) -> list[dict[str, Any]]:
    """The run's games, each checked against its record class (:meth:`Store.records`): an
    edited or damaged one is an :class:`InputError` naming it, not a fit on its value."""
    with Store.open(run_dir) as store:
        games = store.records(GovSimGameRecord)
        kinds = store.kinds()
    if not games:
        if "monitor_game" in kinds:
            raise InputError(
                f"{run_dir} is a monitor run: its records keep the monitored turns only, "
                "without the stock, the month-1 catches or the meetings; fit a `byzllm "
                "govsim run` of the same fishers"
            )
        raise InputError(f"{run_dir} holds no GovSim games")
    return games


def fit_govsim_run(run_dir: str | Path, *, base: FisherParams | None = None) -> FittedProfile:
    """:func:`fit_govsim` on the records stored in ``run_dir``."""
    return fit_govsim(_read(run_dir), run=run_name(run_dir), base=base)


# -- the comparison --------------------------------------------------------------------------


def simulate_twin(
    run_dir: str | Path, params: FisherParams, *, repeats: int = 1
) -> list[dict[str, Any]]:
    """Replay every game ``run_dir`` played with simulated fishers on ``params`` (the same
    games, lake and repeats; ``repeats`` passes). Returns the twin's ``govsim_game`` records
    as dicts."""
    sim = params.model_dump(mode="json")

    def twin(conf: Mapping[str, Any]) -> dict[str, Any]:
        # Only what the work reads for simulated fishers: no model settings travel.
        govsim = dict(conf.get("govsim") or {})
        return {
            "agents": "simulated",
            "split": conf.get("split", "test"),
            "govsim": {"lake": govsim.get("lake") or {}, "sim": sim},
        }

    return replay_games(
        run_dir, twin, work, kind="govsim_game", what="GovSim games", repeats=repeats
    )


def compare_govsim_run(
    run_dir: str | Path,
    profile: FittedProfile,
    *,
    repeats: int = 1,
    resamples: int = 2000,
) -> list[tuple[dict[str, Any], list[ComparisonRow]]]:
    """Survival-Rate, Survival-Time and Efficiency of ``run_dir`` beside its simulated twin
    on ``profile`` (every game replayed ``repeats`` times), per split, with 95% bootstrap
    intervals over games (a game's repeats averaged first)."""
    params = profile_params(profile, "govsim", "GovSim", FisherParams)
    real = _read(run_dir)
    twin = simulate_twin(run_dir, params, repeats=repeats)
    return grouped_comparison(
        real,
        twin,
        GOVSIM_METRICS,
        unit=lambda r: str(r["game_id"]),
        group=("split",),
        rates=GOVSIM_RATES,
        resamples=resamples,
    )
