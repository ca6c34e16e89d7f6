"""The ``openai`` provider: any OpenAI-compatible chat-completions server.

Uses the official SDK's ``AsyncOpenAI`` with ``base_url`` (OpenAI, vLLM, SGLang, Ollama,
llama.cpp, OpenRouter ...) and its own retries off (``max_retries=0``): retrying is done once,
by :mod:`byzllm.llm._retry`. The request goes through the SDK's generic ``post`` and the body
is parsed by :func:`parse_chat_completion`, so near-compatible servers and malformed bodies
are handled by our tolerant parser instead of failing inside the SDK's models.

SDK clients hold connections bound to the event loop that used them, so there is one set
of clients per running loop (and endpoint, key and ``timeout_s``). For plain ``http://``
endpoints (local servers) the client's bytes move through
:class:`~byzllm.llm._transport.FastHTTPTransport`; otherwise through the SDK's default stack,
split over a few clients (``ceil(max_concurrency / 8)``, each request to the least busy)
because that pool's bookkeeping per request grows with its connections.

On the plain-``http://`` path the SDK builds the request once per client set -- sent to a
transport that only keeps it (:class:`_CaptureTransport`) -- and every call sends those
bytes with its own body (:class:`~byzllm.llm._transport.RequestTemplate`): the same bytes
the SDK would send, without the SDK's and httpx2's per-request objects, which were most of
the client's CPU per call at high concurrency. Replies are read and judged exactly as the
SDK would (:class:`_StatusFailure` mirrors its status errors; transport failures are the
ones the SDK would have wrapped), through the same bounded transport and timeouts.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import re
import time
import weakref
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import httpx2  # (already imported by the transport)

from byzllm.errors import ConfigError, InputError

from ._errors import (
    ModelAuthError,
    ModelNotFoundError,
    ModelRefusedError,
    ModelRequestError,
    ModelResponseError,
    redact,
)
from ._local import server_identity
from ._provider import ModelAPI, ProviderSettings, register_provider
from ._response import parse_chat_completion
from ._retry import TransientError, parse_retry_after, permanent_refusal
from ._transport import (
    FastHTTPTransport,
    LeanAsyncClient,
    RequestTemplate,
    ResponseTooLargeError,
    bounded_client,
    fast_transport_enabled,
)
from ._types import ChatMessage, Completion, GenerateConfig, JsonSchema

if TYPE_CHECKING:
    from openai import AsyncOpenAI

__all__ = ["DEFAULT_OPENAI_BASE_URL", "OpenAIAPI", "read_api_key", "request_body"]

DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1"

# Placeholder sent when no key is configured: local servers (vLLM, Ollama) accept anything.
_NO_KEY = "EMPTY"
_CONNECTIONS_PER_CLIENT = 8
_RETRYABLE_STATUS = frozenset({408, 409, 429})
#: The error and what it says for each refusal :func:`permanent_refusal` recognises.
_REFUSAL_ERRORS: dict[str, tuple[type[ModelRequestError], str]] = {
    "model": (ModelNotFoundError, "the server does not serve this model"),
    "unsupported": (
        ModelRefusedError,
        "the server does not support what the request asks for (retrying cannot change that)",
    ),
    "context": (ModelRequestError, "the prompt does not fit the model's context"),
}
#: The longest wait for a server's ``GET /models`` (byzllm's server and vLLM answer it at
#: once, even while they generate).
_MODELS_TIMEOUT_S = 10.0
_SHA256 = re.compile(r"[0-9a-f]{64}")
#: What another 4xx status most likely means.
_STATUS_HINTS = {
    400: "the server rejected the request (unsupported parameter or input too long?)",
    403: "the key has no access to this model or endpoint",
    422: "the server could not process the request's parameters",
}


def request_body(
    model: str, messages: Sequence[ChatMessage], config: GenerateConfig
) -> dict[str, Any]:
    """The JSON body of ``POST /chat/completions`` for ``config`` (only settings that are set)."""
    body: dict[str, Any] = {"model": model, "messages": list(messages)}
    if config.temperature is not None:
        body["temperature"] = config.temperature
    if config.max_tokens is not None:
        body["max_tokens"] = config.max_tokens
    if config.top_p is not None:
        body["top_p"] = config.top_p
    if config.seed is not None:
        body["seed"] = config.seed
    if config.stop is not None:
        body["stop"] = list(config.stop)
    if isinstance(config.response_format, JsonSchema):
        body["response_format"] = config.response_format.wire()
    elif config.response_format is not None:
        body["response_format"] = {"type": config.response_format}
    if config.top_logprobs is not None:
        body["logprobs"] = True
        body["top_logprobs"] = config.top_logprobs
    return body


def read_api_key(env: str | None) -> str | None:
    """The API key in the environment variable ``env`` (``None``: no variable, or unset or
    empty), without the whitespace around it that a copied value often carries.

    A key is sent in an HTTP header, so it must be printable ASCII without spaces: anything
    else (a non-ASCII letter, a line break that would start a header of its own) is refused
    here with a :class:`~byzllm.errors.ConfigError` naming the variable -- never the key, nor
    any part of it -- instead of failing inside the HTTP client on every request.
    """
    if not env:
        return None
    key = os.environ.get(env, "").strip()
    if not key:
        return None
    if not all("!" <= char <= "~" for char in key):
        raise ConfigError(
            f"the environment variable {env} does not hold a usable API key: it contains "
            "spaces, control characters (line breaks) or non-ASCII characters; set it to the "
            "key alone"
        )
    return key


class _Shard:
    __slots__ = ("capture", "client", "direct", "load", "template")

    def __init__(self, client: AsyncOpenAI, direct: FastHTTPTransport | None = None) -> None:
        self.client = client
        self.load = 0
        # Plain-http shards: the transport requests are sent through, and the SDK's request
        # as bytes once captured (``capture``: the capture the first calls wait for).
        self.direct = direct
        self.template: RequestTemplate | None = None
        self.capture: asyncio.Future[RequestTemplate] | None = None


class _ClientSet:
    """The SDK clients of one (loop, base URL, key, timeout), shared by every model using
    them."""

    def __init__(self, shards: list[_Shard]) -> None:
        self.shards = shards
        self.users: weakref.WeakSet[OpenAIAPI] = weakref.WeakSet()


# Creating SDK clients is not free (an SSL context for https), and sharing them shares their
# keep-alive connections: models with the same endpoint, key and timeout reuse one set per
# loop. The timeout is part of what is shared: a set's clients and its captured request
# (read timeout, and the SDK's ``x-stainless-read-timeout`` header) carry the timeout_s of
# the model that made them, which another model's attempts must not run under.
_CLIENT_SETS: weakref.WeakKeyDictionary[
    asyncio.AbstractEventLoop, dict[tuple[str, str | None, float], _ClientSet]
] = weakref.WeakKeyDictionary()


class OpenAIAPI(ModelAPI):
    """Backend for OpenAI-compatible servers (see the module docstring)."""

    provider = "openai"

    def __init__(self, model: str, settings: ProviderSettings) -> None:
        super().__init__(model, settings)
        self._base_url = (settings.base_url or DEFAULT_OPENAI_BASE_URL).rstrip("/")
        # Kept private and out of every repr; scrubbed from every error message.
        self.__key = read_api_key(settings.api_key_env)
        self._n_shards = max(1, math.ceil(settings.max_concurrency / _CONNECTIONS_PER_CLIENT))
        # The SDK joins paths to a base URL without its query (``?api-version=...``): the
        # client gets the bare base, and every request the absolute URL with the query.
        base, _, query = self._base_url.partition("?")
        self._sdk_base_url = base.rstrip("/")
        self._completions_url = f"{self._sdk_base_url}/chat/completions" + (
            f"?{query}" if query else ""
        )
        self._models_url = f"{self._sdk_base_url}/models" + (f"?{query}" if query else "")

    @property
    def endpoint(self) -> str:
        return self._base_url

    def secrets(self) -> tuple[str, ...]:
        return (self.__key,) if self.__key else ()

    def describe_auth_failure(self) -> str:
        env = self.settings.api_key_env
        if not env:
            return "the server wants an API key: pass api_key_env='<VARIABLE>' holding it"
        if self.__key is None:
            return f"set the environment variable {env} to your API key (it is not set)"
        return f"the key in the environment variable {env} was rejected; check or replace it"

    def __repr__(self) -> str:
        return f"OpenAIAPI(model={self.model!r}, base_url={self._base_url!r})"

    def _client(self) -> _Shard:
        loop = asyncio.get_running_loop()
        per_loop = _CLIENT_SETS.get(loop)
        if per_loop is None:
            per_loop = _CLIENT_SETS[loop] = {}
        key = self._set_key()
        client_set = per_loop.get(key)
        if client_set is None:
            client_set = per_loop[key] = _ClientSet(self._make_clients())
        client_set.users.add(self)
        shards = client_set.shards
        return shards[0] if len(shards) == 1 else min(shards, key=_load_of)

    def _set_key(self) -> tuple[str, str | None, float]:
        """Which shared client set this model uses (see ``_CLIENT_SETS``)."""
        return (self._base_url, self.__key, self.settings.timeout_s)

    def _sdk_client(self, http_client: httpx2.AsyncClient) -> AsyncOpenAI:
        from openai import AsyncOpenAI

        return AsyncOpenAI(
            api_key=self.__key or _NO_KEY,
            base_url=self._sdk_base_url,
            max_retries=0,
            timeout=self.settings.timeout_s,
            http_client=http_client,
        )

    def _make_clients(self) -> list[_Shard]:
        if fast_transport_enabled(self._base_url):
            transport = FastHTTPTransport()
            http = LeanAsyncClient(transport, timeout=self.settings.timeout_s)
            return [_Shard(self._sdk_client(http), direct=transport)]
        return [_Shard(self._sdk_client(bounded_client())) for _ in range(self._n_shards)]

    async def _post_via_sdk(self, client: AsyncOpenAI, content: bytes) -> httpx2.Response:
        response: httpx2.Response = await client.post(
            self._completions_url,
            # Serialized here: the SDK deep-copies a dict body (messages and all) twice
            # per request, while bytes pass through untouched.
            content=content,
            cast_to=httpx2.Response,
            options={"timeout": self.settings.timeout_s, "security": {"bearer_auth": True}},
        )
        return response

    async def _capture_template(self) -> RequestTemplate:
        """The SDK's request for this endpoint and key, built by an SDK client made as the
        shard's is, whose transport keeps the request instead of sending it."""
        capture = _CaptureTransport()
        client = self._sdk_client(LeanAsyncClient(capture, timeout=self.settings.timeout_s))
        try:
            await self._post_via_sdk(client, b"")
        finally:
            await client.close()
        if capture.request is None:  # pragma: no cover - the SDK always sends it
            raise RuntimeError("the SDK sent no request to capture")
        return RequestTemplate(capture.request)

    async def _template(self, shard: _Shard) -> RequestTemplate:
        """The shard's template, captured by the first call (the calls that come meanwhile
        wait for that capture; a failed one is not kept, the next call tries again)."""
        if shard.template is not None:
            return shard.template
        capture = shard.capture
        if capture is None:
            capture = shard.capture = asyncio.ensure_future(self._capture_template())
        try:
            shard.template = await asyncio.shield(capture)
        except Exception:  # (a cancelled call leaves the capture to the others)
            if shard.capture is capture:
                shard.capture = None
            raise
        return shard.template

    async def _post_direct(
        self, shard: _Shard, transport: FastHTTPTransport, content: bytes
    ) -> bytes:
        """What :meth:`_post_via_sdk` does for a plain-http shard, from the captured bytes:
        the reply's body, or the error the SDK would have raised."""
        import openai

        template = shard.template or await self._template(shard)
        try:
            status, headers, body = await transport.exchange(
                template.host,
                template.port,
                template.payload(content),
                method=template.method,
                timeouts=template.timeouts,
            )
        except httpx2.TimeoutException as exc:
            raise openai.APITimeoutError(request=_no_request()) from exc
        except Exception as exc:
            raise openai.APIConnectionError(request=_no_request()) from exc
        if not 200 <= status < 300:
            raise _StatusFailure(status, headers, body)
        return body

    async def complete(self, messages: Sequence[ChatMessage], config: GenerateConfig) -> Completion:
        import openai

        shard = self._client()
        body = request_body(self.model, messages, config)
        # Errors are built inside the handlers but raised after them, so that no SDK
        # exception (whose request carries the key in its headers) stays chained to ours.
        failure: Exception | None = None
        content, latency = b"", 0.0
        shard.load += 1
        started = time.perf_counter()
        try:
            if shard.direct is not None:
                content = await self._post_direct(shard, shard.direct, _encode_json(body))
            else:
                # httpx applies its timeout to each read: a server trickling a byte at a
                # time held the attempt until the call's deadline. Here it caps the attempt.
                cap = self.settings.timeout_s if math.isfinite(self.settings.timeout_s) else None
                async with asyncio.timeout(cap):
                    reply = await self._post_via_sdk(shard.client, _encode_json(body))
                content = reply.content
            latency = time.perf_counter() - started
        except (openai.APITimeoutError, TimeoutError):
            failure = TransientError(
                f"timed out after {self.settings.timeout_s:g}s", kind="timeout"
            )
        except (openai.APIStatusError, _StatusFailure) as exc:
            failure = self._status_error(exc)
        except (openai.APIConnectionError, httpx2.HTTPError) as exc:
            # (httpx2.HTTPError: a body cut short while reading)
            if isinstance(_innermost(exc), ResponseTooLargeError):
                failure = TransientError(
                    self._scrub(f"unusable response: {_cause(exc)}"), kind="bad_response"
                )
            else:
                what = (
                    "connection failed" if isinstance(exc, openai.APIError) else "transport error"
                )
                failure = TransientError(self._scrub(f"{what}: {_cause(exc)}"), kind="connection")
        finally:
            shard.load -= 1
        if failure is not None:
            raise failure
        try:
            completion = parse_chat_completion(content, top_k=config.top_logprobs, model=self.model)
            completion.latency_s = latency  # a fresh object: set, do not copy
            return completion
        except ModelResponseError as exc:
            failure = TransientError(self._scrub(f"unusable response: {exc}"), kind="bad_response")
        raise failure

    async def served_identity(self) -> str | None:
        """:func:`~byzllm.llm._local.server_identity` of the GGUF file the server says it
        serves: byzllm's own server names its file's SHA-256 in its ``GET /models`` entry.
        ``None`` when the server names none (vLLM, OpenAI, Ollama, ...) or answers the
        listing with an HTTP error (it answered, and named nothing). Raises
        :class:`TransientError` when it does not answer: no connection, no reply within
        ``min(timeout_s, 10 s)``, a 5xx, 408, 409 or 429.
        """
        import openai

        shard = self._client()
        failure: Exception | None = None
        content = b""
        wait_s = min(self.settings.timeout_s, _MODELS_TIMEOUT_S)
        try:
            async with asyncio.timeout(wait_s):
                reply: httpx2.Response = await shard.client.get(
                    self._models_url,
                    cast_to=httpx2.Response,
                    options={"timeout": wait_s, "security": {"bearer_auth": True}},
                )
            content = reply.content
        except (openai.APITimeoutError, TimeoutError):
            failure = TransientError(f"no list of models within {wait_s:g}s", kind="timeout")
        except openai.APIStatusError as exc:
            status = exc.status_code
            if status not in _RETRYABLE_STATUS and status < 500:
                return None
            failure = TransientError(f"HTTP {status} for the list of models", kind=f"http_{status}")
        except (openai.APIConnectionError, httpx2.HTTPError) as exc:
            failure = TransientError(
                self._scrub(f"no list of models: {_cause(exc)}"), kind="connection"
            )
        if failure is not None:  # raised here: no SDK exception (the key) chained to it
            raise failure
        return served_file(content, self.model)

    def _status_error(self, exc: Any) -> Exception:
        status = int(getattr(exc, "status_code", 0) or 0)
        headers: Mapping[str, str] = {}
        response = getattr(exc, "response", None)
        if response is not None:
            headers = dict(response.headers)
        detail = self._scrub(_error_detail(getattr(exc, "body", None)))
        where = f"{self._base_url} (model {self.model!r})"
        refusal = permanent_refusal(detail) if status not in (401, 404, 429) else None
        if refusal is None and (status in _RETRYABLE_STATUS or status >= 500):
            return TransientError(
                f"HTTP {status} from {where}: {detail}",
                retry_after=parse_retry_after(headers),
                kind=f"http_{status}",
            )
        if status == 401:
            return ModelAuthError(
                f"HTTP 401 Unauthorized from {where}: {self.describe_auth_failure()}",
                status=status,
                endpoint=self._base_url,
            )
        cls: type[ModelRequestError] = ModelRequestError
        if refusal is not None:
            cls, what = _REFUSAL_ERRORS[refusal]
        elif status == 404:
            cls = ModelNotFoundError
            what = "wrong base_url or model name (does the server serve this model?)"
        else:
            what = _STATUS_HINTS.get(status, "the server refused the request")
        return cls(
            f"HTTP {status} from {where}: {what}; server said: {detail}",
            status=status,
            endpoint=self._base_url,
        )

    def _scrub(self, text: str) -> str:
        return redact(text, self.secrets())

    async def aclose(self) -> None:
        """Stop using this loop's shared clients; close them when no other model uses them."""
        per_loop = _CLIENT_SETS.get(asyncio.get_running_loop())
        key = self._set_key()
        if per_loop is None or key not in per_loop:
            return
        client_set = per_loop[key]
        client_set.users.discard(self)
        if len(client_set.users) == 0:
            del per_loop[key]
            for shard in client_set.shards:
                await shard.client.close()


class _CaptureTransport(httpx2.AsyncBaseTransport):
    """An httpx2 transport that keeps the request it is given and answers ``200 {}``."""

    def __init__(self) -> None:
        self.request: httpx2.Request | None = None

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        self.request = request
        return httpx2.Response(200, content=b"{}", request=request)


class _StatusFailure(Exception):
    """A non-2xx reply on the direct path, carrying what the SDK's status error carries
    (``status_code``, ``response``, ``body``), read from the reply as the SDK reads it: the
    body's text parsed as JSON when it is JSON, then its ``error`` member when it has one."""

    def __init__(self, status: int, headers: list[tuple[str, str]], content: bytes) -> None:
        super().__init__(f"Error code: {status}")
        self.status_code = status
        self.response = httpx2.Response(status, headers=headers, content=content)
        text = self.response.text.strip()
        body: Any = text
        with contextlib.suppress(Exception):  # as the SDK: anything unparsable stays text
            body = json.loads(text)
        self.body = body.get("error", body) if isinstance(body, Mapping) else body


def _no_request() -> httpx2.Request:
    # The SDK's connection errors name their request; ours are raised from none (the
    # request's headers hold the key) and only their class and cause are read.
    return httpx2.Request("POST", "http://direct.invalid/")


def _encode_json(body: dict[str, Any]) -> bytes:
    """UTF-8 JSON; lone surrogates (not encodable as UTF-8) fall back to ``\\u`` escapes.
    A body that is not JSON (bytes in a message) is the caller's error, as with the cache on."""
    try:
        try:
            return json.dumps(body, ensure_ascii=False, allow_nan=False).encode("utf-8")
        except UnicodeEncodeError:
            return json.dumps(body, allow_nan=False).encode("ascii")
    except (TypeError, ValueError) as exc:
        raise InputError(f"messages are not JSON-serializable: {exc}") from None


def served_file(content: bytes, model: str) -> str | None:
    """The :func:`~byzllm.llm._local.server_identity` a ``GET /models`` reply names for
    ``model``: the entry of that id (else the only entry: byzllm's server answers every name
    with its one model) when it carries a ``sha256`` of 64 lowercase hex digits; ``None``
    for anything else, a body that is not JSON included."""
    try:
        listing = json.loads(content)
    except (ValueError, RecursionError):
        return None
    data = listing.get("data") if isinstance(listing, dict) else None
    if not isinstance(data, list):
        return None
    entries = [entry for entry in data if isinstance(entry, dict)]
    named = [entry for entry in entries if entry.get("id") == model]
    if not named and len(entries) == 1:
        named = entries
    if not named:
        return None
    name, sha256 = named[0].get("id"), named[0].get("sha256")
    if not isinstance(name, str) or not name or not isinstance(sha256, str):
        return None
    return server_identity(name, sha256) if _SHA256.fullmatch(sha256) else None


def _load_of(shard: _Shard) -> int:
    return shard.load


def _innermost(exc: BaseException) -> BaseException:
    inner = exc
    while inner.__cause__ is not None and inner.__cause__ is not inner:
        inner = inner.__cause__
    return inner


def _cause(exc: BaseException) -> str:
    """A short description of the innermost cause (no request objects, no headers)."""
    inner = _innermost(exc)
    text = str(inner) or type(inner).__name__
    return f"{type(inner).__name__}: {text}"[:200]


def _error_detail(body: Any) -> str:
    if isinstance(body, Mapping):
        error = body.get("error", body)
        if isinstance(error, Mapping):
            message = error.get("message")
            if isinstance(message, str):
                return message[:300]
        elif isinstance(error, str):
            return error[:300]
        return str(body)[:300]
    if body is None:
        return "(no body)"
    return str(body)[:300]


@register_provider("openai")
def _openai_factory(model: str, settings: ProviderSettings) -> ModelAPI:
    return OpenAIAPI(model, settings)
