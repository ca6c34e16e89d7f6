"""Batches of WhoDunitEnv games on the experiment runner: config, units, records, report.

One unit is one game played once (``repeat`` r of the same game, for standard errors across
repeated runs, Appendix D.4). The payload carries the game itself, so a unit id changes when
the game does. Results are stored as :class:`WhoDunitGameRecord` (kind ``whodunit_game``) and
one :class:`WhoDunitTurnRecord` (kind ``whodunit_turn``) per agent turn, with the action,
validity, errors, remaining candidates, analysis flags and decision-position distributions.
Simulated results say so (``simulated`` and the simulation parameters on every game record).

Modules, the same in every experiment domain: ``config`` (pydantic configuration), ``records``
(what is stored per unit), ``experiment`` (units and the work function), ``report`` (summary rows);
``fit`` estimates the simulator's parameters from a run and replays the run on them
(``byzllm sim fit`` / ``compare``).
"""

from .config import WhoDunitPlayers, WhoDunitRunConfig
from .experiment import expand_units, game_records, load_games, select_games, work
from .fit import (
    WHODUNIT_METRICS,
    compare_whodunit,
    compare_whodunit_run,
    fit_whodunit,
    fit_whodunit_run,
    simulate_twin,
)
from .records import WhoDunitGameRecord, WhoDunitTurnRecord
from .report import report_rows

__all__ = [
    "WHODUNIT_METRICS",
    "WhoDunitGameRecord",
    "WhoDunitPlayers",
    "WhoDunitRunConfig",
    "WhoDunitTurnRecord",
    "compare_whodunit",
    "compare_whodunit_run",
    "expand_units",
    "fit_whodunit",
    "fit_whodunit_run",
    "game_records",
    "load_games",
    "report_rows",
    "select_games",
    "simulate_twin",
    "work",
]
