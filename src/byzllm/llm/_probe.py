"""Probe an endpoint: is it reachable, how fast, does it return log-probabilities, how many?"""

from __future__ import annotations

from pydantic import BaseModel

from ._errors import ModelError, ModelRequestError
from ._factory import get_model
from ._model import Model
from ._retry import RetryPolicy
from ._types import GenerateConfig

__all__ = ["ProbeReport", "probe_endpoint"]

_PROMPT = [{"role": "user", "content": "Reply with the single word: OK"}]


class ProbeReport(BaseModel):
    """What :func:`probe_endpoint` found out about one model on one server."""

    base_url: str
    model: str
    reachable: bool
    latency_s: float | None = None
    reply: str | None = None
    logprobs: bool | None = None
    max_top_logprobs: int | None = None
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
        retry=RetryPolicy(max_attempts=2, initial_backoff_s=0.2, max_backoff_s=1.0),
    )
    report = ProbeReport(base_url=llm.endpoint, model=llm.api.model, reachable=False)
    try:
        completion = await llm.generate(_PROMPT, GenerateConfig(temperature=0, max_tokens=5))
        report.latency_s = completion.latency_s
        report.reachable = True
        report.reply = completion.text[:80]
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


async def _accepts(llm: Model, k: int) -> bool:
    try:
        completion = await llm.generate(
            _PROMPT, GenerateConfig(temperature=0, max_tokens=2, top_logprobs=k)
        )
    except ModelError:
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
