"""`byzllm reproduce sac-table1 --real`: servers started by the command, the whole page."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from byzllm.cli import app
from byzllm.reproduce.page import NO_SENSITIVITY, REAL_UNEXPLAINED

pytestmark = pytest.mark.real_model

RUNNER = CliRunner()


# One question under four protocols, with worked refinement (up to 256 tokens per refine):
# a few minutes on 2 cores, more on a busy machine.
@pytest.mark.timeout(900)
def test_reproduce_real_runs_every_protocol_and_writes_the_page(
    tmp_path: Path, require_extra: Callable[..., None]
) -> None:
    """SmolLM2 as strong and weak (the fastest real model): the path, not the accuracies."""
    require_extra("llama_cpp", extra="local")
    run_dir = tmp_path / "real"
    args = ["reproduce", "sac-table1", "--real", "smollm2", "--real-weak", "smollm2"]
    result = RUNNER.invoke(app, [*args, "-n", "1", "-o", str(run_dir), "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["simulated"] is False
    rows = {row["protocol"]: row for row in payload["rows"]}
    assert set(rows) == {"sac", "cp-wbft", "debate", "majority"}
    assert rows["sac"]["BFTI_paper"] == pytest.approx(7.6)  # the paper ran SAC on MERG
    assert rows["debate"]["BFTI_paper"] is None  # and not debate
    page = (run_dir / "report" / "real.md").read_text()
    assert "| sac | score |" in page and "Do the scores separate" in page
    assert "smollm2" in page and "Regenerate:" in page
    # The reproduce page has both sections on real models too: gaps, each unexplained with
    # the reason, and a sensitivity section that says why nothing was moved.
    reproduce_page = (run_dir / "report" / "reproduce.md").read_text()
    assert "## Gaps larger than their interval" in reproduce_page
    assert f"## Sensitivity\n\n{NO_SENSITIVITY}" in reproduce_page
    assert all(gap["explanation"] == REAL_UNEXPLAINED for gap in payload["gaps"])
    again = RUNNER.invoke(app, [*args, "-n", "1", "-o", str(run_dir)])  # resumes: nothing to run
    assert again.exit_code == 0, again.output
    assert "0 of 4 units to run" in again.output or "nothing to run" in again.output


def test_real_is_refused_for_tables_without_a_real_config() -> None:
    result = RUNNER.invoke(app, ["reproduce", "sac-table5", "--real", "qwen0.5b"])
    assert result.exit_code == 2
    assert "--real is available for sac-table1" in result.output


def test_real_with_an_unknown_model_is_one_line() -> None:
    result = RUNNER.invoke(app, ["reproduce", "sac-table1", "--real", "gpt-9"])
    assert result.exit_code == 2
    assert result.output.count("error:") == 1 and "qwen0.5b" in result.output


def test_whodunit_real_refuses_partial_and_unknown_models_in_one_line() -> None:
    partial = RUNNER.invoke(app, ["reproduce", "ra-fig4", "--real", "qwen0.5b", "--partial"])
    assert partial.exit_code == 2
    assert partial.output.count("error:") == 1 and "--partial" in partial.output
    unknown = RUNNER.invoke(app, ["reproduce", "ra-fig4", "--real", "gpt-9"])
    assert unknown.exit_code == 2 and unknown.output.count("error:") == 1
    listed = RUNNER.invoke(app, ["reproduce", "--list", "--json"])
    rows = {row["name"]: row for row in json.loads(listed.stdout)["reproductions"]}
    assert rows["ra-fig4"]["real"] == "yes" and rows["sac-table1"]["real"] == "yes"
