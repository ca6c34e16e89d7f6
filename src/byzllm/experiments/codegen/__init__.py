"""CodeGen runs on the experiment runner (the rogue-agents paper, §4.1, §5 Table 1): config,
units, records, report, and the monitor pipeline on CodeGen.

One unit is one problem debated once under one condition. Results are stored as
:class:`CodeGenProblemRecord` (kind ``codegen_problem``: Pass@1, the failing assertion,
interventions, parse and run failures, the transcript) and one :class:`CodeGenTurnRecord`
(kind ``codegen_turn``) per judge and tester turn with its monitor features. Simulated
results say so (``simulated``, ``simulated_execution`` and the simulation parameters).

Modules, the same in every experiment domain: ``config``, ``records``, ``experiment`` (units,
the work function, monitor training), ``report`` (Table 1 rows with bootstrap intervals); and
``splits`` (disjoint, seeded train / validation / test splits of HumanEval); ``fit``
estimates the simulated roles' parameters from a run and replays the run on them (``byzllm
sim fit`` / ``compare``).
"""

from .config import CODEGEN_CONDITIONS, TABLE1_CONDITIONS, CodeGenCondition, CodeGenConfig
from .experiment import (
    collect_units,
    load_split,
    resolve_execution,
    run_in_memory,
    run_units,
    train_monitors,
    work,
)
from .fit import CODEGEN_METRICS, compare_codegen_run, fit_codegen, fit_codegen_run
from .records import CodeGenProblemRecord, CodeGenTurnRecord
from .report import CONDITION_NAMES, paired_gain, problem_rows, short_of_asked, table1_rows
from .splits import check_disjoint, codegen_splits

__all__ = [
    "CODEGEN_CONDITIONS",
    "CODEGEN_METRICS",
    "CONDITION_NAMES",
    "TABLE1_CONDITIONS",
    "CodeGenCondition",
    "CodeGenConfig",
    "CodeGenProblemRecord",
    "CodeGenTurnRecord",
    "check_disjoint",
    "codegen_splits",
    "collect_units",
    "compare_codegen_run",
    "fit_codegen",
    "fit_codegen_run",
    "load_split",
    "paired_gain",
    "problem_rows",
    "resolve_execution",
    "run_in_memory",
    "run_units",
    "short_of_asked",
    "table1_rows",
    "train_monitors",
    "work",
]
