"""Reading catches: documented default for bad input, never an exception (fuzzed)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from byzllm.agents.govsim import FALLBACK_CATCH, find_amounts, read_catch


def test_answer_line_wins() -> None:
    r = read_catch("Last month we took 30. Answer: 12 tons", stock=100)
    assert not r.fell_back and r.value.amount == 12
    text = "I think 7.9 is fair"
    r = read_catch(text, stock=100)
    assert r.value.amount == 7 and text[slice(*r.value.span)] == "7.9"


def test_bad_input_falls_back_to_the_documented_default() -> None:
    for reply in (
        "lots",
        "",
        "   ",
        "Answer: -5 tons",
        "Answer: 10000000000000 tons",
        "Answer: 101",
    ):
        r = read_catch(reply, stock=100)
        assert r.fell_back and r.reason and r.value.amount == FALLBACK_CATCH == 0


def test_a_one_megabyte_reply_is_bounded() -> None:
    reply = "fish " * 200_000 + "Answer: 5"
    r = read_catch(reply, stock=100)
    assert r.fell_back  # the answer lies beyond what is read: no amount in the head
    assert read_catch("Answer: 5 " + "x" * 1_000_000, stock=100).value.amount == 5


@settings(max_examples=400, deadline=None)
@given(text=st.text(max_size=400), stock=st.integers(0, 500))
def test_read_catch_never_raises_and_stays_in_the_action_set(text: str, stock: int) -> None:
    r = read_catch(text, stock)
    assert 0 <= r.value.amount <= max(stock, FALLBACK_CATCH)
    assert r.fell_back == bool(r.reason)


@settings(max_examples=200, deadline=None)
@given(amount=st.integers(0, 10**6), prefix=st.text(alphabet="abc :\n", max_size=30))
def test_round_trip(amount: int, prefix: str) -> None:
    r = read_catch(f"{prefix}\nAnswer: {amount} tons", stock=10**6)
    assert not r.fell_back and r.value.amount == amount
    assert [a for a, _ in find_amounts(f"take {amount} or {amount + 1}")] == [amount, amount + 1]


def test_thousands_unicode_minus_and_the_answer_label() -> None:
    """ "1,000" read as one ton (a catch far above the stock, unflagged); "−5" (U+2212) as
    5; and any "answer" in the prose was taken for the label ("To answer this, the lake
    holds 100 tons" caught the whole lake)."""
    over = read_catch("Answer: 1,000 tons", 100)
    assert over.fell_back and "1,000 tons is more than the 100" in over.reason
    assert read_catch("Answer: −5 tons", 100).fell_back
    prose = "To answer this, the lake holds 100 tons; I will catch 10 tons."
    assert (read_catch(prose, 100).value.amount, read_catch(prose, 100).fell_back) == (10, False)
    assert read_catch("I answered 3 times. I will take 12 tons.", 100).value.amount == 12
    assert read_catch("**Answer:** 12 tons", 100).value.amount == 12
    assert read_catch("Answer: 2,5 tons", 100).value.amount == 2  # a decimal comma
    assert read_catch("Answer: 1,000 tons", 5000).value.amount == 1000


def test_numbers_that_are_not_amounts_of_fish() -> None:
    said = (
        "In month 3 the 5 of us (5 fishers) should keep 50% of 80 tons: 8 tons each for 2 months."
    )
    assert [a for a, _ in find_amounts(said)] == [80, 8]
    assert [a for a, _ in find_amounts("Month #4: 12 tons; 10 percent; 1 fisherman takes 9")] == [
        12,
        9,
    ]


@settings(max_examples=200, deadline=None)
@given(
    amount=st.integers(0, 10**6),
    before=st.text(alphabet="abcmonthdays #%\n", max_size=20),
)
def test_an_amount_in_tons_is_always_read(amount: int, before: str) -> None:
    text = f"{before} take {amount} tons"
    found = find_amounts(text)
    assert found and found[-1][0] == amount
    assert text[slice(*found[-1][1])] == str(amount)


def test_a_markdown_list_item_is_an_amount_not_a_negative_number() -> None:
    """ "- 8 tons" (a dash, a space, a number: a Markdown bullet) was read as −8: the catch fell
    back to 0 tons and a bulleted proposal named no amount. A minus touching its digits is
    still negative."""
    r = read_catch("Reasoning: the lake can afford it.\nAnswer:\n- 8 tons", 100)
    assert (r.value.amount, r.fell_back) == (8, False)
    said = "My plan:\n- 8 tons for each of us\n- 40 tons in total"
    assert [a for a, _ in find_amounts(said)] == [8, 40]
    for negative in ("Answer: -8 tons", "Answer: \u22128 tons"):
        assert read_catch(negative, 100).fell_back, negative
    assert find_amounts("a loss of -40 tons") == []


@settings(max_examples=200, deadline=None)
@given(amounts=st.lists(st.integers(0, 10**6), min_size=1, max_size=5))
def test_bulleted_amounts_are_always_read(amounts: list[int]) -> None:
    text = "\n".join(f"- {a} tons" for a in amounts)
    assert [a for a, _ in find_amounts(text)] == amounts
    r = read_catch(f"Answer:\n{text}", stock=10**6)
    assert (r.value.amount, r.fell_back) == (amounts[0], False)
