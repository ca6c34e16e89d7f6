"""Game environments (WhoDunitEnv, later GovSim and CodeGen) and their shared interfaces."""

from ._interfaces import Decision, Intervener, TopLogprobs, TurnObservation

__all__ = ["Decision", "Intervener", "TopLogprobs", "TurnObservation"]
