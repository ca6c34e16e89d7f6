"""One model section for every experiment: same keys, same spec, one live model per loop."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from byzllm.agents.consensus import LLMAgent
from byzllm.experiments.consensus.config import AgentBackend, ConsensusConfig
from byzllm.experiments.consensus.setup import default_factory
from byzllm.experiments.monitor import MonitorExperimentConfig
from byzllm.experiments.whodunit import WhoDunitPlayers, WhoDunitRunConfig
from byzllm.runs import ModelConfig

URL = "http://127.0.0.1:9/v1"
MODEL_KEYS: dict[str, Any] = {
    "model": "openai/m",
    "base_url": URL,
    "api_key_env": None,
    "max_concurrency": 3,
    "cache": "cache.sqlite",
    "timeout_s": 5.0,
    "retry": {"max_attempts": 2},
}


def test_every_experiment_reads_the_same_model_keys() -> None:
    consensus = AgentBackend.model_validate({"backend": "llm", **MODEL_KEYS})
    whodunit = WhoDunitRunConfig.model_validate({"agents": "llm", **MODEL_KEYS})
    monitor = MonitorExperimentConfig.model_validate({"agents": "llm", **MODEL_KEYS})
    specs = [c.model_spec() for c in (consensus, whodunit, monitor)]
    assert specs[0] == specs[1] == specs[2]
    assert specs[0].name == "openai/m" and specs[0].retry.max_attempts == 2
    assert all(isinstance(c, ModelConfig) for c in (consensus, whodunit, monitor))
    assert issubclass(MonitorExperimentConfig, WhoDunitPlayers)


def test_players_top_logprobs_follow_the_server_limit() -> None:
    with pytest.raises(ValidationError, match="max_top_logprobs=20"):
        WhoDunitRunConfig(top_logprobs=21)
    assert WhoDunitRunConfig(top_logprobs=30, max_top_logprobs=40).top_logprobs == 30
    assert WhoDunitRunConfig(top_logprobs=0).top_logprobs == 0
    with pytest.raises(ValidationError, match="greater than or equal to 1"):
        MonitorExperimentConfig(top_logprobs=0)  # monitors need distributions


def test_api_keys_are_never_config_keys() -> None:
    with pytest.raises(ValidationError):
        WhoDunitRunConfig.model_validate({"api_key": "sk-nope"})
    with pytest.raises(ValidationError):
        AgentBackend.model_validate({"backend": "llm", "model": "openai/m", "api_key": "sk"})


async def test_agents_of_a_group_share_one_model() -> None:
    config = ConsensusConfig.model_validate(
        {
            "agents": {
                "strong": {"backend": "llm", **MODEL_KEYS},
                "weak": {"backend": "llm", **MODEL_KEYS, "model": "openai/w"},
            }
        }
    )
    strong = [default_factory(f"s{k}", "strong", config.agents.strong, 0) for k in range(3)]
    weak = default_factory("w0", "weak", config.agents.weak, 0)
    assert all(isinstance(a, LLMAgent) for a in [*strong, weak])
    models = {id(a.model) for a in strong if isinstance(a, LLMAgent)}
    assert len(models) == 1
    assert isinstance(weak, LLMAgent) and id(weak.model) not in models
    assert weak.group == "weak" and weak.model.name == "openai/w"
