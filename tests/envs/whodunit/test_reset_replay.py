"""A reset must change a game played by a deterministic model (the rogue-agents paper, §2).

The fake server's reply is a pure function of the whole request (a hash of the messages
choosing among valid actions): a temperature-0 model. If a reset rewound the game clock, the
first prompt after it would be byte-identical to the game's first prompt and the game would
replay — exactly so through the response cache, which is keyed by the request.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from byzllm.envs import Decision, TurnObservation
from byzllm.envs.whodunit import (
    GameConfig,
    GameResult,
    WhoDunitGame,
    generate_games,
    llm_agents,
    play_game,
)
from byzllm.llm import ChatMessage, ChatModel, Completion, GenerateConfig, get_model
from byzllm.testing import FakeOpenAIServer


def _digest(request: dict[str, Any]) -> int:
    blob = json.dumps(request["messages"], sort_keys=True).encode()
    return int.from_bytes(hashlib.sha256(blob).digest()[:8], "big")


class HashScript:
    """Valid moves picked by a hash of the whole prompt; never an accusation."""

    def __init__(self, game: WhoDunitGame) -> None:
        self.game = game
        self.questions = [
            (c, prop, value)
            for c in range(1, len(game.suspects) + 1)
            for prop, values in game.attributes.items()
            for value in values
        ]
        self.broadcasts = [
            (prop, value, holders)
            for prop, values in game.attributes.items()
            for value in values
            if (holders := [i for i, s in enumerate(game.suspects, 1) if s[prop] == value])
        ]

    def __call__(self, request: dict[str, Any]) -> str:
        h = _digest(request)
        system = request["messages"][0]["content"]
        if "You know the Winner's description" in system:  # Accuser
            pick = h % (len(self.questions) + 1)
            if pick == len(self.questions):
                body: dict[str, Any] = {"thoughts": "ask broadly", "action": 2, "character": 0}
            else:
                c, prop, value = self.questions[pick]
                body = {
                    "thoughts": "ask",
                    "action": 1,
                    "character": c,
                    "property": prop,
                    "value": value,
                }
        elif "You have descriptions of all" in system:  # Intel
            prop, value, holders = self.broadcasts[h % len(self.broadcasts)]
            body = {
                "thoughts": "broadcast",
                "action": 2,
                "value": f"{prop}-{value}",
                "character": holders,
            }
        else:  # symmetric player: share one of its facts or skip
            n_facts = len(self.game.facts[0])
            pick = h % (n_facts + 1)
            body = (
                {"thoughts": "skip", "action": 3}
                if pick == n_facts
                else {"thoughts": "share", "action": 1, "fact": pick + 1}
            )
        return "Thinking.\n" + json.dumps(body)


class ResetAt:
    """Forces exactly one reset, at total turn ``turn``."""

    def __init__(self, turn: int) -> None:
        self.turn = turn

    def decide(self, obs: TurnObservation) -> Decision:
        return "reset" if obs.turn == self.turn else "continue"


class Recording(ChatModel):
    """Passes requests through and keeps every (messages, completion) pair."""

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


GAMES = {
    "asym": (GameConfig(variant="asym", n_suspects=6, max_turns=8), 5),
    "sym": (GameConfig(variant="sym", n_suspects=6, n_attributes=12, max_turns=9), 4),
}


async def _play(
    game: WhoDunitGame, server: FakeOpenAIServer, reset_at: int, cache: Path | None
) -> tuple[GameResult, Recording]:
    model = Recording(
        get_model("openai/fake", base_url=server.base_url, api_key_env=None, cache=cache)
    )
    result = await play_game(game, llm_agents(game, model), intervener=ResetAt(reset_at), rng=0)
    return result, model


@pytest.mark.parametrize("variant", sorted(GAMES))
async def test_reset_changes_a_deterministic_game(variant: str, tmp_path: Path) -> None:
    config, reset_at = GAMES[variant]
    game = generate_games(1, config, seed=2)[0]
    cache = tmp_path / "cache.sqlite"
    with FakeOpenAIServer(HashScript(game)) as server:
        result, model = await _play(game, server, reset_at, cache)
        served = server.request_count
        # The cache is really on (keyed by endpoint and request): the same game again is
        # answered from it, move for move, without a server call.
        again, model2 = await _play(game, server, reset_at, cache)
        assert server.request_count == served
    assert model2.calls and all(c.cached for _, c in model2.calls)
    assert [t.message for t in again.turns] == [t.message for t in result.turns]

    # One valid reply per turn, so the i-th model call is the i-th turn.
    assert result.parse_failures == 0 and result.fallbacks == 0 and not result.accused
    assert len(model.calls) == len(result.turns)
    assert [t.decision for t in result.turns].count("reset") == 1
    assert result.turns[reset_at - 1].decision == "reset"
    # The fresh budget: max_turns more turns after the reset (the clock keeps running).
    assert result.resets == 1 and result.total_turns == reset_at + game.max_turns

    # The first prompt after the reset: the same position as the game's first prompt (same
    # agent, empty channel, budget turn 1) but not the same prompt.
    before, after = model.calls[0][0], model.calls[reset_at][0]
    assert result.turns[0].budget_turn == result.turns[reset_at].budget_turn == 1
    assert result.turns[reset_at].obs.agent == result.turns[0].obs.agent
    assert before[0] == after[0]  # the same system prompt
    assert "(empty)" in before[1]["content"] and "(empty)" in after[1]["content"]
    assert after != before
    assert f"The current turn is 1 out of {game.max_turns}." in before[1]["content"]
    clock = f"The current turn is {reset_at + 1} out of {reset_at + game.max_turns}."
    assert clock in after[1]["content"]

    # The game does not replay: the transcript after the reset differs from the one before.
    pre = [t.message for t in result.turns[: reset_at - 1]]
    post = [t.message for t in result.turns[reset_at : 2 * reset_at - 1]]
    assert all(t.applied for t in result.turns[: reset_at - 1])
    assert len(pre) == len(post) == reset_at - 1
    assert post != pre

    # With the response cache on, the post-reset reply is a fresh server call, not a hit of
    # the pre-reset one: every request of this game went to the server.
    assert [c.cached for _, c in model.calls] == [False] * len(model.calls)
    assert served == len(model.calls)
