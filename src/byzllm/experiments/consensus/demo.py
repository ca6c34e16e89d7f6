"""``byzllm demo``: the SAC paper's main setting (Table 1) on the simulated population.

n = 7 agents (4 strong, 2 weak honest, 1 adversarial ``replay``), F = 3, T = 6, γ-MERG /
complete / Erdős–Rényi, SAC vs CP-WBFT, 30 synthetic questions. Every number it prints comes
from the simulated population, whose assumptions are named parameters (``byzllm sim show``);
no parameter depends on the protocol, and results are labelled *simulated*. The ablations of
``docs/consensus.md`` show which assumptions drive which row.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .config import AgentBackend, ConsensusConfig, DatasetConfig, GroupBackends

__all__ = [
    "LOCAL_MODEL",
    "REAL_MODEL_MAX_TOKENS",
    "REAL_MODEL_QUESTIONS",
    "REAL_MODEL_ROUNDS",
    "demo_config",
    "demo_model_name",
    "demo_rows",
]

#: What ``byzllm demo --model local`` runs: Qwen2.5-Coder-0.5B-Instruct, which the ``local``
#: extra ships, in this process (no server).
LOCAL_MODEL = "llamacpp/qwen0.5b"
#: The real-model demo's size: a 0.5B model on 2 CPU cores finishes it in a few minutes.
REAL_MODEL_QUESTIONS = 3
REAL_MODEL_ROUNDS = 2
#: Longest reply per call in the real-model demo: room to work a one-step problem.
REAL_MODEL_MAX_TOKENS = 192


def demo_model_name(model: str) -> str:
    """``"local"`` is the shipped model in process; anything else is a provider/model name."""
    return LOCAL_MODEL if model == "local" else model


def demo_config(
    questions: int = 30,
    seed: int = 0,
    *,
    model: str | None = None,
    base_url: str | None = None,
    rounds: int | None = None,
) -> ConsensusConfig:
    """The demo's configuration (paper defaults; ``seed`` drives graphs, placement, agents).

    ``rounds``: T, when not the default below.

    Without ``model``: the simulated population on γ-MERG, complete and Erdős–Rényi, T = 6.
    With ``model`` (``"local"`` or ``provider/model``): every honest agent on that real model,
    sampling at temperature 0.7 with a seed of its own (so the agents differ), on γ-MERG
    only, T = :data:`REAL_MODEL_ROUNDS`, one-step arithmetic questions, replies bounded by
    :data:`REAL_MODEL_MAX_TOKENS` tokens, so that a small model on a laptop finishes quickly.
    The local model judges in the anchored style (its own solution beside the judged answer,
    P(Yes) as the score; docs/reproduce.md says why); other models use the paper's B.1 prompt.
    """
    if model is None:
        dataset = DatasetConfig(name="synthetic", n=questions, seed=seed)
        return ConsensusConfig(
            protocols=["sac", "cp-wbft"],
            topologies=["merg", "complete", "erdos-renyi"],
            seeds=[seed],
            dataset=dataset,
            **({} if rounds is None else {"T": [rounds]}),
        )
    # One arithmetic step per question: within reach of a small model.
    dataset = DatasetConfig(name="synthetic", n=questions, seed=seed, steps=1)
    name = demo_model_name(model)
    backend = AgentBackend(
        backend="llm",
        model=name,
        base_url=base_url,
        # In-process models need no key; a server may (OPENAI_API_KEY, if set).
        api_key_env=None if name.startswith("llamacpp/") else "OPENAI_API_KEY",
        temperature=0.7,
        max_tokens=REAL_MODEL_MAX_TOKENS,
        # The shipped 0.5B model needs the small-model styles (docs/reproduce.md says why).
        judging="anchored" if model == "local" else "verbal",
        refining="worked" if model == "local" else "paper",
    )
    return ConsensusConfig(
        protocols=["sac", "cp-wbft"],
        topologies=["merg"],
        T=[REAL_MODEL_ROUNDS if rounds is None else rounds],
        seeds=[seed],
        dataset=dataset,
        agents=GroupBackends(strong=backend, weak=backend),
    )


def demo_rows(questions: Iterable[Mapping[str, Any]], *, for_json: bool) -> list[dict[str, Any]]:
    """Table-1 rows (SAC and CP-WBFT × three topologies) from ``consensus_question`` records."""
    from .report import metrics_rows, summarize

    order = {"cp-wbft": 0, "sac": 1}
    topo = {"merg": 0, "complete": 1, "erdos-renyi": 2}
    summary = sorted(
        summarize(questions),
        key=lambda item: (order.get(item[0]["protocol"], 9), topo.get(item[0]["topology"], 9)),
    )
    rows = metrics_rows(summary, for_json=for_json)
    if not for_json:
        for row in rows:
            row.pop("Composition", None)
    return rows
