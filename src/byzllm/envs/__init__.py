"""Game environments (WhoDunitEnv, later GovSim and CodeGen) and their shared interfaces.

The environments live in subpackages (``byzllm.envs.whodunit``); this package exports only
the seam every environment shares with monitors: :class:`TurnObservation`, the
:class:`Intervener` protocol and its :data:`Decision`.
"""

from ._interfaces import Decision, Intervener, TopLogprobs, TurnObservation

__all__ = ["Decision", "Intervener", "TopLogprobs", "TurnObservation"]
