"""One async interface to chat models (OpenAI-compatible servers and more).

>>> from byzllm.llm import get_model, GenerateConfig
>>> model = get_model("openai/my-model", base_url="http://127.0.0.1:8000/v1")  # doctest: +SKIP
>>> msgs = [{"role": "user", "content": "2+2?"}]
>>> c = await model.generate(msgs, GenerateConfig(top_logprobs=5))  # doctest: +SKIP
"""

from ._model import ChatModel
from ._types import ChatMessage, Completion, GenerateConfig, TokenLogprob, Usage

__all__ = ["ChatMessage", "ChatModel", "Completion", "GenerateConfig", "TokenLogprob", "Usage"]
