"""The consensus page's accuracy-per-round plot: an inline SVG line chart, one line per
group with a point per round at its accuracy, on a 0-100% axis."""

from __future__ import annotations

import re

from byzllm.protocols import ConsensusMetrics, RoundMetrics
from byzllm.view._consensus import _round_plot_svg


def _metrics(strong: list[float], weak: list[float | None]) -> ConsensusMetrics:
    rounds = [
        RoundMetrics(
            round=t, accuracy=(s + (w or 0)) / 2, weak=w, strong=s, honest=s, ra=s, h_majority=s
        )
        for t, (s, w) in enumerate(zip(strong, weak, strict=True))
    ]
    first, last = rounds[0], rounds[-1]
    return ConsensusMetrics(
        n_questions=3, n_rounds=len(rounds) - 1, IAA=first.accuracy, FAA=last.accuracy,
        BFTI=last.accuracy - first.accuracy, RA=last.ra, W_IAA=first.weak, W_FAA=last.weak,
        S_IAA=first.strong, S_FAA=last.strong, H_Majority=last.h_majority, per_round=rounds,
    )  # fmt: skip


META = {"protocol": "sac", "topology": "merg", "composition": "4s2w1b-replay<x>"}


def test_each_group_is_a_line_through_its_accuracies() -> None:
    svg = _round_plot_svg(META, _metrics([0.5, 1.0, 0.75], [0.0, 0.25, 0.5]))
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    # The plot area spans y 26 (100%) .. 218 (0%) and x 46 (round 0) .. 330 (round 2).
    strong = re.search(r"class='series-strong' points='([^']*)'", svg)
    assert strong is not None and strong.group(1) == "46.0,122.0 188.0,26.0 330.0,74.0"
    points = re.findall(r"<title>(weak, round \d: [\d.]+%)</title>", svg)
    assert points == ["weak, round 0: 0.0%", "weak, round 1: 25.0%", "weak, round 2: 50.0%"]
    assert "series-accuracy" in svg
    assert "sac · merg · 4s2w1b-replay&lt;x&gt;" in svg  # the title, escaped
    assert ">accuracy (%)</text>" in svg and ">round</text>" in svg


def test_a_group_without_agents_draws_no_line() -> None:
    svg = _round_plot_svg(META, _metrics([0.5, 1.0], [None, None]))
    assert "series-strong" in svg and "series-weak" not in svg
    assert ">weak</text>" not in svg  # nor a legend entry


def test_the_title_names_f_and_t() -> None:
    """A run of F in {1, 3} drew two plots titled "sac · complete · 4s2w1b-replay" alike."""
    plots = [_round_plot_svg({**META, "F": f, "T": 2}, _metrics([0.5], [0.0])) for f in (1, 3)]
    assert "4s2w1b-replay&lt;x&gt; · F=1 · T=2</text>" in plots[0]
    assert "4s2w1b-replay&lt;x&gt; · F=3 · T=2</text>" in plots[1]
