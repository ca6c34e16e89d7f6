"""Runs that tell the truth under failure: a fatal error (rejected key, missing model, bad
config) stops the run at once with one line and exit 2, leaving its units not done for the
rerun; the progress line keeps coming while requests hang; the run's requests, retries and
errors by kind are in the summary, the unit records, `runs show` and every report."""

from __future__ import annotations

import asyncio
import io
import itertools
import json
import time
from pathlib import Path
from typing import Any, ClassVar

import pytest
from typer.testing import CliRunner

from byzllm.cli import app
from byzllm.errors import ConfigError
from byzllm.llm import ModelNotFoundError, RetryPolicy, get_model
from byzllm.runs import PlainProgress, Record, RunAbortedError, Store, make_unit, run_units
from byzllm.testing import FakeOpenAIServer

RUNNER = CliRunner()
GOOD_KEY, BAD_KEY = "sk-good-key-4242", "sk-bad-key-1313"


def _ok(result: Any) -> None:
    assert result.exit_code == 0, result.output + str(result.exception)


def _errors(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("error:")]


def _consensus_script(request: dict[str, Any]) -> str:
    user = str(request["messages"][-1]["content"])
    return "Score: 0.9" if user.rstrip().endswith("Score:") else "Let me think.\nAnswer: 7"


def _consensus_args(run_dir: Path, base_url: str, *extra: str) -> list[str]:
    return [
        "consensus", "run", "-o", str(run_dir), "--model", "openai/fake", "--base-url", base_url,
        "--set", "dataset.n=10", "--set", "protocols=[sac,cp-wbft]",
        "--set", "topologies=[complete]", "--set", "T=[1]",
        "--set", "agents.strong.api_key_env=BYZLLM_RUN_KEY",
        "--set", "agents.weak.api_key_env=BYZLLM_RUN_KEY", *extra,
    ]  # fmt: skip


def test_rejected_key_stops_after_one_request_exit_2_and_the_rerun_runs_every_unit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir = tmp_path / "sweep"
    with FakeOpenAIServer(_consensus_script, api_key=GOOD_KEY, latency=0.02) as server:
        monkeypatch.setenv("BYZLLM_RUN_KEY", BAD_KEY)
        bad = RUNNER.invoke(app, _consensus_args(run_dir, server.base_url))
        assert bad.exit_code == 2, bad.output
        assert server.request_count == 1  # 20 units, 16 at once: one request in all
        (line,) = _errors(bad.stderr)
        assert "HTTP 401" in line and "BYZLLM_RUN_KEY was rejected" in line
        assert "0 of 20 units done, 20 not done" in line and "rerun the same command" in line
        assert BAD_KEY not in bad.output and "Traceback" not in bad.output
        assert "failed" not in bad.stderr.replace("0 failed", "")
        assert not run_dir.exists()  # refused before the folder was made: nothing bound

        monkeypatch.setenv("BYZLLM_RUN_KEY", GOOD_KEY)
        good = RUNNER.invoke(app, [*_consensus_args(run_dir, server.base_url), "--json"])
        _ok(good)
    summary = json.loads(good.stdout)
    assert (summary["done"], summary["skipped"], summary["failed"]) == (20, 0, 0)
    assert summary["requests"]["requests"] == server.request_count - 1


def test_rejected_key_stops_a_whodunit_run_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BYZLLM_RUN_KEY", BAD_KEY)
    with FakeOpenAIServer(api_key=GOOD_KEY) as server:
        args = [
            "whodunit", "run", "-o", str(tmp_path / "wd"), "--set", "agents=llm",
            "--set", "model=openai/fake", "--set", f"base_url={server.base_url}",
            "--set", "api_key_env=BYZLLM_RUN_KEY", "--set", "split=generated",
            "--set", "n_games=8", "--json",
        ]  # fmt: skip
        result = RUNNER.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert server.request_count == 1 and len(_errors(result.stderr)) == 1
    assert "0 of 8 units done, 8 not done" in result.stderr
    summary = json.loads(result.stdout)  # --json still gets the summary, with the error
    assert summary["status"] == "aborted" and summary["never_run"] == 8
    assert summary["error"] == _errors(result.stderr)[0].removeprefix("error: ")


class Done(Record):
    kind: ClassVar[str] = "done"
    i: int


async def _ask_missing_model(payload: dict[str, Any]) -> Done:
    model = get_model("openai/missing", base_url=payload["url"], api_key_env=None)
    await model.generate([{"role": "user", "content": str(payload["i"])}])
    return Done(i=payload["i"])


async def test_a_missing_model_aborts_with_its_own_error(tmp_path: Path) -> None:
    async with FakeOpenAIServer(status=404, latency=0.05) as server:
        units = [make_unit({"i": i, "url": server.base_url}) for i in range(12)]
        with pytest.raises(RunAbortedError) as info:
            await run_units(tmp_path, units, _ask_missing_model, concurrency=6, progress=False)
    assert server.request_count == 1
    error = info.value
    assert isinstance(error.cause, ModelNotFoundError) and error.exit_code == 2
    assert error.summary.status == "aborted" and error.summary.never_run == 12
    assert "\n" not in str(error) and "wrong base_url or model name" in str(error)
    with Store.open(tmp_path) as store:
        assert store.counts()["pending"] == 12


async def _bad_config_or_slow(payload: dict[str, Any]) -> Done:
    if payload["i"] == 3:
        await asyncio.sleep(0.05)
        raise ConfigError("invalid config: dataset.path: file not found: gone.jsonl")
    if payload["i"] == 1:
        raise RuntimeError("this unit's own problem")
    if payload["i"] == 0:
        return Done(i=0)
    await asyncio.sleep(30)  # in flight when the fatal error comes: cancelled at once
    return Done(i=payload["i"])


async def test_fatal_error_cancels_units_in_flight_and_leaves_them_not_done(
    tmp_path: Path,
) -> None:
    units = [make_unit({"i": i}) for i in range(10)]
    started = time.monotonic()
    with pytest.raises(RunAbortedError) as info:
        await run_units(tmp_path, units, _bad_config_or_slow, concurrency=6, progress=False)
    assert time.monotonic() - started < 5
    summary = info.value.summary
    assert (summary.done, summary.failed, summary.never_run) == (1, 1, 8)
    assert str(info.value).startswith("invalid config: dataset.path: file not found")
    assert "1 of 10 units done, 1 failed, 8 not done" in str(info.value)
    assert info.value.exit_code == 2
    with Store.open(tmp_path) as store:
        assert store.counts() == {"pending": 8, "done": 1, "failed": 1}


class _Lines(io.TextIOBase):
    """A stream remembering when each line was written."""

    def __init__(self) -> None:
        self.lines: list[tuple[float, str]] = []

    def write(self, text: str) -> int:
        for line in text.splitlines():
            if line:
                self.lines.append((time.monotonic(), line))
        return len(text)


async def _hanging_call(payload: dict[str, Any]) -> Done:
    model = get_model(
        "openai/m",
        base_url=payload["url"],
        api_key_env=None,
        timeout_s=0.8,
        retry=RetryPolicy(max_attempts=2, initial_backoff_s=0.01, max_backoff_s=0.01),
    )
    await model.generate([{"role": "user", "content": str(payload["i"])}])
    return Done(i=payload["i"])


async def test_progress_lines_keep_coming_while_requests_hang(tmp_path: Path) -> None:
    stream = _Lines()
    progress = PlainProgress(stream=stream, interval_s=0.2)  # type: ignore[arg-type]
    async with FakeOpenAIServer(fault_rate=1.0, faults=["hang"]) as server:
        units = [make_unit({"i": i, "url": server.base_url}) for i in range(2)]
        summary = await run_units(tmp_path, units, _hanging_call, progress=progress)
    assert summary.failed == 2  # each gave up after two attempts of 0.8 s
    status = [(t, line) for t, line in stream.lines if " done, " in line]
    times = [t for t, _ in status]
    assert len(times) >= 6, stream.lines
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert max(gaps) < 0.6, gaps  # no unit finished for ~1.6 s, yet a line every ~0.2 s
    texts = [line for _, line in status]
    assert any("0/2 done, 0 failed, 2 running; requests: 1 in flight" in t for t in texts)
    assert any("last error: timeout" in t for t in texts)
    # The first request went alone; its timeout let the other unit's go: 1 then 2 in flight.
    assert any("2 running; requests: 2 in flight" in t for t in texts)
    assert summary.requests["timeouts"] == 4 and summary.requests["retries"] == 2
    assert summary.requests["errors"] == {"timeout": 4}


def test_request_health_in_runs_show_and_reports(tmp_path: Path) -> None:
    run_dir = tmp_path / "flaky"
    settings = [
        "--set", "agents.strong.retry={max_attempts: 20, initial_backoff_s: 0.001, "
        "max_backoff_s: 0.005}",
        "--set", "agents.weak.retry={max_attempts: 20, initial_backoff_s: 0.001, "
        "max_backoff_s: 0.005}",
    ]  # fmt: skip
    with FakeOpenAIServer(
        _consensus_script,
        fault_rate=0.3,
        faults=["500", "429"],
        clean_first=1,  # the endpoint check before the first unit
        retry_after=0.001,
        seed=2,
    ) as server:
        args = _consensus_args(run_dir, server.base_url, *settings)
        args = [a.replace("BYZLLM_RUN_KEY", "null") for a in args]
        _ok(RUNNER.invoke(app, args))
        faults, sent = server.faults_injected, server.request_count
    assert faults["500"] and faults["429"]

    shown = RUNNER.invoke(app, ["runs", "show", str(run_dir), "--json"])
    _ok(shown)
    health = json.loads(shown.stdout)["request_health"]
    # Every request but the endpoint check's is a unit's.
    assert health["requests"] == sent - 1 and health["retries"] == sum(faults.values())
    assert health["errors"] == {f"http_{k}": n for k, n in faults.most_common()}
    assert health["failures"] == 0 and health["status"] in ("ok", "warning")

    report = RUNNER.invoke(app, ["consensus", "report", str(run_dir), "--json"])
    _ok(report)
    assert json.loads(report.stdout)["request_health"] == health
    table = RUNNER.invoke(app, ["consensus", "report", str(run_dir), "--out", str(tmp_path)])
    _ok(table)
    assert "Model requests" in table.stdout and "http_500" in table.stdout
    text = RUNNER.invoke(app, ["runs", "show", str(run_dir)])
    _ok(text)
    assert "Model requests" in text.stdout

    with Store.open(run_dir) as store:
        questions = store.records("consensus_question")
    assert sum(q["requests"]["requests"] for q in questions) == sent - 1
    assert all(
        set(q["requests"]) >= {"requests", "retries", "timeouts", "errors"} for q in questions
    )


def test_simulated_runs_say_no_model_was_called(tmp_path: Path) -> None:
    run_dir = tmp_path / "sim"
    _ok(RUNNER.invoke(app, ["whodunit", "run", "-o", str(run_dir), "--set", "n_games=2"]))
    report = RUNNER.invoke(app, ["whodunit", "report", str(run_dir)])
    _ok(report)
    assert "model requests: n/a (simulated" in report.stdout
    payload = json.loads(RUNNER.invoke(app, ["whodunit", "report", str(run_dir), "--json"]).stdout)
    assert payload["request_health"]["status"] == "n/a (simulated)"
    shown = json.loads(RUNNER.invoke(app, ["runs", "show", str(run_dir), "--json"]).stdout)
    assert shown["request_health"]["requests"] == 0


def test_monitor_report_counts_requests(tmp_path: Path) -> None:
    from byzllm.experiments.monitor import MonitorExperimentConfig, work
    from byzllm.experiments.monitor.experiment import _split_games

    with FakeOpenAIServer(
        lambda r: "no idea",
        fault_rate=0.3,
        faults=["503"],
        clean_first=1,  # the endpoint check before the first unit
        retry_after=0.001,
        seed=4,
    ) as server:
        cfg = MonitorExperimentConfig.model_validate(
            {
                "n_test": 2,
                "game": {"max_turns": 4},
                "max_reprompts": 0,
                "agents": "llm",
                "model": "openai/fake",
                "base_url": server.base_url,
                "api_key_env": None,
                "retry": {"max_attempts": 20, "initial_backoff_s": 0.001, "max_backoff_s": 0.005},
            }
        )
        units = [
            make_unit(
                {
                    "stage": "evaluate",
                    "config": cfg.model_dump(mode="json"),
                    "split": "test",
                    "game": game.model_dump(mode="json"),
                    "repeat": 0,
                    "condition": "none",
                }
            )
            for game in _split_games(cfg, "test")
        ]
        summary = asyncio.run(run_units(tmp_path, units, work, config=cfg, progress=False))
        faults, sent = server.faults_injected["503"], server.request_count
    assert summary.complete and faults
    report = RUNNER.invoke(app, ["monitor", "report", str(tmp_path), "--json"])
    _ok(report)
    health = json.loads(report.stdout)["request_health"]
    assert health["requests"] == sent - 1 and health["errors"] == {"http_503": faults}
    text = RUNNER.invoke(app, ["monitor", "report", str(tmp_path)])
    _ok(text)
    assert "Model requests" in text.stdout and "http_503" in text.stdout


async def _exits(payload: dict[str, Any]) -> Done:
    if payload["i"] == 2:
        raise SystemExit(3)  # a library's sys.exit inside the work
    return Done(i=payload["i"])


async def test_a_unit_that_calls_sys_exit_fails_alone(tmp_path: Path) -> None:
    """It ended the whole run with a traceback, and every rerun died the same way."""
    units = [make_unit({"i": i}) for i in range(5)]
    summary = await run_units(tmp_path, units, _exits, concurrency=2, progress=False)
    assert (summary.done, summary.failed) == (4, 1)
    with Store.open(tmp_path) as store:
        (failed,) = [u for u in store.units() if u["status"] == "failed"]
    assert failed["error"].startswith("SystemExit")


class Blob(Record):
    kind: ClassVar[str] = "blob"
    value: Any


async def _unserializable(payload: dict[str, Any]) -> Blob:
    # Bytes that are not UTF-8 cannot be written as JSON.
    return Blob(value=b"\xff\xfe" if payload["i"] == 3 else payload["i"])


# A run whose units have all finished commits them at once: with an hour's commit interval
# this would otherwise wait out the hour (here: fail on the timeout).
@pytest.mark.timeout(60)
async def test_a_long_commit_interval_does_not_hold_a_finished_run(tmp_path: Path) -> None:
    units = [make_unit({"i": i}) for i in range(3)]
    summary = await run_units(
        tmp_path, units, _unserializable, progress=False, commit_interval_s=3600.0
    )
    assert (summary.done, summary.failed) == (3, 0)
    with Store.open(tmp_path) as store:
        assert sorted(r["value"] for r in store.records("blob")) == [0, 1, 2]


@pytest.mark.parametrize("commit_interval_s", [0.0, 10.0])
async def test_records_that_cannot_be_written_fail_their_unit_alone(
    tmp_path: Path, commit_interval_s: float
) -> None:
    """Packed where the store writes (the local executor), one unit's bad records stopped the
    run and rolled back every unit of its transaction; a long commit interval puts all ten
    units in one transaction."""
    units = [make_unit({"i": i}) for i in range(10)]
    summary = await run_units(
        tmp_path, units, _unserializable, progress=False, commit_interval_s=commit_interval_s
    )
    assert (summary.done, summary.failed) == (9, 1)
    with Store.open(tmp_path) as store:
        (failed,) = [u for u in store.units() if u["status"] == "failed"]
        assert failed["payload"]["i"] == 3 and "records not serializable" in failed["error"]
        assert sorted(r["value"] for r in store.records("blob")) == [0, 1, 2, 4, 5, 6, 7, 8, 9]
