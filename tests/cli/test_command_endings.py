"""How a command ends on a signal or a full disk. SIGTERM is Ctrl-C for a whole command,
between its stages too (a pipeline that was training monitors or writing reports was
killed outright: no JSON, no resume hint)."""

from __future__ import annotations

import os
import signal
import time

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
