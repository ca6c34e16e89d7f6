"""The provider registry: built-in backends load on first use, custom ones register."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

from byzllm.errors import InputError
from byzllm.llm import ModelAPI, ProviderSettings, provider_names, register_provider
from byzllm.llm._provider import resolve_provider

BACKENDS = ("numpy", "openai", "httpx2", "llama_cpp")


def test_the_model_layer_imports_no_backend_until_one_is_asked_for(
    loaded_after: Callable[[str, Sequence[str]], list[str]],
) -> None:
    assert loaded_after("import byzllm.llm", BACKENDS) == []
    # The openai backend brings its HTTP client; llama.cpp's (numpy) stays unloaded.
    loaded = loaded_after(
        "from byzllm.llm._provider import resolve_provider\nresolve_provider('openai/m')",
        BACKENDS,
    )
    assert "httpx2" in loaded and "numpy" not in loaded


def test_built_in_providers_are_listed_and_resolved_before_they_load() -> None:
    assert {"openai", "llamacpp"} <= set(provider_names())
    provider, model, factory = resolve_provider("llamacpp/qwen0.5b")
    assert (provider, model) == ("llamacpp", "qwen0.5b")
    assert callable(factory)


def test_a_registered_provider_is_found_and_listed(monkeypatch: pytest.MonkeyPatch) -> None:
    from byzllm.llm import _provider

    monkeypatch.setattr(_provider, "_PROVIDERS", dict(_provider._PROVIDERS))  # no leak

    class Echo(ModelAPI):
        @property
        def endpoint(self) -> str:
            return "echo"

        async def complete(self, messages, config):  # type: ignore[no-untyped-def]
            raise NotImplementedError

    register_provider("echo-test")(lambda model, settings: Echo(model, settings))
    assert "echo-test" in provider_names()
    _, model, factory = resolve_provider("echo-test/m1")
    assert isinstance(factory(model, ProviderSettings()), Echo)


@pytest.mark.parametrize("name", ["nope/m", "openai", "/m", "openai/"])
def test_an_unknown_or_malformed_name_is_a_clear_error(name: str) -> None:
    with pytest.raises(InputError, match="llamacpp, openai"):
        resolve_provider(name)
