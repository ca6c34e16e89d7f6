"""Game environments (WhoDunitEnv, GovSim, CodeGen) and the seam they share with monitors.
May import: agents, testing and the layers below them (errors, graphs, tasks, llm, sandbox).

The environments live in subpackages (``byzllm.envs.whodunit``); this package exports only
the seam every environment shares with monitors: :class:`TurnObservation`, the
:class:`Intervener` protocol and its :data:`Decision`.
"""

from ._interfaces import Decision, Intervener, TopLogprobs, TurnObservation

__all__ = ["Decision", "Intervener", "TopLogprobs", "TurnObservation"]
