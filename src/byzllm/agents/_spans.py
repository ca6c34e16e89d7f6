"""The reported distributions at a reply's decision positions, one definition for every LLM
agent (the rogue-agents paper, §3: a monitor reads the top-k log-probabilities where the agent
writes its decision)."""

from __future__ import annotations

from collections.abc import Sequence

from byzllm.llm import TokenLogprob

__all__ = ["span_distributions"]


def span_distributions(
    tokens: Sequence[TokenLogprob], spans: Sequence[tuple[int, int]]
) -> list[list[tuple[str, float]]]:
    """Top-k lists of the tokens overlapping ``spans`` (offsets into the joined token text),
    in generation order; a token without a top-k list contributes its own
    ``(token, logprob)`` as a one-entry list."""
    picked: list[int] = []
    pos = 0
    for i, tok in enumerate(tokens):
        a, b = pos, pos + len(tok.token)
        pos = b
        if any(a < e and b > s for s, e in spans):
            picked.append(i)
    return [
        [(t, float(lp)) for t, lp in tokens[i].top] or [(tokens[i].token, tokens[i].logprob)]
        for i in picked
    ]
