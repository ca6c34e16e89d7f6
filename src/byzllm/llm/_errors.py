"""Errors of the model-access layer, and the redaction that keeps credentials out of them.

Every error a model call raises is a :class:`ModelError` (a :class:`~byzllm.errors.ByzllmError`)
with a one-line message that names the endpoint and the likely cause. Messages pass through
:func:`redact` before they are built, so an API key quoted back by a server never reaches a
log, an exception, a result or the cache.
"""

from __future__ import annotations

from collections.abc import Iterable

from byzllm.errors import ByzllmError

__all__ = [
    "LogprobsUnavailableError",
    "ModelAuthError",
    "ModelError",
    "ModelNotFoundError",
    "ModelRefusedError",
    "ModelRequestError",
    "ModelResponseError",
    "ModelUnavailableError",
    "ModelUnreachableError",
    "ModelWrongServerError",
    "redact",
]


class ModelError(ByzllmError):
    """A model call failed (after retries where retrying made sense)."""


class ModelRequestError(ModelError):
    """The server rejected the request itself (HTTP 400/403/404/422 ...): retrying cannot help."""

    def __init__(self, message: str, *, status: int | None = None, endpoint: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.endpoint = endpoint


class ModelAuthError(ModelRequestError):
    """HTTP 401: the API key is missing or wrong; the message names the variable to set.

    Fatal: no request on this endpoint can succeed, so a run stops at the first one (and
    requests waiting for the endpoint fail at once, without being sent).
    """

    exit_code = 2
    fatal = True


class ModelNotFoundError(ModelRequestError):
    """HTTP 404: the server does not serve this model, or ``base_url`` is wrong.

    Fatal, as :class:`ModelAuthError`: every request to this model would get the same answer.
    """

    exit_code = 2
    fatal = True


class ModelRefusedError(ModelRequestError):
    """The server refuses something every request of this run asks for (an unsupported
    parameter, e.g. llama.cpp's "logprobs is not supported for models created with
    logits_all=False"), whatever its status code says: retrying cannot change the answer.

    Fatal, as :class:`ModelAuthError`: the run stops at the first one with the server's
    reason, instead of retrying it as a glitch.
    """

    exit_code = 2
    fatal = True


class ModelUnavailableError(ModelError):
    """Transient failures (429, 5xx, timeouts, broken bodies) outlasted the retry budget.

    ``last_kind`` is the last failure's kind (``"timeout"``, ``"connection"``,
    ``"bad_response"``, ``"http_503"``, ...; :class:`~byzllm.llm._retry.TransientError`), or
    ``None`` where unknown.
    """

    def __init__(self, message: str, *, last_kind: str | None = None) -> None:
        super().__init__(message)
        self.last_kind = last_kind


class ModelUnreachableError(ModelUnavailableError):
    """Nothing accepts a connection at the endpoint (refused, no such host, no route): no
    server is listening there, or ``base_url`` is wrong.

    Raised by the check before a run (:func:`byzllm.llm.check_endpoint`), never mid-run, where
    a connection failure may be a passing glitch. Fatal: the run stops before its first unit.
    """

    exit_code = 2
    fatal = True


class ModelResponseError(ModelError):
    """The server's answer could not be understood (malformed JSON, missing fields)."""


class ModelWrongServerError(ModelResponseError):
    """Something answers at the endpoint, but not with chat completions (a web page, another
    service on the port, a ``base_url`` without ``/v1``).

    Raised by the check before a run (:func:`byzllm.llm.check_endpoint`), never mid-run, where
    one unusable body may be a passing glitch. Fatal: every request would be retried for a
    minute and fail the same way.
    """

    exit_code = 2
    fatal = True


class LogprobsUnavailableError(ModelError):
    """Log-probabilities were requested but the server returned none."""


#: Characters of a secret from which a piece of it counts as the secret: error texts are cut
#: to a length before they are redacted, which can leave a key without its last characters.
_SECRET_PIECE = 8


def redact(text: str, secrets: Iterable[str | None]) -> str:
    """Replace every occurrence of each non-trivial secret in ``text`` with ``***``, and every
    run of text that begins like it for at least :data:`_SECRET_PIECE` characters (a key cut
    off by a length limit, at the end of a text or before ``...``)."""
    for secret in secrets:
        if not secret or len(secret) < 4:
            continue
        text = text.replace(secret, "***")
        head = secret[:_SECRET_PIECE]
        if len(secret) <= _SECRET_PIECE or head not in text:
            continue
        pieces, start = [], 0
        while (found := text.find(head, start)) >= 0:
            end = found + len(head)
            while (
                end < len(text) and end - found < len(secret) and text[end] == secret[end - found]
            ):
                end += 1
            pieces.append(text[start:found] + "***")
            start = end
        text = "".join(pieces) + text[start:]
    return text
