"""What the page's metrics mean, in a newcomer's words: human labels for record keys, one-line
definitions shown on hover over a column, and the glossary section every page ends with.

The definitions follow the papers: IAA, FAA, BFTI, RA, H-Majority and the per-group rows are
the SAC paper's §5.1 metrics; Success-Rate, Precision, Game-Length, Survival-Rate,
Survival-Time and Efficiency are the rogue-agents paper's §4.1 metrics; Pass@1 its CodeGen
metric (Table 1); the monitor's gain its §4.2 comparisons.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

__all__ = [
    "GLOSSARY",
    "METRICS",
    "METRICS_DOC",
    "Metric",
    "definition",
    "find_term",
    "glossary_html",
    "label",
    "metrics_markdown",
]


@dataclass(frozen=True)
class Metric:
    """One glossary term: what it means, how it is computed, and where the paper defines it.

    ``formula`` is plain text (Unicode, no markup), ``source`` the paper and section
    (empty for the terms of this library's own, such as the 95% interval).
    """

    term: str
    meaning: str
    formula: str = ""
    source: str = ""

    def sentence(self) -> str:
        """The one-line definition shown on hover: the meaning and its source."""
        return f"{self.meaning} ({self.source})." if self.source else f"{self.meaning}."


_SAC = "SAC paper, §5.1"
_RA = "rogue-agents paper, §4.1"

#: Every term, in the order the glossary lists them: the one source of the metrics'
#: definitions for the pages (hover and glossary section), ``byzllm metrics`` and
#: docs/metrics.md (generated from it: ``byzllm metrics --markdown``).
METRICS: tuple[Metric, ...] = (
    Metric(
        "IAA",
        "Initial Agent Accuracy: the share of agents whose first answer (round 0) is correct, "
        "in percent; every agent counts, the adversaries included",
        "IAA = mean over questions q and agents i of 1[r_i,q(0) = y*_q]",
        _SAC,
    ),
    Metric(
        "FAA",
        "Final Agent Accuracy: the share of agents whose answer after the last round T is "
        "correct, in percent",
        "FAA = mean over questions q and agents i of 1[r_i,q(T) = y*_q]",
        _SAC,
    ),
    Metric(
        "BFTI",
        "Byzantine Fault Tolerance Improvement, in points; above zero, the discussion helped "
        "despite the adversaries",
        "BFTI = FAA − IAA",
        _SAC,
    ),
    Metric(
        "honest BFTI",
        "BFTI over the honest agents only (byzllm consensus matrix: BFTI_honest), in points: "
        "what the discussion did for them, whatever the adversaries did with their own "
        "answers (mimic's are right at round 0 and wrong after they defect, which moves BFTI "
        "by itself)",
        "honest BFTI = FAA over H − IAA over H",
        "not in the SAC paper: the same difference as its BFTI (§5.1), over H",
    ),
    Metric(
        "RA",
        "Round-level Accuracy: the share of questions whose majority vote of all agents at T is "
        "correct (a tie at the top counts as wrong; agents with no answer abstain)",
        "RA = mean over q of 1[majority of {r_i,q(T) : i ∈ V} = y*_q]",
        _SAC,
    ),
    Metric(
        "H-Majority",
        "Honest Majority: the share of questions whose majority vote of the honest agents at "
        "T is correct (same tie rule as RA)",
        "H-Majority = mean over q of 1[majority of {r_i,q(T) : i ∈ H} = y*_q]",
        _SAC,
    ),
    Metric(
        "W / S IAA→FAA",
        "IAA and FAA of the weak (W) and strong (S) honest agents only; a round's W and S "
        "are the groups' accuracy after that round",
        "W(t) = mean over q and i ∈ weak of 1[r_i,q(t) = y*_q]; S(t) likewise over strong",
        "SAC paper, §5.1 and Tables 2 and 4",
    ),
    Metric(
        "Pass@1",
        "The share of problems whose final code passes the hidden tests on the first try",
        "Pass@1 = mean over problems p of 1[final code of p passes all of p's tests]",
        "rogue-agents paper, §5 and Table 1 (CodeGen)",
    ),
    Metric(
        "Success-Rate",
        "The share of WhoDunit games that end with the culprit accused",
        "Success-Rate = games won / games",
        _RA,
    ),
    Metric(
        "Precision",
        "Success among the games that ended in an accusation (undefined when none did); with "
        "several runs (repeats), each run's, then their mean, as for the other metrics",
        "Precision = games won / games with an accusation (per run; mean over runs)",
        "rogue-agents paper, §4.1 and App. D.4",
    ),
    Metric(
        "Game-Length",
        "Mean agent turns per game, the turns before an intervention included",
        "Game-Length = mean over games of the turns played",
        _RA,
    ),
    Metric(
        "Survival-Rate",
        "The share of GovSim games whose lake lasts the whole season: Survival-Time reaching "
        "the season's length m",
        "Survival-Rate = mean over games of 1[Survival-Time ≥ m]",
        _RA,
    ),
    Metric(
        "Survival-Time",
        "The month (from 1) in which the lake's stock after the harvest first falls below the "
        "collapse threshold γ, or m when it never does (GovSim's own code)",
        "Survival-Time = min{j : stock after month j < γ}, else m",
        _RA,
    ),
    Metric(
        "Efficiency",
        "The total catch against a season that takes the sustainable half of the lake every "
        "month: 1 − the unharvested share of the sustainable catch",
        "Efficiency = 1 − max(0, c − Σ_j Σ_i r(g_i, j)) / c, c = m·R0/2",
        _RA,
    ),
    Metric(
        "Monitor gain",
        "Success-Rate (or Pass@1) with the monitor's interventions minus without them, paired "
        "over the same games or problems, in points",
        "gain = mean over games g of (success_g with interventions − success_g without)",
        "rogue-agents paper, §4.2 and §5",
    ),
    Metric(
        "P(success)",
        "The monitor's estimate, after a turn, that the game will succeed; a turn below the "
        "threshold triggers an intervention (a reset of the flagged agent)",
        "P(success | turn, uncertainty features) = clip(ridge regression on polynomial "
        "features of the scaled inputs, 0, 1)",
        "rogue-agents paper, §2 and App. D.2",
    ),
    Metric(
        "95% interval",
        "The range holding the metric in 95% of bootstrap resamples of the questions or "
        "games (a question's seeds, a game's repeats resampled together); the paper's number "
        "inside it is consistent with ours. A rate that every unit got right (or wrong) has "
        "no spread to resample: it gets the Wilson score interval over its units instead "
        "(30 of 30: [88.6, 100])",
        "[2.5th, 97.5th] percentile of the metric over 2,000 resamples with replacement; "
        "n of n: [n / (n + 1.96²), 1]",
        "Wilson (1927)",
    ),
    Metric(
        "Significant",
        "A paired gain whose 95% interval excludes 0, whose units lean its way (more better "
        "than worse) and pass the exact sign test (ties left out, two-sided p < 0.05)",
        "p = min(1, 2 · Σ_{i ≤ min(b, w)} C(b + w, i) / 2^(b + w))",
    ),
    Metric(
        "Parse health",
        "How many model outputs parsed as asked, and how many fell back to a default move or "
        "answer; simulated agents always parse",
        "fallback rate = fallbacks / calls, per stage",
    ),
    Metric(
        "Games / plays",
        "Games: distinct games; plays: games played, a game played in several runs (repeats) "
        "or under several conditions counting once per play",
        "plays = games × runs, per condition, when every game is played in every run",
    ),
    Metric(
        "Simulated / real",
        "Simulated: agents drawn from a statistical profile of named, sourced assumptions "
        "(or one fitted to a real run), no language model; real: the answers of a language "
        "model",
    ),
)

#: Term -> one-line definition (the glossary section lists them in this order).
GLOSSARY: dict[str, str] = {m.term: m.sentence() for m in METRICS}

#: Where the glossary lives in the documentation (pages and reports link to it).
METRICS_DOC = "docs/metrics.md"

#: Record keys and column names -> the words a reader sees.
_LABELS: dict[str, str] = {
    "H_Majority": "H-Majority",
    "pass_at_1": "Pass@1",
    "success_rate": "Success-Rate",
    "game_length": "Game-Length",
    "survival_rate": "Survival-Rate",
    "survival_time": "Survival-Time",
    "precision": "Precision",
    "efficiency": "Efficiency",
    "gain": "Monitor gain",
    **{f"{g}_{m}": f"{g} {m}" for g in ("W", "S") for m in ("IAA", "FAA")},
}

#: Column names (lower case, units and brackets dropped) -> their glossary term.
_TERMS: dict[str, str] = {
    **{t.lower(): t for t in GLOSSARY},
    "h-maj": "H-Majority",
    "h_majority": "H-Majority",
    "pass_at_1": "Pass@1",
    "success_rate": "Success-Rate",
    "game_length": "Game-Length",
    "survival_rate": "Survival-Rate",
    "survival_time": "Survival-Time",
    "survival-time": "Survival-Time",
    "gain": "Monitor gain",
    "gain (points)": "Monitor gain",
    "w iaa→faa": "W / S IAA→FAA",
    "s iaa→faa": "W / S IAA→FAA",
    **{f"{g} {m}": "W / S IAA→FAA" for g in ("w", "s") for m in ("iaa", "faa")},
    "w": "W / S IAA→FAA",
    "s": "W / S IAA→FAA",
    "p(success)": "P(success)",
    "games": "Games / plays",
    "plays": "Games / plays",
}


def label(key: str) -> str:
    """The words a reader sees for ``key``: ``success_rate`` -> ``Success-Rate``; other
    snake_case keys get spaces (``parse_fallbacks`` -> ``parse fallbacks``)."""
    return _LABELS.get(key, key.replace("_", " ") if "_" in key else key)


def find_term(column: str) -> str | None:
    """The glossary term of a column or metric name (``FAA``, ``Pass@1 %``,
    ``success_rate``, ``survival time``), if any."""
    name = re.sub(r"\s*(%|\(%\)|\[.*\])$", "", column.strip()).lower()
    return (
        _TERMS.get(name) or _TERMS.get(name.replace(" ", "_")) or _TERMS.get(name.replace("_", "-"))
    )


def definition(column: str) -> str | None:
    """The glossary definition of a column (``FAA``, ``Pass@1 %``, ``success_rate``), if any."""
    term = find_term(column)
    return None if term is None else f"{term}: {GLOSSARY[term]}"


def glossary_html() -> str:
    """Every term with its definition and formula (hover a column's name for the first)."""
    items = "".join(
        f"<dt>{html.escape(m.term)}</dt><dd>{html.escape(m.sentence())}"
        + (f"<br><code>{html.escape(m.formula)}</code>" if m.formula else "")
        + "</dd>"
        for m in METRICS
    )
    note = (
        f"<p class='glossary-source'>The same definitions: <code>byzllm metrics</code> and "
        f"{METRICS_DOC}.</p>"
    )
    return f"<dl class='glossary'>{items}</dl>{note}"


def metrics_markdown() -> str:
    """docs/metrics.md: every term with its formula and the paper's section."""
    lines = [
        "# Metrics",
        "",
        "Every metric byzllm reports, with its formula and where the paper defines it. The same",
        "text is `byzllm metrics` on the command line, the glossary at the end of every page",
        "(`byzllm view`, `byzllm reproduce`) and the definition shown on hovering a column; this",
        "file is generated from it (`byzllm metrics --markdown > docs/metrics.md`).",
        "",
        "Notation: questions q with ground truth y*_q; r_i,q(t) agent i's answer after round t",
        "(0: the first answer, T: the last round); V all agents, H the honest ones; games g;",
        "a season of m months, R0 the lake's initial stock, r(g_i, j) agent i's catch in",
        "month j. Accuracies and rates are printed in percent, differences in points, each",
        "with its 95% interval.",
        "",
        "| metric | meaning | formula | paper |",
        "|---|---|---|---|",
    ]
    for m in METRICS:
        cells = [m.term, m.meaning, f"`{m.formula}`" if m.formula else "", m.source]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"
