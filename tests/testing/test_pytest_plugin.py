"""The opt-in pytest plugin's ``fake_openai`` fixture."""

from __future__ import annotations

from collections.abc import Callable

from byzllm.llm import get_model
from byzllm.testing import FakeOpenAIServer

pytest_plugins = ["byzllm.testing.pytest_plugin"]


async def test_fixture_starts_servers(fake_openai: Callable[..., FakeOpenAIServer]) -> None:
    server = fake_openai(lambda request: "forty-two", latency=0.001)
    model = get_model("openai/fake", base_url=server.base_url, api_key_env=None)
    completion = await model.generate([{"role": "user", "content": "?"}])
    assert completion.text == "forty-two"
    assert len(server.requests) == 1
