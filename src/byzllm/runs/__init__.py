"""The run engine: units, the concurrent runner, the result store, repair, exports, intervals.
Knows nothing of any domain: a unit is a payload, a work function turns it into records.
May import: byzllm.errors, _process, _figures, _lazy, _files and byzllm.llm (models, counts).

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

from typing import TYPE_CHECKING

from byzllm._lazy import lazy_attributes
from byzllm.errors import ConfigError

if TYPE_CHECKING:
    from ._binding import check_config, config_differences
    from ._config import (
        ABSENT_IS_DEFAULT,
        MAX_UNITS,
        ExistingDir,
        ExistingFile,
        ExistingPath,
        ExperimentConfig,
        PathKind,
        apply_overrides,
        check_grid,
        config_path,
        format_validation_error,
        load_config,
        parse_overrides,
        recorded_digest,
        resolve_config_path,
        validation_problems,
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
        helper_pool,
        usable_cores,
        warm_workers,
    )
    from ._intervals import (
        BOOTSTRAP_METHOD,
        Interval,
        bootstrap_interval,
        bootstrap_intervals,
        cluster_sums,
        degenerate_rate_bounds,
        percentile_bounds,
        resample_counts,
        sign_counts,
        sign_test_p,
        weighted_mean_intervals,
    )
    from ._model_config import ModelConfig
    from ._progress import LiveStatus, PlainProgress, ProgressReporter, RichProgress, SilentProgress
    from ._records import (
        REQUEST_COUNTS,
        PackedRecords,
        Record,
        UnitRequests,
        WithDerived,
        pack_records,
    )
    from ._repair import RepairReport, repair_store
    from ._reuse import Reused, reuse_units, sibling_runs
    from ._runner import (
        RunAbortedError,
        RunBusyError,
        RunStatus,
        RunSummary,
        UnitFailure,
        interrupts_held,
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
    from ._units import (
        UNIT_ID_SCHEME,
        PreparedModel,
        Unit,
        canonical_json,
        make_unit,
        prepare_model,
        reset_to_defaults,
        unit_id,
    )

#: Every name below is loaded on first use, by the module that holds it (PEP 562): a command
#: that only reads a store (``byzllm runs list``) imports the store, not the runner, the
#: executors (asyncio, multiprocessing), the configs (pydantic, YAML), the intervals (numpy)
#: or the model section (the model layer).
_LAZY: dict[str, str] = {
    "ABSENT_IS_DEFAULT": "._config",
    "check_config": "._binding",
    "config_differences": "._binding",
    "MAX_UNITS": "._config",
    "ExistingDir": "._config",
    "ExistingFile": "._config",
    "ExistingPath": "._config",
    "ExperimentConfig": "._config",
    "PathKind": "._config",
    "apply_overrides": "._config",
    "check_grid": "._config",
    "config_path": "._config",
    "recorded_digest": "._config",
    "format_validation_error": "._config",
    "load_config": "._config",
    "parse_overrides": "._config",
    "resolve_config_path": "._config",
    "validation_problems": "._config",
    "AUTO_PROCESS_MIN_UNITS": "._executor",
    "EXECUTOR_NAMES": "._executor",
    "Executor": "._executor",
    "LocalExecutor": "._executor",
    "ProcessExecutor": "._executor",
    "RayExecutor": "._executor",
    "WorkFn": "._executor",
    "executor_by_name": "._executor",
    "usable_cores": "._executor",
    "warm_workers": "._executor",
    "helper_pool": "._executor",
    "BOOTSTRAP_METHOD": "._intervals",
    "Interval": "._intervals",
    "bootstrap_interval": "._intervals",
    "bootstrap_intervals": "._intervals",
    "cluster_sums": "._intervals",
    "degenerate_rate_bounds": "._intervals",
    "percentile_bounds": "._intervals",
    "resample_counts": "._intervals",
    "sign_counts": "._intervals",
    "sign_test_p": "._intervals",
    "weighted_mean_intervals": "._intervals",
    "ModelConfig": "._model_config",
    "LiveStatus": "._progress",
    "PlainProgress": "._progress",
    "ProgressReporter": "._progress",
    "RichProgress": "._progress",
    "SilentProgress": "._progress",
    "REQUEST_COUNTS": "._records",
    "PackedRecords": "._records",
    "Record": "._records",
    "UnitRequests": "._records",
    "WithDerived": "._records",
    "pack_records": "._records",
    "RepairReport": "._repair",
    "repair_store": "._repair",
    "Reused": "._reuse",
    "reuse_units": "._reuse",
    "sibling_runs": "._reuse",
    "RunAbortedError": "._runner",
    "RunBusyError": "._runner",
    "RunStatus": "._runner",
    "RunSummary": "._runner",
    "UnitFailure": "._runner",
    "is_fatal": "._runner",
    "run_in_memory": "._runner",
    "run_units": "._runner",
    "interrupts_held": "._runner",
    "ExportFormat": "._store",
    "STORE_FILENAME": "._store",
    "Store": "._store",
    "StoreError": "._store",
    "UnitResult": "._store",
    "collector_paused": "._store",
    "UNIT_ID_SCHEME": "._units",
    "Unit": "._units",
    "canonical_json": "._units",
    "make_unit": "._units",
    "PreparedModel": "._units",
    "prepare_model": "._units",
    "reset_to_defaults": "._units",
    "unit_id": "._units",
}

__all__ = [
    "ABSENT_IS_DEFAULT",
    "AUTO_PROCESS_MIN_UNITS",
    "BOOTSTRAP_METHOD",
    "EXECUTOR_NAMES",
    "MAX_UNITS",
    "REQUEST_COUNTS",
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
    "PreparedModel",
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
    "WithDerived",
    "WorkFn",
    "apply_overrides",
    "bootstrap_interval",
    "bootstrap_intervals",
    "canonical_json",
    "check_config",
    "check_grid",
    "cluster_sums",
    "collector_paused",
    "config_differences",
    "config_path",
    "degenerate_rate_bounds",
    "executor_by_name",
    "format_validation_error",
    "helper_pool",
    "interrupts_held",
    "is_fatal",
    "load_config",
    "make_unit",
    "pack_records",
    "parse_overrides",
    "percentile_bounds",
    "prepare_model",
    "recorded_digest",
    "repair_store",
    "resample_counts",
    "reset_to_defaults",
    "resolve_config_path",
    "reuse_units",
    "run_in_memory",
    "run_units",
    "sibling_runs",
    "sign_counts",
    "sign_test_p",
    "unit_id",
    "usable_cores",
    "validation_problems",
    "warm_workers",
    "weighted_mean_intervals",
]


__getattr__ = lazy_attributes(__name__, _LAZY)
