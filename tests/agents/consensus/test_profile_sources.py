"""The default profiles' sources say what the cited text says."""

from __future__ import annotations

from byzllm.agents.consensus import STRONG_PROFILE, WEAK_PROFILE, SimulatedProfile


def _sources(profile: SimulatedProfile) -> dict[str, str]:
    return {row.name: row.source for row in profile.rows()}


def test_self_trust_is_declared_an_assumption_not_a_paper_figure() -> None:
    for profile in (STRONG_PROFILE, WEAK_PROFILE):
        source = _sources(profile)["self_trust"]
        assert source.startswith("assumed:")
        assert "does not state it" in source and "ablation" in source


def test_strength_sources_quote_table_1_ranges() -> None:
    # The SAC paper, Table 1, S IAA (gpt-4o-mini): 84, 84, 86 (CP-WBFT), 84, 83, 81 (SAC)
    # -> 81-86%; W IAA (gpt-3.5-turbo): 25, 28, 25, 23, 28, 28 -> 23-28%.
    assert "81-86%" in _sources(STRONG_PROFILE)["strength"]
    assert "23-28%" in _sources(WEAK_PROFILE)["strength"]
    # The defaults sit inside those ranges.
    assert 0.81 <= STRONG_PROFILE.strength <= 0.86
    assert 0.23 <= WEAK_PROFILE.strength <= 0.28
