"""What the response cache knows a model by: a server whose port changes is the same server
when named so (``cache_endpoint``); two GGUF files of one name are two models, in process or
served by byzllm's own server (which names its file's SHA-256)."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from byzllm.llm import (
    ChatMessage,
    Completion,
    GenerateConfig,
    Model,
    ModelAPI,
    ModelError,
    ProviderSettings,
    get_model,
)
from byzllm.llm._cache import _reset_open_caches, cache_key, open_cache
from byzllm.llm._local import resolve_gguf, server_identity
from byzllm.llm._openai import served_file
from byzllm.llm._retry import TransientError
from byzllm.testing import FakeOpenAIServer

_MESSAGES = [{"role": "user", "content": "2+3?"}]


@pytest.fixture(autouse=True)
def _fresh_cache_handles() -> Iterator[None]:
    yield
    _reset_open_caches()


async def _ask_twice(path: Path, **settings: object) -> tuple[bool, bool]:
    """The same request to two servers on two ports, one cache file: was each cached?"""
    cached = []
    for reply in ("5", "6"):
        async with FakeOpenAIServer(lambda _request, r=reply: r) as server:
            model = get_model(
                "openai/m", base_url=server.base_url, api_key_env=None, cache=path, **settings
            )  # type: ignore[arg-type]
            completion = await model.generate(_MESSAGES, GenerateConfig(temperature=0))  # type: ignore[arg-type]
            cached.append(completion.cached)
    return cached[0], cached[1]


async def test_a_named_server_is_found_again_on_another_port(tmp_path: Path) -> None:
    assert await _ask_twice(tmp_path / "a.sqlite") == (False, False)
    named = await _ask_twice(tmp_path / "b.sqlite", cache_endpoint="llamacpp-server:qwen")
    assert named == (False, True)


def test_two_gguf_files_of_one_name_are_two_models(tmp_path: Path) -> None:
    for folder, body in (("a", b"one"), ("b", b"two")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "model-q4_0.gguf").write_bytes(b"GGUF" + body)
    first = resolve_gguf(str(tmp_path / "a" / "model-q4_0.gguf"))
    second = resolve_gguf(str(tmp_path / "b" / "model-q4_0.gguf"))
    assert first.name == second.name
    assert first.content_id() != second.content_id()
    copy = tmp_path / "model-q4_0.gguf"
    copy.write_bytes(b"GGUFone")
    assert resolve_gguf(str(copy)).content_id() == first.content_id()  # content, not place


def test_the_local_backend_is_cached_under_its_files_hash(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp", reason="needs the local extra (pip install 'byzllm[local]')")
    from byzllm.llm._llamacpp import LlamaCppAPI

    path = tmp_path / "m.gguf"
    path.write_bytes(b"GGUF" + b"x" * 10)
    api = LlamaCppAPI.__new__(LlamaCppAPI)  # the file is no model: only its identity is asked
    api._gguf = resolve_gguf(str(path))
    assert api.cache_identity == f"llamacpp:m:{api._gguf.content_id()}"
    assert api.endpoint == "llamacpp:m"


# --- a server that names the weights it serves --------------------------------------------

_SHA_A, _SHA_B = "a" * 64, "b" * 64


@pytest.fixture
def own_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str, str], str]]:
    """byzllm's own server (generation replaced), started again on one port per call:
    ``start(reply, sha256) -> base_url``, as a server restarted with another file."""
    from byzllm.llm import _llama_http
    from byzllm.llm._serve import free_port

    port = free_port()
    running: list[ThreadingHTTPServer] = []

    def start(reply: str, sha256: str) -> str:
        for httpd in running:
            httpd.shutdown()
            httpd.server_close()
        running.clear()

        def generate(llama: Any, body: dict[str, Any], **_: Any) -> dict[str, Any]:
            return {"choices": [{"message": {"role": "assistant", "content": reply}}]}

        monkeypatch.setattr(_llama_http, "generate_chat", generate)
        httpd = _llama_http.make_server(object(), "m", port=port, context_tokens=64, sha256=sha256)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        running.append(httpd)
        return f"http://127.0.0.1:{port}/v1"

    yield start
    for httpd in running:
        httpd.shutdown()
        httpd.server_close()


async def _ask(base_url: str, path: Path, **settings: Any) -> Completion:
    model = get_model("openai/m", base_url=base_url, api_key_env=None, cache=path, **settings)
    try:
        return await model.generate(_MESSAGES, GenerateConfig(temperature=0))
    finally:
        await model.aclose()


async def test_two_files_served_under_one_name_at_one_address_are_two_models(
    tmp_path: Path, own_server: Callable[[str, str], str]
) -> None:
    # The server at one address, under one name, restarted with another file: its replies
    # came from the first file's cache entry (cached=True, nothing asked).
    path = tmp_path / "c.sqlite"
    first = await _ask(own_server("I am model A", _SHA_A), path)
    second = await _ask(own_server("I am model B", _SHA_B), path)
    assert (first.text, first.cached) == ("I am model A", False)
    assert (second.text, second.cached) == ("I am model B", False)
    again = await _ask(own_server("(not asked)", _SHA_A), path)
    assert (again.text, again.cached) == ("I am model A", True)


async def test_the_server_is_known_by_its_file_not_its_port(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    replies = []
    for reply in ("5", "6"):  # two ports, one file: one model
        async with FakeOpenAIServer(lambda _request, r=reply: r, sha256=_SHA_A) as server:
            replies.append(await _ask(server.base_url, path))
    assert [(c.text, c.cached) for c in replies] == [("5", False), ("5", True)]
    # ... the name reproduce --real gives its own servers: the one idea, in one place.
    with sqlite3.connect(path) as db:
        (stored,) = db.execute("SELECT key FROM completions").fetchone()
    assert stored == cache_key(
        provider="openai",
        base_url=server_identity("fake-model", _SHA_A),
        model="m",
        messages=_MESSAGES,
        config=GenerateConfig(temperature=0),
    )


async def test_a_server_that_names_no_file_keeps_its_keys(tmp_path: Path) -> None:
    # vLLM, OpenAI, Ollama: the key holds the base URL as before, so entries made before
    # stay valid.
    path = tmp_path / "c.sqlite"
    async with FakeOpenAIServer(lambda _request: "fresh") as server:
        key = cache_key(
            provider="openai",
            base_url=server.base_url,
            model="m",
            messages=_MESSAGES,
            config=GenerateConfig(temperature=0),
        )
        open_cache(path).put(key, Completion(text="stored before"))
        completion = await _ask(server.base_url, path)
    assert (completion.text, completion.cached) == ("stored before", True)


async def test_with_the_server_down_only_replies_of_servers_naming_none_are_served(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "c.sqlite"
    async with FakeOpenAIServer(lambda _request: "plain") as server:
        plain_url = server.base_url
        assert (await _ask(plain_url, path)).text == "plain"
    async with FakeOpenAIServer(lambda _request: "named", sha256=_SHA_A) as server:
        named_url = server.base_url
        assert (await _ask(named_url, path)).text == "named"
    fast = {"retry": {"max_attempts": 1}, "timeout_s": 2.0}
    with caplog.at_level(logging.WARNING, logger="byzllm.llm"):
        replayed = await _ask(plain_url, path, **fast)
    assert (replayed.text, replayed.cached) == ("plain", True)
    assert "could not ask" in caplog.text and "names none" in caplog.text
    # Which file answered there is unknown: its reply is not served.
    with pytest.raises(ModelError):
        await _ask(named_url, path, **fast)
    # ... unless the run names it (reproduce --real does, for the servers it starts).
    named = await _ask(named_url, path, cache_endpoint=server_identity("fake-model", _SHA_A))
    assert (named.text, named.cached) == ("named", True)


class _Scripted(ModelAPI):
    """A backend whose server is down for its first ``down`` questions, then names ``served``."""

    provider = "scripted"

    def __init__(self, served: str | None, down: int = 0) -> None:
        super().__init__("m", ProviderSettings())
        self.served, self.down, self.asked = served, down, 0

    @property
    def endpoint(self) -> str:
        return "http://scripted.invalid/v1"

    async def served_identity(self) -> str | None:
        self.asked += 1
        await asyncio.sleep(0.01)
        if self.asked <= self.down:
            raise TransientError("connection refused", kind="connection")
        return self.served

    async def complete(self, messages: Sequence[ChatMessage], config: GenerateConfig) -> Completion:
        return Completion(text=str(messages[-1]["content"]))


async def test_the_server_is_asked_once_before_the_first_lookup(tmp_path: Path) -> None:
    api = _Scripted("llamacpp-server:m:" + _SHA_A)
    model = Model(api, cache=open_cache(tmp_path / "c.sqlite"))
    prompts = [[{"role": "user", "content": str(i)}] for i in range(20)]
    await asyncio.gather(*(model.generate(p) for p in prompts))
    await model.generate(prompts[0])
    assert api.asked == 1
    named = Model(_Scripted(None), cache=open_cache(tmp_path / "c.sqlite"), cache_endpoint="n")
    await named.generate(prompts[0])
    assert named.api.asked == 0  # type: ignore[attr-defined]


async def test_a_reply_is_not_stored_while_the_server_cannot_be_asked(tmp_path: Path) -> None:
    # The server came up after the question failed: its reply might be any file's.
    api = _Scripted("llamacpp-server:m:" + _SHA_A, down=1)
    cache = open_cache(tmp_path / "c.sqlite")
    model = Model(api, cache=cache)
    first = await model.generate(_MESSAGES)
    assert not first.cached and len(cache) == 0
    second = await model.generate(_MESSAGES)
    assert not second.cached and len(cache) == 1 and api.asked == 2
    assert (await model.generate(_MESSAGES)).cached


def _listing(entries: list[Any]) -> bytes:
    return json.dumps({"object": "list", "data": entries}).encode()


def test_the_listing_names_the_file_of_the_model_asked_for() -> None:
    one = [{"id": "qwen0.5b", "sha256": _SHA_A}]
    assert served_file(_listing(one), "qwen0.5b") == f"llamacpp-server:qwen0.5b:{_SHA_A}"
    # byzllm's server answers any name with its one model.
    assert served_file(_listing(one), "other") == f"llamacpp-server:qwen0.5b:{_SHA_A}"
    two = [{"id": "x", "sha256": _SHA_A}, {"id": "y", "sha256": _SHA_B}]
    assert served_file(_listing(two), "y") == f"llamacpp-server:y:{_SHA_B}"
    assert served_file(_listing(two), "z") is None
    for bad in ("A" * 64, "a" * 63, "g" * 64, 7, None):
        assert served_file(_listing([{"id": "m", "sha256": bad}]), "m") is None
    assert served_file(_listing([{"id": "m"}]), "m") is None
    assert served_file(b"<html>", "m") is None and served_file(b"\xff", "m") is None


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=70),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=20,
)
_ENTRY = st.fixed_dictionaries(
    {"id": st.text(max_size=10)},
    optional={"sha256": st.text("0123456789abcdefAB", min_size=63, max_size=65) | _JSON},
)


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        _JSON.map(lambda value: json.dumps(value).encode()),
        st.lists(_ENTRY | _JSON, max_size=3).map(_listing),
        st.binary(max_size=40),
    ),
    st.text(max_size=10),
)
def test_any_listing_names_a_valid_file_or_none(content: bytes, model: str) -> None:
    found = served_file(content, model)
    if found is not None:
        name, sha256 = found.removeprefix("llamacpp-server:").rsplit(":", 1)
        assert name and re.fullmatch("[0-9a-f]{64}", sha256)
        entries = json.loads(content)["data"]
        assert {"id": name, "sha256": sha256}.items() <= next(
            e for e in entries if isinstance(e, dict) and e.get("id") == name
        ).items()


def test_the_server_reports_its_files_sha256(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import byzllm.llm._serve as serve

    gguf = tmp_path / "model-q4_0.gguf"
    gguf.write_bytes(b"GGUF" + b"weights")
    monkeypatch.setattr(serve, "require_llama_cpp", lambda what="": None)
    monkeypatch.setattr(serve, "_check_file", lambda gguf: None)
    command = serve.LocalServer(str(gguf), port=0).command()
    at = command.index("--sha256")
    assert command[at + 1] == resolve_gguf(str(gguf)).content_id()


@pytest.mark.parametrize("given_sha", [None, _SHA_B])
def test_the_server_child_names_the_given_sha256_or_hashes_its_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, given_sha: str | None
) -> None:
    llama_cpp = pytest.importorskip("llama_cpp", reason="needs the local extra")
    from byzllm.llm import _llama_http

    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF" + b"other weights")
    named: list[str | None] = []

    class _Stopped:
        def serve_forever(self) -> None:
            raise KeyboardInterrupt

        def server_close(self) -> None:
            return None

    def made(llamas: object, alias: str, **options: Any) -> _Stopped:
        named.append(options["sha256"])
        return _Stopped()

    monkeypatch.setattr(llama_cpp, "Llama", lambda **_: object())
    monkeypatch.setattr(_llama_http, "make_server", made)
    argv = ["--model", str(gguf), "--alias", "m", "--port", "1", "--threads", "1"]
    argv += ["--n_ctx", "64"] + (["--sha256", given_sha] if given_sha else [])
    assert _llama_http.main(argv) == 0
    assert named == [given_sha or resolve_gguf(str(gguf)).content_id()]
