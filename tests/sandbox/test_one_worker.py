"""The sandbox tests stay on one pytest-xdist worker (tests/conftest.py): rootless, each
looks for leftover sandboxed programs among the caller's processes, and another worker's
programs would be taken for leftovers."""

from __future__ import annotations

import os

import pytest


def test_the_sandbox_tests_share_one_worker(request: pytest.FixtureRequest) -> None:
    if "PYTEST_XDIST_WORKER" not in os.environ or not request.config.getvalue("loadgroup"):
        pytest.skip("not on pytest-xdist workers with --dist loadgroup")
    # pytest-xdist appends the group to the test's id when it reads the group's mark.
    assert request.node.nodeid.endswith("@sandbox")
