"""Stored records of CodeGen runs: one per debate (outcome and transcript), one per monitored
turn (its features)."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from byzllm.runs import Record, UnitRequests

__all__ = ["CodeGenProblemRecord", "CodeGenTurnRecord"]


class CodeGenProblemRecord(Record):
    """One problem played once under one condition: Pass@1, interventions, the transcript.

    ``passed`` is the final answer's result on the hidden tests; ``hidden_detail`` says why it
    failed (the failing assertion, a timeout, ...). ``hidden_from`` says what those tests were
    (:attr:`~byzllm.tasks.CodeProblem.hidden_from`): ``hidden``, or for a LiveCodeBench
    problem whose private cases did not read, ``public`` (its public cases, which its
    statement shows every role) or ``none`` (no test: counted as failed). ``simulated`` is
    true when any role was simulated, ``simulated_execution`` when the outcome was simulated
    rather than run in the sandbox. ``parse``: per stage (``code``, ``ratings``, ``judge``,
    ``tests``) the replies read and the fall-backs; ``run_failures``: runs that did not finish.
    """

    kind: ClassVar[str] = "codegen_problem"

    split: str
    condition: str
    problem_id: str
    source: str
    repeat: int
    passed: bool
    hidden_status: str
    hidden_detail: str
    hidden_from: str = "hidden"  # records written before it was recorded: hidden tests
    final_seat: int | None
    final_rule: str  # "tests" or "vote" as configured; "only" where one solution was left
    final_code: str
    rounds_played: int
    total_turns: int
    resets: int
    resamples: int
    triggers: list[dict[str, Any]] = Field(default_factory=list)
    scoring_errors: int = 0
    parse: dict[str, dict[str, int]] = Field(default_factory=dict)
    run_failures: dict[str, int] = Field(default_factory=dict)
    syntax_errors: int = 0
    agents: str
    simulated: bool
    simulated_execution: bool
    sim_params: dict[str, Any] | None = None
    requests: UnitRequests = None
    transcript: list[dict[str, Any]] = Field(default_factory=list)
    turns: list[dict[str, Any]] = Field(default_factory=list)


class CodeGenTurnRecord(Record):
    """One judge or tester turn's monitor features, labelled with the debate's Pass@1.

    The fields :func:`byzllm.experiments.monitor.datasets_from_rows` reads (``game_id`` is the
    problem id), so monitors train on them unchanged. ``renormalize`` is how the features were
    computed (None: collected before it was recorded); the monitor set trained on them records
    it, so that a run computing them the other way is refused.
    """

    kind: ClassVar[str] = "codegen_turn"

    split: str
    condition: str
    game_id: str
    repeat: int
    role: str
    agent: str
    turn: int
    round: int
    attempt: int
    decision: str
    entropy: float
    varentropy: float
    kurtosis: float
    n_positions: int
    success: bool
    simulated: bool
    renormalize: bool | None = None
