"""How fast a model-backed run fails when no server is listening.

Runs ``byzllm consensus run examples/sweep.yaml`` (200 units) on a model whose ``base_url``
is a local port nothing listens on, as a user would from the shell, and reports the wall
time from start to exit (interpreter start and imports included), the exit code and the
number of lines on stderr. The endpoint check before the first unit is what makes it fast:
without it every unit retried its requests before failing.

    python benchmarks/fail_fast.py

Target: under 5 s, exit code 2, one line; the verdict (met / NOT met) is printed and in the
JSON line it ends with.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _verdict import verdict as judge
from byzllm.llm._serve import free_port

SWEEP = Path(__file__).resolve().parents[1] / "examples" / "sweep.yaml"
TARGET_S = 5.0


def _closed_url() -> str:
    return f"http://127.0.0.1:{free_port()}/v1"


def main() -> None:
    byzllm = shutil.which("byzllm")
    command = [byzllm] if byzllm else [sys.executable, "-c", "from byzllm.cli import main; main()"]
    with tempfile.TemporaryDirectory() as tmp:
        args = [
            *command, "consensus", "run", str(SWEEP), "-o", str(Path(tmp) / "run"),
            "--model", "openai/x", "--base-url", _closed_url(),
        ]  # fmt: skip
        started = time.perf_counter()
        done = subprocess.run(args, capture_output=True, text=True, check=False)
        seconds = time.perf_counter() - started
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    print(lines[-1] if lines else "(no output)", file=sys.stderr)
    met = seconds < TARGET_S and done.returncode == 2 and len(lines) == 1
    verdict = judge(met)
    print(
        f"{seconds:.2f} s, exit code {done.returncode}, {len(lines)} line(s) on stderr "
        f"(target: under {TARGET_S:g} s, exit code 2, one line: {verdict})"
    )
    result = {
        "benchmark": "fail_fast",
        "seconds": round(seconds, 2),
        "exit_code": done.returncode,
        "stderr_lines": len(lines),
        "target_s": TARGET_S,
        "verdict": verdict,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
