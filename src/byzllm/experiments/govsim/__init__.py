"""GovSim experiments (Piatti et al. 2024; the rogue-agents paper, §4.1, Table 2): configs,
units on the runner, records, reports with 95% intervals, stock plots and transcripts.

Modules, the same in every experiment domain: ``config`` (pydantic configuration), ``records``
(what is stored per unit), ``experiment`` (units and the work function), ``report`` (summary
rows, plots, transcripts); ``fit`` estimates the simulated fishers' parameters from a run and
replays the run on them (``byzllm sim fit`` / ``compare``). The monitor pipeline plays GovSim
through :mod:`byzllm.experiments.monitor.environments`.
"""

from .config import GovSimRunConfig, GovSimSettings, make_fishers
from .experiment import catch_counts, expand_units, game_record, select_games, work
from .fit import GOVSIM_METRICS, compare_govsim_run, fit_govsim, fit_govsim_run
from .records import GovSimGameRecord
from .report import INTERVAL_NOTE, METRICS, metric_intervals, plot_stocks, summary_rows, transcript

__all__ = [
    "GOVSIM_METRICS",
    "INTERVAL_NOTE",
    "METRICS",
    "GovSimGameRecord",
    "GovSimRunConfig",
    "GovSimSettings",
    "catch_counts",
    "compare_govsim_run",
    "expand_units",
    "fit_govsim",
    "fit_govsim_run",
    "game_record",
    "make_fishers",
    "metric_intervals",
    "plot_stocks",
    "select_games",
    "summary_rows",
    "transcript",
    "work",
]
