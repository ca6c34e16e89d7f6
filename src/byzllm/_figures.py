"""Writing a matplotlib figure as a PNG, the one way every report does it.

Layer 0 (like :mod:`byzllm.errors`): it imports nothing else of byzllm, so the monitors and
the run engine's reports, which sit on different layers, share it. matplotlib is imported by
the callers that draw, never here at import.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["save_png"]


def save_png(fig: Any, path: str | Path, *, crop: bool = True) -> Path:
    """``fig`` as a PNG at ``path`` (150 dpi, folders created); returns the path.

    ``crop``: trim the page to what is drawn. Pass ``False`` for a figure laid out already
    (``tight_layout``): cropping measures every artist in one more draw.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.layout_engine import PlaceHolderLayoutEngine

    if not crop and isinstance(fig.get_layout_engine(), PlaceHolderLayoutEngine):
        # tight_layout leaves this inert engine behind, and savefig lays out every text once
        # more for any engine before drawing: a fifth of a heat-map's time, for the same PNG.
        fig.set_layout_engine(None)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    FigureCanvasAgg(fig)  # a figure built without pyplot gets a canvas that can write PNG
    fig.savefig(out, format="png", dpi=150, bbox_inches="tight" if crop else None)
    return out
