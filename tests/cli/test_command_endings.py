"""How a command ends on a signal or a full disk. SIGTERM is Ctrl-C for a whole command,
between its stages too (a pipeline that was training monitors or writing reports was
killed outright: no JSON, no resume hint)."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer

from byzllm.cli._common import cli_errors


def test_sigterm_outside_a_run_exits_130_and_the_handler_is_put_back() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(typer.Exit) as ended, cli_errors():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # the handler interrupts this at once
    assert ended.value.exit_code == 130
    assert signal.getsignal(signal.SIGTERM) is before


def test_a_full_disk_is_one_line_even_when_the_write_names_no_file(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """write() on a full disk raises OSError without a file name: it was re-raised, a
    traceback and exit 1."""
    import errno

    with pytest.raises(typer.Exit) as ended, cli_errors():
        raise OSError(errno.ENOSPC, "No space left on device")
    assert ended.value.exit_code == 2
    assert capsys.readouterr().err.strip() == (
        "error: No space left on device; free some space and rerun"
    )


def test_running_out_of_memory_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    """`sim compare --resamples 100000000000` asked numpy for 1.46 TiB: the MemoryError was a
    traceback and exit 1. An array past any 64-bit address space fails the same way."""
    import numpy as np

    with pytest.raises(typer.Exit) as ended, cli_errors():
        np.zeros(10**15)
    assert ended.value.exit_code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: not enough memory (Unable to allocate")
    assert err.endswith("; rerun with smaller settings") and "\n" not in err


def test_a_memory_error_python_cannot_raise_is_not_printed(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """As memory runs out, closing a suspended generator fails too: `graph build complete -n
    2800 -o g.json` under a 1 GB limit printed "Exception ignored in: <generator object
    EdgeView.__iter__>" and a traceback above its one error line. Other unraisable errors
    still reach the hook that was there."""
    import sys

    reached: list[type[BaseException]] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda args: reached.append(args.exc_type))
    before = sys.unraisablehook

    def closing_fails(error: type[BaseException]) -> Iterator[int]:
        try:
            yield 1
        finally:
            raise error

    with pytest.raises(typer.Exit) as ended, cli_errors():
        for error in (MemoryError, ValueError):
            suspended = closing_fails(error)
            next(suspended)
            del suspended  # closed here: its error cannot be raised, only reported
        raise MemoryError
    assert ended.value.exit_code == 2
    assert reached == [ValueError]
    assert sys.unraisablehook is before
    assert capsys.readouterr().err.strip() == (
        "error: not enough memory; rerun with smaller settings"
    )


@pytest.mark.parametrize("area", ["whodunit", "govsim"])
def test_play_against_a_closed_port_stops_at_once(area: str) -> None:
    """`play` retried a closed port for about a minute and exited 1, where the run commands
    refuse in seconds with exit 2: it now makes the same one-request check first."""
    import socket

    from typer.testing import CliRunner

    from byzllm.cli import app

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = CliRunner().invoke(
        app, [area, "play", "--model", "openai/x", "--base-url", f"http://127.0.0.1:{port}/v1"]
    )
    assert result.exit_code == 2
    assert "nothing answers at" in result.output and "connection refused" in result.output


def test_json_on_a_terminal_that_cannot_encode_it_is_escaped_not_replaced(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With replacement on for the tables, --json lost data ("Erd?s?R?nyi")."""
    import io
    import json

    from byzllm.cli._common import print_json

    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="ascii", errors="replace")
    monkeypatch.setattr("sys.stdout", stream)
    print_json({"topology": "Erdős–Rényi", "arrow": "62→75"})
    stream.flush()
    assert json.loads(raw.getvalue()) == {"topology": "Erdős–Rényi", "arrow": "62→75"}


def test_small_error_lines_name_the_option_and_say_the_value_once() -> None:
    from typer.testing import CliRunner

    from byzllm.cli import app

    runner = CliRunner()
    play = runner.invoke(app, ["whodunit", "play", "--turns", "-1"])
    assert play.exit_code == 2 and "--turns: " in play.output
    run = runner.invoke(app, ["consensus", "run", "--set", "T=[-1]", "-o", "unused"])
    assert run.exit_code == 2 and run.output.count("[-1]") == 1


def test_a_profile_of_the_wrong_shape_is_one_line_without_pydantics_text(tmp_path: Path) -> None:
    from byzllm.errors import ConfigError
    from byzllm.experiments._fitting import FittedProfile

    bad = tmp_path / "profile.yaml"
    bad.write_text("domain: consensus\ngroups: [1, 2]\n")
    with pytest.raises(ConfigError) as refused:
        FittedProfile.load(bad)
    line = str(refused.value)
    assert "\n" not in line and "pydantic" not in line and "groups: " in line


def test_an_option_a_record_refuses_is_one_line_and_exit_2() -> None:
    """`govsim play --months 500` built a LakeConfig from the option: pydantic's refusal was
    a traceback and exit 1."""
    from typer.testing import CliRunner

    from byzllm.cli import app

    runner = CliRunner()
    for argv, expected in [
        (["govsim", "play", "--months", "500"], "months: Input should be less than or equal"),
        (["govsim", "play", "--r0", "2000000"], "r0: Input should be less than or equal"),
    ]:
        result = runner.invoke(app, argv)
        assert result.exit_code == 2, result.output
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and expected in lines[0] and "pydantic" not in lines[0]


def test_other_value_errors_stay_visible() -> None:
    """Only pydantic's refusals of input are usage errors: any other ValueError is a bug."""
    with pytest.raises(ValueError, match="a bug"), cli_errors():
        raise ValueError("a bug")
