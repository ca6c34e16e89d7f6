"""Consensus experiments on the runner: configs, units, records, reports and the demo.

``config`` holds the pydantic configuration (protocols × topologies × compositions × F × T ×
seeds × dataset), ``setup`` turns one configuration into a graph and its agents,
``experiment`` expands units and runs one question per unit (its work function), ``records``
holds what is stored per unit (one :class:`~.records.ConsensusRound` per agent per round, one
:class:`~.records.ConsensusQuestion` with the whole trace and the graph's certificate),
``report`` recomputes the SAC paper's §5.1 metrics from them, ``demo`` is ``byzllm demo``.

The modules are the same in every experiment domain (``config``, ``records``, ``experiment``,
``report``); consensus adds ``setup`` and ``demo``.
"""

from typing import TYPE_CHECKING

from byzllm._lazy import lazy_attributes

if TYPE_CHECKING:
    from .config import ConsensusConfig

__all__ = ["ConsensusConfig"]


# The config brings the agents and the model layer's types, which a report or the viewer
# (``report``, reading stored records) does not need: loaded on first use.
__getattr__ = lazy_attributes(__name__, {"ConsensusConfig": ".config"})
