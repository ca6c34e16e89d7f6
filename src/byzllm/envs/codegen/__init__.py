"""CodeGen (the rogue-agents paper, §4.1, §5 Table 1, App. C): a debate of four coders, a judge
and a test writer on one programming problem, with the intervention seam monitors use.

Model-generated code runs only in :mod:`byzllm.sandbox` (:mod:`._exec`); the debate, its
rounds and the intervention are :mod:`._debate`; ready-made teams :mod:`._team`.

>>> from byzllm.envs.codegen import FINAL_RULES, ROLES
>>> ROLES
('judge', 'tester')
"""

from ._debate import DebateResult, FinalRule, RoundRecord, Team, TurnRecord, play_debate
from ._exec import (
    Execution,
    HiddenOutcome,
    assemble,
    generated_test_result,
    hidden_outcome,
    syntax_error,
)
from ._team import llm_team, simulated_team

#: The monitored roles: the judgement that passes through the judge and the tester (§4.1).
ROLES: tuple[str, str] = ("judge", "tester")
#: The final-answer rules of :func:`play_debate`.
FINAL_RULES: tuple[FinalRule, ...] = ("tests", "vote")

__all__ = [
    "FINAL_RULES",
    "ROLES",
    "DebateResult",
    "Execution",
    "FinalRule",
    "HiddenOutcome",
    "RoundRecord",
    "Team",
    "TurnRecord",
    "assemble",
    "generated_test_result",
    "hidden_outcome",
    "llm_team",
    "play_debate",
    "simulated_team",
    "syntax_error",
]
