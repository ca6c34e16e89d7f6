"""Fault soak: LLM-backed consensus and WhoDunit runs against a server failing 20% of its
requests in every way it can (429 with Retry-After, 500, 503, hangs past the timeout,
malformed and truncated bodies, dropped connections) report exactly what fault-free runs
report, and their request health counts every fault by kind."""

from __future__ import annotations

import json
import re
import zlib
from pathlib import Path
from typing import Any

import yaml
from typer.testing import CliRunner

from byzllm.cli import app
from byzllm.testing import ALL_FAULTS, FakeOpenAIServer

RUNNER = CliRunner()

#: Quick client settings: a hang costs 0.5 s, a backoff a few milliseconds.
CLIENT = {
    "api_key_env": None,
    "timeout_s": 0.5,
    "max_concurrency": 32,
    "retry": {"max_attempts": 30, "initial_backoff_s": 0.002, "max_backoff_s": 0.02},
}
#: Seed 9 draws every fault kind within the first 40 requests (the k-th request after the
#: endpoint check gets the k-th draw, whatever the timing), so every kind is exercised every
#: time.
FAULTS = {"fault_rate": 0.2, "retry_after": 0.01, "latency": 0.002, "seed": 9}

#: What each injected fault is counted as.
KIND = {
    "429": "http_429",
    "500": "http_500",
    "503": "http_503",
    "hang": "timeout",
    "malformed": "bad_response",
    "truncated": "connection",
    "drop": "connection",
}


def _ok(result: Any) -> None:
    assert result.exit_code == 0, result.output + str(result.exception)


def _consensus_script(request: dict[str, Any]) -> str:
    """Deterministic per prompt: scores and answers drawn from a hash of the prompt."""
    user = str(request["messages"][-1]["content"])
    digest = zlib.crc32(user.encode())
    if user.rstrip().endswith("Score:"):
        return f"Score: 0.{digest % 10}"
    if "confidence" in user.lower():
        return f"Answer: {digest % 5}\nConfidence: 0.{digest % 7 + 2}"
    return f"Let me think.\nAnswer: {digest % 5}"


def _whodunit_script(request: dict[str, Any]) -> str:
    messages = request["messages"]
    system, user = messages[0]["content"], messages[-1]["content"]
    if "You know the" in system:  # the Accuser
        if "(empty)" in user:
            return 'I need information.\n{"thoughts": "ask", "action": 2}'
        n = int(re.search(r"involves (\d+)", system).group(1))  # type: ignore[union-attr]
        pick = 1 + zlib.crc32(user.encode()) % n
        return f'I will decide.\n{{"thoughts": "award", "action": 3, "character": {pick}}}'
    return (
        'Broad message.\n{"thoughts": "share", "action": 2, "value": "hat-brown", "character": [1]}'
    )


def _units_requests(server: FakeOpenAIServer) -> int:
    """The requests the units sent: all but the endpoint check's, which the run sends (and
    the server answers without a fault: ``clean_first=1``) before its first unit."""
    return server.request_count - 1


def _consensus(tmp_path: Path, name: str, **server_options: Any) -> tuple[dict[str, Any], Any]:
    with FakeOpenAIServer(_consensus_script, clean_first=1, **server_options) as server:
        backend = {"backend": "llm", "model": "openai/fake", "base_url": server.base_url, **CLIENT}
        config = {
            "protocols": ["sac", "cp-wbft"],
            "topologies": ["complete"],
            "T": [2],
            "dataset": {"n": 4},
            "agents": {"strong": backend, "weak": backend},
        }
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump(config), encoding="utf-8")
        _ok(RUNNER.invoke(app, ["consensus", "run", str(path), "-o", str(tmp_path / name)]))
        faults, requests = server.faults_injected, _units_requests(server)
    report = RUNNER.invoke(app, ["consensus", "report", str(tmp_path / name), "--json"])
    _ok(report)
    return json.loads(report.stdout), (faults, requests)


def _whodunit(tmp_path: Path, name: str, **server_options: Any) -> tuple[dict[str, Any], Any]:
    with FakeOpenAIServer(_whodunit_script, clean_first=1, **server_options) as server:
        settings = {"agents": "llm", "model": "openai/fake", "base_url": server.base_url}
        settings |= {**CLIENT, "split": "generated", "n_games": 12, "game.n_suspects": 3}
        args = ["whodunit", "run", "-o", str(tmp_path / name)]
        for key, value in settings.items():
            args += ["--set", f"{key}={json.dumps(value)}"]
        _ok(RUNNER.invoke(app, args))
        faults, requests = server.faults_injected, _units_requests(server)
    report = RUNNER.invoke(app, ["whodunit", "report", str(tmp_path / name), "--json"])
    _ok(report)
    return json.loads(report.stdout), (faults, requests)


def _check_health(health: dict[str, Any], faults: Any, requests: int) -> None:
    """Every request the server saw is counted, every fault once, under its kind."""
    assert health["requests"] == requests
    expected: dict[str, int] = {}
    for fault, n in faults.items():
        expected[KIND[fault]] = expected.get(KIND[fault], 0) + n
    assert health["errors"] == dict(sorted(expected.items(), key=lambda kv: (-kv[1], kv[0])))
    assert health["retries"] == sum(faults.values()) and health["failures"] == 0
    assert health["timeouts"] == faults.get("hang", 0)


def test_consensus_report_is_identical_under_20_percent_faults(tmp_path: Path) -> None:
    clean, (no_faults, clean_requests) = _consensus(tmp_path, "clean")
    faulty, (faults, requests) = _consensus(tmp_path, "faulty", **FAULTS)
    assert not no_faults and set(faults) == set(ALL_FAULTS), faults
    assert clean.pop("request_health")["retries"] == 0
    health = faulty.pop("request_health")
    assert faulty == clean  # every metric, every round, parse health
    assert clean["rows"] and not clean["simulated"]
    _check_health(health, faults, requests)
    assert requests == clean_requests + sum(faults.values())


def test_whodunit_report_is_identical_under_20_percent_faults(tmp_path: Path) -> None:
    clean, (no_faults, clean_requests) = _whodunit(tmp_path, "clean")
    faulty, (faults, requests) = _whodunit(tmp_path, "faulty", **FAULTS)
    assert not no_faults and set(faults) == set(ALL_FAULTS), faults
    clean_health = clean.pop("request_health")
    assert clean_health["retries"] == 0 and clean_health["requests"] == clean_requests
    health = faulty.pop("request_health")
    assert faulty == clean
    assert clean["rows"] and clean["parse_health"]["stages"]
    _check_health(health, faults, requests)
