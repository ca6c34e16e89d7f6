"""The run engine: units, the concurrent runner, the result store, repair, exports, intervals.
Knows nothing of any domain: a unit is a payload, a work function turns it into records.
May import: byzllm.errors, byzllm._process, byzllm.llm (the model section and request counts).

A run is a grid of independent units. The runner executes them concurrently, writes each
result to ``<run_dir>/results.sqlite`` the moment it is done, and resumes by skipping the
units already done::

    from typing import Any, ClassVar
    from byzllm.runs import Record, make_unit, run_units, Store

    class Answer(Record):
        kind: ClassVar[str] = "answer"
        question: int
        correct: bool

    def work(payload: dict[str, Any]) -> list[Record]:      # top-level; may be async def
        return [Answer(question=payload["question"], correct=True)]

    units = [make_unit({"question": q}, label=f"q{q}") for q in range(100)]
    summary = asyncio.run(run_units("runs/demo", units, work, concurrency=16))
    Store.open("runs/demo").records_frame("answer")
"""

import importlib
from typing import TYPE_CHECKING, Any

from byzllm.errors import ConfigError

from ._binding import check_config, config_differences
from ._config import (
    ExistingDir,
    ExistingFile,
    ExistingPath,
    ExperimentConfig,
    PathKind,
    apply_overrides,
    config_path,
    load_config,
    parse_overrides,
    resolve_config_path,
)
from ._executor import (
    AUTO_PROCESS_MIN_UNITS,
    EXECUTOR_NAMES,
    Executor,
    LocalExecutor,
    ProcessExecutor,
    RayExecutor,
    WorkFn,
    executor_by_name,
    usable_cores,
)
from ._progress import (
    LiveStatus,
    PlainProgress,
    ProgressReporter,
    RichProgress,
    SilentProgress,
)
from ._records import PackedRecords, Record, UnitRequests, pack_records
from ._repair import RepairReport, repair_store
from ._reuse import Reused, reuse_units, sibling_runs
from ._runner import (
    RunAbortedError,
    RunBusyError,
    RunStatus,
    RunSummary,
    UnitFailure,
    is_fatal,
    run_in_memory,
    run_units,
)
from ._store import (
    STORE_FILENAME,
    ExportFormat,
    Store,
    StoreError,
    UnitResult,
    collector_paused,
)
from ._units import UNIT_ID_SCHEME, Unit, canonical_json, make_unit, reset_to_defaults, unit_id

if TYPE_CHECKING:
    from ._intervals import (
        BOOTSTRAP_METHOD,
        Interval,
        bootstrap_interval,
        bootstrap_intervals,
        weighted_mean_intervals,
    )
    from ._model_config import ModelConfig

#: Names loaded on first use, by the module that holds them: ``ModelConfig`` pulls in the
#: model layer (byzllm.llm), the intervals pull in numpy; commands that read a store
#: without either (``byzllm runs list``) start without them.
_LAZY = {
    "ModelConfig": "._model_config",
    "BOOTSTRAP_METHOD": "._intervals",
    "Interval": "._intervals",
    "bootstrap_interval": "._intervals",
    "bootstrap_intervals": "._intervals",
    "weighted_mean_intervals": "._intervals",
}

__all__ = [
    "AUTO_PROCESS_MIN_UNITS",
    "BOOTSTRAP_METHOD",
    "EXECUTOR_NAMES",
    "STORE_FILENAME",
    "UNIT_ID_SCHEME",
    "ConfigError",
    "Executor",
    "ExistingDir",
    "ExistingFile",
    "ExistingPath",
    "ExperimentConfig",
    "ExportFormat",
    "Interval",
    "LiveStatus",
    "LocalExecutor",
    "ModelConfig",
    "PackedRecords",
    "PathKind",
    "PlainProgress",
    "ProcessExecutor",
    "ProgressReporter",
    "RayExecutor",
    "Record",
    "RepairReport",
    "Reused",
    "RichProgress",
    "RunAbortedError",
    "RunBusyError",
    "RunStatus",
    "RunSummary",
    "SilentProgress",
    "Store",
    "StoreError",
    "Unit",
    "UnitFailure",
    "UnitRequests",
    "UnitResult",
    "WorkFn",
    "apply_overrides",
    "bootstrap_interval",
    "bootstrap_intervals",
    "canonical_json",
    "check_config",
    "collector_paused",
    "config_differences",
    "config_path",
    "executor_by_name",
    "is_fatal",
    "load_config",
    "make_unit",
    "pack_records",
    "parse_overrides",
    "repair_store",
    "reset_to_defaults",
    "resolve_config_path",
    "reuse_units",
    "run_in_memory",
    "run_units",
    "sibling_runs",
    "unit_id",
    "usable_cores",
    "weighted_mean_intervals",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # looked up once
    return value
