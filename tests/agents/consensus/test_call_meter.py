"""CallMeter: one agent's model-call accounting in one round (the SAC paper's cost columns)."""

from __future__ import annotations

from byzllm.agents.consensus import CallMeter


def test_merge_adds_every_counter_and_the_parse_counts() -> None:
    total = CallMeter(calls=1, cached_calls=2, input_tokens=10, latency_s=0.5)
    total.parse.add("answer", fell_back=False)
    other = CallMeter(calls=3, saved_calls=4, output_tokens=7, latency_s=0.25)
    other.parse.add("answer", fell_back=True)
    total.merge(other)
    assert (total.calls, total.cached_calls, total.saved_calls) == (4, 2, 4)
    assert (total.input_tokens, total.output_tokens, total.latency_s) == (10, 7, 0.75)
    assert total.parse.to_dict() == {"answer": {"calls": 2, "fallbacks": 1}}
    assert other.calls == 3  # the merged meter is left as it was
