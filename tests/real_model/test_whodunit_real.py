"""WhoDunitEnv with real LLM agents (SmolLM2 over HTTP): games, monitor positions, a reset."""

from __future__ import annotations

import asyncio
import json
import math
import random
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from byzllm.agents.whodunit import AgentTurn, AgentView, LLMAgent, parse_action
from byzllm.cli import app
from byzllm.envs import Decision, TurnObservation
from byzllm.envs.whodunit import (
    GameConfig,
    WhoDunitEnv,
    generate_games,
    llm_agents,
    play_game,
)
from byzllm.llm import (
    ChatMessage,
    ChatModel,
    Completion,
    GenerateConfig,
    LocalServer,
    TokenLogprob,
    get_model,
)
from byzllm.runs import Store

# A game is a handful of calls of a few seconds each on an idle machine; slower when busy.
pytestmark = [pytest.mark.real_model, pytest.mark.timeout(900)]

RUNNER = CliRunner()
#: Small games: a 135M model at a few dozen tokens/s must finish a game in well under a minute.
SMALL = {
    "asym": GameConfig(variant="asym", n_suspects=4, n_attributes=3, max_turns=2),
    "sym": GameConfig(
        variant="sym", n_suspects=4, n_attributes=4, max_turns=2, n_agents=2, facts_per_agent=2
    ),
}
MAX_TOKENS = 64


class Recording(ChatModel):
    """Passes every request to the real model and keeps (prompt, completion) pairs."""

    def __init__(self, inner: ChatModel) -> None:
        self.inner = inner
        self.name = inner.name
        self.calls: list[tuple[list[ChatMessage], Completion]] = []

    async def generate(
        self, messages: Sequence[ChatMessage], config: GenerateConfig | None = None
    ) -> Completion:
        completion = await self.inner.generate(messages, config)
        self.calls.append((list(messages), completion))
        return completion


def _model(server: LocalServer) -> Recording:
    return Recording(
        # A single-slot CPU server: the adaptive timeout would cut long generations
        # (docs/llm.md, Timeouts).
        get_model(
            f"openai/{server.model_name}",
            base_url=server.base_url,
            api_key_env=None,
            adaptive_timeout=False,
        )
    )


class Watched:
    """An LLM agent whose views, turns and accepted completions are kept for checking."""

    def __init__(self, agent: LLMAgent, model: Recording) -> None:
        self.agent = agent
        self.name = agent.name
        self.model = model
        self.seen: list[tuple[AgentView, AgentTurn, Completion]] = []

    async def act(self, view: AgentView, rng: random.Random) -> AgentTurn:
        turn = await self.agent.act(view, rng)
        if not turn.fallback:
            self.seen.append((view, turn, self.model.calls[-1][1]))
        return turn


@pytest.mark.parametrize("variant", ["asym", "sym"])
def test_real_game_monitor_positions_are_the_id_tokens(
    real_server: LocalServer, variant: str
) -> None:
    """The monitor reads the top-k lists of exactly the tokens that spell the ids."""
    game = generate_games(1, SMALL[variant], seed=1)[0]
    model = _model(real_server)
    agents = [
        Watched(agent, model)
        for agent in llm_agents(game, model, top_logprobs=5, max_reprompts=1, max_tokens=MAX_TOKENS)
    ]
    result = asyncio.run(play_game(game, agents, rng=0))
    assert result.total_turns >= 1
    assert not result.simulated
    assert model.calls, "the agents never called the model"
    checked = 0
    for agent in agents:
        for view, turn, completion in agent.seen:
            tokens = completion.logprobs or []
            assert "".join(t.token for t in tokens) == completion.text
            spans = parse_action(completion.text, view).decision_spans
            picked = _tokens_over(tokens, spans)
            assert [list(t.top) for t in picked] == [list(d) for d in turn.distributions]
            for token in picked:
                assert re.search(r"\d", token.token), f"{token.token!r} is not an id token"
            checked += bool(picked)
    # A 135M model rarely writes a valid action (its turns then fall back to a pass, which
    # the parse health counts); test_positions_in_the_real_tokenizer checks the positions on
    # a valid action in any case.
    assert checked >= 0


def test_positions_in_the_real_tokenizer(real_server: LocalServer) -> None:
    """A valid action, tokenized and scored by the real model (llama-cpp-python echoes the
    prompt's tokens with their top-k): the monitor's positions are exactly the id tokens."""
    from llama_cpp import Llama

    from byzllm.llm._local import resolve_gguf

    game = generate_games(1, SMALL["asym"], seed=1)[0]
    view = WhoDunitEnv(game).view()
    reply = 'I know enough now.\n{"thoughts": "suspect 2 fits", "action": 3, "character": 2}'
    parsed = parse_action(reply, view)
    # Scoring a given text needs the logits of every prompt position: llama-cpp-python's own
    # completion with logits_all (byzllm's server only generates).
    llama = Llama(
        model_path=str(resolve_gguf("smollm2").path),
        n_ctx=512,
        n_threads=1,
        logits_all=True,
        verbose=False,
    )
    body: Any = llama.create_completion(
        prompt=reply, max_tokens=1, echo=True, logprobs=5, temperature=0
    )
    llama.close()
    lp = body["choices"][0]["logprobs"]
    tokens: list[TokenLogprob] = []
    text = ""
    for token, own, top in zip(lp["tokens"], lp["token_logprobs"], lp["top_logprobs"], strict=True):
        if len(text) >= len(reply):
            break  # the one generated token after the echoed prompt
        text += token
        if own is None:  # the first token has no log-probability
            own, top = 0.0, {token: 0.0}
        ranked = sorted(top.items(), key=lambda kv: -kv[1])
        tokens.append(TokenLogprob(token=token, logprob=own, top=ranked))
    assert text == reply, "the echoed tokens do not spell the reply"
    completion = Completion(text=reply, logprobs=tokens)
    agent = LLMAgent(view.name, _model(real_server), top_logprobs=5)
    distributions = agent._distributions(completion, view, parsed.action, parsed.decision_spans)
    picked = _tokens_over(tokens, parsed.decision_spans)
    assert [reply[s:e] for s, e in parsed.decision_spans] == ["3", "2"]
    assert len(picked) == 2
    assert all(re.fullmatch(r"\s*\d+", t.token) for t in picked), [t.token for t in picked]
    assert distributions == [list(t.top) for t in picked]


def _tokens_over(
    tokens: Sequence[TokenLogprob], spans: list[tuple[int, int]]
) -> list[TokenLogprob]:
    picked, pos = [], 0
    for token in tokens:
        start, end = pos, pos + len(token.token)
        pos = end
        if any(start < e and end > s for s, e in spans):
            picked.append(token)
    return picked


class ResetOnce:
    """Forces one reset on the first turn that has decision positions (or turn 2)."""

    def __init__(self) -> None:
        self.fired = False

    def decide(self, obs: TurnObservation) -> Decision:
        if not self.fired and (obs.distributions or obs.turn >= 2):
            self.fired = True
            return "reset"
        return "continue"


def test_a_reset_changes_a_real_deterministic_game(real_server: LocalServer) -> None:
    """Temperature 0: after the reset the model sees a new prompt and the game goes on."""
    game = generate_games(1, SMALL["asym"], seed=2)[0]
    model = _model(real_server)
    agents = llm_agents(game, model, top_logprobs=5, max_reprompts=0, max_tokens=MAX_TOKENS)
    intervener = ResetOnce()
    result = asyncio.run(play_game(game, agents, intervener=intervener, rng=0))
    assert intervener.fired
    resets = [i for i, r in enumerate(result.turns) if r.decision == "reset"]
    assert resets, "the reset was not applied"
    after = resets[0] + 1
    assert after < len(result.turns), "the game ended at the reset"
    prompts = [messages[-1]["content"] for messages, _ in model.calls]
    # The first prompt after the reset is not the game's first prompt replayed.
    first_after = prompts[after]
    assert first_after != prompts[0]
    assert all(not c.cached for _, c in model.calls)


def test_monitor_collect_on_real_games_gives_finite_features(
    real_server: LocalServer, tmp_path: Path
) -> None:
    run_dir = tmp_path / "collect"
    # make_splits draws 480 games with distinct culprits: a small table with many values.
    colours = ["red", "blue", "green", "black", "white", "brown", "grey", "pink"]
    config = tmp_path / "collect.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "game": {
                    "variant": "asym",
                    "n_suspects": 4,
                    "max_turns": 2,
                    "attributes": {"hat": colours, "shirt": colours, "shoes": colours},
                },
                "n_train": 1,
                "n_validation": 1,
                "top_logprobs": 5,
                "max_tokens": MAX_TOKENS,
                "max_reprompts": 0,
                "api_key_env": None,
                "adaptive_timeout": False,
            }
        )
    )
    args = [
        "monitor",
        "collect",
        str(config),
        "-o",
        str(run_dir),
        "--model",
        f"openai/{real_server.model_name}",
        "--base-url",
        real_server.base_url,
    ]
    result = RUNNER.invoke(app, args)
    assert result.exit_code == 0, result.output
    with Store.open(run_dir) as store:
        turns = store.records_frame("monitor_turn")
    assert len(turns) >= 2
    for column in ("entropy", "varentropy", "kurtosis"):
        assert column in turns.columns
        assert all(math.isfinite(float(v)) for v in turns[column])


def test_sim_fit_and_compare_on_real_games(real_server: LocalServer, tmp_path: Path) -> None:
    """A few real WhoDunit games, the simulator fitted to them, and both side by side."""
    run_dir = tmp_path / "games"
    config = tmp_path / "games.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "game": {"variant": "asym", "n_suspects": 4, "n_attributes": 3, "max_turns": 4},
                "split": "generated",
                "n_games": 2,
                "agents": "llm",
                "model": f"openai/{real_server.model_name}",
                "base_url": real_server.base_url,
                "api_key_env": None,
                "adaptive_timeout": False,
                "top_logprobs": 5,
                "max_tokens": MAX_TOKENS,
                "max_reprompts": 0,
            }
        )
    )
    played = RUNNER.invoke(app, ["whodunit", "run", str(config), "-o", str(run_dir)])
    assert played.exit_code == 0, played.output

    profile_path = tmp_path / "smollm2-whodunit.yaml"
    fitted = RUNNER.invoke(app, ["sim", "fit", str(run_dir), "-o", str(profile_path), "--json"])
    assert fitted.exit_code == 0, fitted.output
    profile = json.loads(fitted.stdout)
    assert profile["domain"] == "whodunit" and profile["run_simulated"] is False
    assert set(profile["groups"]) == {"sim"}
    assert any(src.startswith("fitted from games") for src in profile["sources"]["sim"].values())

    compared = RUNNER.invoke(
        app, ["sim", "compare", str(run_dir), "--profile", str(profile_path), "--json"]
    )
    assert compared.exit_code == 0, compared.output
    tables = json.loads(compared.stdout)["tables"]
    assert tables
    for table in tables:
        rows = {r["metric"]: r for r in table["rows"]}
        assert {"Success-Rate", "Game-Length"} <= set(rows)
        assert rows["Game-Length"]["n_real"] == 2
        assert rows["Game-Length"]["real_low"] <= rows["Game-Length"]["real"]
