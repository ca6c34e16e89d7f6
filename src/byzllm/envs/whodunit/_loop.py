"""The game loop and the intervention seam (the rogue-agents paper, §2, §4.2, §6.1).

:func:`play_game` plays one game to its end. After every agent turn, *before* the action takes
effect, it builds a :class:`~byzllm.envs.TurnObservation` (game id, total turn, run turn —
the turn within the current budget, restarting at 1 after a reset —, role, agent, action
dict, decision-position distributions) and asks the optional intervener:

- ``"continue"``: the action is applied;
- ``"reset"``: the action is discarded and the environment rolls back to its last
  irreversible action (:meth:`WhoDunitEnv.rollback_to_last_irreversible`); play resumes with a
  fresh turn budget, the total turn count keeps growing, and the game clock in the agents'
  prompts is not rewound (the first prompt after a reset shows the total turn number, so a
  deterministic model does not replay the pre-reset game; the rogue-agents paper, §2);
- ``"resample"``: the action is discarded and the same agent is asked again (same budget turn).

Every agent turn counts in ``total_turns`` (also discarded ones: Game-Length includes the
turns spent before an intervention, §4.1). A fallback action (``"pass"``) is observed like any
other. As a safety net a game stops consulting the intervener after
``max_interventions`` interventions (a misbehaving intervener cannot loop forever).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, Field

from byzllm.agents.whodunit import AgentTurn, WhoDunitAction, WhoDunitAgent, WordingName
from byzllm.envs._interfaces import Decision, Intervener, TurnObservation
from byzllm.errors import InputError

from ._env import IRREVERSIBLE, AnalysisFlags, WhoDunitEnv
from ._games import WhoDunitGame

__all__ = ["GameResult", "TurnRecord", "play_game"]


class TurnRecord(BaseModel):
    """One agent turn: what the monitor saw, what the intervener decided, what happened.

    ``fallback`` marks a turn passed for want of a valid action: the agent wrote none
    (a parse fall-back), or ``rejected``, the rules refused the one it wrote (an invalid
    move, counted in :attr:`GameResult.invalid_actions`); ``valid`` is false for both.
    """

    obs: TurnObservation
    budget_turn: int = Field(description="turn within the current budget, 1-based")
    decision: Decision = "continue"
    applied: bool = True
    valid: bool = True
    errors: list[str] = Field(default_factory=list)
    fallback: bool = False
    rejected: bool = Field(
        default=False, description="the rules refused the agent's action, passed instead"
    )
    irreversible: bool = False
    message: str = ""
    flags: AnalysisFlags = Field(default_factory=AnalysisFlags)
    remaining_candidates: list[int] = Field(default_factory=list)
    noise: list[str] = Field(default_factory=list)
    thoughts: str = ""


class GameResult(BaseModel):
    """The outcome of one game.

    ``culprit`` and ``accused_suspect`` are 1-based character ids (as the agents see them).
    ``simulated`` is true when any agent was simulated.
    """

    game_id: str
    variant: str
    success: bool
    accused: bool
    culprit: int
    accused_suspect: int | None = None
    total_turns: int
    resets: int = 0
    resamples: int = 0
    parse_failures: int = 0
    fallbacks: int = 0
    invalid_actions: int = 0
    hallucinations: int = 0
    repetitions: int = 0
    ignored_facts: int = 0
    simulated: bool = False
    turns: list[TurnRecord] = Field(default_factory=list)


def _as_agents(
    env: WhoDunitEnv, agents: Mapping[str, WhoDunitAgent] | Sequence[WhoDunitAgent]
) -> dict[str, WhoDunitAgent]:
    """Agents by the name they play under: a mapping by role/name or a sequence in turn order."""
    if isinstance(agents, Mapping):
        out: dict[str, WhoDunitAgent] = {}
        for name, role in zip(env.names, env.roles, strict=True):
            agent = agents.get(role) if role != "player" else None
            agent = agent or agents.get(name)
            if agent is None:
                raise InputError(f"no agent for {role} {name}")
            out[name] = agent
        return out
    seq = list(agents)
    if len(seq) != len(env.names):
        raise InputError(f"this game needs {len(env.names)} agents, got {len(seq)}")
    return dict(zip(env.names, seq, strict=True))


async def play_game(
    game: WhoDunitGame,
    agents: Mapping[str, WhoDunitAgent] | Sequence[WhoDunitAgent],
    *,
    intervener: Intervener | None = None,
    rng: random.Random | int | None = None,
    wording: WordingName = "award",
    names: tuple[str, ...] | None = None,
    max_interventions: int = 100,
) -> GameResult:
    """Play ``game`` to its end and return the full record.

    ``agents``: either a sequence in turn order (asym: Accuser, Intel; sym: players) or a
    mapping from role (``"accuser"``, ``"intel"``) or agent name to agent. ``rng`` seeds the
    agents' randomness (an int or a ``random.Random``; ``None`` means seed 0).
    """
    env = WhoDunitEnv(game, names=names, wording=wording)
    by_name = _as_agents(env, agents)
    if rng is None or isinstance(rng, int):
        rng = random.Random(f"play/{game.id}/{rng or 0}")
    records: list[TurnRecord] = []
    interventions = 0
    resamples = 0
    simulated = False
    counters = {"parse_failures": 0, "fallbacks": 0, "invalid": 0}

    draw = 0  # resamples of the current turn: an LLM agent then samples it afresh
    while not env.done:
        view = env.view()
        if draw:
            view = view.model_copy(update={"draw": draw})
        agent = by_name[view.name]
        turn: AgentTurn = await agent.act(view, rng)
        simulated = simulated or turn.simulated
        counters["parse_failures"] += len(turn.parse_errors)
        errors = list(turn.parse_errors)
        action = turn.action
        illegal = env.check_action(action)
        fallback = turn.fallback
        if illegal:
            # An agent returned an action the rules forbid: counted, replaced by the fallback.
            counters["invalid"] += 1
            errors += illegal
            fallback = True
            action = WhoDunitAction(kind="pass")
        if fallback:
            counters["fallbacks"] += 1
        obs = TurnObservation(
            game_id=game.id,
            turn=env.state.total_turns + 1,
            run_turn=view.turn,
            role=view.role,
            agent=view.name,
            action=action.as_dict(view.role),
            distributions=[list(d) for d in turn.distributions],
        )
        decision: Decision = "continue"
        if intervener is not None and interventions < max_interventions:
            decision = intervener.decide(obs)
            if decision not in ("continue", "reset", "resample"):
                raise InputError(f"intervener returned {decision!r}")
        record = TurnRecord(
            obs=obs,
            budget_turn=view.turn,
            decision=decision,
            applied=decision == "continue",
            valid=not illegal and not turn.fallback,
            errors=errors,
            fallback=fallback,
            rejected=bool(illegal),
            irreversible=action.kind in IRREVERSIBLE,
            noise=list(turn.noise),
            thoughts=turn.thoughts[:2000],
        )
        if decision == "continue":
            outcome = env.step(action)
            record.message = outcome.message.text
            record.flags = outcome.flags
            record.remaining_candidates = outcome.remaining_candidates
        else:
            interventions += 1
            env.count_discarded_turn()
            record.remaining_candidates = env.remaining_candidates()
            if decision == "reset":
                env.rollback_to_last_irreversible()
            else:
                resamples += 1
        draw = draw + 1 if decision == "resample" else 0
        records.append(record)

    st = env.state
    applied = [r for r in records if r.applied]
    stats: dict[str, Any] = {
        "hallucinations": sum(r.flags.hallucination for r in applied),
        "repetitions": sum(r.flags.repetition for r in applied),
        "ignored_facts": sum(r.flags.ignored_fact for r in applied),
    }
    return GameResult(
        game_id=game.id,
        variant=game.variant,
        success=env.success,
        accused=st.accused is not None,
        culprit=game.culprit + 1,
        accused_suspect=st.accused,
        total_turns=st.total_turns,
        resets=st.resets,
        resamples=resamples,
        parse_failures=counters["parse_failures"],
        fallbacks=counters["fallbacks"],
        invalid_actions=counters["invalid"],
        simulated=simulated,
        turns=records,
        **stats,
    )
