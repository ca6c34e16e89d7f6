"""The viewer's attack × protocol heat-map marks an oracle attack's rows as the matrix does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from byzllm.cli import app
from byzllm.experiments.consensus.report import ORACLE_NOTE
from byzllm.view import render_view
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


def test_two_configurations_of_one_attack_and_b_keep_their_rows() -> None:
    """A run of its own compositions can hold 4s2w1b-replay and 6s0w1b-replay: the same
    attack and b. Their cells shared one key, and the second hid the first."""
    weak = {**_cell("replay", 1, False), "composition": "4s2w1b-replay", "F": 3, "T": 2}
    strong = {
        **weak,
        "composition": "6s0w1b-replay",
        "BFTI": -0.667,
        "BFTI_low": -0.857,
        "BFTI_high": -0.571,
    }
    page = heatmap_html([weak, _cell("inject", 1, True) | {"composition": "4s2w1b-inject"}, strong])
    assert "+10.0 [+0.0, +20.0]" in page and "-66.7 [-85.7, -57.1]" in page
    assert "<td>4s2w1b-replay, F=3, T=2</td>" in page
    assert "<td>6s0w1b-replay, F=3, T=2</td>" in page
    assert "<th>configuration</th>" in page


def test_a_matrix_needs_no_configuration_column() -> None:
    page = heatmap_html([_cell("replay", 1, False), _cell("inject", 1, True)])
    assert "configuration" not in page


def test_a_run_page_keeps_both_configurations_of_one_attack_and_b(tmp_path: Path) -> None:
    """End to end: a consensus run of its own compositions, its page's heat-map."""
    config = tmp_path / "two.yaml"
    config.write_text(
        "protocols: [cp-wbft]\ntopologies: [complete]\ncompositions:\n"
        "  - {strong: 4, weak: 2, byzantine: 1, attack: replay}\n"
        "  - {strong: 6, weak: 0, byzantine: 1, attack: replay}\n"
        "  - {strong: 4, weak: 2, byzantine: 1, attack: inject}\n"
        "F: [3]\nT: [2]\nseeds: [0]\ndataset: {name: synthetic, n: 3}\n",
        encoding="utf-8",
    )
    run_dir = tmp_path / "run"
    result = CliRunner().invoke(app, ["consensus", "run", str(config), "-o", str(run_dir)])
    assert result.exit_code == 0, result.output
    page = render_view(run_dir)
    heatmap = page[page.index('id="heatmap"') :]
    heatmap = heatmap[: heatmap.index("</section>")]
    for composition in ("4s2w1b-replay", "6s0w1b-replay", "4s2w1b-inject"):
        assert f"<td>{composition}, F=3, T=2</td>" in heatmap
    assert heatmap.count("<td class='heat'") == 3
