"""--json output is JSON: a value that is not a number (the standard error of one game, an
interval of one question) is null, never the bare NaN that strict parsers refuse."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, ClassVar

from typer.testing import CliRunner

from byzllm.cli import app
from byzllm.cli._common import print_json
from byzllm.runs import Record

RUNNER = CliRunner()


def _strict(text: str) -> Any:
    def refuse(constant: str) -> None:
        raise ValueError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


class _Kept(Record):
    kind: ClassVar[str] = "kept"
    value: float


def test_print_json_writes_null_for_nan_and_infinity(capsys: Any) -> None:
    import numpy as np

    print_json(
        {"nan": math.nan, "inf": [math.inf], "np": np.float64("nan"), "r": _Kept(value=math.nan)}
    )
    assert _strict(capsys.readouterr().out) == {
        "nan": None,
        "inf": [None],
        "np": None,
        "r": {"value": None},
    }


def test_a_one_game_whodunit_report_is_strict_json(tmp_path: Path) -> None:
    run = tmp_path / "one"
    made = RUNNER.invoke(
        app,
        ["whodunit", "run", "--set", "n_games=1", "--set", "split=generated", "-o", str(run)],
    )
    assert made.exit_code == 0, made.output
    result = RUNNER.invoke(app, ["whodunit", "report", str(run), "--json"])
    assert result.exit_code == 0, result.output
    report = _strict(result.stdout)
    assert report  # parsed without a bare NaN
