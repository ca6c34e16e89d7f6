"""``read_catch`` with an ``Answer:`` label and no amount after it: a failed reply, never a
number of the reasoning written before the label."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from byzllm.agents.govsim import FALLBACK_CATCH, read_catch


def test_a_label_without_an_amount_is_a_failed_reply() -> None:
    """These read the reasoning's 12 / 100 / 8 as the catch, unflagged."""
    for reply in (
        "Last month I caught 12. My answer: I will not fish this month.",
        "The lake holds 100 tons. Answer: N tons",
        "If each of us takes 8 we are safe; I want a little more. Answer: nine tons",
    ):
        r = read_catch(reply, stock=100)
        assert r.fell_back and "after 'Answer:'" in r.reason, reply
        assert r.value.amount == FALLBACK_CATCH
    # A label with an amount, and a reply without any label, read as before.
    assert read_catch("I think 20. Answer: 7 tons", 100).value.amount == 7
    assert read_catch("I will take 7 tons", 100).value.amount == 7


_WORDS = st.sampled_from(["none", "N tons", "nothing", "ten tons", "see above", ""])


@settings(max_examples=200, deadline=None)
@given(before=st.integers(0, 100), words=_WORDS, stock=st.integers(0, 200))
def test_no_amount_after_the_label_never_reads_one_before_it(
    before: int, words: str, stock: int
) -> None:
    r = read_catch(f"Each of us could take {before} tons. Answer: {words}", stock)
    assert r.fell_back and r.value.amount == FALLBACK_CATCH
