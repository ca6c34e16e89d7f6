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

__all__ = ["GLOSSARY", "definition", "glossary_html", "label"]

#: Term -> one-line definition (the glossary section lists them in this order).
GLOSSARY: dict[str, str] = {
    "IAA": "Initial Agent Accuracy: the share of agents whose first answer (round 0) is "
    "correct, in percent (SAC paper, §5.1).",
    "FAA": "Final Agent Accuracy: the share of agents whose answer after the last round T is "
    "correct, in percent (SAC paper, §5.1).",
    "BFTI": "Byzantine Fault Tolerance Improvement: FAA − IAA in points; above zero, the "
    "discussion helped despite the adversaries (SAC paper, §5.1).",
    "RA": "Robust Accuracy: whether the majority vote of all agents at T is correct (ties "
    "count as wrong), as a share of questions (SAC paper, §5.1).",
    "H-Majority": "Honest Majority: whether the majority vote of the honest agents at T is "
    "correct, as a share of questions (SAC paper, §5.1).",
    "W / S IAA→FAA": "IAA and FAA of the weak (W) and strong (S) honest agents only; a "
    "round's W and S are the groups' accuracy after that round (SAC paper, Tables 2 and 4).",
    "Pass@1": "The share of problems whose final code passes the hidden tests on the first "
    "try (rogue-agents paper, CodeGen, Table 1).",
    "Success-Rate": "The share of WhoDunit games that end with the culprit accused "
    "(rogue-agents paper, §4.1).",
    "Precision": "Success among the games that ended in an accusation (rogue-agents paper, §4.1).",
    "Game-Length": "Mean turns per game (rogue-agents paper, §4.1).",
    "Survival-Rate": "The share of GovSim games whose lake lasts every month, Survival-Time "
    "reaching the season's length m (rogue-agents paper, §4.1).",
    "Survival-time": "The month (from 1) in which the lake's stock first falls below the "
    "collapse threshold, or m when it never does (GovSim; rogue-agents paper, §4.1).",
    "Efficiency": "1 − the unharvested share of the sustainable catch, c = m·R0/2 "
    "(rogue-agents paper, §4.1).",
    "Monitor gain": "Success (or Pass@1) with the monitor's interventions minus without them, "
    "paired over the same games or problems, in points (rogue-agents paper, §4.2).",
    "P(success)": "The monitor's estimate, after a turn, that the game will succeed; a turn "
    "below the threshold triggers an intervention (rogue-agents paper, §2).",
    "95% interval": "The range holding the metric in 95% of bootstrap resamples of the "
    "questions or games; the paper's number inside it is consistent with ours.",
    "Parse health": "How many model outputs parsed as asked, and how many fell back to a "
    "default move or answer; simulated agents always parse.",
    "Simulated / real": "Simulated: agents drawn from a fitted statistical profile, no "
    "language model; real: the answers of a language model.",
}

#: Record keys and column names -> the words a reader sees.
_LABELS: dict[str, str] = {
    "H_Majority": "H-Majority",
    "pass_at_1": "Pass@1",
    "success_rate": "Success-Rate",
    "game_length": "Game-Length",
    "survival_rate": "Survival-Rate",
    "survival_time": "Survival-time",
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
    "survival_time": "Survival-time",
    "survival-time": "Survival-time",
    "gain": "Monitor gain",
    "gain (points)": "Monitor gain",
    "w iaa→faa": "W / S IAA→FAA",
    "s iaa→faa": "W / S IAA→FAA",
    **{f"{g} {m}": "W / S IAA→FAA" for g in ("w", "s") for m in ("iaa", "faa")},
    "w": "W / S IAA→FAA",
    "s": "W / S IAA→FAA",
    "p(success)": "P(success)",
}


def label(key: str) -> str:
    """The words a reader sees for ``key``: ``success_rate`` -> ``Success-Rate``; other
    snake_case keys get spaces (``parse_fallbacks`` -> ``parse fallbacks``)."""
    return _LABELS.get(key, key.replace("_", " ") if "_" in key else key)


def definition(column: str) -> str | None:
    """The glossary definition of a column (``FAA``, ``Pass@1 %``, ``success_rate``), if any."""
    name = re.sub(r"\s*(%|\(%\)|\[.*\])$", "", column.strip()).lower()
    term = _TERMS.get(name)
    return None if term is None else f"{term}: {GLOSSARY[term]}"


def glossary_html() -> str:
    """Every term with its definition (hover a column's name for the same line)."""
    items = "".join(
        f"<dt>{html.escape(term)}</dt><dd>{html.escape(text)}</dd>"
        for term, text in GLOSSARY.items()
    )
    return f"<dl class='glossary'>{items}</dl>"
