"""A fitted profile with a value its parameters refuse is one clear InputError, not a traceback."""

from __future__ import annotations

import pytest

from byzllm.agents.whodunit import SimParams
from byzllm.errors import InputError
from byzllm.experiments._fitting import FittedProfile, profile_params


def _profile(**sim: float) -> FittedProfile:
    return FittedProfile(
        domain="whodunit", run="r", run_simulated=False, groups={"sim": sim}, sources={},
        evidence={},
    )  # fmt: skip


def test_a_refused_value_names_the_parameter() -> None:
    with pytest.raises(InputError, match=r"sim\.evidence_weight: Input should be greater than 0"):
        profile_params(_profile(evidence_weight=0.0), "whodunit", "WhoDunit", SimParams)
    ok = profile_params(_profile(evidence_weight=2.0), "whodunit", "WhoDunit", SimParams)
    assert ok.evidence_weight == 2.0
    with pytest.raises(InputError, match="not a CodeGen one"):
        profile_params(_profile(), "codegen", "CodeGen", SimParams)
