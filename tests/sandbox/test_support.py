"""Where isolation is unavailable, model code runs only when the caller says so explicitly."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator

import pytest

from byzllm.sandbox import (
    SandboxUnavailableError,
    _run,
    _support,
    run_program,
    run_tests,
    sandbox_support,
)


@pytest.fixture
def no_isolation(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This machine as one without root whose kernel refuses user namespaces."""
    _support._remembered.cache_clear()
    monkeypatch.setattr(_support.os, "geteuid", lambda: 1000)
    monkeypatch.setattr(_support, "_probe", lambda unshare, flags: "--user" not in flags)
    yield
    _support._remembered.cache_clear()


@pytest.fixture
def not_root(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This machine as one without root (the probes run for real)."""
    _support._remembered.cache_clear()
    monkeypatch.setattr(_support.os, "geteuid", lambda: 1000)
    yield
    _support._remembered.cache_clear()


def test_support_reports_every_mechanism() -> None:
    found = sandbox_support()
    assert {"linux", "root", "userns", "rootless", "unshare", "netns", "mountns", "pidns"} <= set(
        found
    )
    assert found["available"] == (found["reason"] == "")


def test_without_root_or_user_namespaces_the_sandbox_is_unavailable(no_isolation: None) -> None:
    found = sandbox_support()
    assert found["available"] is False and found["userns"] is False
    assert "user namespaces" in str(found["reason"])


def test_without_root_the_namespaces_are_made_in_a_user_namespace(not_root: None) -> None:
    found = sandbox_support()
    if not found["userns"]:
        pytest.skip("this kernel refuses unprivileged user namespaces")
    assert found["available"] is True and found["rootless"] is True
    assert _support.support().namespace_flags[:2] == ("--user", "--map-root-user")


async def test_refuses_to_run_model_code_without_isolation(no_isolation: None) -> None:
    with pytest.raises(SandboxUnavailableError, match="allow_unsafe"):
        await run_program("print('x')")
    with pytest.raises(SandboxUnavailableError):
        await run_tests("x = 1", "assert x == 1")


async def test_unsafe_runs_with_limits_and_a_clean_environment(
    no_isolation: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-for-the-program")
    assert not _run.support().available
    result = await run_program(
        "import os\nprint(os.environ.get('OPENAI_API_KEY'), os.getcwd() == os.environ['HOME'])",
        allow_unsafe=True,
    )
    assert (result.status, result.stdout) == ("passed", "None True\n")
    tests = await run_tests(
        "def f():\n    return 1",
        "def check(c):\n    assert c() == 2",
        entry_point="f",
        allow_unsafe=True,
    )
    assert tests.status == "failed" and "assert c() == 2" in tests.detail
    assert os.environ["OPENAI_API_KEY"] == "sk-not-for-the-program"


async def test_an_unsafe_run_says_it_had_no_isolation(no_isolation: None) -> None:
    program = await run_program("print(1)", allow_unsafe=True)
    tests = await run_tests("def f():\n    return 1", "assert f() == 1", allow_unsafe=True)
    assert (program.status, program.isolated) == ("passed", False)
    assert (tests.status, tests.isolated) == ("passed", False)


def test_a_probe_that_runs_out_of_time_is_not_remembered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On a busy machine a slow probe must not make the sandbox 'unavailable' for good."""
    _support._remembered.cache_clear()
    real_run = _support.subprocess.run
    slow = {"left": 1}

    def run(*args: object, **kwargs: object) -> object:
        assert kwargs["timeout"] == _support.PROBE_TIMEOUT_S >= 60
        if slow["left"]:
            slow["left"] -= 1
            raise subprocess.TimeoutExpired(cmd="unshare", timeout=1.0)
        return real_run(*args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(_support.subprocess, "run", run)
    monkeypatch.setattr(_support.os, "geteuid", lambda: 0)
    try:
        first = sandbox_support()
        assert first["available"] is False and "could not tell" in str(first["reason"])
        assert set(first) >= {"netns", "mountns", "pidns", "ipcns", "seccomp"}
        second = sandbox_support()  # probed again, not the remembered timeout
        assert "could not tell" not in str(second["reason"])
    finally:
        _support._remembered.cache_clear()


def test_support_names_what_holds_the_limits_rlimits_miss() -> None:
    found = sandbox_support()
    for key in ("sysv_ipc_closed", "memfd_refused", "sockets_unix_only", "inode_limit"):
        assert isinstance(found[key], bool)
    assert isinstance(found["cgroup"], bool) and isinstance(found["zygote"], bool)
    if found["available"]:
        assert found["sysv_ipc_closed"] and found["inode_limit"] and found["core_dumps_off"]
