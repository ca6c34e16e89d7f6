"""Offline test doubles for pipelines built on byzllm.
May import: the layers below (errors, _process, graphs, tasks, llm, sandbox).

:class:`FakeOpenAIServer` is a real OpenAI-compatible HTTP server on 127.0.0.1 that answers by
a script, returns log-probabilities, and injects latency and faults::

    import asyncio

    from byzllm.llm import get_model
    from byzllm.testing import FakeOpenAIServer

    with FakeOpenAIServer(lambda request: "42", latency=0.05) as server:
        model = get_model("openai/fake", base_url=server.base_url, api_key_env=None)
        reply = asyncio.run(model.generate([{"role": "user", "content": "6 * 7?"}]))
        print(reply.text)  # 42
"""

from ._fake_server import ALL_FAULTS, FakeOpenAIServer, FakeReply, Fault, Script
from ._tokens import split_tokens

__all__ = ["ALL_FAULTS", "FakeOpenAIServer", "FakeReply", "Fault", "Script", "split_tokens"]
