"""A tiny experiment command built only from ``byzllm.cli._common`` (used by the tests).

Run as a script it is the same command (``python cli_app.py run CONFIG ...``), so tests can
interrupt it with a real signal.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, ClassVar

import typer
from pydantic import Field

from byzllm.cli._common import (
    ConcurrencyOption,
    ConfigArgument,
    JsonOption,
    MaxFailuresOption,
    RetryFailedOption,
    RunDirOption,
    SetOption,
    cli_errors,
    default_run_dir,
    execute_units,
    load_cli_config,
    summary_exit_code,
)
from byzllm.runs import ExistingFile, ExperimentConfig, Record, make_unit

app = typer.Typer()


class ToyConfig(ExperimentConfig):
    questions: ExistingFile
    repeats: int = Field(default=2, ge=1)
    fail_first_try: bool = False
    delay_s: float = 0.0
    chatter: bool = False  # each unit prints to stdout, as a library may (Ray's driver)


class Answer(Record):
    kind: ClassVar[str] = "answer"
    question: str
    repeat: int


async def answer(payload: dict[str, Any]) -> Answer:
    if payload.get("chatter"):
        print(f"chatter while answering {payload['question']}")
    if payload["delay_s"]:
        await asyncio.sleep(payload["delay_s"])
    marker = Path(payload["marker"])
    if payload["fail_first_try"] and payload["repeat"] == 0 and not marker.exists():
        marker.touch()
        raise RuntimeError(f"first try of {payload['question']} failed")
    return Answer(question=payload["question"], repeat=payload["repeat"])


@app.callback()
def _root() -> None:
    """Toy experiment."""


@app.command()
def run(
    config: ConfigArgument = None,
    run_dir: RunDirOption = None,
    set_: SetOption = None,
    concurrency: ConcurrencyOption = 4,
    retry_failed: RetryFailedOption = False,
    max_failures: MaxFailuresOption = None,
    json_output: JsonOption = False,
) -> None:
    """Answer every question REPEATS times."""
    with cli_errors():
        cfg = load_cli_config(config, ToyConfig, set_)
        target = run_dir or default_run_dir(config, "toy")
        questions = cfg.questions.read_text(encoding="utf-8").split()
        units = [
            make_unit(
                {
                    "question": q,
                    "repeat": r,
                    "fail_first_try": cfg.fail_first_try,
                    "delay_s": cfg.delay_s,
                    "marker": str(Path(target) / f"tried-{q}"),
                    **({"chatter": True} if cfg.chatter else {}),
                },
                label=f"{q}/{r}",
            )
            for q in questions
            for r in range(cfg.repeats)
        ]
        summary = execute_units(
            target,
            units,
            answer,
            config=cfg,
            concurrency=concurrency,
            retry_failed=retry_failed,
            max_failures=max_failures,
            json_output=json_output,
        )
    raise typer.Exit(summary_exit_code(summary))


if __name__ == "__main__":
    app()
