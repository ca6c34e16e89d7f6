"""API keys and base URLs: what is refused before any request, and what goes on the wire."""

from __future__ import annotations

import asyncio
import json

import pytest
from pydantic import ValidationError

from byzllm.errors import ConfigError, InputError
from byzllm.llm import ModelSpec, get_model
from byzllm.llm._spec import SECRET_IN_VALUE
from byzllm.testing import FakeOpenAIServer

ENV = "BYZLLM_HARDENING_KEY"
MESSAGES = [{"role": "user", "content": "hi"}]
FAST = {"max_attempts": 2, "initial_backoff_s": 0.0, "max_backoff_s": 0.0}


@pytest.mark.parametrize(
    "key",
    [
        "sk-caf\u00e9-0123456789abcdef",  # non-ASCII: the HTTP client could not encode it
        "sk-abcdefgh0123\r\nX-Injected: yes",  # a line break: a header of its own
        "sk-abcdefgh0123\nmore",
        "sk-abcd efgh-0123",  # an inner space
        "sk-abcdefgh\ttail",
    ],
)
def test_an_unusable_key_is_one_error_naming_the_variable_not_the_key(
    monkeypatch: pytest.MonkeyPatch, key: str
) -> None:
    monkeypatch.setenv(ENV, key)
    with pytest.raises(ConfigError) as caught:
        get_model("openai/m", base_url="http://127.0.0.1:9/v1", api_key_env=ENV)
    message = str(caught.value)
    assert ENV in message and "\n" not in message
    for piece in ("sk-", "abcd", "caf", "0123", "Injected", "efgh"):
        assert piece not in message


async def test_surrounding_whitespace_of_a_copied_key_is_stripped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(ENV, "  sk-good-0123456789\n")
    async with FakeOpenAIServer(lambda request: "yes", api_key="sk-good-0123456789") as server:
        model = get_model(
            "openai/m", base_url=server.base_url, api_key_env=ENV, retry=FAST, timeout_s=5
        )
        completion = await model.generate(MESSAGES)
        await model.aclose()
    assert completion.text == "yes"


@pytest.mark.parametrize("name", ["MY_OPENAI", "OPENROUTER_PAT", "LLM_CREDS"])
def test_an_api_key_env_that_does_not_look_secret_is_refused(name: str) -> None:
    # Child processes that call no model get the environment less the secret-looking
    # variables only: a key under such a name would reach them.
    with pytest.raises(InputError, match=f"api_key_env '{name}' does not look like"):
        get_model("openai/m", base_url="http://127.0.0.1:9/v1", api_key_env=name)
    with pytest.raises(ValueError, match="does not look like the name of a secret"):
        ModelSpec.model_validate({"model": "openai/m", "api_key_env": name})


def test_secret_looking_api_key_env_names_are_accepted() -> None:
    for name in ("OPENAI_API_KEY", "MY_TOKEN_VAR", "HF_TOKEN", "GATEWAY_SECRET"):
        get_model("openai/m", base_url="http://127.0.0.1:9/v1", api_key_env=name)
    ModelSpec.model_validate({"model": "openai/m", "api_key_env": "MY_TOKEN_VAR"})


@pytest.mark.parametrize(
    "query", ["key=AIzaSECRET123", "api_key=sk-SECRET123", "x=1&token=SECRET123", "sig=SECRET123"]
)
def test_a_credential_in_the_base_url_query_is_refused_without_quoting_it(query: str) -> None:
    url = f"http://127.0.0.1:9/v1?{query}"
    with pytest.raises(InputError) as caught:
        get_model("openai/m", base_url=url, api_key_env=None)
    assert "SECRET" not in str(caught.value) and "credential in its query" in str(caught.value)
    with pytest.raises(ValidationError) as invalid:
        ModelSpec.model_validate({"model": "openai/m", "base_url": url, "api_key_env": None})
    # A config's error line shows no value of this kind (byzllm.runs.format_validation_error).
    (error,) = invalid.value.errors()
    assert error["type"] == SECRET_IN_VALUE and "SECRET" not in error["msg"]


class _RecordingServer:
    """A bare HTTP server on 127.0.0.1 that records each request line and answers with one
    chat completion (the fake server routes by path and does not keep the query)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._server: asyncio.Server | None = None
        self.port = 0

    async def __aenter__(self) -> _RecordingServer:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
                self.lines.append(head.split("\r\n", 1)[0])
                length = 0
                for line in head.split("\r\n")[1:]:
                    name, _, value = line.partition(":")
                    if name.strip().lower() == "content-length":
                        length = int(value)
                await reader.readexactly(length)
                body = json.dumps(
                    {
                        "id": "x",
                        "object": "chat.completion",
                        "model": "m",
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": "ok"},
                                "finish_reason": "stop",
                            }
                        ],
                    }
                ).encode()
                writer.write(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()


@pytest.mark.parametrize("transport", ["fast", "httpx"])
async def test_a_base_url_query_is_kept_on_every_request(
    monkeypatch: pytest.MonkeyPatch, transport: str
) -> None:
    if transport == "httpx":
        monkeypatch.setenv("BYZLLM_HTTP_TRANSPORT", "httpx")
    async with _RecordingServer() as server:
        base = f"http://127.0.0.1:{server.port}/v1?api-version=2024-06-01"
        model = get_model("openai/m", base_url=base, api_key_env=None, retry=FAST, timeout_s=5)
        for _ in range(2):
            assert (await model.generate(MESSAGES)).text == "ok"
        await model.aclose()
    assert server.lines == ["POST /v1/chat/completions?api-version=2024-06-01 HTTP/1.1"] * 2
