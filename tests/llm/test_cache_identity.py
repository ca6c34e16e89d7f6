"""What the response cache knows a model by: a server whose port changes is the same server
when named so (``cache_endpoint``); two GGUF files of one name are two models."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from byzllm.llm import GenerateConfig, get_model
from byzllm.llm._cache import _reset_open_caches
from byzllm.llm._local import resolve_gguf
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
