"""``byzllm._figures.save_png``: one writer for every report's PNG."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def _laid_out_figure() -> Figure:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(4, 3))
    ax = fig.add_subplot(1, 1, 1)
    image = ax.imshow([[1.0, 2.0], [3.0, 4.0]])
    for i in range(2):
        for j in range(2):
            ax.text(j, i, f"{i}{j}", ha="center", va="center", in_layout=False)
    ax.set_title("a title")
    fig.colorbar(image, ax=ax)
    fig.tight_layout()
    return fig


def test_a_figure_laid_out_already_is_drawn_once_and_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """tight_layout leaves an inert layout engine behind, for which savefig would lay out
    every text once more before drawing; save_png drops it: one draw, the same bytes."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from byzllm._figures import save_png

    kept = _laid_out_figure()
    FigureCanvasAgg(kept)
    kept.savefig(tmp_path / "kept.png", format="png", dpi=150)

    draws = []
    draw = Figure.draw

    def counting(self: Figure, renderer: object) -> None:
        draws.append(self)
        draw(self, renderer)  # type: ignore[arg-type]

    monkeypatch.setattr(Figure, "draw", counting)
    saved = save_png(_laid_out_figure(), tmp_path / "saved.png", crop=False)
    assert len(draws) == 1
    assert saved.read_bytes() == (tmp_path / "kept.png").read_bytes()


def test_cropping_keeps_what_is_drawn(tmp_path: Path) -> None:
    from byzllm._figures import save_png

    path = save_png(_laid_out_figure(), tmp_path / "nested" / "crop.png")
    assert path.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
