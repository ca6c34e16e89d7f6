"""A question's graph, drawn with its shared attributes on groups, gives in Chromium the same
pixels as the markup with every attribute on every element (kept here as the reference)."""

from __future__ import annotations

import math
import random
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

from byzllm.view._consensus import _GROUP_COLOUR, _graph_svg


def _reference(n: int, edges: Sequence[Sequence[int]], groups: Sequence[str]) -> str:
    size, radius = 220, 85
    pos = [
        (
            size / 2 + radius * math.cos(2 * math.pi * i / max(n, 1) - math.pi / 2),
            size / 2 + radius * math.sin(2 * math.pi * i / max(n, 1) - math.pi / 2),
        )
        for i in range(n)
    ]
    lines = "".join(
        f'<line x1="{pos[u][0]:.1f}" y1="{pos[u][1]:.1f}" x2="{pos[v][0]:.1f}" '
        f'y2="{pos[v][1]:.1f}" stroke="#8c959f" stroke-width="1"/>'
        for u, v in edges
        if u < n and v < n
    )
    nodes = "".join(
        f'<circle cx="{x:.1f}" cy="{y:.1f}" r="13" fill="{_GROUP_COLOUR.get(g, "#57606a")}"/>'
        f'<text x="{x:.1f}" y="{y + 4:.1f}" text-anchor="middle" font-size="11" '
        f'fill="#fff">{i}</text>'
        for i, ((x, y), g) in enumerate(zip(pos, groups, strict=False))
    )
    legend = " ".join(f'<span style="color:{c}">● {g}</span>' for g, c in _GROUP_COLOUR.items())
    return (
        f'<svg class="graph" width="{size}" height="{size}" viewBox="0 0 {size} {size}">'
        f"{lines}{nodes}</svg><div class='note'>{legend}</div>"
    )


def _pixels(chromium: str, svg: str, folder: Path, name: str) -> bytes:
    page = folder / f"{name}.html"
    page.write_text(
        f"<!DOCTYPE html><html><body style='margin:0'>{svg}</body></html>", encoding="utf-8"
    )
    shot = folder / f"{name}.png"
    subprocess.run(
        [chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--window-size=400,300", f"--screenshot={shot}", page.resolve().as_uri()],
        capture_output=True, timeout=120, check=True,
    )  # fmt: skip
    return shot.read_bytes()


@pytest.mark.parametrize("n", [7, 25])
def test_the_graph_draws_the_same_pixels(chromium: str, tmp_path: Path, n: int) -> None:
    draw = random.Random(n)
    edges = [[u, v] for u in range(n) for v in range(u + 1, n) if draw.random() < 0.5]
    groups = [draw.choice(["strong", "weak", "byzantine", "other"]) for _ in range(n)]
    svg = _graph_svg(n, edges, groups)
    assert svg.count("<line") == len(edges) and svg.count("<circle") == n
    assert len(svg) < 0.75 * len(_reference(n, edges, groups))
    ours = _pixels(chromium, svg, tmp_path, "ours")
    assert ours == _pixels(chromium, _reference(n, edges, groups), tmp_path, "reference")
    # Not two blank pictures: a graph without its edges draws other pixels.
    assert ours != _pixels(chromium, _graph_svg(n, [], groups), tmp_path, "no-edges")
