"""A Python installation under /tmp (a virtual environment on a CI runner or a scratch machine).

The program's work folder inside the sandbox is /tmp too, and every run failed ("the Python
installation ... and the work folder overlap"), both from the zygote and with ``unshare``, while
``sandbox_support()`` said the sandbox was available. The installation is now shown at its own
path on top of the private work folder, read-only, and nothing else of the host's /tmp; an
installation that holds the work folder itself makes the sandbox unavailable, with the reason.
"""

from __future__ import annotations

import asyncio
import errno
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import byzllm
from byzllm.sandbox import SandboxUnavailableError, _run, _support, run_program, sandbox_support

#: The program's work folder inside the sandbox, which is also where the host's temporary
#: folders are: the folder this test puts a Python installation under.
WORK = _run.WORK

#: Run by the virtual environment's interpreter: the sandbox's verdicts, from the zygote and
#: from ``unshare``, as JSON. argv[1]: the program to run; argv[2]: the folder it must not see.
SCRIPT = textwrap.dedent(
    """
    import asyncio, json, sys
    from byzllm.sandbox import run_program, run_tests, sandbox_support
    from byzllm.sandbox._run import use_zygote

    SOLUTION = "import json\\ndef add(a, b):\\n    return a + b\\n"
    WRONG = "def add(a, b):\\n    return a - b\\n"
    TESTS = "def check(candidate):\\n    import decimal\\n    assert candidate(2, 2) == 4\\n"

    async def main():
        found = sandbox_support()
        out = {"available": found["available"], "reason": found["reason"], "runs": {}}
        for zygote in (True, False):
            use_zygote(zygote)
            program = await run_program(sys.argv[1])
            right = await run_tests(SOLUTION, TESTS, entry_point="add")
            wrong = await run_tests(WRONG, TESTS, entry_point="add")
            out["runs"]["zygote" if zygote else "unshare"] = {
                "program": [program.status, program.stdout, program.stderr],
                "tests": [right.status, wrong.status],
            }
        print(json.dumps(out))

    asyncio.run(main())
    """
)

#: Inside the sandbox: what it sees of /tmp and the installation, and what it may change.
PROGRAM = textwrap.dedent(
    """
    import json, os, sys
    venv, top, secret, work = PATHS

    def attempt(action):
        try:
            action()
        except OSError as error:
            return error.errno
        return 0

    with open(os.path.join(work, "note.txt"), "w") as handle:
        handle.write("mine")
    seen = {
        "prefix": sys.prefix,
        "cwd": os.getcwd(),
        "home": os.environ["HOME"],
        "tmpdir": os.environ["TMPDIR"],
        "tmp": sorted(os.listdir(work)),
        "beside": sorted(os.listdir(os.path.dirname(venv))),
        "secret": os.path.exists(secret),
        "write_venv": attempt(lambda: open(os.path.join(venv, "planted.py"), "w").close()),
        "write_top": attempt(lambda: open(os.path.join(top, "planted.py"), "w").close()),
        "rename_top": attempt(lambda: os.rename(top, os.path.join(work, "moved"))),
        "remove_top": attempt(lambda: os.rmdir(top)),
    }
    print(json.dumps(seen))
    """
)


@pytest.fixture(params=["nested", "direct"])
def environment(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """A ``--system-site-packages`` virtual environment under /tmp, some folders down
    (pytest's own folder for the test) or an entry of /tmp itself, and a file of the host's
    under /tmp (beside it, or in a folder of its own)."""
    made: list[Path] = []
    if request.param == "direct":
        made.append(Path(tempfile.mkdtemp(prefix="byzllm-venv-", dir=WORK)))
        folder = made[-1]
        made.append(Path(tempfile.mkdtemp(prefix="byzllm-host-", dir=WORK)))
        secret = made[-1] / "secret.txt"
    else:
        base = tmp_path if tmp_path.is_relative_to(WORK) else None
        if base is None:
            made.append(Path(tempfile.mkdtemp(prefix="byzllm-venv-", dir=WORK)))
            base = made[-1]
        folder = base / "venv"
        secret = base / "secret.txt"
    try:
        subprocess.run(
            [sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(folder)],
            check=True,
            capture_output=True,
        )
        folder.chmod(0o755)  # the run's uid (with root, not the caller's) must reach it
        secret.write_text("host\n")
        yield folder, secret
    finally:
        for each in made:
            shutil.rmtree(each, ignore_errors=True)


def test_a_virtual_environment_under_tmp_runs_sandboxed_programs(
    require_sandbox: None, environment: tuple[Path, Path]
) -> None:
    venv, secret = environment
    top = Path(WORK, venv.relative_to(WORK).parts[0])
    program = PROGRAM.replace("PATHS", repr((str(venv), str(top), str(secret), WORK)))
    # The environment's interpreter imports this byzllm (and what it needs) from here.
    package_home = os.path.dirname(os.path.dirname(os.path.abspath(byzllm.__file__)))
    path = os.pathsep.join([package_home, *(p for p in sys.path if p)])
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", SCRIPT, program],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": path},
        cwd=venv.parent,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["available"], found["reason"]
    for way, runs in found["runs"].items():
        status, stdout, stderr = runs["program"]
        assert status == "passed", (way, stderr)
        seen = json.loads(stdout)
        assert seen["prefix"] == str(venv), way  # the environment's own interpreter ran it
        assert seen["cwd"] == seen["home"] == seen["tmpdir"] == WORK, way
        # Of the host's /tmp, only the path to the installation; the work folder is writable.
        assert seen["tmp"] == sorted(["main.py", "note.txt", top.name]), way
        assert seen["beside"] == ["venv"] or venv == top, way
        assert not seen["secret"], way
        # Read-only, and no folder on the way to it can be moved, removed or written.
        assert seen["write_venv"] in (errno.EROFS, errno.EACCES), way
        assert seen["write_top"] in (errno.EROFS, errno.EACCES), way
        assert seen["rename_top"] == errno.EBUSY, way
        assert seen["remove_top"] == errno.EBUSY, way
        assert runs["tests"] == ["passed", "failed"], way
    assert not (venv / "planted.py").exists()
    assert not (top / "planted.py").exists()
    assert top.is_dir()


@pytest.fixture
def fresh_probe() -> Iterator[None]:
    """The support probe made again for the test, and again after it."""
    _support._remembered.cache_clear()
    yield
    _support._remembered.cache_clear()


def test_an_installation_holding_the_work_folder_makes_the_sandbox_unavailable(
    require_sandbox: None, fresh_probe: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An installation at /tmp itself: showing it read-only would hide the private work
    # folder, or the work folder would hide it. Said once, instead of failing every run.
    monkeypatch.setattr(_run, "python_roots", lambda: [WORK])
    found = sandbox_support()
    assert not found["available"]
    assert WORK in str(found["reason"])
    with pytest.raises(SandboxUnavailableError, match="work folder"):
        asyncio.run(run_program("print(1)"))
