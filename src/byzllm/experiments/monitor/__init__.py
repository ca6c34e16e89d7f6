"""Monitor experiments on the runner: collect, train, evaluate (the rogue-agents paper, §4, §5,
§6.1, D.2).

The pipeline, for WhoDunitEnv (the environment-specific part is the work function,
:func:`.experiment.work`; the rest is environment-agnostic and reads only
:class:`~byzllm.envs.TurnObservation`):

1. **collect** — play the train and validation games without interventions; store every
   turn's features (:class:`MonitorTurnRecord`, labelled with its game's outcome) and every
   game's outcome (:class:`MonitorGameRecord`, condition ``"none"``).
2. **train** — :func:`datasets_from_rows` + :func:`~byzllm.monitor.train_monitor_set`:
   the D.2 grid per role, saved as JSON.
3. **evaluate** — play the test games under each condition of
   :mod:`byzllm.monitor.conditions` (no intervention, 1 or 2 resets, the random baseline,
   and the ablations: resample, second-best and worst monitor, turn-count-only monitor),
   over repeated runs.
4. **report** — :mod:`byzllm.monitor.report`'s metrics and figures, and :mod:`.ablations`:
   the Table 3 rows with paired bootstrap intervals and what the uncertainty features add
   over the turn count.

One unit is one game played once under one condition; the same game and repeat use the same
agent random stream in every condition (common random numbers), so conditions differ only by
what the intervener does. Results from simulated agents carry ``simulated=True`` and the
simulation parameters.

Modules, the same in every experiment domain: ``config`` (pydantic configuration), ``records``
(what is stored per unit), ``experiment`` (units and the work function); the summaries are
:mod:`byzllm.monitor.report`'s, plus :mod:`.ablations` (bootstrap intervals live in this
layer).
"""

from .ablations import (
    Difference,
    ablation_rows,
    control_gain_rows,
    feature_gain,
    feature_gain_sentence,
    monitor_gains,
    not_evaluated,
    success_difference,
    verdict,
)
from .config import MonitorExperimentConfig
from .experiment import collect_units, datasets_from_rows, evaluate_units, run_in_memory, work
from .records import MonitorGameRecord, MonitorTurnRecord

__all__ = [
    "Difference",
    "MonitorExperimentConfig",
    "MonitorGameRecord",
    "MonitorTurnRecord",
    "ablation_rows",
    "collect_units",
    "control_gain_rows",
    "datasets_from_rows",
    "evaluate_units",
    "feature_gain",
    "feature_gain_sentence",
    "monitor_gains",
    "not_evaluated",
    "run_in_memory",
    "success_difference",
    "verdict",
    "work",
]
