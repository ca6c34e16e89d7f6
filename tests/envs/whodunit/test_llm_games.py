"""Full games with LLM-backed agents against the offline OpenAI-compatible server."""

from __future__ import annotations

import json
import re
from typing import Any

from byzllm.envs.whodunit import GameConfig, WhoDunitGame, generate_games, llm_agents, play_game
from byzllm.llm import TokenLogprob, get_model
from byzllm.testing import FakeOpenAIServer, FakeReply


def tokens_of(text: str) -> list[TokenLogprob]:
    """Digits as single tokens; every token gets a unique top-3 list."""
    out = []
    for i, piece in enumerate(re.findall(r"\d|\w+|\s+|.", text, flags=re.S)):
        top = [(piece, -0.1 - i / 1e4), (f"x{i}", -2.5), (f"y{i}", -3.5)]
        out.append(TokenLogprob(token=piece, logprob=top[0][1], top=top))
    return out


def expected_distributions(text: str, tokens: list[TokenLogprob]) -> list[list[tuple[str, float]]]:
    """The top lists at the action number and every character id, found independently."""
    obj_start = text.rindex("{")
    spans = []
    m = re.compile(r'"action":\s*(\d+)').search(text, obj_start)
    assert m
    spans.append(m.span(1))
    m = re.compile(r'"character":\s*(\[[^\]]*\]|\d+)').search(text, obj_start)
    if m and m.group(1) not in ("0",):
        for d in re.finditer(r"\d+", m.group(1)):
            spans.append((m.start(1) + d.start(), m.start(1) + d.end()))
    out, pos = [], 0
    for tok in tokens:
        a, b = pos, pos + len(tok.token)
        pos = b
        if any(a < e and b > s for s, e in spans):
            out.append(list(tok.top))
    return out


class Script:
    """Plays sensibly from the prompts; the first Accuser reply is garbage."""

    def __init__(self, game: WhoDunitGame) -> None:
        self.game = game
        self.sent: list[tuple[str, list[list[tuple[str, float]]]]] = []
        self.garbage_sent = False

    def reply(self, text: str) -> FakeReply:
        tokens = tokens_of(text)
        self.sent.append((text, expected_distributions(text, tokens)))
        return FakeReply(text, logprobs=tokens)

    def __call__(self, request: dict[str, Any]) -> FakeReply | str:
        system = request["messages"][0]["content"]
        user = request["messages"][1]["content"]
        culprit = self.game.culprit + 1
        hat = self.game.suspects[self.game.culprit]["hat"]
        if "You know the Winner's description" in system:  # Accuser
            if not self.garbage_sent:
                self.garbage_sent = True
                return "I would rather chat about the weather."
            if "broad message: For characters" in user:
                body = {"thoughts": "only one fits", "action": 3, "character": culprit}
            else:
                body = {"thoughts": "ask broadly", "action": 2, "character": 0}
            return self.reply("Let me think.\n```json\n" + json.dumps(body) + "\n```")
        if "You have descriptions of all" in system:  # Intel
            holders = [i for i, s in enumerate(self.game.suspects, 1) if s["hat"] == hat]
            body = {
                "thoughts": "hat splits",
                "action": 2,
                "value": f"hat-{hat}",
                "character": holders,
            }
            return self.reply(json.dumps(body))
        # symmetric player
        if "has decided to share a fact" in user:
            body = {"thoughts": "enough", "action": 2, "character": culprit}
        else:
            body = {"thoughts": "share", "action": 1, "fact": 1}
        return self.reply(json.dumps(body))


async def test_asym_game_end_to_end_over_http() -> None:
    game = generate_games(1, seed=3)[0]
    script = Script(game)
    with FakeOpenAIServer(script) as server:
        model = get_model("openai/fake", base_url=server.base_url, api_key_env=None)
        result = await play_game(game, llm_agents(game, model), rng=0)
        requests = server.requests
    assert result.success and result.accused_suspect == game.culprit + 1
    assert result.total_turns == 3 and not result.simulated
    assert result.parse_failures == 1 and result.fallbacks == 0
    assert requests[0]["top_logprobs"] == 10 and requests[0]["logprobs"] is True
    # One garbage reply: the Accuser was re-prompted with a hint.
    assert "no JSON object" in requests[1]["messages"][-1]["content"]
    # The stored decision-position distributions are exactly what the server sent.
    assert len(script.sent) == len(result.turns) == 3
    for (text, expected), turn in zip(script.sent, result.turns, strict=True):
        got = [[(t, lp) for t, lp in d] for d in turn.obs.distributions]
        assert got == expected, text
    # One position for the action number, one per digit token of every listed id.
    digits = sum(len(str(c)) for c in result.turns[1].obs.action["characters"])
    assert len(result.turns[1].obs.distributions) == 1 + digits


async def test_sym_game_end_to_end_over_http() -> None:
    game = generate_games(1, GameConfig(variant="sym", n_suspects=6, n_attributes=12), seed=1)[0]
    script = Script(game)
    with FakeOpenAIServer(script) as server:
        model = get_model("openai/fake", base_url=server.base_url, api_key_env=None)
        result = await play_game(game, llm_agents(game, model), rng=0)
    assert result.accused and result.success
    assert [t.obs.action["kind"] for t in result.turns] == ["share", "accuse"]
    for (_, expected), turn in zip(script.sent, result.turns, strict=True):
        assert [[(t, lp) for t, lp in d] for d in turn.obs.distributions] == expected
    assert result.turns[1].obs.distributions[-1][0][0] == str(game.culprit + 1)[-1]


async def test_server_invented_logprobs_and_persistent_garbage() -> None:
    """Plain-text replies (the server tokenizes and invents top-k); garbage -> fallback."""
    game = generate_games(1, seed=5)[0]
    culprit = game.culprit + 1

    def script(request: dict[str, Any]) -> str:
        system = request["messages"][0]["content"]
        user = request["messages"][1]["content"]
        if "You know the Winner's description" in system:
            if "did not make a valid move" in user:
                return json.dumps({"thoughts": "guess", "action": 3, "character": culprit})
            return json.dumps({"thoughts": "ask", "action": 2, "character": 0})
        return "garbage"

    with FakeOpenAIServer(script) as server:
        model = get_model("openai/fake", base_url=server.base_url, api_key_env=None)
        agents = llm_agents(game, model)
        result = await play_game(game, agents, rng=0)
    assert result.success and result.total_turns == 3
    assert result.fallbacks == 1 and result.parse_failures == 4  # 1 try + 3 re-prompts
    intel = result.turns[1]
    assert intel.fallback and not intel.valid and len(intel.errors) == 4
    assert "did not make a valid move" in intel.message
    dists = result.turns[2].obs.distributions
    assert len(dists) >= 2 and all(d for d in dists)
