"""A composition's label read back (parse_label), the one parser the consensus reports share."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from byzllm.agents.consensus import ATTACKS
from byzllm.experiments.consensus.config import Composition, LabelParts, parse_label


@given(
    strong=st.integers(1, 12),
    weak=st.integers(0, 12),
    byzantine=st.integers(0, 4),
    attack=st.sampled_from(ATTACKS),
    defect_round=st.integers(1, 9),
    highest=st.booleans(),
)
def test_every_label_reads_back_to_its_composition(
    strong: int, weak: int, byzantine: int, attack: str, defect_round: int, highest: bool
) -> None:
    composition = Composition(
        strong=strong,
        weak=weak,
        byzantine=byzantine,
        attack=attack,
        defect_round=defect_round,
        placement="highest-degree" if highest else "random",
    )
    parts = parse_label(composition.label)
    assert parts == LabelParts(
        strong,
        weak,
        byzantine,
        attack,
        defect_round if attack == "mimic" else 0,
        "highest-degree" if highest else "",
    )


def test_given_placement_and_examples() -> None:
    assert parse_label("4s2w1b-replay") == LabelParts(4, 2, 1, "replay", 0, "")
    assert parse_label("4s1w2b-mimic3@0,5") == LabelParts(4, 1, 2, "mimic", 3, "0,5")


@given(st.text(max_size=60))
def test_garbage_is_none_or_well_formed(text: str) -> None:
    parts = parse_label(text)
    if parts is not None:
        assert parts.strong >= 0 and parts.byzantine >= 0 and parts.attack


def test_compositions_sharing_a_label_are_refused_unless_identical() -> None:
    """The report groups rows by label: two compositions of one label but different
    fields ran as two sets of units and pooled into one row (n_questions doubled)."""
    import pytest

    from byzllm.errors import ConfigError
    from byzllm.experiments.consensus.config import ConsensusConfig
    from byzllm.runs import load_config

    for pair in (
        [{"attack": "replay"}, {"attack": "replay", "defect_round": 3}],
        [{"attack": "replay"}, {"attack": "replay", "byzantine_nodes": [3]}],
        [
            {"weak": 1, "byzantine": 2, "placement": "given", "byzantine_nodes": [0, 1]},
            {"weak": 1, "byzantine": 2, "placement": "given", "byzantine_nodes": [1, 0]},
        ],
    ):
        with pytest.raises(ConfigError, match=r"compositions\.0 and compositions\.1 are both"):
            load_config(None, ConsensusConfig, {"compositions": pair})
    # An exact repeat is one set of units (as a repeated seed is), and mimic's defect round
    # is in its label: both are accepted.
    repeated = [{"attack": "replay"}, {"attack": "replay"}]
    assert len(load_config(None, ConsensusConfig, {"compositions": repeated}).compositions) == 2
    mimics = [{"attack": "mimic"}, {"attack": "mimic", "defect_round": 3}]
    labels = [
        c.label for c in ConsensusConfig.model_validate({"compositions": mimics}).compositions
    ]
    assert labels == ["4s2w1b-mimic2", "4s2w1b-mimic3"]
