"""Game generation, invariants and splits (the rogue-agents paper, §3, §4.1, Appendix B, D.1)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from byzllm.envs.whodunit import (
    ATTRIBUTE_TABLE,
    GameConfig,
    WhoDunitGame,
    check_game,
    generate_games,
    make_splits,
)
from byzllm.errors import ConfigError, InputError


def _key(game: WhoDunitGame, i: int) -> tuple[str, ...]:
    return tuple(game.suspects[i][a] for a in game.attributes)


@pytest.mark.parametrize("variant", ["asym", "sym"])
def test_thousand_games_satisfy_every_invariant(variant: str) -> None:
    games = generate_games(1000, GameConfig(variant=variant), seed=11)  # type: ignore[arg-type]
    assert len(games) == 1000
    assert len({g.id for g in games}) == 1000
    for game in games:
        check_game(game)  # raises on any violation
        # Independently of check_game: unique suspects, culprit in range.
        keys = {_key(game, i) for i in range(len(game.suspects))}
        assert len(keys) == len(game.suspects)
        assert 0 <= game.culprit < len(game.suspects)
        if variant == "sym":
            facts = [f for agent in game.facts for f in agent]
            assert len(game.facts) == 3 and all(len(a) == 3 for a in game.facts)
            matching = [i for i, s in enumerate(game.suspects) if all(s[p] == v for p, v in facts)]
            assert matching == [game.culprit]


def test_paper_defaults() -> None:
    asym = generate_games(1, seed=0)[0]
    assert (len(asym.suspects), len(asym.attributes), asym.max_turns) == (10, 12, 31)
    # Appendix B's 12 attributes, exactly those of the asymmetric game of Fig. 17.
    fig17 = ["eye_color", "eye_glasses", "hair", "hat", "hobby", "mood", "pants"]
    fig17 += ["pants_color", "shirt", "shirt_color", "shoe_color", "watch"]
    assert sorted(asym.attributes) == fig17
    assert list(asym.attributes) == [a for a, _ in ATTRIBUTE_TABLE[:12]]
    sym = generate_games(1, GameConfig(variant="sym"), seed=0)[0]
    assert (len(sym.suspects), len(sym.attributes), sym.max_turns) == (20, 20, 20)
    assert dict(ATTRIBUTE_TABLE)["eye_color"] == ("blue", "brown", "green")
    assert len(ATTRIBUTE_TABLE) == 20


def test_generation_is_reproducible_and_seed_dependent() -> None:
    a = generate_games(5, seed=3)
    assert a == generate_games(5, seed=3)
    assert a != generate_games(5, seed=4)


def test_splits_sizes_disjoint_and_reproducible() -> None:
    for variant in ("asym", "sym"):
        cfg = GameConfig(variant=variant)  # type: ignore[arg-type]
        splits = make_splits(cfg, seed=5)
        assert [len(splits.train), len(splits.validation), len(splits.test)] == [210, 90, 180]
        culprits = {}
        for name in ("train", "validation", "test"):
            for game in splits.get(name):  # type: ignore[arg-type]
                key = _key(game, game.culprit)
                assert key not in culprits, "a culprit description is shared between games"
                culprits[key] = name
        assert make_splits(cfg, seed=5) == splits
        assert make_splits(cfg, seed=6).test != splits.test


def test_complexity_levers() -> None:
    cfg = GameConfig(n_suspects=14, n_attributes=12, max_turns=9)
    game = generate_games(1, cfg, seed=0)[0]
    assert (len(game.suspects), len(game.attributes), game.max_turns) == (14, 12, 9)
    custom = GameConfig(attributes={"a": ("x", "y"), "b": ("p", "q", "r")}, n_suspects=6)
    g = generate_games(3, custom, seed=0)[0]
    check_game(g)
    assert set(g.attributes) == {"a", "b"}


@pytest.mark.parametrize(
    "kwargs",
    [
        {"n_suspects": 2000},  # more than the table allows and above the cap
        {"attributes": {"a": ("x", "y")}, "n_suspects": 3},  # 2 combos < 3 suspects
        {"attributes": {"a": ("x", "x")}},  # a value repeated
        {"n_attributes": 21},  # Table 4 has 20
        {"variant": "sym", "n_agents": 8, "facts_per_agent": 3},  # 24 facts > 20 attributes
        # Two two-valued facts leave each of 199 other suspects a 1/4 chance to match them:
        # a draw identifies the culprit with probability 0.75**199, about 1e-25.
        {"variant": "sym", "n_suspects": 200, "n_agents": 2, "facts_per_agent": 1},
        {"variant": "nope"},
    ],
)
def test_impossible_configs_are_clear_errors(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        GameConfig.model_validate(kwargs)


def test_more_games_than_the_table_allows_is_a_clear_error() -> None:
    # Two suspects over one two-valued attribute: one lineup, two culprits, two games. Asking
    # for more used to draw forever.
    tiny = GameConfig(attributes={"a": ("x", "y")}, n_suspects=2)
    assert len(generate_games(2, tiny, seed=0)) == 2
    with pytest.raises(ConfigError, match="cannot draw 3 distinct games"):
        generate_games(3, tiny, seed=0)


def test_a_spent_table_stops_the_draws_early(monkeypatch: pytest.MonkeyPatch) -> None:
    """Asking a two-game table for ten million games drew 100 * n + 1000 = a billion games
    before it said so; it now stops once MAX_FRUITLESS_DRAWS draws in a row found nothing
    new (a config may ask for that many: the run's grid bound allows 10 million)."""
    from byzllm.envs.whodunit import _games

    draws = 0
    real = _games.generate_game

    def counted(*args: object, **kwargs: object) -> object:
        nonlocal draws
        draws += 1
        if draws > 20_000:
            raise AssertionError("still drawing from a spent table")
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(_games, "generate_game", counted)
    tiny = GameConfig(attributes={"a": ("x", "y")}, n_suspects=2)
    with pytest.raises(ConfigError, match="cannot draw 10000000 distinct games"):
        generate_games(10_000_000, tiny, seed=0)
    assert draws <= _games.MAX_FRUITLESS_DRAWS + 2


def test_check_game_rejects_broken_games() -> None:
    good = generate_games(1, GameConfig(variant="sym"), seed=2)[0]
    dup = good.model_copy(update={"suspects": (good.suspects[0], *good.suspects[:-1])})
    with pytest.raises(InputError, match="duplicates"):
        check_game(dup)
    with pytest.raises(InputError, match="out of range"):
        check_game(good.model_copy(update={"culprit": 99}))
    wrong_fact = ((next(iter(good.attributes)), "not-a-value"),)
    with pytest.raises(InputError):
        check_game(good.model_copy(update={"facts": (wrong_fact,)}))
    one_fact = (good.facts[0][:1],)  # a single fact rarely identifies one of 20 suspects
    ambiguous = good.model_copy(update={"facts": one_fact})
    with pytest.raises(InputError, match="uniquely"):
        check_game(ambiguous)
    with pytest.raises(InputError, match="needs facts"):
        check_game(good.model_copy(update={"facts": ()}))


def test_held_out_games_keep_only_the_test_split_apart() -> None:
    trained = make_splits(GameConfig(), seed=0)
    held_out = [*trained.train, *trained.validation]
    # This setting's own training games change nothing.
    assert make_splits(GameConfig(), seed=0, held_out=held_out) == trained
    six = GameConfig(n_suspects=6)
    plain, apart = make_splits(six, seed=0), make_splits(six, seed=0, held_out=held_out)
    assert (apart.train, apart.validation) == (plain.train, plain.validation)
    assert len(apart.test) == 180

    def described(games: list[WhoDunitGame]) -> set[frozenset[tuple[str, str]]]:
        return {frozenset(g.culprit_description.items()) for g in games}

    assert described(plain.test) & described(held_out)  # what held_out is for
    assert not described(apart.test) & described(held_out)
    assert not described(apart.test) & described([*apart.train, *apart.validation])
