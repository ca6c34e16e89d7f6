"""Game instances of WhoDunitEnv: suspects, culprit, facts; generation and splits.

The rogue-agents paper, §3 and §4.1: a game has N suspects with unique attribute sets drawn from an
attribute table (Appendix B, Table 4), one culprit chosen at random; in the symmetric variant
each agent receives its own facts about the culprit (three by default), resampled until
together they identify the culprit uniquely. Splits follow §4.1 / Appendix D.1: 210 train, 90
validation and 180 test games, separated by suspect descriptions and culprit.

Defaults (§4.1): asymmetric 10 suspects, 31 turns, the first 12 rows of Table 4 (hat to
watch); symmetric 20 suspects, 20 turns, all 20 attributes. The paper gives the asymmetric
attribute count three ways: Appendix B says "we used 12 attributes for the asymmetric
variant", and the asymmetric game of Appendix G (Fig. 17) lists exactly those 12 (``hair``
and ``watch`` included); §4.1 says 11; Table 4's caption says "the top half" (10 rows). The
default follows Appendix B and Fig. 17, the two that agree; ``n_attributes`` sets another.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from byzllm._strict import StrictNumbers
from byzllm.agents.whodunit import Variant
from byzllm.errors import ConfigError, InputError

__all__ = [
    "ATTRIBUTE_TABLE",
    "SPLIT_SIZES",
    "GameConfig",
    "Splits",
    "WhoDunitGame",
    "check_game",
    "generate_game",
    "generate_games",
    "make_splits",
]

#: The rogue-agents paper, Table 4, in the paper's order: the first twelve rows are the
#: asymmetric variant's (Appendix B; Fig. 17's game lists them); all twenty are the symmetric
#: variant's.
ATTRIBUTE_TABLE: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("hat", ("brown", "black")),
    ("mood", ("happy", "sad")),
    ("shirt_color", ("pink", "green")),
    ("hobby", ("basketball", "dancing")),
    ("pants", ("long", "short")),
    ("pants_color", ("brown", "black")),
    ("eye_color", ("blue", "brown", "green")),
    ("eye_glasses", ("circular", "square")),
    ("shirt", ("button-up", "tee")),
    ("shoe_color", ("red", "white")),
    ("hair", ("long", "short")),
    ("watch", ("bronze", "silver")),
    ("socks", ("dotted", "white")),
    ("jacket", ("yellow", "jean")),
    ("height", ("short", "tall")),
    ("age", ("young", "old")),
    ("build", ("medium", "muscular")),
    ("personality", ("introverted", "extroverted")),
    ("interests", ("sports", "arts")),
    ("occupation", ("professional", "student")),
)

#: The least chance that one draw of a symmetric game's facts identifies the culprit
#: (:meth:`GameConfig._check_facts_can_identify`); 1e-4 still finds a game in a fraction of
#: a second.
_MIN_IDENTIFY = 1e-4

_DEFAULTS: dict[str, dict[str, int]] = {
    "asym": {"n_suspects": 10, "n_attributes": 12, "max_turns": 31},
    "sym": {"n_suspects": 20, "n_attributes": 20, "max_turns": 20},
}


class GameConfig(StrictNumbers):
    """The complexity levers of §3 (suspect count, attribute count, turn limit) and more.

    ``None`` means the paper's default for the variant. ``attributes`` replaces Table 4 with
    a custom table (attribute → values, at least two values each).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    variant: Variant = "asym"
    n_suspects: int | None = Field(default=None, ge=2, le=200)
    n_attributes: int | None = Field(default=None, ge=1)
    max_turns: int | None = Field(default=None, ge=1, le=1000)
    n_agents: int = Field(default=3, ge=2, le=20, description="symmetric variant only")
    facts_per_agent: int = Field(default=3, ge=1, description="symmetric variant only")
    attributes: dict[str, tuple[str, ...]] | None = None

    @model_validator(mode="after")
    def _check_table(self) -> GameConfig:
        table = self.table()
        if any(len(set(values)) < 2 for values in table.values()):
            raise ValueError("every attribute needs at least two distinct values")
        combos = 1
        for values in table.values():
            combos *= len(values)
        if combos < self.suspect_count():
            raise ValueError(
                f"{len(table)} attributes allow only {combos} distinct suspects, "
                f"fewer than {self.suspect_count()}"
            )
        if self.variant == "sym" and self.n_agents * self.facts_per_agent > len(table):
            raise ValueError(
                f"{self.n_agents} agents x {self.facts_per_agent} facts need that many distinct "
                f"attributes; the table has {len(table)}"
            )
        if self.variant == "sym":
            self._check_facts_can_identify(table)
        return self

    def _check_facts_can_identify(self, table: dict[str, tuple[str, ...]]) -> None:
        """Refuse a symmetric setting whose facts almost never single out the culprit.

        Another suspect shares every fact's value with probability ``q``, the product of
        ``1 / values`` over the facts' attributes, so one draw of facts identifies the culprit
        with probability about ``(1 - q) ** (N - 1)``, at best on the attributes with the most
        values. Below :data:`_MIN_IDENTIFY` :func:`generate_game` would draw lineups for many
        minutes before giving up (two facts among 200 suspects: about 1e-25).
        """
        need = self.n_agents * self.facts_per_agent
        sizes = sorted((len(set(values)) for values in table.values()), reverse=True)[:need]
        q = math.prod(1.0 / size for size in sizes)
        if (1.0 - q) ** (self.suspect_count() - 1) < _MIN_IDENTIFY:
            raise ValueError(
                f"{need} facts about the culprit (agents x facts per agent) almost never tell "
                f"it apart from {self.suspect_count() - 1} other suspects: use more facts per "
                "agent, more agents or fewer suspects"
            )

    def suspect_count(self) -> int:
        return self.n_suspects or _DEFAULTS[self.variant]["n_suspects"]

    def turn_limit(self) -> int:
        return self.max_turns or _DEFAULTS[self.variant]["max_turns"]

    def table(self) -> dict[str, tuple[str, ...]]:
        """The attribute table in use (ordered)."""
        if self.attributes is not None:
            return {k: tuple(v) for k, v in self.attributes.items()}
        n = self.n_attributes or _DEFAULTS[self.variant]["n_attributes"]
        if n > len(ATTRIBUTE_TABLE):
            raise ValueError(f"Table 4 has {len(ATTRIBUTE_TABLE)} attributes, asked for {n}")
        return dict(ATTRIBUTE_TABLE[:n])


class WhoDunitGame(BaseModel):
    """One game instance. ``culprit`` is a 0-based index into ``suspects`` (agents see 1-based
    ids); ``facts[i]`` are agent i's starting facts in the symmetric variant."""

    model_config = ConfigDict(frozen=True)

    id: str
    variant: Variant
    attributes: dict[str, tuple[str, ...]]
    suspects: tuple[dict[str, str], ...]
    culprit: int = Field(ge=0)
    facts: tuple[tuple[tuple[str, str], ...], ...] = ()
    max_turns: int = Field(ge=1)

    @property
    def culprit_description(self) -> dict[str, str]:
        return dict(self.suspects[self.culprit])


def check_game(game: WhoDunitGame) -> None:
    """Raise :class:`InputError` unless ``game`` satisfies every invariant.

    Unique suspects over the attribute table; a culprit in range; in the symmetric variant,
    facts that are the culprit's, on distinct attributes, and that together match exactly one
    suspect (the culprit).
    """
    table = game.attributes
    if not 0 <= game.culprit < len(game.suspects):
        raise InputError(f"game {game.id}: culprit index {game.culprit} out of range")
    seen: set[tuple[str, ...]] = set()
    for i, s in enumerate(game.suspects):
        if set(s) != set(table) or any(s[a] not in table[a] for a in table):
            raise InputError(f"game {game.id}: suspect {i + 1} does not fit the attribute table")
        key = tuple(s[a] for a in table)
        if key in seen:
            raise InputError(f"game {game.id}: suspect {i + 1} duplicates another suspect")
        seen.add(key)
    if game.variant == "sym":
        if not game.facts:
            raise InputError(f"game {game.id}: a symmetric game needs facts")
        culprit = game.suspects[game.culprit]
        flat = [f for agent_facts in game.facts for f in agent_facts]
        if any(culprit.get(p) != v for p, v in flat):
            raise InputError(f"game {game.id}: a fact is not true of the culprit")
        if len({p for p, _ in flat}) != len(flat):
            raise InputError(f"game {game.id}: two facts share an attribute")
        matching = [i for i, s in enumerate(game.suspects) if all(s.get(p) == v for p, v in flat)]
        if matching != [game.culprit]:
            raise InputError(f"game {game.id}: the facts do not identify the culprit uniquely")


def _draw_suspects(
    table: dict[str, tuple[str, ...]], n: int, rng: random.Random
) -> list[dict[str, str]]:
    seen: set[tuple[str, ...]] = set()
    suspects: list[dict[str, str]] = []
    while len(suspects) < n:
        s = {attr: rng.choice(values) for attr, values in table.items()}
        key = tuple(s.values())
        if key not in seen:
            seen.add(key)
            suspects.append(s)
    return suspects


def generate_game(
    config: GameConfig, rng: random.Random, game_id: str, *, max_tries: int = 10_000
) -> WhoDunitGame:
    """Draw one game: unique suspects, a uniform culprit, and (sym) identifying facts."""
    table = config.table()
    n = config.suspect_count()
    for _ in range(max_tries):
        suspects = _draw_suspects(table, n, rng)
        culprit = rng.randrange(n)
        facts: tuple[tuple[tuple[str, str], ...], ...] = ()
        if config.variant == "sym":
            need = config.n_agents * config.facts_per_agent
            ok = False
            for _ in range(200):
                chosen = rng.sample(list(table), need)
                flat = [(a, suspects[culprit][a]) for a in chosen]
                matching = [s for s in suspects if all(s[a] == v for a, v in flat)]
                if len(matching) == 1:
                    k = config.facts_per_agent
                    facts = tuple(tuple(flat[i * k : (i + 1) * k]) for i in range(config.n_agents))
                    ok = True
                    break
            if not ok:
                continue  # these suspects are too alike: draw a new lineup
        game = WhoDunitGame(
            id=game_id,
            variant=config.variant,
            attributes=table,
            suspects=tuple(suspects),
            culprit=culprit,
            facts=facts,
            max_turns=config.turn_limit(),
        )
        return game
    raise ConfigError(
        "could not draw a symmetric game whose facts identify the culprit: use fewer suspects, "
        "more attributes or more facts per agent"
    )


def _game_key(game: WhoDunitGame) -> tuple[frozenset[tuple[str, ...]], tuple[str, ...]]:
    table = list(game.attributes)
    lineup = frozenset(tuple(s[a] for a in table) for s in game.suspects)
    return lineup, tuple(game.suspects[game.culprit][a] for a in table)


def _culprit_key(game: WhoDunitGame) -> frozenset[tuple[str, str]]:
    """The culprit's description as a set of (attribute, value) pairs: what splits keep apart."""
    return frozenset(game.culprit_description.items())


#: Draws in a row that bring no new game before :func:`generate_games` gives up: the table is
#: spent. Drawing the last of 500 possible games takes about 500 draws, and 10,000 in a row
#: without one happens with a probability below e^-20.
MAX_FRUITLESS_DRAWS = 10_000


def generate_games(
    n: int, config: GameConfig | None = None, *, seed: int = 0, prefix: str | None = None
) -> list[WhoDunitGame]:
    """``n`` distinct games (no two share lineup and culprit), reproducible from ``seed``.

    A small table may allow fewer distinct games than ``n`` (16 suspects over four two-valued
    attributes: one lineup, 16 games): drawing stops with a :class:`ConfigError` after as
    many tries as :func:`make_splits` allows, rather than never, or once
    :data:`MAX_FRUITLESS_DRAWS` draws in a row brought no new game (the table is spent: a
    config may ask for millions of games, whose tries would have taken hours).
    """
    if n < 0:
        raise InputError("the number of games must be non-negative")
    config = config or GameConfig()
    rng = random.Random(f"whodunit/{config.variant}/{seed}")
    prefix = prefix if prefix is not None else f"{config.variant}-s{seed}"
    games: list[WhoDunitGame] = []
    keys: set[object] = set()
    tries = fruitless = 0
    while len(games) < n:
        tries += 1
        if tries > 100 * n + 1000 or fruitless >= MAX_FRUITLESS_DRAWS:
            raise ConfigError(
                f"cannot draw {n} distinct games (found {len(games)}): the table allows too "
                "few lineups and culprits; use more attributes or fewer games"
            )
        game = generate_game(config, rng, f"{prefix}-{len(games):04d}")
        key = _game_key(game)
        if key in keys:
            fruitless += 1
        else:
            fruitless = 0
            keys.add(key)
            games.append(game)
    return games


#: The train, validation and test splits' sizes (the rogue-agents paper, §4.1: 210, 90 and 180
#: games); a small attribute table may allow fewer.
SPLIT_SIZES: dict[str, int] = {"train": 210, "validation": 90, "test": 180}


class Splits(BaseModel):
    """Train / validation / test games (§4.1: 210 / 90 / 180, :data:`SPLIT_SIZES`)."""

    train: list[WhoDunitGame]
    validation: list[WhoDunitGame]
    test: list[WhoDunitGame]

    def get(self, name: Literal["train", "validation", "test"]) -> list[WhoDunitGame]:
        return {"train": self.train, "validation": self.validation, "test": self.test}[name]


def make_splits(
    config: GameConfig | None = None,
    *,
    seed: int = 0,
    sizes: tuple[int, int, int] = (
        SPLIT_SIZES["train"],
        SPLIT_SIZES["validation"],
        SPLIT_SIZES["test"],
    ),
    held_out: Iterable[WhoDunitGame] = (),
) -> Splits:
    """Disjoint splits: no culprit description and no (lineup, culprit) pair is shared.

    Disjointness by culprit description is the separation the splits promise: individual
    suspects may recur across lineups (twelve attributes give 6,144 possible suspects, and
    480 x 10 suspects drawn from them almost surely repeat some); every culprit description
    is unique across all splits.

    ``held_out``: games of another setting (the games monitors were trained on, when they are
    tested on another lineup size, the rogue-agents paper, Fig. 6) whose culprit
    descriptions the test split may not use either. The train and validation splits are
    drawn as without it, and so is the test split when ``held_out`` are this setting's own
    train and validation games.
    """
    config = config or GameConfig()
    rng = random.Random(f"whodunit-splits/{config.variant}/{seed}")
    names = ("train", "validation", "test")
    out: dict[str, list[WhoDunitGame]] = {name: [] for name in names}
    # Descriptions as (attribute, value) sets: within one setting (one attribute table) the
    # same separation as comparing value tuples, and comparable across settings.
    culprits: set[frozenset[tuple[str, str]]] = set()
    held = {_culprit_key(g) for g in held_out}
    for name, size in zip(names, sizes, strict=True):
        tries = 0
        while len(out[name]) < size:
            tries += 1
            if tries > 100 * size + 1000:
                raise ConfigError(
                    "cannot draw enough games with distinct culprits: enlarge the table"
                )
            game = generate_game(config, rng, f"{config.variant}-{name}-{len(out[name]):04d}")
            culprit_key = _culprit_key(game)
            if culprit_key in culprits or (name == "test" and culprit_key in held):
                continue
            culprits.add(culprit_key)
            out[name].append(game)
    return Splits(train=out["train"], validation=out["validation"], test=out["test"])
