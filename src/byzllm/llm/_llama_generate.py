"""One chat completion from a loaded llama-cpp-python model, with numpy top-k log-probabilities.

:func:`generate_chat` is what both local paths run: the in-process ``llamacpp`` provider and the
server ``byzllm serve`` starts. It renders the messages with the model's own chat template
(the Jinja template stored in the GGUF file), samples token by token through llama-cpp-python's
``Llama.generate``, and returns the OpenAI chat-completions body, so
:func:`~byzllm.llm.parse_chat_completion` reads it as it reads any server's reply.

Why not ``Llama.create_chat_completion``: to return log-probabilities it needs the model
loaded with ``logits_all`` (the output layer computed for every prompt position, and a
``context × vocabulary`` matrix of floats kept), then it log-softmaxes that whole matrix and
sorts the vocabulary in Python for every generated token (about 75 ms a token with Qwen's
152k-token vocabulary). Here only the last position's logits are read, when each token is
sampled: a log-sum-exp and an ``argpartition`` in numpy, well under a millisecond.

Sampling defaults are llama-cpp-python's own (top-k 40, top-p 0.95, min-p 0.05, no repeat
penalty); a request's ``temperature``, ``top_p``, ``seed``, ``stop`` and ``max_tokens`` override
them. ``temperature`` 0 is greedy. ``response_format: json_object`` constrains decoding with
llama.cpp's JSON grammar; ``response_format: json_schema`` with the grammar llama-cpp-python
derives from the schema (``LlamaGrammar.from_json_schema``), so the reply parses against it.

The grammar acts in the sampler only. The log-probabilities are read from the logits before
any sampler stage, so they are the model's own distribution whatever the grammar allows: a
monitor reading them (the rogue-agents paper, §4.1) sees the same kind of numbers with and
without a schema, while the token chosen at a position is the most likely one the grammar
permits.
"""

from __future__ import annotations

import json
import random
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from byzllm.errors import InputError

__all__ = ["DEFAULT_MAX_TOKENS", "generate_chat", "response_grammar", "top_k_logprobs"]

#: Reply length when a request does not say (llama-cpp-python's is 16 on some paths).
DEFAULT_MAX_TOKENS = 512
_DEFAULT_TEMPERATURE = 0.8  # llama-cpp-python's default when a request gives none


def top_k_logprobs(logits: np.ndarray[Any, Any], k: int) -> tuple[np.ndarray[Any, Any], float]:
    """The ``k`` most likely token ids (most likely first) and the log-normalizer of ``logits``.

    ``logits[i] - normalizer`` is token ``i``'s log-probability. Ties keep the lower id first.
    """
    row = np.asarray(logits, dtype=np.float64)
    peak = float(np.max(row))
    normalizer = peak + float(np.log(np.sum(np.exp(row - peak))))
    k = max(0, min(k, row.shape[0]))
    if k == 0:
        return np.empty(0, dtype=np.int64), normalizer
    # The k-th best value in linear time; of the tokens tied with it, the lowest ids (a
    # plain argpartition would pick among ties arbitrarily). Only the k found are sorted.
    kth = -np.partition(-row, k - 1)[k - 1]
    above = np.flatnonzero(row > kth)
    tied = np.flatnonzero(row == kth)[: k - above.size]
    best = np.concatenate((above, tied))
    order = np.lexsort((best, -row[best]))
    return best[order], normalizer


class _Formatter:
    """The model's chat template, rendered the way llama-cpp-python renders it."""

    def __init__(self, llama: Any) -> None:
        from llama_cpp import llama_chat_format

        template = llama.metadata.get("tokenizer.chat_template")
        if not template:
            raise InputError(
                "this GGUF file has no chat template (tokenizer.chat_template): byzllm "
                "needs a chat model"
            )

        def special(token_id: int) -> str:
            if token_id < 0:
                return ""
            return str(llama._model.token_get_text(token_id))

        self._formatter = llama_chat_format.Jinja2ChatFormatter(
            template=template,
            eos_token=special(llama.token_eos()),
            bos_token=special(llama.token_bos()),
            stop_token_ids=[llama.token_eos()],
        )

    def __call__(self, messages: Sequence[Mapping[str, Any]]) -> tuple[str, list[str], bool]:
        """(prompt text, the template's stop strings, whether the template added BOS)."""
        plain: list[Any] = [dict(m) for m in messages]
        rendered = self._formatter(messages=plain)
        stop = rendered.stop
        stops = [stop] if isinstance(stop, str) else list(stop or [])
        return rendered.prompt, stops, bool(rendered.added_special)


_FORMATTERS: dict[int, _Formatter] = {}

# Grammars by schema text: a game sends the same few schemas turn after turn, and deriving
# the grammar is pure Python (milliseconds to tens of them for a large schema).
_GRAMMARS: dict[str, Any] = {}
_GRAMMARS_LOCK = threading.Lock()
_MAX_GRAMMARS = 256


def _schema_grammar(response_format: Mapping[str, Any]) -> Any:
    """The grammar of an OpenAI ``json_schema`` response format (``InputError`` if unusable)."""
    from llama_cpp.llama_grammar import LlamaGrammar

    spec = response_format.get("json_schema")
    schema = spec.get("schema") if isinstance(spec, Mapping) else None
    if not isinstance(schema, Mapping):
        raise InputError(
            "response_format json_schema needs 'json_schema': {'name': ..., 'schema': {...}}"
        )
    try:
        # Keys keep their order: the grammar writes an object's properties in that order.
        text = json.dumps(schema, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InputError(f"the response schema is not JSON: {exc}") from None
    with _GRAMMARS_LOCK:
        found = _GRAMMARS.get(text)
    if found is not None:
        return found
    try:
        grammar = LlamaGrammar.from_json_schema(text, verbose=False)
    except (AssertionError, KeyError, TypeError, ValueError, RecursionError) as exc:
        # The converter asserts on what it does not support (remote $ref, some patterns).
        raise InputError(f"llama.cpp cannot follow this response schema: {exc}") from None
    with _GRAMMARS_LOCK:
        if len(_GRAMMARS) >= _MAX_GRAMMARS:
            _GRAMMARS.pop(next(iter(_GRAMMARS)))
        _GRAMMARS[text] = grammar
    return grammar


def _formatter(llama: Any) -> _Formatter:
    found = _FORMATTERS.get(id(llama))
    if found is None:
        found = _FORMATTERS[id(llama)] = _Formatter(llama)
    return found


def response_grammar(response_format: Any) -> Any:
    """The grammar that constrains decoding to a request's ``response_format`` (``None``: none).

    ``json_object``: llama.cpp's JSON grammar; ``json_schema``: the schema's grammar. Anything
    else but ``text`` is refused with :class:`InputError` rather than silently ignored: a
    caller relying on a format must not get free text.
    """
    if response_format is None:
        return None
    kind = response_format.get("type") if isinstance(response_format, Mapping) else None
    if kind == "text":
        return None
    if kind == "json_object":
        from llama_cpp.llama_grammar import JSON_GBNF, LlamaGrammar

        return LlamaGrammar.from_string(JSON_GBNF, verbose=False)
    if kind == "json_schema":
        return _schema_grammar(response_format)
    raise InputError(
        f"unsupported response_format {str(response_format)[:80]}: use type text, "
        "json_object or json_schema"
    )


def _token_entry(text: bytes, logprob: float) -> dict[str, Any]:
    return {
        "token": text.decode("utf-8", errors="replace"),
        "logprob": logprob,
        "bytes": list(text),
    }


def _first_stop(text: str, stops: Sequence[str], searched_from: int) -> int | None:
    """Where the earliest stop string starts in ``text`` (matches ending past ``searched_from``)."""
    found: int | None = None
    for stop in stops:
        if not stop:
            continue
        at = text.find(stop, max(0, searched_from - len(stop) + 1))
        if at >= 0 and (found is None or at < found):
            found = at
    return found


def _max_tokens(body: Mapping[str, Any]) -> int:
    """The request's token limit (``max_tokens``, or the newer ``max_completion_tokens`` the
    official SDK sends); a request for several choices or a limit below 1 is refused, as the
    OpenAI API does, rather than answered with something else."""
    n = body.get("n")
    if n is not None and n != 1:
        raise InputError(f"'n' must be 1 here (one choice per request), got {n!r}")
    for key in ("max_tokens", "max_completion_tokens"):
        value = body.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InputError(f"{key!r} must be a positive integer, got {value!r}")
        return value
    return DEFAULT_MAX_TOKENS


def generate_chat(
    llama: Any,
    body: Mapping[str, Any],
    *,
    model_name: str,
    context_tokens: int,
    abandoned: threading.Event | None = None,
    deadline: float | None = None,
) -> dict[str, Any]:
    """Answer one OpenAI chat-completions request ``body`` with ``llama`` (not thread-safe).

    ``abandoned``, once set (the caller gave up: a deadline, a cancel), ends the generation
    at the next token: nobody reads the rest, and the model is held for the next request.
    ``deadline`` (a :func:`time.monotonic` time) does the same once it has passed, and
    raises :class:`TimeoutError`: a reply cut short there is no answer to return.

    Raises :class:`InputError` for a request the model cannot take (a prompt longer than the
    context window, malformed messages); the caller maps it to HTTP 400.
    """
    import llama_cpp

    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise InputError("'messages' must be a non-empty list")
    for message in messages:
        if not isinstance(message, Mapping) or not isinstance(message.get("content"), str):
            raise InputError("every message needs a string 'content'")
    prompt, template_stops, added_bos = _formatter(llama)(messages)
    prompt_tokens = llama.tokenize(prompt.encode("utf-8"), add_bos=not added_bos, special=True)
    room = context_tokens - len(prompt_tokens)
    if room < 1:
        raise InputError(
            f"the prompt has {len(prompt_tokens)} tokens; the context window holds {context_tokens}"
        )
    max_tokens = min(_max_tokens(body), room)
    temperature = body.get("temperature")
    temperature = _DEFAULT_TEMPERATURE if temperature is None else float(temperature)
    top_p = body.get("top_p")
    top_p = 0.95 if top_p is None else float(top_p)
    seed = body.get("seed")
    # Unseeded requests draw a fresh seed, as an API does; a seeded one repeats its draws,
    # though a reused prompt prefix can move the logits slightly (docs/llm.md).
    # 2**32 - 1 is llama.cpp's "draw a random seed": seed -1 was silently unseeded.
    llama.set_seed(int(seed) % (2**32 - 1) if seed is not None else random.randrange(2**32 - 1))
    user_stops = body.get("stop") or []
    stops = [*([user_stops] if isinstance(user_stops, str) else user_stops), *template_stops]
    want_logprobs = bool(body.get("logprobs"))
    top_k = int(body.get("top_logprobs") or 0) if want_logprobs else 0
    grammar = response_grammar(body.get("response_format"))

    vocab = llama._model.vocab
    n_vocab = llama.n_vocab()
    generated: list[int] = []
    pieces: list[bytes] = []
    entries: list[dict[str, Any]] = []
    text = ""
    finish = "length"
    started = time.time()
    for token in llama.generate(
        prompt_tokens,
        temp=temperature,
        top_p=top_p,
        repeat_penalty=1.0,
        grammar=grammar,
    ):
        if llama_cpp.llama_vocab_is_eog(vocab, token):
            finish = "stop"
            break
        if abandoned is not None and abandoned.is_set():
            break
        if deadline is not None and time.monotonic() > deadline:
            raise TimeoutError(f"no complete reply after {len(generated)} tokens")
        piece = llama.detokenize([token], prev_tokens=generated)
        if want_logprobs:
            # The logits the token was just sampled from: the context's last position.
            logits = np.ctypeslib.as_array(llama._ctx.get_logits_ith(-1), shape=(n_vocab,))
            best, normalizer = top_k_logprobs(logits, top_k)
            entry = _token_entry(piece, float(logits[token]) - normalizer)
            entry["top_logprobs"] = [
                _token_entry(
                    llama.detokenize([int(i)], prev_tokens=generated), float(logits[i]) - normalizer
                )
                for i in best
            ]
            entries.append(entry)
        generated.append(token)
        pieces.append(piece)
        before = len(text)
        text = b"".join(pieces).decode("utf-8", errors="ignore")
        cut = _first_stop(text, stops, before)
        if cut is not None:
            text = text[:cut]
            finish = "stop"
            break
        if len(generated) >= max_tokens:
            break
    choice: dict[str, Any] = {
        "index": 0,
        "message": {"role": "assistant", "content": text},
        "logprobs": {"content": entries} if want_logprobs else None,
        "finish_reason": finish,
    }
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(started),
        "model": model_name,
        "choices": [choice],
        "usage": {
            "prompt_tokens": len(prompt_tokens),
            "completion_tokens": len(generated),
            "total_tokens": len(prompt_tokens) + len(generated),
        },
    }
