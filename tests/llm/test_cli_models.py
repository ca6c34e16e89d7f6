"""`byzllm models probe` against the fake server."""

from __future__ import annotations

import json
import socket

import pytest
from typer.testing import CliRunner

from byzllm.cli import app
from byzllm.testing import FakeOpenAIServer, FakeReply

runner = CliRunner()


def test_probe_reports_largest_top_logprobs_in_a_table() -> None:
    with FakeOpenAIServer(max_top_logprobs=7) as server:
        result = runner.invoke(
            app, ["models", "probe", "--base-url", server.base_url, "--model", "m"]
        )
        ks = [r.get("top_logprobs") for r in server.requests if r.get("logprobs")]
    assert result.exit_code == 0, result.output
    assert "reachable" in result.output and "yes" in result.output
    assert "max top_logprobs" in result.output and "7" in result.output
    assert ks[:2] == [1, 20]  # logprobs at all, then the cap, then a binary search
    assert max(k for k in ks if k is not None and k <= 7) == 7


def test_probe_json_output() -> None:
    with FakeOpenAIServer() as server:
        result = runner.invoke(
            app, ["models", "probe", "--base-url", server.base_url, "--model", "m", "--json"]
        )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["reachable"] is True and report["logprobs"] is True
    assert report["max_top_logprobs"] == 20
    assert report["latency_s"] > 0


def test_probe_without_logprobs() -> None:
    with FakeOpenAIServer(lambda r: FakeReply("OK", omit_logprobs=True)) as server:
        result = runner.invoke(
            app, ["models", "probe", "--base-url", server.base_url, "--model", "m", "--json"]
        )
    report = json.loads(result.stdout)
    assert result.exit_code == 0
    assert report["logprobs"] is False and report["max_top_logprobs"] is None


def test_probe_unreachable_exits_1() -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    result = runner.invoke(
        app, ["models", "probe", "--base-url", url, "--model", "m", "--timeout", "1", "--json"]
    )
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["reachable"] is False and "connection failed" in report["error"]


def test_probe_rejected_key_exits_2_without_showing_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROBE_KEY", "sk-test-SECRET123")
    with FakeOpenAIServer(status=401) as server:
        result = runner.invoke(
            app,
            [
                "models",
                "probe",
                "--base-url",
                server.base_url,
                "--model",
                "m",
                "--api-key-env",
                "PROBE_KEY",
            ],
        )
    assert result.exit_code == 2
    assert "PROBE_KEY" in result.output and "SECRET123" not in result.output


def test_probe_bad_url_is_bad_input() -> None:
    result = runner.invoke(app, ["models", "probe", "--base-url", "localhost:8000", "--model", "m"])
    assert result.exit_code == 2
    assert "base_url must start with http" in result.output


def test_probe_warns_when_the_server_answers_as_another_model() -> None:
    """A server that answers every model name with the one it loaded (llama.cpp's does) makes
    a wrong --model look reachable: the probe says which model answered."""
    with FakeOpenAIServer(model_name="smollm2") as server:
        args = ["models", "probe", "--base-url", server.base_url, "--json"]
        wrong = runner.invoke(app, [*args, "--model", "nosuchmodel"])
        right = runner.invoke(app, [*args, "--model", "smollm2"])
    assert wrong.exit_code == 0, wrong.output
    assert json.loads(wrong.stdout)["answered_as"] == "smollm2"
    assert "warning: the server answered as 'smollm2', not 'nosuchmodel'" in wrong.stderr
    assert json.loads(right.stdout)["answered_as"] is None and "warning" not in right.stderr


def test_a_dated_or_prefixed_name_is_the_same_model() -> None:
    from byzllm.llm._probe import _same_model

    assert _same_model("gpt-4o-mini", "gpt-4o-mini-2024-07-18")
    assert _same_model("Qwen/Qwen2.5-7B-Instruct", "qwen2.5-7b-instruct")
    assert _same_model("m", "")
    assert not _same_model("nosuchmodel", "smollm2")


async def test_a_refused_k_in_not_supported_words_does_not_end_the_search() -> None:
    """A server refusing k > 8 with "top_logprobs=20 is not supported" got that refusal
    remembered as the endpoint's fatal error: every smaller k failed unsent, and the probe
    said 1. Each k is now sent and the search finds 8."""
    import asyncio

    from byzllm.llm._probe import probe_endpoint

    sent: list[object] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    int(line.split(b":")[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length")
                )
                k = json.loads(await reader.readexactly(length)).get("top_logprobs")
                sent.append(k)
                if isinstance(k, int) and k > 8:
                    status = 400
                    body: dict[str, object] = {
                        "error": {"message": f"top_logprobs={k} is not supported (max 8)"}
                    }
                else:
                    top = [{"token": "OK", "logprob": -0.1}] * (k or 0)
                    content = [{"token": "OK", "logprob": -0.1, "top_logprobs": top}]
                    logprobs = {"content": content} if k is not None else None
                    choice = {"message": {"content": "OK"}, "logprobs": logprobs}
                    status, body = 200, {"model": "m", "choices": [choice]}
                data = json.dumps(body).encode()
                writer.write(b"HTTP/1.1 %d X\r\nContent-Length: %d\r\n\r\n" % (status, len(data)))
                writer.write(data)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        report = await probe_endpoint(f"http://127.0.0.1:{port}/v1", "m", api_key_env=None)
    finally:
        server.close()
    assert report.max_top_logprobs == 8
    assert 7 in sent and 8 in sent
