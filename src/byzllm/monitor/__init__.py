"""Rogue-agent monitors and live interventions (the rogue-agents paper, §2, §4.2, §6, App. A, D.2).
May import: protocols, envs, agents, testing and the layers below them.

Features from token distributions (:mod:`.features`), the polynomial-ridge monitor
(:mod:`.estimator`), selection of features / degree / threshold by validation gain
(:mod:`.selection`), per-role monitor sets saved as JSON (:mod:`.monitor_set`), and the
interveners that plug into any environment's game loop (:mod:`.intervene`).

Evaluation conditions (no intervention, 1–2 resets, random baseline, and the ablations:
resample, second-best and worst monitor, turn-count-only monitor) are in :mod:`.conditions`;
metrics and figures in :mod:`byzllm.monitor.report`; the runner glue of ``byzllm monitor
collect / train / evaluate`` and the ablation summaries with bootstrap intervals in
:mod:`byzllm.experiments.monitor` (imported on demand: it is the only module that needs the
runner and WhoDunitEnv).

>>> from byzllm.monitor import turn_features
>>> round(turn_features([[("1", -0.6931), ("2", -0.6931)]], turn=3).entropy, 3)
0.693
"""

from .conditions import (
    ABLATION_CONDITIONS,
    CONDITION_LABELS,
    CONDITIONS,
    DEFAULT_CONDITIONS,
    Condition,
    condition_monitors,
    make_intervener,
    missing_conditions,
)
from .dataset import TurnDataset
from .estimator import TURN_ONLY, UncertaintyMonitor
from .features import (
    FEATURE_COLUMNS,
    UNCERTAINTY_FEATURES,
    TurnFeatures,
    distribution_stats,
    features_matrix,
    observation_features,
    position_entropies,
    turn_features,
)
from .intervene import InterventionMode, MonitorIntervener, RandomIntervener, Trigger, TurnClock
from .monitor_set import (
    ABLATION_LABELS,
    MonitorSet,
    RoleMonitor,
    ablation_rows,
    format_table5,
    table5_rows,
    train_monitor_set,
)
from .selection import (
    ABLATIONS,
    DEFAULT_GRID,
    Ablation,
    AblationChoice,
    GridPoint,
    RandomBaselineChoice,
    RoleCandidates,
    RoleSelection,
    best_single_feature,
    expected_gain,
    feature_subsets,
    fit_role_candidates,
    game_min_scores,
    grid_ablations,
    joint_choice,
    random_gain_curve,
    rank_candidates,
    select_random_baseline,
    select_role_monitor,
    select_turn_only_monitor,
    threshold_gain_curve,
)

__all__ = [
    "ABLATIONS",
    "ABLATION_CONDITIONS",
    "ABLATION_LABELS",
    "CONDITIONS",
    "CONDITION_LABELS",
    "DEFAULT_CONDITIONS",
    "DEFAULT_GRID",
    "FEATURE_COLUMNS",
    "TURN_ONLY",
    "UNCERTAINTY_FEATURES",
    "Ablation",
    "AblationChoice",
    "Condition",
    "GridPoint",
    "InterventionMode",
    "MonitorIntervener",
    "MonitorSet",
    "RandomBaselineChoice",
    "RandomIntervener",
    "RoleCandidates",
    "RoleMonitor",
    "RoleSelection",
    "Trigger",
    "TurnClock",
    "TurnDataset",
    "TurnFeatures",
    "UncertaintyMonitor",
    "ablation_rows",
    "best_single_feature",
    "condition_monitors",
    "distribution_stats",
    "expected_gain",
    "feature_subsets",
    "features_matrix",
    "fit_role_candidates",
    "format_table5",
    "game_min_scores",
    "grid_ablations",
    "joint_choice",
    "make_intervener",
    "missing_conditions",
    "observation_features",
    "position_entropies",
    "random_gain_curve",
    "rank_candidates",
    "select_random_baseline",
    "select_role_monitor",
    "select_turn_only_monitor",
    "table5_rows",
    "threshold_gain_curve",
    "train_monitor_set",
    "turn_features",
]
