"""The viewer's attack × protocol heat-map marks an oracle attack's rows as the matrix does."""

from __future__ import annotations

from typing import Any

from byzllm.experiments.consensus.report import ORACLE_NOTE
from byzllm.view._consensus import heatmap_html


def _cell(attack: str, b: int, oracle: bool) -> dict[str, Any]:
    return {
        "topology": "complete",
        "attack": attack,
        "adversaries": b,
        "protocol": "sac",
        "oracle_attack": oracle,
        "BFTI": 0.1,
        "BFTI_low": 0.0,
        "BFTI_high": 0.2,
        "H_Majority": 0.9,
    }


def test_oracle_rows_are_marked_and_explained() -> None:
    page = heatmap_html([_cell("replay", 1, False), _cell("collude", 2, True)])
    assert "<td>collude †</td>" in page and "<td>replay</td>" in page
    assert ORACLE_NOTE.replace("'", "&#x27;") in page


def test_without_an_oracle_row_there_is_no_note() -> None:
    # Collude with no adversary: nobody reads the answer key (matrix.attack_label).
    page = heatmap_html([_cell("replay", 1, False), _cell("collude", 0, False)])
    assert "†" not in page


def test_a_cell_shows_what_the_matrix_prints() -> None:
    """`consensus matrix` prints BFTI, BFTI over the honest agents and H-Majority, each with
    its interval; the page's cell had no honest BFTI (under mimic, BFTI moves with the
    adversary's own answer) and H-Majority without its interval."""
    cell = {
        **_cell("mimic", 2, True),
        "BFTI": -0.286,
        "BFTI_low": -0.286,
        "BFTI_high": -0.286,
        "BFTI_honest": 0.05,
        "BFTI_honest_low": 0.01,
        "BFTI_honest_high": 0.09,
        "H_Majority_low": 0.7,
        "H_Majority_high": 1.0,
    }
    page = heatmap_html([cell])
    assert "-28.6 [-28.6, -28.6]<br><small>honest +5.0 [+1.0, +9.0]</small>" in page
    assert "<small>H-Maj 90.0 [70.0, 100.0]</small>" in page
    assert "honest: BFTI over the honest agents" in page
