"""What ``byzllm sim fit`` writes and ``byzllm sim compare`` prints, for every domain.

A :class:`FittedProfile` holds, per group of agents (consensus: ``strong`` / ``weak``;
WhoDunit, GovSim and CodeGen: ``sim``), the simulator parameters estimated from a run, the
source of each one ("fitted from RUN: <statistic>, n = ..." or the default's own source when
the run carries no evidence for it) and the measured statistics behind them, with the run's
name and the splits its fitted records were played on. Its YAML file
plugs into a config: ``agents.<group>.profile: profile.yaml`` (consensus), ``sim:
profile.yaml`` (WhoDunit, CodeGen) or ``govsim.sim: profile.yaml`` (GovSim;
:func:`inline_profile`).

A :class:`ComparisonRow` sets one metric of the real run beside the same metric of the fitted
simulator on the same configuration, both with their confidence intervals.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, ValidationInfo
from pydantic_core import PydanticCustomError

from byzllm._files import refuse_pipe, write_text_atomic
from byzllm.agents._params import SimParameters, parameter_source
from byzllm.errors import ConfigError, InputError
from byzllm.runs import Interval, config_path, validation_problems

__all__ = [
    "ComparisonRow",
    "Estimates",
    "FittedProfile",
    "bisect_increasing",
    "comparison_row",
    "inline_profile",
    "load_profile_section",
    "profile_file",
    "profile_params",
    "put_top_k",
    "record_splits",
    "run_name",
    "sim_profile",
]


class FittedProfile(BaseModel):
    """Simulator parameters estimated from one run (see the module docstring)."""

    model_config = ConfigDict(extra="forbid")

    domain: str = Field(description="consensus, whodunit, govsim or codegen")
    run: str = Field(description="the run directory's name the profile was fitted from")
    run_simulated: bool = Field(description="whether that run's agents were themselves simulated")
    splits: list[str] = Field(
        default_factory=list,
        description="the splits of the records fitted (train, validation, test, generated); "
        "empty where the run's records have none (consensus)",
    )
    groups: dict[str, dict[str, float]] = Field(description="group -> parameter -> value")
    sources: dict[str, dict[str, str]] = Field(description="group -> parameter -> source")
    evidence: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="group -> measured statistic -> value (counts, rates)"
    )

    def save(self, path: str | Path) -> Path:
        """Write the profile as YAML (``.json`` suffix: JSON)."""
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        data = self.model_dump(mode="json")
        if out.suffix == ".json":
            write_text_atomic(out, self.model_dump_json(indent=2) + "\n")
        else:
            write_text_atomic(out, yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
        return out

    @classmethod
    def load(cls, path: str | Path) -> FittedProfile:
        """Read a profile written by :meth:`save` (a clear ConfigError otherwise)."""
        p = Path(path)
        try:
            refuse_pipe(p)
            data = yaml.safe_load(p.read_text(encoding="utf-8"))
        except UnicodeDecodeError:
            raise ConfigError(f"cannot read profile {p}: not UTF-8 text") from None
        except OSError as exc:
            raise ConfigError(f"cannot read profile {p}: {exc.strerror or exc}") from exc
        except yaml.YAMLError as exc:
            raise ConfigError(f"cannot read profile {p}: {exc}") from exc
        try:
            return cls.model_validate(data)
        except ValidationError as exc:  # one line, the config errors' format
            line = validation_problems(exc, cls)
            raise ConfigError(f"{p} is not a profile written by `byzllm sim fit`: {line}") from None


def load_profile_section(path: str | Path, group: str, domain: str) -> dict[str, float]:
    """The parameters of ``group`` in the fitted profile at ``path`` (for configs)."""
    profile = FittedProfile.load(path)
    if profile.domain != domain:
        raise ConfigError(f"{path} was fitted on a {profile.domain} run, not a {domain} one")
    if group not in profile.groups:
        raise ConfigError(
            f"{path} has no parameters for group {group!r} (it has {', '.join(profile.groups)})"
        )
    return dict(profile.groups[group])


_Params = TypeVar("_Params", bound=SimParameters)


def profile_params(profile: FittedProfile, domain: str, title: str, cls: type[_Params]) -> _Params:
    """The ``sim`` parameters of ``profile`` as ``cls``, once it is known to be fitted on
    ``domain`` (``title``: the domain as messages write it); a clear InputError otherwise."""
    if profile.domain != domain:
        raise InputError(f"the profile was fitted on a {profile.domain} run, not a {title} one")
    if "sim" not in profile.groups:
        raise InputError("the profile has no 'sim' parameters")
    try:
        return cls.model_validate(profile.groups["sim"])
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "sim"
        more = f" (and {err.error_count() - 1} more)" if err.error_count() > 1 else ""
        raise InputError(f"the profile's sim.{where}: {first['msg']}{more}") from None


def inline_profile(value: object, info: ValidationInfo, *, group: str, domain: str) -> object:
    """A config field's value with a profile file replaced by its ``group`` parameters.

    For a ``mode="before"`` field validator: ``sim: fitted.yaml`` (resolved beside the config
    file, then the working directory) becomes the ``group`` section of that `byzllm sim fit`
    file, inlined so the run (and its unit ids) records the values, not a path whose content
    may change. Any other value passes through unchanged.
    """
    if not isinstance(value, str | os.PathLike):
        return value
    path = config_path(value, info, "file", "profile file")
    try:
        return load_profile_section(path, group, domain)
    except ConfigError as err:
        raise PydanticCustomError("profile_file", "{message}", {"message": str(err)}) from None


def profile_file(domain: str) -> BeforeValidator:
    """The annotation that lets a ``sim`` field of ``domain``'s config be a profile file:
    ``sim: Annotated[Params, profile_file(domain)]`` takes ``sim: fitted.yaml``, the ``sim``
    group of a `byzllm sim fit` file, inlined (:func:`inline_profile`)."""

    def inline(value: object, info: ValidationInfo) -> object:
        return inline_profile(value, info, group="sim", domain=domain)

    return BeforeValidator(inline)


class ComparisonRow(BaseModel):
    """One metric: the real run and the fitted simulator side by side (see the module doc)."""

    metric: str
    real: float
    real_low: float
    real_high: float
    simulated: float
    simulated_low: float
    simulated_high: float
    difference: float = Field(description="simulated - real")
    n_real: int
    n_simulated: int


def comparison_row(metric: str, real: Interval, simulated: Interval) -> ComparisonRow:
    """The row of ``metric`` from the two intervals."""
    diff = simulated.value - real.value
    return ComparisonRow.model_validate(
        {
            "metric": metric,
            **real.columns("real"),
            **simulated.columns("simulated"),
            "difference": diff if math.isfinite(diff) else float("nan"),
            "n_real": real.n,
            "n_simulated": simulated.n,
        }
    )


def bisect_increasing(
    f: Callable[[float], float], target: float, lo: float, hi: float, *, steps: int = 100
) -> float:
    """The x in [lo, hi] with ``f(x) = target`` for an increasing ``f``, by ``steps`` halvings
    (the fits' one-parameter moment matching; the caller handles targets outside the range)."""
    for _ in range(steps):
        mid = (lo + hi) / 2
        if f(mid) < target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def run_name(run_dir: str | Path) -> str:
    """How a profile names the run it was fitted from (the directory's name, no full path)."""
    return Path(run_dir).resolve().name


@dataclass
class Estimates:
    """What a fit of one parameter set found, gathered as it goes: each estimated parameter's
    value with the statistic it came from (:meth:`put`), why others were not estimated
    (``unseen``) and the measured statistics behind them (``evidence``, the profile's)."""

    #: How every statistic is introduced, e.g. "fitted from RUN on 40 games".
    basis: str
    unseen: dict[str, str] = field(default_factory=dict)
    #: Whether the profile's sources say why a parameter without a reason in ``unseen`` was
    #: not fitted ("no evidence in the run"); the WhoDunit fit gives only those it has.
    reasons: bool = True
    evidence: dict[str, dict[str, Any]] = field(default_factory=dict)
    values: dict[str, float] = field(default_factory=dict)
    stat: dict[str, str] = field(default_factory=dict)

    def put(self, name: str, value: float, what: str, n: int) -> None:
        """Record ``name``'s estimate ``value`` (rounded as profiles keep it), from the
        statistic ``what`` over ``n`` observations."""
        self.values[name] = round(value, 4)
        self.stat[name] = f"{self.basis}: {what}, n = {n}"


def put_top_k(
    fit: Estimates, params: type[SimParameters], widths: Sequence[int], where: str
) -> None:
    """Record the run's own top-k as ``top_k``: the most alternatives any decision position
    reports (``widths``: each position's count, or the most of each turn's; ``where``: whose
    positions they are, as the source names them).

    The monitor's features (entropy, varentropy and kurtosis: the rogue-agents paper, §2 and
    App. A) are computed over a position's alternatives, the top k where the full
    distribution is not sent (k = 10, §2 footnote 2), so a twin reporting fewer than its run
    does (a simulated default of 5) would be compared on unlike features. A server reports k
    alternatives wherever it can, so the most seen is the k asked for. A k outside the
    parameter's range is written as the nearest value it takes, and its source says so;
    without a reported position ``top_k`` keeps its value and says why."""
    seen = [w for w in widths if w > 0]
    if not seen:
        fit.unseen["top_k"] = f"no decision position of the run reports alternatives ({where})"
        return
    k = max(seen)
    bounds = params.model_json_schema()["properties"]["top_k"]
    value = int(min(max(k, bounds.get("minimum", 1)), bounds.get("maximum", math.inf)))
    # The simulator cannot report every k a server can (a digit has ten alternatives).
    note = f"; the nearest value the simulator takes is {value}" if value != k else ""
    fit.put(
        "top_k",
        value,
        f"the run's top-k, the most alternatives {where} report ({k}){note}",
        len(seen),
    )


def record_splits(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The splits ``rows`` were played on, sorted: what a profile fitted on them says it saw
    (a profile fitted on a test split and then judged on it is judged in sample)."""
    return sorted({str(row["split"]) for row in rows if row.get("split")})


def sim_profile(
    domain: str,
    params: SimParameters,
    fit: Estimates,
    run: str,
    rows: Sequence[Mapping[str, Any]],
) -> FittedProfile:
    """The profile of a domain with one parameter set (``sim``): each parameter the fit
    estimated (``fit``'s values and the statistic each came from), the others as ``params``
    (the base the fit started from) has them, with why they were not fitted (``fit.unseen``)
    and whether they are the declared default. Validated as a config will load it, so a
    fitted value outside a parameter's range fails here."""
    values, stat = fit.values, fit.stat
    defaults = type(params)()
    group: dict[str, float] = {}
    sources: dict[str, str] = {}
    for name in type(params).model_fields:
        if name in values:
            group[name], sources[name] = values[name], stat[name]
            continue
        value = getattr(params, name)
        group[name] = float(value)
        if name in fit.unseen:
            why = f": {fit.unseen[name]}"
        else:
            why = ": no evidence in the run" if fit.reasons else ""
        if value != getattr(defaults, name):
            sources[name] = f"set for the fit, not fitted from {run}{why}"
        else:
            declared = parameter_source(type(params), name)
            sources[name] = f"{declared}; the default, not fitted from {run}{why}"
    type(params).model_validate(group)
    return FittedProfile(
        domain=domain,
        run=run,
        run_simulated=any(bool(row.get("simulated")) for row in rows),
        splits=record_splits(rows),
        groups={"sim": group},
        sources={"sim": sources},
        evidence=fit.evidence,
    )
