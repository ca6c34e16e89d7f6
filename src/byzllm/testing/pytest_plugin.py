"""A pytest plugin with a ``fake_openai`` fixture (opt in from a ``conftest.py``)::

    # conftest.py
    pytest_plugins = ["byzllm.testing.pytest_plugin"]

    # test_pipeline.py
    import asyncio

    from byzllm.llm import get_model

    def test_my_pipeline(fake_openai):
        server = fake_openai(lambda request: "42", latency=0.01)
        model = get_model("openai/fake", base_url=server.base_url, api_key_env=None)
        reply = asyncio.run(model.generate([{"role": "user", "content": "6 * 7?"}]))
        assert reply.text == "42"

``fake_openai(script=None, **options)`` starts a :class:`FakeOpenAIServer` with the given
options and stops it when the test ends.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from ._fake_server import FakeOpenAIServer, Script

__all__ = ["fake_openai"]


@pytest.fixture
def fake_openai() -> Iterator[Callable[..., FakeOpenAIServer]]:
    """Factory of started fake servers, all stopped at teardown."""
    started: list[FakeOpenAIServer] = []

    def start(script: Script | None = None, **options: Any) -> FakeOpenAIServer:
        server = FakeOpenAIServer(script, **options).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
