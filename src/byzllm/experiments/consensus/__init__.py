"""Consensus experiments on the runner: configs, units, records, reports and the demo.

``config`` holds the pydantic configuration (protocols × topologies × compositions × F × T ×
seeds × dataset), ``setup`` turns one configuration into a graph and its agents,
``experiment`` expands units and runs one question per unit, ``demo`` is ``byzllm demo``.
"""

from .config import ConsensusConfig

__all__ = ["ConsensusConfig"]
