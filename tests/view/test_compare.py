"""The reproduce page's comparison (paper / ours / difference per cell, coloured by the
interval) and the glossary's labels and definitions."""

from __future__ import annotations

import re

from byzllm.view import GLOSSARY, comparison_html, definition, label


def _cells(html: str) -> list[tuple[str, str]]:
    return re.findall(r'<td class="([a-z ]+)" title="[^"]*">([^<]*)</td>', html)


def test_each_cell_is_paper_ours_and_difference_coloured_by_the_interval() -> None:
    rows = [
        {"protocol": "sac", "topology": "merg", "simulated": True, "FAA": 60.0, "FAA_low": 50.0,
         "FAA_high": 70.0, "FAA_paper": 62.4, "BFTI": 2.0, "BFTI_low": 1.0, "BFTI_high": 3.0,
         "BFTI_paper": 7.6},
        {"protocol": "debate", "topology": "merg", "simulated": True, "FAA": 40.0,
         "FAA_low": 30.0, "FAA_high": 50.0, "FAA_paper": None, "BFTI": 1.0,
         "BFTI_paper": None},
    ]  # fmt: skip
    html = comparison_html(rows, ["FAA", "BFTI"], ["protocol", "topology"], note="bootstrap")
    cells = _cells(html)
    assert cells[:6] == [
        ("paper in", "62.4"),
        ("in", "60.0 [50.0, 70.0]"),
        ("in", "-2.4"),
        ("paper out", "7.6"),
        ("out", "2.0 [1.0, 3.0]"),
        ("out", "-5.6"),
    ]
    assert [c[0] for c in cells[6:]] == ["paper none", "none", "none"] * 2
    assert ">simulated<" in html and "bootstrap" in html
    # The metric's definition on hover.
    assert 'title="FAA: Final Agent Accuracy' in html


def test_the_results_column_of_a_partly_simulated_run_says_so() -> None:
    """Each row's ``results`` cell: ``simulated``, ``real model``, or, for a run with only
    some groups on a model, ``partly simulated`` with the run's label on hover (it said
    ``simulated``)."""
    rows = [{"protocol": "sac", "simulated": True, "FAA": 60.0, "FAA_paper": 62.4}]
    keys = ["protocol"]
    assert "<td>simulated</td>" in comparison_html(rows, ["FAA"], keys)
    real = [{**rows[0], "simulated": False}]
    assert "<td>real model</td>" in comparison_html(real, ["FAA"], keys)
    note = "partly simulated: weak agents on m; the other agents simulated (not real LLMs)"
    html = comparison_html(rows, ["FAA"], keys, partly=note)
    assert f'<td title="{note}">partly simulated</td>' in html and ">simulated<" not in html


def test_without_an_interval_a_cell_is_inside_only_when_equal() -> None:
    rows = [{"condition": "monitor", "gain": 6.1, "gain_paper": 6.1}]
    assert _cells(comparison_html(rows, ["gain"], ["condition"]))[0][0] == "paper in"
    rows = [{"condition": "monitor", "gain": 6.0, "gain_paper": 6.1}]
    assert _cells(comparison_html(rows, ["gain"], ["condition"]))[0][0] == "paper out"


def test_labels_and_definitions() -> None:
    assert label("success_rate") == "Success-Rate" and label("H_Majority") == "H-Majority"
    assert label("parse_fallbacks") == "parse fallbacks" and label("H-Maj") == "H-Maj"
    for column in ("IAA", "FAA", "BFTI", "RA", "H-Maj", "Pass@1 %", "survival_time", "gain"):
        assert definition(column), column
    assert definition("seed") is None
    for term in ("IAA", "FAA", "BFTI", "RA", "H-Majority", "Pass@1", "Survival-Time"):
        assert term in GLOSSARY
    assert "Monitor gain" in GLOSSARY


def test_the_difference_is_the_rows_own() -> None:
    """The page recomputed the difference from the rounded cells: ra-table2's Survival-Time
    read 6.8 / 7.5 (-0.8) on the console and in the CSV, -0.7 on the page."""
    rows = [
        {"condition": "none", "survival_time": 6.8, "survival_time_low": 5.4,
         "survival_time_high": 8.0, "survival_time_paper": 7.5, "survival_time_diff": -0.8},
    ]  # fmt: skip
    cells = _cells(comparison_html(rows, ["survival_time"], ["condition"]))
    assert [text for _, text in cells] == ["7.5", "6.8 [5.4, 8.0]", "-0.8"]
    # A row without its difference still gets one, from the cells.
    del rows[0]["survival_time_diff"]
    assert _cells(comparison_html(rows, ["survival_time"], ["condition"]))[2][1] == "-0.7"


def test_a_difference_that_is_no_percentage_says_its_unit() -> None:
    """ra-table2's Survival-Time differs from the paper's by months (6.8 against 7.5: -0.7
    months) and ra-table3's Game-Length by turns; the legend said every difference was in
    points."""
    rows = [{"condition": "none", "survival_rate": 30.0, "survival_rate_paper": 35,
             "survival_time": 6.8, "survival_time_paper": 7.5}]  # fmt: skip
    page = comparison_html(rows, ["survival_rate", "survival_time"], ["condition"])
    assert "Differences are ours − paper, in points (Survival-Time in months).</p>" in page
    table3 = [{"condition": "none", "length": 17.1, "length_paper": 16.2}]
    assert "in points (length in turns)." in comparison_html(table3, ["length"], ["condition"])
    consensus = [{"protocol": "sac", "FAA": 57.1, "FAA_paper": 62.4}]
    assert "ours − paper, in points.</p>" in comparison_html(consensus, ["FAA"], ["protocol"])
