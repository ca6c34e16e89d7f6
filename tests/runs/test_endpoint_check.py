"""The check before a run: one tiny request to each model endpoint the config calls, so no
server listening, a rejected key or an unknown model stops the run with one line and exit 2
before its first unit, instead of after every unit's retries."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path
from typing import Any, ClassVar, Literal

import pytest
from typer.testing import CliRunner

from byzllm.cli import app
from byzllm.llm import (
    GenerateConfig,
    ModelAuthError,
    ModelNotFoundError,
    ModelSpec,
    ModelUnreachableError,
    ModelWrongServerError,
    check_endpoint,
    get_model,
)
from byzllm.runs import ModelConfig, Record, RunAbortedError, make_unit, run_units
from byzllm.runs._model_config import check_endpoints
from byzllm.testing import FakeOpenAIServer

RUNNER = CliRunner()
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _closed_url() -> str:
    """A local URL nothing listens on (a port just bound and released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def _spec(base_url: str, **settings: Any) -> ModelSpec:
    return ModelSpec(name="openai/fake", base_url=base_url, api_key_env=None, **settings)


def test_nothing_listening_is_unreachable_and_names_the_endpoint() -> None:
    url = _closed_url()
    error = asyncio.run(check_endpoint(_spec(url)))
    assert isinstance(error, ModelUnreachableError) and error.fatal and error.exit_code == 2
    assert url in str(error) and "connection refused" in str(error) and "\n" not in str(error)


def test_a_server_that_answers_passes_with_one_request() -> None:
    with FakeOpenAIServer() as server:
        assert asyncio.run(check_endpoint(_spec(server.base_url))) is None
        assert server.request_count == 1


def test_a_rejected_key_and_an_unknown_model_are_their_own_fatal_errors(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("BYZLLM_CHECK_KEY", "sk-wrong-1234")
    with FakeOpenAIServer(api_key="sk-right-5678") as server:
        spec = _spec(server.base_url).model_copy(update={"api_key_env": "BYZLLM_CHECK_KEY"})
        assert isinstance(asyncio.run(check_endpoint(spec)), ModelAuthError)
    with FakeOpenAIServer(status=404) as server:
        assert isinstance(asyncio.run(check_endpoint(_spec(server.base_url))), ModelNotFoundError)


@pytest.mark.parametrize("fault", ["drop", "503"])
def test_a_listening_server_that_fails_the_check_is_left_to_the_runs_retries(
    fault: Literal["drop", "503"],
) -> None:
    with FakeOpenAIServer(fault_rate=1.0, faults=[fault]) as server:
        assert asyncio.run(check_endpoint(_spec(server.base_url))) is None
        assert server.request_count == 2  # two attempts, then the run takes over


def test_a_server_that_answers_with_no_chat_completion_is_the_wrong_server() -> None:
    """A web page (or another service) answering 200 passed the check; then every request
    of the run was retried for a minute and failed the same way."""
    with FakeOpenAIServer(fault_rate=1.0, faults=["malformed"]) as server:
        error = asyncio.run(check_endpoint(_spec(server.base_url)))
        assert server.request_count == 2  # two unusable bodies, not one glitch
    assert isinstance(error, ModelWrongServerError) and error.fatal and error.exit_code == 2
    assert "check base_url" in str(error) and "\n" not in str(error)


class _Players(ModelConfig):
    """A config section choosing between simulated agents and an LLM, as the domains do."""

    agents: Literal["simulated", "llm"] = "llm"


class _Mark(Record):
    kind: ClassVar[str] = "mark"
    index: int


CALLS: list[int] = []


async def _work(payload: dict[str, Any]) -> list[Record]:
    CALLS.append(payload["index"])
    return [_Mark(index=payload["index"])]


def test_a_run_with_no_server_stops_before_its_first_unit_and_resumes_once_one_answers(
    tmp_path: Path,
) -> None:
    CALLS.clear()
    units = [make_unit({"index": i, "grid": "check"}) for i in range(5)]
    config = _Players(model="openai/fake", base_url=_closed_url(), api_key_env=None)
    with pytest.raises(RunAbortedError) as caught:
        asyncio.run(run_units(tmp_path, units, _work, config=config, progress=False))
    message = str(caught.value)
    assert caught.value.exit_code == 2 and "\n" not in message
    assert "nothing answers at" in message and "before the first unit" in message
    assert "0 of 5 units done, 5 not done" in message
    assert CALLS == []
    # Refused before the lock and the store: the folder is as it was, nothing bound to it.
    assert list(tmp_path.iterdir()) == []
    assert caught.value.summary.status == "aborted" and caught.value.summary.run_id == 0

    with FakeOpenAIServer() as server:
        config = config.model_copy(update={"base_url": server.base_url})
        summary = asyncio.run(run_units(tmp_path, units, _work, config=config, progress=False))
        assert summary.complete and sorted(CALLS) == list(range(5))
        assert summary.requests["requests"] == 1  # the check's: the units sent none


def test_sections_that_call_no_model_are_not_checked(tmp_path: Path) -> None:
    closed = _closed_url()
    simulated = _Players(agents="simulated", model="openai/fake", base_url=closed)
    assert asyncio.run(check_endpoints(simulated)) is None
    assert asyncio.run(check_endpoints(_Players(model=None))) is None
    # A finished run has nothing to do: no check, no server needed to rerun it.
    units = [make_unit({"index": 0, "grid": "done"})]
    live = _Players(model="openai/fake", base_url=closed, api_key_env=None)
    with FakeOpenAIServer() as server:
        config = live.model_copy(update={"base_url": server.base_url})
        asyncio.run(run_units(tmp_path, units, _work, config=config, progress=False))
    summary = asyncio.run(run_units(tmp_path, units, _work, config=live, progress=False))
    assert summary.complete and summary.skipped == 1


def test_an_existing_response_cache_turns_an_unreachable_server_into_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = tmp_path / "cache.sqlite"
    with FakeOpenAIServer() as server:

        async def fill() -> None:
            llm = get_model("openai/fake", base_url=server.base_url, api_key_env=None, cache=cache)
            await llm.generate([{"role": "user", "content": "hi"}], GenerateConfig())
            await llm.aclose()

        asyncio.run(fill())
    config = _Players(
        model="openai/fake", base_url=_closed_url(), api_key_env=None, cache=str(cache)
    )
    assert asyncio.run(check_endpoints(config)) is None
    assert "warning: nothing answers at" in capsys.readouterr().err
    without = config.model_copy(update={"cache_mode": "off"})
    assert isinstance(asyncio.run(check_endpoints(without)), ModelUnreachableError)


def test_cli_run_with_no_server_is_one_error_line_and_exit_2(tmp_path: Path) -> None:
    args = [
        "consensus", "run", str(EXAMPLES / "sweep.yaml"), "-o", str(tmp_path / "run"),
        "--model", "openai/x", "--base-url", _closed_url(), "--set", "dataset.n=2",
    ]  # fmt: skip
    result = RUNNER.invoke(app, args)
    assert result.exit_code == 2, result.output
    (line,) = [line for line in result.stderr.splitlines() if line.strip()]
    assert line.startswith("error: nothing answers at http://127.0.0.1:")
    assert "Traceback" not in result.output
