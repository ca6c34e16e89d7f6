"""The ``llamacpp`` provider: GGUF weights run in this process by llama-cpp-python.

``get_model("llamacpp/smollm2")`` runs the small model the ``local`` extra ships;
``get_model("llamacpp/<path to a .gguf>")`` any other GGUF file. No server, no network, no
key. Completions come back in the OpenAI chat-completions shape and go through the same parser
as every OpenAI-compatible server (:func:`~byzllm.llm.parse_chat_completion`), so the text,
the normalized top-k log-probabilities and the usage look exactly as they do over HTTP; the
response cache, retries, usage accounting and the concurrency limit are :class:`Model`'s, as
for every provider.

One loaded model serves every :class:`LlamaCppAPI` of the process that names the same file;
llama.cpp contexts are not thread-safe, so requests to one model run one at a time, in a
worker thread (the event loop stays free). Generation is
:func:`~byzllm.llm._llama_generate.generate_chat`, the same code ``byzllm serve`` runs: top-k
log-probabilities are read from the last position's logits in numpy, so the model is loaded
once, without ``logits_all``, whether or not a request asks for them.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import math
import threading
import time
from collections.abc import Sequence
from typing import Any

from byzllm.errors import InputError

from ._errors import ModelRequestError
from ._llama_generate import generate_chat
from ._local import (
    LLAMACPP_CONTEXT_TOKENS,
    GgufModel,
    default_threads,
    require_llama_cpp,
    resolve_gguf,
)
from ._openai import request_body
from ._provider import ModelAPI, ProviderSettings, register_provider
from ._response import parse_chat_completion
from ._retry import TransientError
from ._types import ChatMessage, Completion, GenerateConfig

__all__ = ["LLAMACPP_CONTEXT_TOKENS", "LlamaCppAPI"]


class _Loaded:
    __slots__ = ("llama", "lock")

    def __init__(self, llama: Any) -> None:
        self.llama = llama
        self.lock = threading.Lock()


_LOADED: dict[str, _Loaded] = {}
_LOADING = threading.Lock()
_QUIET: list[Any] = []  # keeps the log callback alive while llama.cpp holds a pointer to it


def _silence_llama_logs() -> None:
    """Route llama.cpp's own log lines to nowhere (``verbose=False`` misses some of them)."""
    if _QUIET:
        return
    import ctypes

    import llama_cpp

    @llama_cpp.llama_log_callback  # type: ignore[untyped-decorator]
    def _discard(level: int, text: bytes, user_data: ctypes.c_void_p) -> None:
        return None

    llama_cpp.llama_log_set(_discard, ctypes.c_void_p(0))
    _QUIET.append(_discard)


def _close_loaded() -> None:
    """Free the loaded models before the interpreter tears its modules down (llama-cpp-python's
    own finalizer fails noisily when it runs that late)."""
    with _LOADING:
        for loaded in _LOADED.values():
            with loaded.lock, contextlib.suppress(Exception):
                loaded.llama.close()
        _LOADED.clear()


def _load(gguf: GgufModel) -> _Loaded:
    key = str(gguf.path)
    with _LOADING:
        loaded = _LOADED.get(key)
        if loaded is None:
            from llama_cpp import Llama

            _silence_llama_logs()
            try:
                llama = Llama(
                    model_path=str(gguf.path),
                    n_ctx=LLAMACPP_CONTEXT_TOKENS,
                    n_threads=default_threads(),
                    n_threads_batch=default_threads(),
                    verbose=False,
                )
            except (ValueError, RuntimeError, OSError) as exc:
                raise InputError(
                    f"llama.cpp could not load the GGUF model {gguf.name!r} "
                    f"(corrupt or unsupported file?): {exc}"
                ) from None
            if not _LOADED:
                atexit.register(_close_loaded)
            loaded = _LOADED[key] = _Loaded(llama)
        return loaded


def _check_loadable(gguf: GgufModel) -> None:
    """Parse the file's header and vocabulary only (fast), so a corrupt file fails early."""
    from llama_cpp import Llama

    _silence_llama_logs()
    try:
        Llama(model_path=str(gguf.path), vocab_only=True, verbose=False).close()
    except (ValueError, RuntimeError, OSError) as exc:
        raise InputError(
            f"llama.cpp could not read the GGUF model {gguf.name!r} (corrupt or unsupported "
            f"file?): {exc}"
        ) from None


def _request(messages: Sequence[ChatMessage], config: GenerateConfig) -> dict[str, Any]:
    """The OpenAI request body :func:`generate_chat` answers."""
    body = request_body("", messages, config)
    body["messages"] = [dict(m) for m in messages]
    return body


class LlamaCppAPI(ModelAPI):
    """Backend running a GGUF model in process (see the module docstring)."""

    provider = "llamacpp"
    # A cancelled request would keep computing in its thread: no adaptive timeout.
    cancellable = False

    def __init__(self, model: str, settings: ProviderSettings) -> None:
        require_llama_cpp(f"the model 'llamacpp/{model}'")
        if settings.base_url is not None:
            raise InputError(
                "llamacpp/... models run in this process and take no base_url; to use a "
                "llama.cpp server, start one (byzllm serve) and use openai/<model> with its URL"
            )
        self._gguf = resolve_gguf(model)
        _check_loadable(self._gguf)
        super().__init__(self._gguf.name, settings)

    @property
    def endpoint(self) -> str:
        return f"llamacpp:{self._gguf.name}"

    @property
    def cache_identity(self) -> str:
        # The name alone is a file's stem: two different files of one name shared answers.
        return f"llamacpp:{self._gguf.name}:{self._gguf.content_id()}"

    def __repr__(self) -> str:
        return f"LlamaCppAPI(model={self.model!r})"

    async def complete(self, messages: Sequence[ChatMessage], config: GenerateConfig) -> Completion:
        body = _request(messages, config)
        loaded = await asyncio.to_thread(_load, self._gguf)
        started = time.perf_counter()
        # A caller that stops waiting (its deadline, a cancelled run) must not leave its
        # generation queued on the model's lock: the requests behind it would wait for
        # every abandoned one in turn (8 abandoned held the next request for 15 s).
        abandoned = threading.Event()
        try:
            raw = await asyncio.to_thread(self._generate, loaded, body, abandoned)
        except asyncio.CancelledError:
            abandoned.set()
            raise
        latency = time.perf_counter() - started
        completion = parse_chat_completion(raw, top_k=config.top_logprobs, model=self.model)
        completion.latency_s = latency
        return completion

    def _generate(
        self, loaded: _Loaded, body: dict[str, Any], abandoned: threading.Event
    ) -> dict[str, Any]:
        with loaded.lock:
            if abandoned.is_set():  # given up while it waited for the model: nothing to do
                return {}
            # timeout_s caps the generation, as the HTTP client caps an attempt over the
            # network: nothing else bounded it (a 0.5 s cap let a 200-token reply run its
            # 2.5 s). Counted from when the model is free: a request waiting behind others
            # on its lock is queued, not stuck (the call's deadline bounds that wait).
            timeout_s = self.settings.timeout_s
            try:
                return generate_chat(
                    loaded.llama,
                    body,
                    model_name=self.model,  # the alias or file stem, never the file's path
                    context_tokens=LLAMACPP_CONTEXT_TOKENS,
                    abandoned=abandoned,
                    deadline=time.monotonic() + timeout_s if math.isfinite(timeout_s) else None,
                )
            except TimeoutError:
                raise TransientError(f"timed out after {timeout_s:g}s", kind="timeout") from None
            except InputError as exc:  # e.g. a prompt longer than the context window
                raise ModelRequestError(
                    f"llama.cpp refused the request for {self.model!r}: {exc}",
                    status=400,
                    endpoint=f"llamacpp:{self.model}",
                ) from None


@register_provider("llamacpp")
def _make(model: str, settings: ProviderSettings) -> ModelAPI:
    return LlamaCppAPI(model, settings)
