"""The players' ``decoding`` and ``prompt`` options reach every LLM agent (free, paper)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from byzllm.agents.whodunit import LLMAgent
from byzllm.cli import app
from byzllm.envs.whodunit import GameConfig, generate_games
from byzllm.experiments.whodunit import WhoDunitPlayers, WhoDunitRunConfig

LLM = {"agents": "llm", "model": "openai/m", "base_url": "http://127.0.0.1:9/v1"}


@pytest.mark.parametrize("variant", ["asym", "sym"])
def test_decoding_reaches_every_agent(variant: str) -> None:
    game = generate_games(1, GameConfig(variant=variant, n_suspects=4, max_turns=2), seed=0)[0]
    for decoding in ("free", "schema"):
        players = WhoDunitPlayers.model_validate({**LLM, "decoding": decoding})
        agents = players.players(game, salt="s")
        assert agents and all(isinstance(a, LLMAgent) for a in agents)
        assert {a.decoding for a in agents if isinstance(a, LLMAgent)} == {decoding}
    assert WhoDunitPlayers.model_validate(LLM).decoding == "free"


def test_decoding_is_a_checked_config_key() -> None:
    run = WhoDunitRunConfig.model_validate({**LLM, "decoding": "schema"})
    assert run.decoding == "schema"
    with pytest.raises(ValidationError, match="decoding"):
        WhoDunitRunConfig.model_validate({**LLM, "decoding": "grammar"})


def test_play_refuses_an_unknown_decoding_or_prompt() -> None:
    result = CliRunner().invoke(app, ["whodunit", "play", "--decoding", "grammar"])
    assert result.exit_code == 2
    assert "--decoding must be free or schema" in result.output
    result = CliRunner().invoke(app, ["whodunit", "play", "--prompt", "short"])
    assert result.exit_code == 2
    assert "--prompt must be paper or compact" in result.output


def test_prompt_reaches_every_agent() -> None:
    game = generate_games(1, GameConfig(variant="asym", n_suspects=4, max_turns=2), seed=0)[0]
    players = WhoDunitPlayers.model_validate({**LLM, "prompt": "compact"})
    agents = players.players(game, salt="s")
    assert {a.prompt for a in agents if isinstance(a, LLMAgent)} == {"compact"}
    assert WhoDunitPlayers.model_validate(LLM).prompt == "paper"
