"""The attack matrix: attacks × protocols × topologies × number of adversaries, in one run.

Every cell is one configuration of an ordinary consensus sweep (one unit per question), so a
matrix run resumes, runs on any executor and on real models like any sweep. The
composition of a cell keeps 4 strong honest agents and n = 7 (the SAC paper's Tables 1 and
5): b adversaries replace weak agents, w = 3 − b. Each cell reports BFTI and H-Majority with
their 95% bootstrap intervals over questions (the SAC paper, §5.1), and its calls and tokens
per question.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from byzllm.agents.consensus import ATTACKS, ORACLE_ATTACKS
from byzllm.errors import ConfigError, InputError
from byzllm.protocols import ConsensusMetrics
from byzllm.runs import format_validation_error

from .config import Composition, ConsensusConfig, DatasetConfig, ProtocolName, parse_label
from .report import INTERVAL_NOTE, ORACLE_NOTE, oracle_attack

__all__ = [
    "DEFAULT_ADVERSARIES",
    "DEFAULT_PROTOCOLS",
    "DEFAULT_TOPOLOGIES",
    "MATRIX_QUESTIONS",
    "cell_figures",
    "matrix_config",
    "matrix_heatmap",
    "matrix_rows",
]

DEFAULT_PROTOCOLS: tuple[ProtocolName, ...] = ("sac", "cp-wbft", "debate", "majority", "w-msr")
DEFAULT_TOPOLOGIES: tuple[str, ...] = ("merg", "complete", "erdos-renyi")
DEFAULT_ADVERSARIES: tuple[int, ...] = (1, 2)
#: Questions per cell by default: intervals of about ±20 points on H-Majority,
#: and the whole default matrix (2,700 questions) in under a minute on simulated agents.
MATRIX_QUESTIONS = 15
#: Strong honest agents in every cell (n = 7 with weak + adversaries = 3).
STRONG = 4
N_AGENTS = 7


def matrix_config(
    *,
    attacks: Sequence[str] = ATTACKS,
    protocols: Sequence[str] = DEFAULT_PROTOCOLS,
    topologies: Sequence[str] = DEFAULT_TOPOLOGIES,
    adversaries: Sequence[int] = DEFAULT_ADVERSARIES,
    questions: int = MATRIX_QUESTIONS,
    seed: int = 0,
    F: int = 3,
    T: int = 6,
) -> ConsensusConfig:
    """The sweep behind a matrix (a plain :class:`ConsensusConfig`; agents simulated)."""
    bad = [a for a in attacks if a not in ATTACKS]
    if bad:
        raise InputError(f"unknown attack(s) {', '.join(bad)}; choose from {', '.join(ATTACKS)}")
    if any(not 0 <= b <= N_AGENTS - STRONG for b in adversaries):
        raise InputError(f"adversaries must lie in 0..{N_AGENTS - STRONG} (n = 7, 4 strong)")
    compositions = [
        Composition(strong=STRONG, weak=N_AGENTS - STRONG - b, byzantine=b, attack=attack)
        for attack in attacks
        for b in adversaries
    ]
    data = {
        "protocols": list(protocols),
        "topologies": list(topologies),
        "compositions": [c.model_dump() for c in compositions],
        "F": [F],
        "T": [T],
        "seeds": [seed],
        "dataset": DatasetConfig(n=questions, seed=seed).model_dump(),
    }
    try:
        return ConsensusConfig.model_validate(data)
    except ValidationError as err:  # an unknown protocol or topology: one line, not a trace
        raise ConfigError(format_validation_error(err, ConsensusConfig)) from None


def _attack_and_b(composition: str) -> tuple[str, int]:
    parts = parse_label(composition)
    if parts is None:
        raise ValueError(f"not a composition label: {composition!r}")
    return parts.attack, parts.byzantine


def matrix_rows(
    summary: Sequence[tuple[Mapping[str, Any], ConsensusMetrics]],
) -> list[dict[str, Any]]:
    """One row per cell: attack (and whether it is an oracle attack, which reads the answer
    key: :data:`~byzllm.agents.consensus.ORACLE_ATTACKS`), adversaries, protocol, topology,
    composition, F, T, BFTI, BFTI over the honest agents and H-Majority with their intervals
    (fractions), calls and tokens per question, and the simulated label."""
    rows = []
    for meta, m in summary:
        attack, b = _attack_and_b(str(meta["composition"]))
        bounds = meta.get("intervals") or {}
        row: dict[str, Any] = {
            "attack": attack,
            # Reads the answer key to send a surely wrong answer (the paper's replay does not).
            "oracle_attack": oracle_attack(str(meta["composition"])),
            "adversaries": b,
            "protocol": meta["protocol"],
            "topology": meta["topology"],
            # The configuration the cell is (a run of its own compositions, or of several F
            # or T, can hold two cells of one attack and b).
            "composition": meta["composition"],
            "F": meta.get("F"),
            "T": meta.get("T"),
            "n_questions": m.n_questions,
        }
        first, final = m.per_round[0].honest, m.per_round[-1].honest
        values = {
            "BFTI": m.BFTI,
            # Over the honest agents only: an adversary that changes its own answer between
            # rounds 0 and T (mimic defects) moves BFTI by b/n whatever the protocol did.
            "BFTI_honest": None if first is None or final is None else final - first,
            "H_Majority": m.H_Majority,
        }
        for name, value in values.items():
            row[name] = value
            low, high = bounds.get(name, (None, None))
            row[f"{name}_low"], row[f"{name}_high"] = low, high
        row["calls_per_question"] = meta.get("calls_per_question")
        row["tokens_per_question"] = meta.get("tokens_per_question")
        row["simulated"] = bool(meta.get("simulated"))
        row["interval_method"] = INTERVAL_NOTE
        rows.append(row)
    order_p = {p: k for k, p in enumerate(DEFAULT_PROTOCOLS)}
    order_t = {t: k for k, t in enumerate(DEFAULT_TOPOLOGIES)}
    order_a = {a: k for k, a in enumerate(ATTACKS)}
    rows.sort(
        key=lambda r: (
            order_t.get(r["topology"], 99),
            r["topology"],
            order_a.get(r["attack"], 99),
            r["adversaries"],
            order_p.get(r["protocol"], 99),
        )
    )
    return rows


def matrix_heatmap(rows: Sequence[Mapping[str, Any]], path: str | Path, *, simulated: bool) -> Path:
    """Two heat-maps (BFTI, H-Majority) with rows attack × adversaries and columns
    protocol × topology, every cell annotated with its value in points."""
    from matplotlib import colormaps
    from matplotlib.figure import Figure

    from byzllm._figures import save_png
    from byzllm.runs.reports import simulated_title

    row_keys = sorted(
        {(r["attack"], r["adversaries"]) for r in rows},
        key=lambda k: (ATTACKS.index(k[0]) if k[0] in ATTACKS else 99, k[1]),
    )
    col_keys = sorted(
        {(r["protocol"], r["topology"]) for r in rows},
        key=lambda k: (
            DEFAULT_PROTOCOLS.index(k[0]) if k[0] in DEFAULT_PROTOCOLS else 99,
            DEFAULT_TOPOLOGIES.index(k[1]) if k[1] in DEFAULT_TOPOLOGIES else 99,
        ),
    )
    cells = {(r["attack"], r["adversaries"], r["protocol"], r["topology"]): r for r in rows}
    width = max(6.0, 0.7 * len(col_keys) + 2.5)
    height = max(3.0, 0.35 * len(row_keys) + 1.5)
    fig = Figure(figsize=(width, 2 * height))
    for panel, (metric, cmap, vmin, vmax) in enumerate(
        (("BFTI", "RdBu", -60.0, 60.0), ("H_Majority", "viridis", 0.0, 100.0))
    ):
        ax = fig.add_subplot(2, 1, panel + 1)
        grid = [
            [
                100 * float(cells[(a, b, p, t)][metric])
                if (a, b, p, t) in cells and cells[(a, b, p, t)][metric] is not None
                else float("nan")
                for (p, t) in col_keys
            ]
            for (a, b) in row_keys
        ]
        image = ax.imshow(grid, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
        palette = colormaps[cmap]  # the cell colours: beyond [0, 1], the end colours
        for i, line in enumerate(grid):
            for j, value in enumerate(line):
                if value == value:
                    ax.text(
                        j,
                        i,
                        f"{value:.0f}",
                        ha="center",
                        va="center",
                        fontsize=7,
                        color=_ink_on(palette((value - vmin) / (vmax - vmin))),
                        in_layout=False,
                    )
        ax.set_yticks(range(len(row_keys)), [attack_label(a, b) for a, b in row_keys], fontsize=7)
        ax.set_xticks(
            range(len(col_keys)),
            [f"{p}\n{t}" for p, t in col_keys],
            fontsize=6,
            rotation=90,
        )
        label = "BFTI (points)" if metric == "BFTI" else "H-Majority (%)"
        ax.set_title(simulated_title(label, simulated) or label, fontsize=9)
        fig.colorbar(image, ax=ax, fraction=0.03)
    if any(b > 0 and a in ORACLE_ATTACKS for a, b in row_keys):
        fig.text(0.01, 0.005, ORACLE_NOTE, fontsize=6, va="bottom", wrap=True)
        fig.tight_layout(rect=(0, 0.025, 1, 1))  # room for the note below the panels
    else:
        fig.tight_layout()
    return save_png(fig, path, crop=False)


def cell_figures(row: Mapping[str, Any]) -> tuple[str, str, str]:
    """A matrix cell as it is printed and shown: BFTI, BFTI over the honest agents (an
    adversary that changes its own answer, as mimic does, moves BFTI by itself) and
    H-Majority, each in points with its interval."""
    from byzllm.runs.reports import format_interval

    def interval(name: str, signed: bool) -> str:
        low, high = row.get(f"{name}_low"), row.get(f"{name}_high")
        return format_interval(row.get(name), low, high, scale=100, signed=signed)

    return interval("BFTI", True), interval("BFTI_honest", True), interval("H_Majority", False)


def attack_label(attack: str, b: int) -> str:
    """A matrix row's label: ``attack ×b``, marked † for an oracle attack with at least one
    adversary (:data:`ORACLE_NOTE`; without one, nobody reads the answer key)."""
    return f"{attack} ×{b}" + (" †" if b > 0 and attack in ORACLE_ATTACKS else "")


def _ink_on(rgba: Sequence[float]) -> str:
    """Black or white, whichever reads on a cell of colour ``rgba`` (by its relative
    luminance, WCAG 2.x): the numbers on the darkest cells were black on dark red."""

    def linear(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (linear(c) for c in rgba[:3])
    luminance = 0.2126 * r + 0.7152 * g + 0.0722 * b
    # Contrast with black (L + 0.05) / 0.05 beats contrast with white 1.05 / (L + 0.05)
    # exactly when L > ~0.179.
    return "black" if luminance > 0.179 else "white"
