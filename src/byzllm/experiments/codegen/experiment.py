"""CodeGen debates as units of the runner: problems, units, the work function, monitor training.

One unit is one problem played once under one condition (``repeat`` r of it). The same
problem and repeat meet the same simulated draws under every condition (common random
numbers: the debate key is ``problem/repeat``), so conditions differ only by what the team
is (zero-shot) or what the intervener does.

The monitor pipeline on CodeGen (the rogue-agents paper, §4.1, §4.2, D.2):

1. :func:`collect_units` — the HumanEval train and validation problems (seeded, disjoint from
   the test problems: :mod:`.splits`), debated without intervention; every judge and tester
   turn's features are stored (:class:`CodeGenTurnRecord`, labelled with the debate's Pass@1).
2. :func:`train_monitors` — :func:`byzllm.monitor.train_monitor_set` on them (the D.2 grid
   per role: judge and tester).
3. :func:`run_units` — the test problems (HumanEval's held-out test split, or LiveCodeBench),
   never seen by collect or train, under each condition: ``zero-shot``, ``none``
   (multi-agent), ``monitor-1`` (multi-agent + monitor, one intervention per role, §4.2), and
   any other monitor condition.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from byzllm.agents.codegen import CodeGenSimParams
from byzllm.envs.codegen import ROLES, DebateResult, Team, llm_team, play_debate, simulated_team
from byzllm.errors import ConfigError, InputError
from byzllm.llm import track_requests
from byzllm.monitor.conditions import condition_monitors, make_intervener, missing_conditions
from byzllm.monitor.features import turn_features
from byzllm.monitor.intervene import scoring_error_count
from byzllm.monitor.monitor_set import MonitorSet, train_monitor_set
from byzllm.runs import (
    Record,
    Unit,
    check_grid,
    make_unit,
    prepare_model,
    reset_to_defaults,
)
from byzllm.runs import run_in_memory as records_in_memory
from byzllm.sandbox import SandboxLimits, SandboxUnavailableError, sandbox_support
from byzllm.tasks import CodeProblem, load_humaneval, load_livecodebench

from ..monitor.experiment import check_renormalize, collect_stage, datasets_from_rows
from .config import CodeGenConfig
from .records import CodeGenProblemRecord, CodeGenTurnRecord
from .splits import codegen_splits

__all__ = [
    "collect_units",
    "load_split",
    "resolve_execution",
    "run_in_memory",
    "run_units",
    "train_monitors",
    "work",
]

#: Config fields that only choose the grid (which problems, how many, conditions, repeats)
#: or where the problems come from: each payload carries its own problem, so these are left
#: out of it (and of its id) and ``work`` never reads them.
GRID_FIELDS = (
    "problems",
    "livecodebench",
    "problems_digest",  # each payload carries its problem itself
    "livecodebench_digest",
    "test_split",
    "seed",
    "test_fraction",
    "train_fraction",
    "n_train",
    "n_validation",
    "n_test",
    "conditions",
    "repeats",
    "collect_repeats",
    "monitor_set",  # each payload carries the monitors themselves
)


def load_split(cfg: CodeGenConfig, split: str) -> list[CodeProblem]:
    """The problems of ``split`` (train, validation or test; disjoint: :mod:`.splits`), cut
    to size."""
    limit = {"train": cfg.n_train, "validation": cfg.n_validation, "test": cfg.n_test}.get(split)
    if split == "test" and cfg.test_split == "livecodebench":
        assert cfg.livecodebench is not None
        problems = load_livecodebench(cfg.livecodebench)
    else:
        if not cfg.problems:
            raise ConfigError(
                "problems: set the HumanEval file (HumanEval.jsonl.gz from "
                "github.com/openai/human-eval), e.g. --set problems=HumanEval.jsonl.gz"
            )
        held_out = cfg.test_fraction if cfg.test_split == "humaneval" else 0.0
        splits = codegen_splits(
            load_humaneval(cfg.problems),
            seed=cfg.seed,
            test_fraction=held_out,
            train_fraction=cfg.train_fraction,
        )
        problems = splits.get(split)
        if not problems:
            # Refused here, not when splitting: a run needs only its own split, and an empty
            # one would run nothing and report nothing without saying why.
            names = ("train", "validation", "test")
            sizes = ", ".join(f"{name} {len(splits.get(name))}" for name in names)
            raise ConfigError(
                f"the {split} split is empty: the problems of {cfg.problems} split into "
                f"{sizes} (test_fraction={held_out}, train_fraction={cfg.train_fraction}); "
                "use a larger problem file"
            )
    return problems[:limit] if limit else problems


def _unit_config(cfg: CodeGenConfig) -> CodeGenConfig:
    return reset_to_defaults(cfg, GRID_FIELDS)


def collect_units(cfg: CodeGenConfig) -> list[Unit]:
    """Train and validation problems, debated without intervention (one unit per problem and
    repeat)."""
    splits = {split: load_split(cfg, split) for split in ("train", "validation")}
    # The config counts only the splits it cuts (n_train, n_validation): the files decide.
    sizes = {split: len(problems) for split, problems in splits.items()}
    check_grid(cfg.unit_grids(sizes)["collect"], "collect")
    return collect_stage(_unit_config(cfg), "problem", splits.__getitem__, cfg.collect_repeats)


def run_units(cfg: CodeGenConfig, monitors: MonitorSet | None = None) -> list[Unit]:
    """Test problems × conditions × repeats (Table 1: zero-shot, multi-agent, + monitor).

    Conditions other than ``zero-shot`` and ``none`` need ``monitors``; ablation conditions
    whose monitors the set lacks are refused, and so are monitors trained on features computed
    with another ``renormalize``.
    """
    conditions = list(dict.fromkeys(cfg.conditions))
    if not conditions:
        raise ConfigError("conditions: choose at least one")
    if monitors is not None:  # ``none`` runs them too, as a shadow monitor
        check_renormalize(monitors, cfg.renormalize)
    needs = [c for c in conditions if c not in ("zero-shot", "none")]
    packed: dict[str, dict[str, Any] | None] = dict.fromkeys(conditions)
    if needs:
        if monitors is None:
            raise InputError(
                f"conditions {', '.join(needs)} need monitors: run `byzllm codegen collect` "
                "and `byzllm codegen train`, then pass --monitors"
            )
        monitors.check_roles(ROLES, environment="CodeGen")
        missing = missing_conditions(needs, monitors)
        if missing:
            raise InputError(f"the monitor set has no monitors for {', '.join(missing)}")
        if any(c.startswith("random") for c in needs) and not monitors.random_baseline:
            raise InputError("the monitor set has no random-baseline probabilities")
        for c in needs:
            packed[c] = _unit_monitors(condition_monitors(c, monitors))
    test = load_split(cfg, "test")
    check_grid(cfg.unit_grids({"test": len(test)})["evaluate"], "evaluate")
    if monitors is not None:
        _refuse_training_problems(test, monitors)
    if monitors is not None and "none" in packed:
        # A shadow monitor: logs the would-be triggers of the no-intervention debate.
        packed["none"] = _unit_monitors(condition_monitors("none", monitors))
    conf = prepare_model(_unit_config(cfg))
    return [
        make_unit(
            {
                "stage": "evaluate",
                "config": conf,
                "split": "test",
                "problem": problem,
                "repeat": r,
                "condition": condition,
                "monitors": packed[condition],
            },
            label=f"test/{problem.id}/{condition}/r{r}",
        )
        for condition in conditions
        for problem in test
        for r in range(cfg.repeats)
    ]


#: The monitor set's ``meta`` key listing the problems its monitors were trained and
#: validated on (:func:`train_monitors`).
TRAINED_PROBLEMS = "trained_problems"


def _unit_monitors(monitors: MonitorSet) -> dict[str, Any]:
    """The monitors a unit carries, without the list of their training problems (checked once
    by :func:`_refuse_training_problems`; each of hundreds of units would store it)."""
    data = monitors.to_dict()
    data["meta"] = {k: v for k, v in data["meta"].items() if k != TRAINED_PROBLEMS}
    return data


def _refuse_training_problems(test: Sequence[CodeProblem], monitors: MonitorSet) -> None:
    """Monitors are tested on problems they never saw: the test split is drawn from this
    run's config (seed, fractions), which may not be the collect run's."""
    seen = set(monitors.meta.get(TRAINED_PROBLEMS) or ())
    overlap = [p.id for p in test if p.id in seen]
    if overlap:
        shown = ", ".join(overlap[:3]) + (", ..." if len(overlap) > 3 else "")
        raise InputError(
            f"{len(overlap)} of the {len(test)} test problems ({shown}) are problems the "
            "monitors were trained or validated on: run with the seed, test_fraction, "
            "train_fraction and problems of the collect run the monitors came from"
        )


def resolve_execution(cfg: CodeGenConfig) -> str:
    """``"sandbox"`` or ``"simulated"`` for this machine (``auto``: the sandbox when it works).

    LLM-backed coders need the sandbox: a missing one raises
    :class:`~byzllm.sandbox.SandboxUnavailableError` with the reason.
    """
    if cfg.execution != "auto":
        return cfg.execution
    support = sandbox_support()
    if support.get("available"):
        return "sandbox"
    if cfg.agents == "llm":
        raise SandboxUnavailableError(f"the sandbox cannot run here: {support.get('reason')}")
    return "simulated"


def _team(cfg: CodeGenConfig, problem: CodeProblem, condition: str, salt: str) -> Team:
    debate = condition != "zero-shot"
    if cfg.agents == "simulated":
        return simulated_team(problem, cfg.sim, coders=cfg.coders, debate=debate)
    return llm_team(
        cfg.shared_model(salt=salt),
        coders=cfg.coders,
        debate=debate,
        top_logprobs=cfg.top_logprobs,
        max_reprompts=cfg.max_reprompts,
        max_tokens=cfg.max_tokens,
        redo_temperature=cfg.redo_temperature,
    )


def _transcript(result: DebateResult) -> list[dict[str, Any]]:
    return [r.model_dump(mode="json", exclude_none=True) for r in result.rounds]


async def work(payload: dict[str, Any]) -> list[Record]:
    """One debate of one problem under one condition (collect, run and evaluate units): the
    runner's work function (top-level, picklable)."""
    cfg = CodeGenConfig.model_validate(payload["config"])
    problem = CodeProblem.model_validate(payload["problem"])
    repeat = int(payload["repeat"])
    split = str(payload["split"])
    condition = str(payload["condition"])
    monitors = MonitorSet.from_dict(payload["monitors"]) if payload.get("monitors") else None
    intervener = None
    if condition != "zero-shot":
        intervener = make_intervener(condition, monitors, seed=repeat, renormalize=cfg.renormalize)
    execution = resolve_execution(cfg)
    key = f"{problem.id}/r{repeat}"
    with track_requests() as requests:
        result = await play_debate(
            problem,
            _team(cfg, problem, condition, salt=f"codegen-repeat={repeat}"),
            rounds=cfg.rounds if condition != "zero-shot" else 1,
            intervener=intervener,
            final_rule=cfg.final_rule,
            execution="sandbox" if execution == "sandbox" else "simulated",
            limits=SandboxLimits(timeout_s=cfg.sandbox_timeout_s, memory_mb=cfg.sandbox_memory_mb),
            key=key,
        )
    triggers = [] if intervener is None else intervener.game_triggers(key)
    sim: CodeGenSimParams | None = cfg.sim if result.simulated else None
    records: list[Record] = [
        CodeGenProblemRecord.of(
            result,
            split=split,
            condition=condition,
            problem_id=problem.id,
            source=problem.source,
            repeat=repeat,
            hidden_status=result.hidden.status,
            hidden_detail=result.hidden.detail,
            hidden_from=problem.hidden_from,
            triggers=[t.model_dump() for t in triggers],
            scoring_errors=scoring_error_count(intervener),
            agents=cfg.agents,
            sim_params=sim.model_dump() if sim is not None else None,
            requests=requests.to_dict(),
            transcript=_transcript(result),
            turns=[t.model_dump(mode="json") for t in result.turns],
        )
    ]
    for t in result.turns:
        turn = t.obs.run_turn or t.obs.turn
        f = turn_features(t.obs.distributions, turn, renormalize=cfg.renormalize)
        records.append(
            CodeGenTurnRecord.of(
                f,
                split=split,
                condition=condition,
                game_id=problem.id,
                repeat=repeat,
                role=t.obs.role,
                agent=t.obs.agent,
                turn=turn,
                round=t.round,
                attempt=t.attempt,
                decision=t.decision,
                success=result.passed,
                simulated=result.simulated,
                renormalize=cfg.renormalize,
            )
        )
    return records


async def run_in_memory(units: Iterable[Unit]) -> list[dict[str, Any]]:
    """Play units without a store (tests, notebooks): the records as dicts with ``kind``."""
    return await records_in_memory(units, work)


def train_monitors(
    turn_rows: Sequence[dict[str, Any]],
    *,
    degrees: Sequence[int] = (1, 2, 3, 4, 5),
    alpha: float = 1.0,
    meta: dict[str, Any] | None = None,
) -> MonitorSet:
    """Monitors for the judge and the tester from collected ``codegen_turn`` rows (D.2 grid).

    Only the collect stage's rows (condition ``none``, no intervention) are used. The set
    records the ``renormalize`` its features were computed with (:func:`run_units` refuses
    another); rows collected before it was recorded leave it out.
    """
    rows = [
        r
        for r in turn_rows
        if r.get("condition", "none") == "none" and r.get("split") in ("train", "validation")
    ]
    renormalize = {bool(r["renormalize"]) for r in rows if r.get("renormalize") is not None}
    if len(renormalize) > 1:
        raise InputError(
            "the turns mix features computed with renormalize=True and renormalize=False: "
            "train on one collect run's turns"
        )
    train, validation = datasets_from_rows(rows, collect_command="byzllm codegen collect")
    simulated = any(bool(r.get("simulated")) for r in rows)
    monitors, _ = train_monitor_set(
        train,
        validation,
        degrees=degrees,
        alpha=alpha,
        meta={
            "env": "codegen",
            "simulated": simulated,
            "train_games": train.n_games,
            "validation_games": validation.n_games,
            # So that a run with another seed or split never tests on these (run_units).
            TRAINED_PROBLEMS: sorted({str(r["game_id"]) for r in rows}),
            **({"renormalize": next(iter(renormalize))} if renormalize else {}),
            **(meta or {}),
        },
    )
    return monitors
