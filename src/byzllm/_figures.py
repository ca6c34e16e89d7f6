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

    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    FigureCanvasAgg(fig)  # a figure built without pyplot gets a canvas that can write PNG
    fig.savefig(out, format="png", dpi=150, bbox_inches="tight" if crop else None)
    return out
