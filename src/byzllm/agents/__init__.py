"""Agents: what an agent does in each protocol or environment, one subpackage per domain.
May import: the layers below (errors, _process, graphs, tasks, llm, sandbox); nothing above.

Every domain has the same inner shape: ``_types`` (the interface and the plain data an agent
sees and produces), ``_prompts`` (rendering), ``_parse`` (reading model replies), ``_llm`` (the
LLM-backed agent), ``_sim`` (the simulated agent); consensus adds ``_byzantine`` (attacks).

* :mod:`byzllm.agents.consensus` — SAC, CP-WBFT, debate, majority and W-MSR agents (the SAC
  paper).
* :mod:`byzllm.agents.whodunit` — WhoDunitEnv players (the rogue-agents paper, §3).
* :mod:`byzllm.agents.govsim` — GovSim fishers (Piatti et al. 2024; the rogue-agents paper,
  §4.1).
* :mod:`byzllm.agents.codegen` — CodeGen coders, judge and tester (the rogue-agents paper,
  §4.1).

Shared by the domains: ``_seeding`` (deterministic per-call randomness of the simulated
agents); ``_params`` (the simulators' named parameters, each with its source, which
``byzllm sim show`` prints); ``_parsed`` (:class:`Parsed`, :class:`ParseCounts`) for the reply
parsers, which say whether they fell back to their documented default and are counted per
stage (parse health); ``_thinking`` (a reasoning model's ``<think>`` blocks, blanked before any
parser reads a reply); ``_spans`` (the reported distributions at a reply's decision positions,
which the monitors read); ``_object_memo`` (values worked out from a frozen object, such as a
task's wrong answers, remembered by the object's identity).
"""

from ._parsed import PARSE_STAGES, ParseCounts, Parsed, ParseStage

__all__ = ["PARSE_STAGES", "ParseCounts", "ParseStage", "Parsed"]
