"""Stored records of the monitor experiments: per-turn features, per-game outcomes."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, Field

from byzllm.monitor import Trigger
from byzllm.runs import Record, UnitRequests

from ..parse_health import MoveParse

__all__ = ["LakeCurve", "MonitorGameRecord", "MonitorTurnRecord"]


class MonitorTurnRecord(Record):
    """One turn's monitor features, labelled with its game's outcome."""

    kind: ClassVar[str] = "monitor_turn"

    split: str
    game_id: str
    repeat: int
    role: str
    agent: str
    turn: int
    entropy: float
    varentropy: float
    kurtosis: float
    n_positions: int
    success: bool
    simulated: bool


class LakeCurve(BaseModel):
    """A GovSim game's lake over the season, as the viewer plots it with the monitor's alarms
    and resets (the rogue-agents paper, §4.1-4.2).

    ``stocks``: the stock at the start of each month played, then after the last harvest;
    ``turn_months``: the month of each catch decision asked, in turn order (turn ``k``, the
    ``turn`` of a trigger or a per-turn score, fell in month ``turn_months[k - 1]``; a reset
    month's discarded decisions included).
    """

    stocks: list[int]
    collapse_below: int
    turn_months: list[int]


class MonitorGameRecord(Record):
    """One game under one condition: outcome, length, interventions and triggers.

    ``env`` names the environment (:mod:`.environments`); ``success`` is what its monitors
    predict (WhoDunit: the culprit accused; GovSim: the lake survived the season);
    ``outcome`` holds the environment's other metrics (GovSim: survival_time,
    survival_rate, efficiency; ``None`` for WhoDunit, whose metrics are the fields above).
    """

    kind: ClassVar[str] = "monitor_game"

    env: str = "whodunit"
    outcome: dict[str, float] | None = None
    split: str
    condition: str
    game_id: str
    repeat: int
    variant: str = ""
    n_suspects: int = 0
    success: bool
    accused: bool = False
    total_turns: int
    resets: int
    resamples: int
    parse_failures: int
    fallbacks: int
    # Typed: the report takes the first trigger's turn of each game.
    triggers: list[Trigger] = Field(default_factory=list)
    transcript: list[dict[str, Any]] = Field(
        default_factory=list,
        description="every monitored turn: {turn, role, agent, action (short), tokens: [[most "
        "likely token, entropy]] at its decision positions} (empty in records written before "
        "it was kept)",
    )
    turn_scores: list[dict[str, Any]] = Field(
        default_factory=list,
        description="the monitor's P(success) on every turn it scored: {turn, role, agent, "
        "p_success} (empty without a monitor, and in records written before they were kept)",
    )
    lake: LakeCurve | None = Field(
        default=None,
        description="GovSim: the stock month by month and the month of each turn (None for "
        "WhoDunit, and in records written before it was kept)",
    )
    scoring_errors: int = 0
    agents: str
    simulated: bool
    monitors_simulated: bool = Field(
        default=False,
        description="the monitors this game ran were trained on simulated agents' games (a "
        "transfer to these agents; False also in records written before it was kept)",
    )
    sim_params: dict[str, Any] | None = None
    parse: MoveParse = None
    requests: UnitRequests = None
