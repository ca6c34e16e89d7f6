"""GovSim with real LLM fishers (SmolLM2 over HTTP): a short game, monitor features from the
real log-probabilities at the amount positions."""

from __future__ import annotations

import asyncio

import pytest

from byzllm.envs.govsim import GovSimGame, LakeConfig, llm_fishers, play_game
from byzllm.experiments.govsim import catch_counts
from byzllm.llm import LocalServer, get_model
from byzllm.monitor.features import turn_features

pytestmark = [pytest.mark.real_model, pytest.mark.timeout(900)]


def test_short_real_game_with_monitor_features(real_server: LocalServer) -> None:
    model = get_model(
        f"openai/{real_server.model_name}",
        base_url=real_server.base_url,
        api_key_env=None,
        adaptive_timeout=False,
    )
    # Three fishers, two months, one utterance each: a few dozen short calls.
    lake = LakeConfig(n_fishers=3, months=2, utterances=3)
    fishers = llm_fishers(model, lake, top_logprobs=5, max_reprompts=1, max_tokens=48)
    result = asyncio.run(play_game(GovSimGame(id="real", r0=100), fishers, config=lake))
    assert 1 <= result.months_played <= 2 and not result.simulated
    assert all(0 <= h.stock_after <= h.stock_before for h in result.harvests)
    # Parse health counts every catch decision, fallbacks included.
    counts = catch_counts(result)
    assert counts["catch"]["calls"] == len(result.turns) >= 3
    assert counts["catch"]["fallbacks"] == sum(t.fallback for t in result.turns)
    said = [u for m in (*result.meetings, *result.undone_meetings) for u in m]
    assert counts["utterance"]["calls"] == len(said) >= 3  # and empty replies as fall-backs
    assert counts["utterance"]["fallbacks"] == sum(not u.text.strip() for u in said)
    # Features from real distributions: every decision that was read has its amount tokens.
    read = [t for t in result.turns if not t.fallback]
    assert read, "SmolLM2 at temperature 0 answers the catch prompt with an amount"
    for t in read:
        assert t.obs.distributions, "a parsed catch has its amount positions"
        f = turn_features(t.obs.distributions, t.month)
        assert f.n_positions >= 1 and f.entropy >= 0.0
    if result.months_played == 2:
        assert [t.monitored for t in result.turns] == [t.month >= 2 for t in result.turns]
