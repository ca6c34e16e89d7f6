"""CodeGen roles (the rogue-agents paper, §4.1, App. C): coders, judge and tester, LLM-backed and
simulated, behind one interface each.

The environment (``byzllm.envs.codegen``) gives a coder a :class:`CoderView` and the judge
and tester a :class:`ReviewView`; they answer with a :class:`Solution`, :class:`Feedback` and
:class:`TestSuite`. Prompts, reply readers and the simulated roles live here, below the
environment; no role ever runs code (the environment does, in the sandbox).

>>> from byzllm.agents.codegen import CodeGenSimParams, read_code
>>> read_code("```python\\ndef f():\\n    return 1\\n```", "f").value
'def f():\\n    return 1'
>>> silent = CodeGenSimParams(fault_signal=0.0)  # faulty judgements leave no trace
"""

from ._examples import (
    VisibleExample,
    example_arguments,
    leetcode_examples,
    visible_examples,
    visible_stdin_examples,
)
from ._llm import LLMCoder, LLMJudge, LLMTester, span_distributions
from ._parse import (
    MAX_REPLY_CHARS,
    MAX_TESTS,
    ParsedFeedback,
    ParsedTests,
    code_blocks,
    defines,
    format_stdin_test,
    read_code,
    read_feedback,
    read_ratings,
    read_stdin_tests,
    read_tests,
)
from ._prompts import (
    ROLE_DESCRIPTIONS,
    render_coder_prompt,
    render_judge_prompt,
    render_tester_prompt,
)
from ._sim import (
    BUG_KINDS,
    SEAT_OFFSETS,
    CodeGenSimParams,
    SimulatedCoder,
    SimulatedJudge,
    SimulatedTester,
    bug_hits,
    perturb,
    wrong_variant,
)
from ._types import (
    CODER_ROLES,
    CodeGenCoder,
    CodeGenJudge,
    CodeGenTester,
    CoderRole,
    CoderView,
    Feedback,
    ReviewView,
    SimCode,
    SimTests,
    Solution,
    TestResult,
    TestSuite,
    TopLogprobs,
)

__all__ = [
    "BUG_KINDS",
    "CODER_ROLES",
    "MAX_REPLY_CHARS",
    "MAX_TESTS",
    "ROLE_DESCRIPTIONS",
    "SEAT_OFFSETS",
    "CodeGenCoder",
    "CodeGenJudge",
    "CodeGenSimParams",
    "CodeGenTester",
    "CoderRole",
    "CoderView",
    "Feedback",
    "LLMCoder",
    "LLMJudge",
    "LLMTester",
    "ParsedFeedback",
    "ParsedTests",
    "ReviewView",
    "SimCode",
    "SimTests",
    "SimulatedCoder",
    "SimulatedJudge",
    "SimulatedTester",
    "Solution",
    "TestResult",
    "TestSuite",
    "TopLogprobs",
    "VisibleExample",
    "bug_hits",
    "code_blocks",
    "defines",
    "example_arguments",
    "format_stdin_test",
    "leetcode_examples",
    "perturb",
    "read_code",
    "read_feedback",
    "read_ratings",
    "read_stdin_tests",
    "read_tests",
    "render_coder_prompt",
    "render_judge_prompt",
    "render_tester_prompt",
    "span_distributions",
    "visible_examples",
    "visible_stdin_examples",
    "wrong_variant",
]
