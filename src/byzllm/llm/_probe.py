"""Probe an endpoint: is it reachable, how fast, does it return log-probabilities, how many?

:func:`probe_endpoint` is ``byzllm models probe``; :func:`check_endpoint` is its first
request alone, which the runner sends to each model endpoint before a run's first unit.
"""

from __future__ import annotations

import asyncio
import contextlib
from urllib.parse import urlsplit

from pydantic import BaseModel

from ._errors import (
    ModelError,
    ModelRequestError,
    ModelUnavailableError,
    ModelUnreachableError,
    ModelWrongServerError,
)
from ._factory import get_model
from ._model import Model
from ._retry import RetryPolicy
from ._spec import ModelSpec
from ._types import Completion, GenerateConfig

__all__ = ["ProbeReport", "check_endpoint", "probe_endpoint"]

_PROMPT = [{"role": "user", "content": "Reply with the single word: OK"}]

#: Two quick attempts: a refused connection is answered in milliseconds, and a second try
#: rules out one dropped connection.
_PROBE_RETRY = RetryPolicy(max_attempts=2, initial_backoff_s=0.2, max_backoff_s=1.0)


class ProbeReport(BaseModel):
    """What :func:`probe_endpoint` found out about one model on one server."""

    base_url: str
    model: str
    reachable: bool
    latency_s: float | None = None
    reply: str | None = None
    logprobs: bool | None = None
    max_top_logprobs: int | None = None
    #: The model the server said it answered with, when that is not the one asked for
    #: (llama.cpp's server answers every model name with the model it loaded).
    answered_as: str | None = None
    warning: str | None = None
    error: str | None = None
    exit_code: int = 0


async def probe_endpoint(
    base_url: str,
    model: str,
    *,
    api_key_env: str | None = "OPENAI_API_KEY",
    timeout_s: float = 30.0,
    max_k: int = 20,
) -> ProbeReport:
    """Probe ``model`` at ``base_url`` with a few tiny requests (no cache, one retry).

    The largest ``top_logprobs`` accepted is the largest k in ``1..max_k`` for which the
    server answers without error *and* returns log-probabilities: ``max_k`` first (most
    servers accept it), then a binary search (assumes acceptance is monotone in k).
    """
    llm = get_model(
        f"openai/{model}",  # the server's own model id, which may contain "/"
        base_url=base_url,
        api_key_env=api_key_env,
        max_concurrency=1,
        cache=None,
        timeout_s=timeout_s,
        max_top_logprobs=max_k,
        require_logprobs=False,
        retry=_PROBE_RETRY,
    )
    report = ProbeReport(base_url=llm.endpoint, model=llm.api.model, reachable=False)
    try:
        completion = await _hello(llm)
        report.latency_s = completion.latency_s
        report.reachable = True
        report.reply = completion.text[:80]
        if not _same_model(llm.api.model, completion.model):
            report.answered_as = completion.model
            report.warning = (
                f"the server answered as {completion.model!r}, not {llm.api.model!r}: it may "
                "serve one model under any name (llama.cpp's server does), so a wrong --model "
                "is not caught here"
            )
        report.logprobs = await _accepts(llm, 1)
        if report.logprobs:
            report.max_top_logprobs = await _largest_k(llm, max_k)
    except ModelError as exc:
        report.exit_code = exc.exit_code
        report.reachable = isinstance(exc, ModelRequestError)  # it answered, with a refusal
        report.error = str(exc)
    finally:
        await llm.aclose()
    return report


def _same_model(asked: str, answered: str) -> bool:
    """Whether a reply's model name is the one asked for: equal, or one a version of the
    other (OpenAI answers ``gpt-4o-mini`` as ``gpt-4o-mini-2024-07-18``), ignoring case and
    an organisation prefix (``Qwen/``); an unnamed reply counts as the same."""
    if not answered:
        return True
    a, b = (name.lower().rsplit("/", 1)[-1] for name in (asked, answered))
    return a.startswith(b) or b.startswith(a)


async def check_endpoint(spec: ModelSpec, *, timeout_s: float = 10.0) -> ModelError | None:
    """The error that would stop every unit of a run on ``spec``'s model, found with one
    tiny request (no cache, two attempts, at most ``timeout_s`` each), or ``None``.

    * the server answers: ``None``;
    * it refuses for good (a rejected or missing key, an unknown model, an unsupported
      parameter: the fatal :class:`ModelRequestError` kinds): that error;
    * the request fails and nothing accepts a TCP connection at the endpoint either:
      :class:`ModelUnreachableError`;
    * anything else (a timeout, a 5xx, a dropped connection on a listening server) is left
      to the run, whose retries are made for it: ``None``.

    Only HTTP endpoints are checked (an in-process model has no server to miss).
    """
    llm = spec.model_copy(
        update={
            "cache": None,
            "cache_mode": "off",
            "timeout_s": min(spec.timeout_s, timeout_s),
            "require_logprobs": False,
            "retry": _PROBE_RETRY,
        }
    ).build()
    try:
        if not llm.endpoint.lower().startswith(("http://", "https://")):
            return None
        try:
            await _hello(llm)
        except ModelRequestError as exc:
            return exc if exc.fatal else None
        except ModelUnavailableError as exc:
            if exc.last_kind == "bad_response":
                # Something answers, but not an OpenAI-compatible API (a web page, another
                # service on the port, a base_url without /v1): every request of the run
                # would be retried for a minute and fail the same way.
                return ModelWrongServerError(
                    f"the server at {llm.endpoint} answers {spec.name}'s request with no chat "
                    f"completion ({exc}): check base_url (an OpenAI-compatible one usually "
                    "ends in /v1)"
                )
            refusal = await _tcp_refusal(llm.endpoint, timeout_s)
            if refusal is None:
                return None
            return ModelUnreachableError(
                f"nothing answers at {llm.endpoint} for {spec.name} ({refusal}): start the "
                "server (e.g. byzllm serve) or fix base_url"
            )
        except ModelError:
            return None
        return None
    finally:
        await llm.aclose()


async def _tcp_refusal(url: str, timeout_s: float) -> str | None:
    """Why no TCP connection opens to ``url``'s host and port, or ``None`` when one does.

    Asked only after a request failed: a server that accepts connections but failed one
    request (dropped it, timed out) is the run's retries' business, not a reason to stop.
    """
    parts = urlsplit(url)
    host = parts.hostname or ""
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as exc:
        return str(exc)
    try:
        async with asyncio.timeout(timeout_s):
            _reader, writer = await asyncio.open_connection(host, port)
    except TimeoutError:
        return f"no connection to {host}:{port} within {timeout_s:g}s"
    except ConnectionRefusedError:
        return f"connection refused at {host}:{port}"
    except OSError as exc:  # no such host, no route, ...
        return f"{host}:{port}: {exc.strerror or exc}"
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return None


async def _hello(llm: Model) -> Completion:
    return await llm.generate(_PROMPT, GenerateConfig(temperature=0, max_tokens=5))


async def _accepts(llm: Model, k: int) -> bool:
    try:
        completion = await llm.generate(
            _PROMPT, GenerateConfig(temperature=0, max_tokens=2, top_logprobs=k)
        )
    except ModelError:
        # A refusal of this k ("top_logprobs=20 is not supported") is the answer sought, not
        # a property of the endpoint: the model remembers it as fatal and would fail every
        # smaller k unsent (the search then ended at 1).
        llm.forget_fatal()
        return False
    return completion.logprobs is not None


async def _largest_k(llm: Model, max_k: int) -> int:
    if await _accepts(llm, max_k):
        return max_k
    good, bad = 1, max_k  # invariant: good accepted, bad rejected
    while bad - good > 1:
        middle = (good + bad) // 2
        if await _accepts(llm, middle):
            good = middle
        else:
            bad = middle
    return good
