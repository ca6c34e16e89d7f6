"""A tiny hand-made monitor data set whose ridge solution is known in closed form.

Training: four single-turn games with entropy e ∈ {0, 2} and turn t ∈ {1, 3}; the two
low-entropy games succeeded. Varentropy and kurtosis are constant (so carry no signal).
Scaled to [-1, 1], e' = e - 1 and t' = t - 2 are ±1 and orthogonal; with Ridge(alpha=1):
w_e = Σ e'(y - ȳ) / (Σ e'² + 1) = -2 / 5 = -0.4, w_t = 0, intercept ȳ = 0.5, so the
degree-1 entropy monitor is P(success) = 0.5 - 0.4 (e - 1) = 0.9 - 0.4 e.
"""

from __future__ import annotations

from byzllm.monitor import TurnDataset


def train_rows() -> list[dict[str, object]]:
    rows = []
    for i, (e, t, ok) in enumerate(
        [(0.0, 1, True), (0.0, 3, True), (2.0, 1, False), (2.0, 3, False)]
    ):
        rows.append(
            {
                "game_id": f"tr{i}",
                "role": "accuser",
                "entropy": e,
                "varentropy": 0.3,
                "kurtosis": 1.0,
                "turn": t,
                "success": ok,
            }
        )
    return rows


# Validation: (game, entropy of each accuser turn, success). Minima of P = 0.9 - 0.4e:
# v1 0.7 (S), v2 0.8 (S), v3 0.32 (F), v4 0.54 (F), v5 0.1 (F); base rate b = 2/5.
VALIDATION = [
    ("v1", [0.0, 0.5], True),
    ("v2", [0.25], True),
    ("v3", [1.45, 0.5], False),
    ("v4", [0.9], False),
    ("v5", [2.0], False),
]


def validation_rows() -> list[dict[str, object]]:
    rows = []
    for gid, entropies, ok in VALIDATION:
        for k, e in enumerate(entropies):
            rows.append(
                {
                    "game_id": gid,
                    "role": "accuser",
                    "entropy": e,
                    "varentropy": 0.3,
                    "kurtosis": 1.0,
                    "turn": 2 * k + 1,
                    "success": ok,
                }
            )
            rows.append(
                {
                    "game_id": gid,
                    "role": "intel",
                    "entropy": 0.1,
                    "varentropy": 0.3,
                    "kurtosis": 1.0,
                    "turn": 2 * k + 2,
                    "success": ok,
                }
            )
    return rows


def train_set() -> TurnDataset:
    return TurnDataset.from_rows(train_rows())


def validation_set() -> TurnDataset:
    return TurnDataset.from_rows(validation_rows())
