"""Agents: what an agent does in each protocol or environment, one subpackage per domain.
May import: the layers below (errors, _process, graphs, tasks, llm, sandbox); nothing above.

Every domain has the same inner shape: ``_types`` (the interface and the plain data an agent
sees and produces), ``_prompts`` (rendering), ``_parse`` (reading model replies), ``_llm`` (the
LLM-backed agent), ``_sim`` (the simulated agent); consensus adds ``_byzantine`` (attacks).

* :mod:`byzllm.agents.consensus` — SAC, CP-WBFT, debate, majority and W-MSR agents (the SAC
  paper).
* :mod:`byzllm.agents.whodunit` — WhoDunitEnv players (the rogue-agents paper, §3).

``_seeding`` (deterministic per-call randomness) is shared by the simulated agents;
``_parsed`` (:class:`Parsed`, :class:`ParseCounts`) by the reply parsers, which say whether
they fell back to their documented default and are counted per stage (parse health).
"""

from ._parsed import PARSE_STAGES, ParseCounts, Parsed, ParseStage

__all__ = ["PARSE_STAGES", "ParseCounts", "ParseStage", "Parsed"]
