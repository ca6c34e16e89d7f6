"""What the tests reach through a handle on the solution's objects.

A method that returns its own object (a fluent API), or another object, gives a handle that
behaves as that object for further calls, ``is`` and ``==``; a decorated function keeps its
attributes (``fib.cache_info()``, ``fib.cache_clear()``); a handle's truth is the object's own.
None of it lets the solution decide a comparison or cross anything but plain data.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from byzllm.sandbox import SandboxLimits, run_test_cases, run_tests
from byzllm.sandbox._harness import ProtocolError, _Link, _Remote, send

sandboxed = pytest.mark.usefixtures("require_sandbox")

LIMITS = SandboxLimits(timeout_s=20.0)

FLUENT = (
    "class Bag:\n"
    "    def __init__(self):\n"
    "        self.items = []\n"
    "    def add(self, x):\n"
    "        self.items.append(x)\n"
    "        return self\n"
    "    def total(self):\n"
    "        return sum(self.items)\n"
)


@sandboxed
async def test_a_method_returning_its_object_gives_the_same_handle() -> None:
    tests = [
        "b = Bag()\nassert b.add(1) is b\nassert b.add(2) == b and b.items == [1, 2]",
        "assert Bag().add(2).add(3).total() == 5",
        "b = Bag()\nc = b.add(1)\nc.add(2)\nassert b.total() == 3 and {b: 1}[c] == 1",
    ]
    result = await run_test_cases(FLUENT, tests, limits=LIMITS)
    assert [t.status for t in result.tests or []] == ["passed"] * 3, result.detail
    # A wrong total is still found wrong.
    wrong = FLUENT.replace("sum(self.items)", "sum(self.items) + 1")
    result = await run_test_cases(wrong, tests[1:2], limits=LIMITS)
    assert result.status == "failed"
    assert (
        result.detail == "AssertionError at tests line 1: assert Bag().add(2).add(3).total() == 5"
    )


@sandboxed
async def test_objects_reached_through_objects_are_handles() -> None:
    solution = (
        "class Node:\n"
        "    def __init__(self, val, next=None):\n"
        "        self.val, self.next = val, next\n"
        "class Stack:\n"
        "    def __init__(self):\n"
        "        self.head = None\n"
        "    def push(self, val):\n"
        "        self.head = Node(val, self.head)\n"
        "        return self\n"
        "    @classmethod\n"
        "    def of(cls, *vals):\n"
        "        stack = cls()\n"
        "        for val in vals:\n"
        "            stack.push(val)\n"
        "        return stack\n"
    )
    tests = [
        "s = Stack.of(1, 2)\n"
        "assert s.head.val == 2 and s.head.next.val == 1 and s.head.next.next is None\n"
        "assert s.head is s.head and s.head is not s.head.next\n"
        "node, vals = s.head, []\n"
        "while node is not None:\n"
        "    vals.append(node.val)\n"
        "    node = node.next\n"
        "assert vals == [2, 1]",
    ]
    result = await run_test_cases(solution, tests, limits=LIMITS)
    assert result.status == "passed", result.detail


@sandboxed
async def test_a_handle_tests_true_as_its_object_does() -> None:
    solution = (
        "class Stack:\n"
        "    def __init__(self):\n"
        "        self.items = []\n"
        "    def __len__(self):\n"
        "        return len(self.items)\n"
        "    def push(self, x):\n"
        "        self.items.append(x)\n"
        "        return self\n"
        "    def pop(self):\n"
        "        return self.items.pop()\n"
        "class No:\n"
        "    def __bool__(self):\n"
        "        return False\n"
        "class Solution:\n"
        "    def isValid(self, s):\n"
        "        return No()\n"
    )
    tests = [
        "s = Stack().push(1).push(2)\nassert s\nout = []\nwhile s:\n    out.append(s.pop())\n"
        "assert out == [2, 1] and not s",
        # A falsy object is no answer that passes a truth test.
        "assert Solution().isValid('()')",
    ]
    result = await run_test_cases(solution, tests, limits=LIMITS)
    assert [t.status for t in result.tests or []] == ["passed", "failed"], result.detail


@sandboxed
async def test_the_solutions_eq_still_decides_nothing() -> None:
    # Equal to everything in the solution's own interpreter; here a handle compares as a plain
    # object of the tests' side: equal only to itself.
    solution = (
        "class Solution:\n"
        "    def __eq__(self, other):\n"
        "        return True\n"
        "    __hash__ = object.__hash__\n"
        "    def answer(self):\n"
        "        return self\n"
    )
    tests = ["s = Solution()\nassert s.answer() == s", "assert Solution().answer() == [0, 1]"]
    result = await run_test_cases(solution, tests, limits=LIMITS)
    assert [t.status for t in result.tests or []] == ["passed", "failed"]
    detail = (result.tests or [])[1].detail
    assert detail == "AssertionError at tests line 1: assert Solution().answer() == [0, 1]"


@sandboxed
async def test_the_result_of_a_function_called_by_name_is_still_plain_data() -> None:
    # A handle compared with the expected answer would only ever fail the comparison; the
    # answer of a function is refused with its type named instead.
    solution = "import collections\ndef f():\n    return collections.OrderedDict(a=1)\n"
    result = await run_test_cases(solution, ["assert f() == {'a': 1}"], limits=LIMITS)
    assert result.status == "failed"
    assert "not plain data" in result.detail and "OrderedDict" in result.detail


MEMOIZED = (
    "import functools\n"
    "@functools.lru_cache(maxsize=None)\n"
    "def fib(n):\n"
    "    return n if n < 2 else fib(n - 1) + fib(n - 2)\n"
    "def count(x):\n"
    "    count.calls += 1\n"
    "    return x\n"
    "count.calls = 0\n"
)


@sandboxed
async def test_a_decorated_function_keeps_its_attributes() -> None:
    tests = [
        "assert fib(10) == 55\n"
        "info = fib.cache_info()\n"
        "assert (info.hits, info.misses, info.currsize) == (8, 11, 11)\n"
        "fib.cache_clear()\n"
        "assert fib.cache_info().currsize == 0\n"
        "assert hasattr(fib, 'cache_info') and not hasattr(fib, 'missing')\n"
        "assert fib.__name__ == 'fib' and fib.cache_clear.__qualname__ == 'fib.cache_clear'",
        "count(1)\ncount(2)\nassert count.calls == 2",
    ]
    result = await run_test_cases(MEMOIZED, tests, limits=LIMITS)
    assert result.status == "passed", result.detail


@sandboxed
async def test_check_can_use_the_entry_points_cache() -> None:
    tests = (
        "def check(candidate):\n"
        "    candidate.cache_clear()\n"
        "    assert candidate(20) == 6765\n"
        "    assert candidate.cache_info().misses == 21\n"
    )
    result = await run_tests(MEMOIZED, tests, entry_point="fib", limits=LIMITS)
    assert result.status == "passed", result.detail
    # Without the cache the entry point is still tested, and a missing attribute is an error
    # of the tests' call, as in one interpreter.
    plain = "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n"
    result = await run_tests(plain, tests, entry_point="fib", limits=LIMITS)
    assert result.status == "crashed"
    assert result.detail.startswith("AttributeError"), result.detail
    assert "tests line 2: candidate.cache_clear()" in result.detail


@sandboxed
async def test_the_tests_cannot_set_attributes_of_a_function() -> None:
    result = await run_test_cases(MEMOIZED, ["count.calls = 5"], limits=LIMITS)
    assert result.status == "crashed"
    assert "cannot set attributes" in result.detail


# --- the tests' side alone, answered by a hand-written solution side ------------------------


@pytest.fixture
def link() -> Iterator[tuple[_Link, socket.socket]]:
    """A link whose worker is the returned socket: replies written there ahead of a request
    answer it."""
    control, _ = socket.socketpair()
    ours, theirs = socket.socketpair()
    made = _Link(control, cpu_s=1.0)
    made.worker = ours
    yield made, theirs
    for each in (control, _, ours, theirs):
        each.close()


def test_the_same_object_number_is_the_same_handle(link: tuple[_Link, socket.socket]) -> None:
    made, worker = link
    for reply in ({"object": 3}, {"object": 3}, {"object": 4}):
        send(worker, reply)
    first = made.call({"name": "Bag"}, (), (), {})
    assert made.call({"object": 3}, ("add",), (1,), {}) is first
    assert made.call({"object": 3}, ("copy",), (), {}) is not first


@pytest.mark.parametrize("reply", [{"value": 1}, {"value": None}, {"object": 0}, {}])
def test_a_truth_that_is_not_a_bool_is_refused(
    link: tuple[_Link, socket.socket], reply: dict[str, object]
) -> None:
    made, worker = link
    send(worker, reply)
    with pytest.raises(ProtocolError):
        bool(_Remote(made, {"object": 0}, (), made.generation))


def test_a_handle_made_without_init_has_no_name() -> None:
    # __name__ reads the handle's target; unset, that must not recurse.
    bare = _Remote.__new__(_Remote)
    assert not hasattr(bare, "__name__")
