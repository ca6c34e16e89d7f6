"""The verdict every benchmark prints beside a target and puts in its JSON line.

A target is stated for one setting (a run size, a core count, a latency): judged there,
``"met"`` or ``"NOT met"``; anywhere else its figures are printed but the verdict says
``"not judged: target is for <setting>"``, since another setting moves what is reachable.
Imported by the scripts beside it (``python benchmarks/<name>.py`` puts this folder first on
``sys.path``).
"""

from __future__ import annotations

__all__ = ["verdict"]


def verdict(met: bool, *, judged: bool = True, target_for: str = "") -> str:
    """``"met"`` / ``"NOT met"`` where the run is in the target's setting (``judged``), else
    ``"not judged: target is for <target_for>"``."""
    if not judged:
        return f"not judged: target is for {target_for}"
    return "met" if met else "NOT met"
