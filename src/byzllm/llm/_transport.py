"""A lean keep-alive HTTP/1.1 transport for plain-``http://`` endpoints (local servers).

The SDK's default HTTP stack spends more CPU per request than a local vLLM / llama.cpp /
fake server needs to answer it (its connection pool re-examines every connection on every
request), which caps throughput at high concurrency. For ``http://`` base URLs the ``openai``
provider therefore hands the SDK's ``httpx2.AsyncClient`` this transport instead: one
asyncio stream per connection, idle connections kept per host, one request at a time per
connection, ``Content-Length`` and chunked bodies -- driven by :class:`LeanAsyncClient`,
an ``httpx2.AsyncClient`` whose ``send`` skips the auth, redirect, cookie and hook machinery
an API call does not use. The SDK builds the requests and its rules interpret the replies
(status errors, headers); the ``openai`` provider sends a request the SDK built once with
each call's body (:class:`RequestTemplate`, :meth:`FastHTTPTransport.exchange`), so that
only the bytes on the wire are moved by this code.

``https://`` endpoints, proxies (``HTTP_PROXY``/``ALL_PROXY`` set) and
``BYZLLM_HTTP_TRANSPORT=httpx`` use the SDK's default stack.

Errors map onto httpx2's exception classes (``ConnectError``, ``ReadTimeout``,
``RemoteProtocolError`` ...) so the SDK reports them exactly as it would its own.

Replies are bounded: a body longer than ``max_body_bytes`` (default
:data:`MAX_RESPONSE_BYTES`) is abandoned as soon as that is known -- from its
``Content-Length`` before reading any of it, or when the chunks read so far cross the limit
-- and the connection closed (:class:`ResponseTooLargeError`), so a runaway server costs at
most the limit in memory per request, never its whole reply. The SDK's own stack
(``https://`` endpoints) gets the same bound from :func:`bounded_client`, whose response
hook refuses a long ``Content-Length`` and counts the bytes as httpx2 reads them.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx2

__all__ = [
    "MAX_RESPONSE_BYTES",
    "BoundedStream",
    "FastHTTPTransport",
    "LeanAsyncClient",
    "RequestTemplate",
    "ResponseTooLargeError",
    "bounded_client",
    "fast_transport_enabled",
]

#: The largest reply body read: 8 MiB (a chat completion with the top-20 log-probabilities of
#: every token takes about 1.2 kB per token, so a few thousand tokens fit; 10 MB does not).
MAX_RESPONSE_BYTES = 8 << 20
_MAX_HEAD_BYTES = 1 << 20
_READ_BLOCK = 1 << 16
_MAX_IDLE_PER_HOST = 512
_NO_BODY_STATUS = frozenset({204, 304})
_SKIP_REQUEST_HEADERS = frozenset({b"host", b"content-length", b"transfer-encoding", b"connection"})

_Connection = tuple[asyncio.StreamReader, asyncio.StreamWriter]


def fast_transport_enabled(base_url: str, environ: Mapping[str, str] | None = None) -> bool:
    """Whether requests to ``base_url`` go through :class:`FastHTTPTransport`."""
    env = os.environ if environ is None else environ
    if env.get("BYZLLM_HTTP_TRANSPORT", "").lower() == "httpx":
        return False
    if any(env.get(name) for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")):
        return False
    return base_url.lower().startswith("http://")


class _ProtocolError(Exception):
    pass


class ResponseTooLargeError(httpx2.RemoteProtocolError):
    """The reply body is longer than the transport reads (``max_body_bytes``)."""


class _TooLarge(Exception):
    pass


class BoundedStream(httpx2.AsyncByteStream):
    """A response body that stops with :class:`ResponseTooLargeError` once more than
    ``limit`` bytes have come (counted as they arrive, before any is kept)."""

    def __init__(self, inner: httpx2.AsyncByteStream, limit: int, request: httpx2.Request) -> None:
        self._inner = inner
        self._limit = limit
        self._request = request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen = 0
        async for chunk in self._inner:
            seen += len(chunk)
            if seen > self._limit:
                raise ResponseTooLargeError(
                    f"reply body over {self._limit} bytes ({seen} bytes read); abandoned",
                    request=self._request,
                )
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


async def _bound_reply(response: httpx2.Response) -> None:
    """httpx2 response hook: the reply's body is read through :class:`BoundedStream`, and
    refused at once when its ``Content-Length`` is over the limit."""
    limit = MAX_RESPONSE_BYTES
    length = response.headers.get("content-length", "")
    if length.isdigit() and int(length) > limit:
        raise ResponseTooLargeError(
            f"reply body over {limit} bytes (Content-Length {length}); abandoned",
            request=response.request,
        )
    if isinstance(response.stream, httpx2.AsyncByteStream):  # always, in an async client
        response.stream = BoundedStream(response.stream, limit, response.request)


def bounded_client() -> httpx2.AsyncClient:
    """The SDK's default async HTTP client (same timeout, limits and redirects) whose replies
    are bounded by :data:`MAX_RESPONSE_BYTES`, as :class:`FastHTTPTransport`'s are."""
    from openai import DefaultAsyncHttpx2Client

    client: httpx2.AsyncClient = DefaultAsyncHttpx2Client(event_hooks={"response": [_bound_reply]})
    return client


class FastHTTPTransport(httpx2.AsyncBaseTransport):
    """Keep-alive HTTP/1.1 over asyncio streams (plain http only; see the module docstring)."""

    def __init__(self, *, max_body_bytes: int = MAX_RESPONSE_BYTES) -> None:
        self._idle: dict[tuple[str, int], list[_Connection]] = {}
        self._closed = False
        self.max_body_bytes = max_body_bytes

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        url = request.url
        if url.scheme != "http":
            raise httpx2.UnsupportedProtocol(
                f"FastHTTPTransport serves http:// only, not {url.scheme}://", request=request
            )
        status, headers, body = await self.exchange(
            url.host,
            url.port or 80,
            _encode_request(request),
            method=request.method,
            timeouts=request.extensions.get("timeout") or {},
            request=request,
        )
        return httpx2.Response(status, headers=headers, content=body, request=request)

    async def exchange(
        self,
        host: str,
        port: int,
        payload: bytes,
        *,
        method: str,
        timeouts: Mapping[str, float | None],
        request: httpx2.Request | None = None,
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        """Send one encoded request and read its reply: ``(status, headers, body)``.

        Failures raise the httpx2 errors named in the module docstring (``request`` is only
        attached to them); :class:`RequestTemplate` requests come through here directly.
        """
        read_timeout = timeouts.get("read")
        connection = self._checkout((host, port))
        if connection is None:
            connection = await self._connect(host, port, timeouts.get("connect"), request)
        reader, writer = connection
        keep_alive = False
        try:
            async with asyncio.timeout(read_timeout):
                writer.write(payload)
                await writer.drain()
                status, headers, body, keep_alive = await _read_response(
                    reader, method, self.max_body_bytes
                )
        except TimeoutError:
            raise httpx2.ReadTimeout(
                "timed out waiting for the response", request=request
            ) from None
        except _TooLarge as exc:
            raise ResponseTooLargeError(
                f"reply body over {self.max_body_bytes} bytes ({exc}); abandoned",
                request=request,
            ) from None
        except asyncio.IncompleteReadError as exc:
            raise httpx2.RemoteProtocolError(
                f"connection closed after {len(exc.partial)} bytes of an incomplete message",
                request=request,
            ) from None
        except (_ProtocolError, asyncio.LimitOverrunError, ValueError) as exc:
            raise httpx2.RemoteProtocolError(
                f"invalid HTTP response: {exc}", request=request
            ) from None
        except OSError as exc:
            raise httpx2.ReadError(f"{type(exc).__name__}: {exc}", request=request) from None
        finally:
            if keep_alive and not self._closed:
                self._checkin((host, port), connection)
            else:
                writer.close()
        return status, headers, body

    def _checkout(self, key: tuple[str, int]) -> _Connection | None:
        idle = self._idle.get(key)
        while idle:
            reader, writer = idle.pop()
            # The server may have closed an idle connection; never reuse a dead one.
            if not reader.at_eof() and not writer.is_closing():
                return reader, writer
            writer.close()
        return None

    def _checkin(self, key: tuple[str, int], connection: _Connection) -> None:
        idle = self._idle.setdefault(key, [])
        if len(idle) < _MAX_IDLE_PER_HOST:
            idle.append(connection)
        else:
            connection[1].close()

    async def _connect(
        self, host: str, port: int, timeout: float | None, request: httpx2.Request | None
    ) -> _Connection:
        try:
            async with asyncio.timeout(timeout):
                return await asyncio.open_connection(host, port, limit=_MAX_HEAD_BYTES)
        except TimeoutError:
            raise httpx2.ConnectTimeout(
                f"connecting to {host}:{port} timed out", request=request
            ) from None
        except OSError as exc:
            raise httpx2.ConnectError(
                f"cannot connect to {host}:{port}: {exc}", request=request
            ) from None

    async def aclose(self) -> None:
        self._closed = True
        for idle in self._idle.values():
            for _, writer in idle:
                writer.close()
        self._idle.clear()


class LeanAsyncClient(httpx2.AsyncClient):
    """An ``httpx2.AsyncClient`` whose ``send`` hands requests straight to its transport.

    For API calls over :class:`FastHTTPTransport`: no auth flow, no redirects, no cookie jar,
    no event hooks -- none of which a JSON API call to a local server uses -- which saves a
    good part of the client's CPU per request. If any of them is configured, or a call asks
    for auth, ``send`` falls back to the full implementation.
    """

    def __init__(self, transport: httpx2.AsyncBaseTransport, **kwargs: Any) -> None:
        super().__init__(transport=transport, **kwargs)
        self._lean_transport = transport

    async def send(
        self,
        request: httpx2.Request,
        *,
        stream: bool = False,
        auth: Any = httpx2.USE_CLIENT_DEFAULT,
        follow_redirects: Any = httpx2.USE_CLIENT_DEFAULT,
    ) -> httpx2.Response:
        hooks = self.event_hooks
        plain = (
            (auth is httpx2.USE_CLIENT_DEFAULT or auth is None)
            and self.auth is None
            and not hooks["request"]
            and not hooks["response"]
        )
        if not plain:
            return await super().send(
                request, stream=stream, auth=auth, follow_redirects=follow_redirects
            )
        if "timeout" not in request.extensions:
            request.extensions = {**request.extensions, "timeout": self.timeout.as_dict()}
        response = await self._lean_transport.handle_async_request(request)
        response.request = request
        if not stream:
            await response.aread()
        return response


def _encode_request(request: httpx2.Request) -> bytes:
    return _encode_head(request) + _encode_tail(request.content)


def _encode_head(request: httpx2.Request) -> bytes:
    """Request line and headers, up to (not including) ``Content-Length``."""
    # Raw header bytes: httpx2's decoded views re-detect the encoding on every access.
    url = request.url
    parts = [
        b"%s %s HTTP/1.1\r\nHost: %s\r\n"
        % (request.method.encode("ascii"), url.raw_path, url.netloc)
    ]
    for name, value in request.headers.raw:
        lowered = name.lower()
        if lowered in _SKIP_REQUEST_HEADERS:
            continue
        if lowered == b"accept-encoding":
            value = b"identity"  # bodies stay uncompressed on a local link
        elif b"\r" in value or b"\n" in value:
            # A line break would start a header (or a request) of its own. Never quoted:
            # the value may be the API key.
            raise httpx2.LocalProtocolError(f"the request header {name!r} holds a line break")
        parts.append(b"%s: %s\r\n" % (name, value))
    return b"".join(parts)


def _encode_tail(body: bytes) -> bytes:
    return b"Content-Length: %d\r\nConnection: keep-alive\r\n\r\n%s" % (len(body), body)


class RequestTemplate:
    """A request the SDK built, kept as bytes so that the same request with another body can
    be sent through :meth:`FastHTTPTransport.exchange` without building it again.

    The SDK's headers for a given endpoint, key and options do not change from one request
    to the next (its own retries are off, so even ``x-stainless-retry-count`` stays 0); only
    the body and its length do. Its bytes hold the ``Authorization`` header, so it shows
    neither them nor the request in its ``repr``.
    """

    __slots__ = ("_head", "host", "method", "port", "timeouts")

    def __init__(self, request: httpx2.Request) -> None:
        url = request.url
        if url.scheme != "http":
            raise ValueError(f"a request template serves http:// only, not {url.scheme}://")
        self.host = url.host
        self.port = url.port or 80
        self.method = request.method
        self.timeouts: dict[str, float | None] = dict(request.extensions.get("timeout") or {})
        self._head = _encode_head(request)

    def payload(self, body: bytes) -> bytes:
        """The request's bytes with ``body``: exactly what :class:`FastHTTPTransport` sends
        for the SDK's request carrying that body."""
        return self._head + _encode_tail(body)

    def __repr__(self) -> str:
        return f"RequestTemplate({self.method} http://{self.host}:{self.port})"


async def _read_head(reader: asyncio.StreamReader) -> tuple[str, int, list[tuple[str, str]]]:
    """Status line and headers of the final (non-1xx) response."""
    while True:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/"):
            raise _ProtocolError(f"bad status line {lines[0][:80]!r}")
        version, status = parts[0], int(parts[1])
        headers: list[tuple[str, str]] = []
        for line in lines[1:]:
            if not line:
                continue
            name, sep, value = line.partition(":")
            if not sep:
                raise _ProtocolError(f"bad header line {line[:80]!r}")
            headers.append((name.strip(), value.strip()))
        if not 100 <= status < 200:  # 1xx (100 Continue): the real answer follows
            return version, status, headers


async def _read_response(
    reader: asyncio.StreamReader, method: str, limit: int = MAX_RESPONSE_BYTES
) -> tuple[int, list[tuple[str, str]], bytes, bool]:
    version, status, headers = await _read_head(reader)
    fields = {name.lower(): value for name, value in headers}
    keep_alive = version == "HTTP/1.1" and fields.get("connection", "").lower() != "close"
    if method == "HEAD" or status in _NO_BODY_STATUS:
        return status, headers, b"", keep_alive
    if "chunked" in fields.get("transfer-encoding", "").lower():
        body = await _read_chunked(reader, limit)
        headers = [(n, v) for n, v in headers if n.lower() != "transfer-encoding"]
    elif "content-length" in fields:
        length = int(fields["content-length"])
        if length < 0:
            raise _ProtocolError("negative Content-Length")
        if length > limit:
            raise _TooLarge(f"Content-Length {length}")
        body = await reader.readexactly(length)
    else:
        body = await _read_to_end(reader, limit)  # delimited by the end of the connection
        keep_alive = False
    return status, headers, body, keep_alive


async def _read_to_end(reader: asyncio.StreamReader, limit: int) -> bytes:
    blocks: list[bytes] = []
    size = 0
    while block := await reader.read(_READ_BLOCK):
        size += len(block)
        if size > limit:
            raise _TooLarge(f"{size} bytes read before the end")
        blocks.append(block)
    return b"".join(blocks)


async def _read_chunked(reader: asyncio.StreamReader, limit: int) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while True:
        size_line = await reader.readuntil(b"\r\n")
        size = int(size_line.split(b";", 1)[0].strip() or b"0", 16)
        if size == 0:
            while (await reader.readuntil(b"\r\n")) != b"\r\n":
                pass  # trailers
            return b"".join(chunks)
        total += size
        if total > limit:
            raise _TooLarge(f"chunks of {total} bytes announced")
        chunks.append(await reader.readexactly(size))
        if await reader.readexactly(2) != b"\r\n":
            raise _ProtocolError("chunk not terminated by CRLF")
