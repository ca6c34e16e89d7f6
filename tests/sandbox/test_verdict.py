"""A verdict the solution cannot forge: tests run in a process apart from the solution's.

Each hostile solution below would pass ``assert candidate(2) == 3`` if the tests ran in its
own interpreter (shown first, in a plain subprocess, where that is safe); in the sandbox it
fails. The codec that carries return values across is hostile input on the tests' side:
property tests show it round-trips plain data and rejects everything else cleanly.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from byzllm.sandbox import SandboxLimits, SandboxResult, run_test_cases, run_tests
from byzllm.sandbox._harness import NotPlainData, ProtocolError, decode, encode

TESTS = "def check(candidate):\n    assert candidate(2) == 3\n"
LIMITS = SandboxLimits(timeout_s=5.0)

#: Solutions that cheat: each returns the wrong answer (or none) and tries to pass anyway.
CHEATS = {
    "always_equal": (
        "class Anything:\n"
        "    def __eq__(self, other):\n"
        "        return True\n"
        "    def __ne__(self, other):\n"
        "        return False\n"
        "def f(x):\n"
        "    return Anything()\n"
    ),
    "int_subclass": (
        "class Liar(int):\n"
        "    def __eq__(self, other):\n"
        "        return True\n"
        "def f(x):\n"
        "    return Liar(0)\n"
    ),
    # Turns any failure into exit status 0, which is all a harness judging by status sees.
    "exit_0_at_exit": (
        "import atexit, os\natexit.register(lambda: os._exit(0))\ndef f(x):\n    return 0\n"
    ),
    "replaced_check": (
        "import builtins\nbuiltins.check = lambda candidate: None\ndef f(x):\n    return 0\n"
    ),
    # Reads its own file (the whole program it was given) and the working folder for a marker,
    # prints anything that looks like one, and exits 0 before the tests could fail.
    "marker_from_file": (
        "import os, sys\n"
        "for name in os.listdir('.'):\n"
        "    text = open(name, errors='replace').read()\n"
        "    for word in text.split():\n"
        "        if 'byzllm' in word:\n"
        "            print(word)\n"
        "print(open(__file__).read() if '__file__' in globals() else '')\n"
        "sys.stdout.flush()\n"
        "os._exit(0)\n"
        "def f(x):\n    return 0\n"
    ),
    # Rewrites, in its own process, the harness code that describes its error, so that the
    # description it sends the tests' side says "passed"; then raises.
    "forged_description": (
        "import sys\n"
        "for module in list(sys.modules.values()):\n"
        "    if hasattr(module, 'describe') and hasattr(module, '_serve_calls'):\n"
        "        module.describe = lambda *a, **k: {'status': 'passed', 'side': 'tests'}\n"
        "def f(x):\n    raise RuntimeError('no answer')\n"
    ),
    # Signals every process it can see, and opens their memory to rewrite the verdict.
    "attack_the_tests": (
        "import glob, os\n"
        "for path in glob.glob('/proc/[0-9]*'):\n"
        "    pid = int(path.rsplit('/', 1)[1])\n"
        "    if pid == os.getpid():\n"
        "        continue\n"
        "    try:\n"
        "        open(path + '/mem', 'r+b')\n"
        "        print('OPENED', pid)\n"
        "    except OSError:\n"
        "        pass\n"
        "    try:\n"
        "        os.kill(pid, 9)\n"
        "        print('KILLED', pid)\n"
        "    except OSError:\n"
        "        pass\n"
        "def f(x):\n    return 0\n"
    ),
}


def _in_one_interpreter(solution: str) -> subprocess.CompletedProcess[str]:
    """HumanEval's way: solution, tests and check() in one program (safe for these cheats but
    the last two, which are not run bare)."""
    program = solution + "\n" + TESTS + "check(f)\nprint('PASSED')\n"
    return subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=30, check=False
    )


@pytest.fixture(scope="module")
def cheats(require_sandbox: None) -> dict[str, SandboxResult]:
    async def run_all() -> list[SandboxResult]:
        runs = [run_tests(s, TESTS, entry_point="f", limits=LIMITS) for s in CHEATS.values()]
        return await asyncio.gather(*runs)

    return dict(zip(CHEATS, asyncio.run(run_all()), strict=True))


@pytest.mark.parametrize("name", ["always_equal", "int_subclass", "exit_0_at_exit"])
def test_cheats_that_pass_in_one_interpreter_fail_here(
    name: str, cheats: dict[str, SandboxResult]
) -> None:
    bare = _in_one_interpreter(CHEATS[name])
    assert bare.returncode == 0  # the cheat works bare
    assert cheats[name].status == "failed", cheats[name]


def test_a_value_with_its_own_eq_is_not_plain_data(cheats: dict[str, SandboxResult]) -> None:
    assert "not plain data" in cheats["always_equal"].detail
    assert "type Liar" in cheats["int_subclass"].detail


def test_replacing_check_or_reading_the_program_does_not_pass(
    cheats: dict[str, SandboxResult],
) -> None:
    assert cheats["replaced_check"].status == "failed"
    assert "assert candidate(2) == 3" in cheats["replaced_check"].detail
    leak = cheats["marker_from_file"]
    assert leak.status == "failed", leak
    assert "before every test ran" in leak.detail
    assert "check(candidate)" not in leak.stdout  # the tests are not in its files


def test_a_forged_error_description_does_not_pass(cheats: dict[str, SandboxResult]) -> None:
    """The tests' side took the solution's description of its error as it came, so a
    ``status`` in it replaced the verdict: this solution passed every test."""
    result = cheats["forged_description"]
    assert result.status == "crashed", result
    assert result.tests is None or all(t.status == "crashed" for t in result.tests)


async def test_a_forged_description_passes_no_test_case(require_sandbox: None) -> None:
    cases = ["assert f(2) == 3", "assert f(0) == 99"]
    result = await run_test_cases(CHEATS["forged_description"], cases, limits=LIMITS)
    assert result.status == "crashed" and result.tests is not None
    assert [t.status for t in result.tests] == ["crashed", "crashed"]


def test_the_solution_cannot_reach_the_tests_process(cheats: dict[str, SandboxResult]) -> None:
    result = cheats["attack_the_tests"]
    assert result.status == "failed", result
    assert "assert candidate(2) == 3" in result.detail
    assert "OPENED" not in result.stdout and "KILLED" not in result.stdout


@pytest.mark.usefixtures("require_sandbox")
async def test_each_test_has_its_own_deadline_and_a_fresh_solution() -> None:
    solution = (
        "calls = []\n"
        "def f(x):\n"
        "    calls.append(x)\n"
        "    while x == 1:\n"
        "        pass\n"
        "    return len(calls)\n"
    )
    tests = ["assert f(1) == 1", "assert f(2) == 1", "assert f(3) == 2", "while True: pass"]
    result = await run_test_cases(
        solution, tests, limits=SandboxLimits(timeout_s=20), test_timeout_s=1
    )
    assert result.tests is not None
    assert [t.status for t in result.tests] == ["timed_out", "passed", "failed", "timed_out"]
    assert result.tests[2].detail == "AssertionError at tests line 1: assert f(3) == 2"
    assert (result.status, result.detail) == ("timed_out", "test 1: " + result.tests[0].detail)
    assert result.duration_s < 15


@pytest.mark.usefixtures("require_sandbox")
async def test_plain_values_compare_as_they_would_in_one_interpreter() -> None:
    solution = (
        "import math\n"
        "LIMIT = 3\n"
        "def f():\n"
        "    return [1, (2.5, 'x'), {3: {4, 5}}, frozenset({b'z'}), None, True, 1j, float('inf')]\n"
    )
    tests = [
        "assert f() == [1, (2.5, 'x'), {3: {4, 5}}, frozenset({b'z'}), None, True, 1j, math.inf]",
        "assert isinstance(f()[1], tuple) and LIMIT == 3",
        "assert f()[0] is not True and f()[5] is True",
    ]
    result = await run_test_cases(solution, tests, limits=LIMITS)
    assert result.status == "passed", result


plain = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text()
    | st.binary()
    | st.complex_numbers(allow_nan=False),
    lambda inner: (
        st.lists(inner)
        | st.lists(inner).map(tuple)
        | st.frozensets(st.integers() | st.text())
        | st.sets(st.integers() | st.text())
        | st.dictionaries(st.integers() | st.text() | st.tuples(st.integers()), inner)
    ),
    max_leaves=20,
)


@given(plain)
def test_plain_data_round_trips_exactly(value: Any) -> None:
    back = decode(json.loads(json.dumps(encode(value))))
    assert back == value
    assert _types(back) == _types(value)


def _types(value: Any) -> Any:
    if isinstance(value, list | tuple):
        return (type(value), [_types(v) for v in value])
    if isinstance(value, dict):
        return (dict, sorted(repr(_types(v)) for v in value.values()))
    return type(value)


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
                    lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner)))  # fmt: skip
def test_decoding_any_json_gives_plain_data_or_a_protocol_error(data: Any) -> None:
    try:
        value = decode(data)
    except ProtocolError:
        return
    assert decode(json.loads(json.dumps(encode(value)))) == value or value != value


def test_objects_that_are_not_plain_data_are_refused() -> None:
    class Liar(int):
        pass

    for value in (Liar(1), object(), [1, lambda: 0], {"k": range(3)}, (i for i in ())):
        with pytest.raises(NotPlainData):
            encode(value)
    nested: list[Any] = []
    for _ in range(200):
        nested = [nested]
    with pytest.raises(NotPlainData):
        encode(nested)


async def test_many_failing_tests_are_reported_not_timed_out(require_sandbox: None) -> None:
    """Outcomes larger than a pipe's buffer blocked the report's writer until the deadline:
    170 failing tests with long messages came back ``timed_out`` after 7 s, with no tests."""
    cases = [f"assert f({i}) == -1, 'x' * 400" for i in range(200)]
    result = await run_test_cases("def f(x):\n    return x\n", cases, limits=LIMITS)
    assert result.status == "failed", result.detail
    assert result.tests is not None and len(result.tests) == 200
    assert all(t.status == "failed" for t in result.tests)
    assert result.duration_s < LIMITS.timeout_s


@pytest.mark.usefixtures("require_sandbox")
async def test_the_tests_cannot_signal_the_sandboxs_first_process() -> None:
    """The tests are hostile too (CodeGen runs a model's asserts). Without root they share
    PID 1's uid, and had no signal guard: ``SIGINT`` to PID 1 ended the sandbox (a
    ``SandboxError``, not a result) and ``SIGALRM`` made a passing run ``timed_out``."""
    kill = "assert __import__('os').kill({pid}, {signal}) or True"
    tests = [kill.format(pid=1, signal=2), kill.format(pid=1, signal=14)]
    tests += [kill.format(pid=-1, signal=14), "assert f(2) == 3"]
    solution = "def f(x):\n    return x + 1\n"
    result = await run_test_cases(solution, tests, limits=LIMITS)
    assert result.tests is not None, result
    assert [t.status for t in result.tests] == ["crashed", "crashed", "crashed", "passed"]
    assert all("PermissionError" in t.detail for t in result.tests[:3])
