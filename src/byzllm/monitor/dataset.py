"""Per-turn training data for monitors: features of every turn, labelled with its game's outcome.

The rogue-agents paper, §2: monitors are fit "using boolean labels from training games at each
intermediate
game turn" — every turn of a game carries that game's final success. A :class:`TurnDataset`
holds those turns as numpy arrays (one row per turn, all roles together) plus the outcome of
every game, including games in which some role never acted or no turn was monitored at all
(they still count when a gain is averaged over games; ``from_rows(outcomes=...)`` lists them).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from numbers import Real
from typing import Any

import numpy as np
import numpy.typing as npt

from byzllm.errors import InputError

from .features import FEATURE_COLUMNS

__all__ = ["TurnDataset", "game_counts", "game_flag", "game_success", "parse_success"]

FloatArray = npt.NDArray[np.float64]

#: How a game's outcome may be spelled in a row: rows read back from CSV carry strings, and
#: ``bool("False")`` is ``True``, so strings are matched rather than cast.
_OUTCOME_WORDS = {"true": True, "1": True, "false": False, "0": False}


def parse_success(value: Any, name: str = "success") -> bool:
    """A row's ``success`` (or other true/false field ``name``) as a bool: a bool, the number
    0 or 1, or the string true / false / 1 / 0 (any case, surrounding spaces ignored);
    anything else raises :class:`ValueError`.

    Strict so that an outcome that cannot be read is refused instead of counted as a success.
    """
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, str):
        word = value.strip().lower()
        if word in _OUTCOME_WORDS:
            return _OUTCOME_WORDS[word]
    elif isinstance(value, Real) and value in (0, 1):
        return bool(value)
    raise ValueError(f"{name} must be true/false or 1/0, got {value!r}")


def game_counts(rows: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """How many distinct games and how many plays the game rows ``rows`` (one per play) hold.

    A game replayed in several runs (repeats) or conditions is one game and several plays;
    reports and pages label the first count "games" and the second "plays", so that one word
    never counts two things (180 test games x 2 runs: 180 games, 360 plays). A row without a
    ``game_id`` counts as a game of its own.
    """
    ids = [row.get("game_id") for row in rows]
    named = {str(game_id) for game_id in ids if game_id is not None}
    return {"distinct_games": len(named) + ids.count(None), "plays": len(ids)}


def game_flag(game: Mapping[str, Any], name: str) -> bool:
    """A game row's true/false field ``name`` (``success``, WhoDunit's ``accused``, CodeGen's
    ``passed``), read strictly (:func:`parse_success`: a "False" read back from CSV is false,
    where ``bool("False")`` is true); a malformed one is an
    :class:`~byzllm.errors.InputError` naming the game (its ``game_id``; CodeGen: its
    ``problem_id``)."""
    try:
        return parse_success(game.get(name), name)
    except ValueError as err:
        label = game.get("game_id", game.get("problem_id"))
        raise InputError(f"game {label!r} is malformed: {err}") from err


def game_success(game: Mapping[str, Any]) -> bool:
    """A game row's outcome, read strictly (:func:`game_flag`)."""
    return game_flag(game, "success")


@dataclass(frozen=True)
class TurnDataset:
    """Turns of a set of games: ``x`` is ``(n, 4)`` in ``FEATURE_COLUMNS`` order.

    ``game_index[i]`` indexes ``games`` / ``game_success`` for turn ``i``; ``roles[i]`` is the
    acting agent's role. ``game_success[g]`` is the outcome of game ``games[g]``.
    """

    x: FloatArray
    roles: npt.NDArray[np.str_]
    game_index: npt.NDArray[np.int64]
    games: tuple[str, ...]
    game_success: npt.NDArray[np.bool_]

    def __post_init__(self) -> None:
        n = self.x.shape[0]
        if self.x.ndim != 2 or self.x.shape[1] != len(FEATURE_COLUMNS):
            raise InputError(f"turn features must be (n, {len(FEATURE_COLUMNS)})")
        if self.roles.shape != (n,) or self.game_index.shape != (n,):
            raise InputError("roles and game_index must have one entry per turn")
        if self.game_success.shape != (len(self.games),):
            raise InputError("game_success must have one entry per game")
        if n and (self.game_index.min() < 0 or self.game_index.max() >= len(self.games)):
            raise InputError("game_index out of range")
        if not np.isfinite(self.x).all():
            raise InputError("turn features contain NaN or infinite values")

    @property
    def n_turns(self) -> int:
        return int(self.x.shape[0])

    @property
    def n_games(self) -> int:
        return len(self.games)

    @property
    def turn_success(self) -> npt.NDArray[np.bool_]:
        """The label of every turn: its game's outcome."""
        return self.game_success[self.game_index]

    @property
    def base_rate(self) -> float:
        """Success-Rate of these games (without interventions)."""
        if not self.games:
            raise InputError("no games")
        return float(self.game_success.mean())

    def role_names(self) -> list[str]:
        return sorted({str(r) for r in self.roles})

    def role_mask(self, role: str) -> npt.NDArray[np.bool_]:
        return np.asarray(self.roles == role)

    def turns_per_game(self, role: str | None = None) -> npt.NDArray[np.int64]:
        """How many turns (of ``role``, or all) each game has."""
        idx = self.game_index if role is None else self.game_index[self.role_mask(role)]
        return np.bincount(idx, minlength=self.n_games).astype(np.int64)

    @classmethod
    def from_rows(
        cls,
        rows: Iterable[Mapping[str, Any]],
        outcomes: Mapping[str, Any] | None = None,
    ) -> TurnDataset:
        """Build from dict rows with ``game_id, role, entropy, varentropy, kurtosis, turn,
        success`` (the shape :class:`~byzllm.monitor.records.MonitorTurnRecord` stores).

        ``success`` may be a bool, 0/1 or the string true/false/1/0 (as a CSV export reads
        back); any other value, and games whose rows disagree on ``success``, are rejected.

        ``outcomes`` (game id -> success, in order) lists every game of the set, turns or not:
        a game can end before any turn is monitored (a GovSim lake that collapses in month 1),
        and leaving it out would take it out of the base rate and of every gain. Each row's
        game must be listed there, with the same outcome. Without it the games are those the
        rows name.
        """
        game_ids: list[str] = []
        roles: list[str] = []
        feats: list[list[float]] = []
        outcome: dict[str, bool] = {}
        listed: dict[str, bool] | None = None
        if outcomes is not None:
            try:
                listed = {str(g): parse_success(s) for g, s in outcomes.items()}
            except ValueError as err:
                raise InputError(f"game outcomes are malformed: {err}") from err
            outcome.update(listed)
        for i, row in enumerate(rows):
            try:
                gid = str(row["game_id"])
                success = parse_success(row["success"])
                feats.append([float(row[c]) for c in FEATURE_COLUMNS])
                roles.append(str(row["role"]))
            except (KeyError, TypeError, ValueError) as err:
                raise InputError(f"turn row {i} is malformed: {err}") from err
            if listed is not None and gid not in listed:
                raise InputError(f"turn row {i} is of game {gid!r}, which is not in the games")
            if listed is not None and listed[gid] != success:
                raise InputError(f"game {gid!r} has turns whose outcome is not the game's")
            if outcome.setdefault(gid, success) != success:
                raise InputError(f"game {gid!r} has turns with different outcomes")
            game_ids.append(gid)
        games = tuple(outcome)
        position = {g: k for k, g in enumerate(games)}
        return cls(
            x=np.array(feats, dtype=np.float64).reshape(-1, len(FEATURE_COLUMNS)),
            roles=np.array(roles, dtype=np.str_),
            game_index=np.array([position[g] for g in game_ids], dtype=np.int64),
            games=games,
            game_success=np.array([outcome[g] for g in games], dtype=np.bool_),
        )

    @classmethod
    def from_arrays(
        cls,
        x: Any,
        roles: Any,
        game_ids: Any,
        success: Any,
    ) -> TurnDataset:
        """Build from per-turn arrays (``success`` per turn, constant within each game)."""
        rows = (
            {
                "game_id": g,
                "role": r,
                "success": s,
                **dict(zip(FEATURE_COLUMNS, feats, strict=True)),
            }
            for feats, r, g, s in zip(
                np.asarray(x, dtype=np.float64), roles, game_ids, success, strict=True
            )
        )
        return cls.from_rows(rows)
