"""An offline OpenAI-compatible chat-completions server for tests and benchmarks.

:class:`FakeOpenAIServer` is a real HTTP/1.1 server on ``127.0.0.1`` (random free port),
run by an asyncio loop in a background thread, so the client under test goes through its
whole network stack (SDK, connection pool, keep-alive, timeouts) exactly as against vLLM or
OpenAI -- the same idea as httpx's ``MockTransport``, one layer further down.

It answers ``POST /v1/chat/completions`` by a *script* (a function from the request body to
the reply text, or a :class:`FakeReply` with explicit log-probabilities), returns
``logprobs.content[].top_logprobs`` when asked, and can inject latency and faults: 429 with
``Retry-After``, 500/503, a hang past the client's timeout, malformed JSON, a truncated
body and a dropped connection, at a chosen rate and reproducibly (seeded).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import json
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, Self

from byzllm.errors import InputError
from byzllm.llm._transport import _ProtocolError, _read_chunked, _TooLarge
from byzllm.llm._types import TokenLogprob

from ._tokens import count_tokens, invent_top_logprobs, split_tokens

__all__ = ["ALL_FAULTS", "FakeOpenAIServer", "FakeReply", "Fault", "Script"]

#: A fault the server can inject instead of (or in the middle of) a normal answer.
Fault = Literal["429", "500", "503", "hang", "malformed", "truncated", "drop"]

#: Every fault kind, the default of ``FakeOpenAIServer(faults=...)``.
ALL_FAULTS: tuple[Fault, ...] = ("429", "500", "503", "hang", "malformed", "truncated", "drop")

_MAX_HEADER_BYTES = 64 * 1024
_MAX_BODY_BYTES = 64 * 1024 * 1024

_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    408: "Request Timeout",
    413: "Payload Too Large",
    422: "Unprocessable Entity",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
}


@dataclass(frozen=True)
class FakeReply:
    """A scripted reply with optional explicit per-token log-probabilities.

    * ``logprobs`` -- sent as ``logprobs.content`` (each entry's ``top`` becomes
      ``top_logprobs``) when the request asked for log-probabilities; ``None`` lets the
      server split ``text`` and invent them (see :mod:`byzllm.testing._tokens`).
    * ``raw_logprobs`` -- any JSON value sent verbatim as the choice's ``logprobs`` field
      (to imitate servers with other shapes); overrides ``logprobs``.
    * ``omit_logprobs`` -- never send log-probabilities, even when asked (like a server that
      ignores the parameter).
    """

    text: str
    logprobs: list[TokenLogprob] | None = None
    finish_reason: str = "stop"
    raw_logprobs: Any = None
    omit_logprobs: bool = False


#: The function that answers a request: the JSON body in, the reply out.
Script = Callable[[dict[str, Any]], "str | FakeReply"]


def echo_script(request: dict[str, Any]) -> str:
    """Default script: ``"echo: <content of the last message>"``."""
    messages = request.get("messages") or [{}]
    last = messages[-1] if isinstance(messages, list) and messages else {}
    content = last.get("content", "") if isinstance(last, dict) else ""
    return f"echo: {content if isinstance(content, str) else json.dumps(content)}"


@dataclass
class _Stats:
    requests: list[dict[str, Any]] = field(default_factory=list)
    max_in_flight: int = 0
    faults: Counter[str] = field(default_factory=Counter)
    script_errors: list[str] = field(default_factory=list)
    connections: int = 0


class FakeOpenAIServer:
    """A scripted OpenAI-compatible server on 127.0.0.1 with latency and fault injection.

    Usage::

        def script(request: dict) -> str | FakeReply:
            return "42" if "answer" in request["messages"][-1]["content"] else "hello"

        with FakeOpenAIServer(script, latency=0.05) as server:   # or `async with`
            model = get_model("openai/fake", base_url=server.base_url)
            ...
            server.requests, server.max_in_flight

    Parameters
    ----------
    script:
        Function from the request body (a dict: ``messages``, ``model``, ...) to the reply
        text or a :class:`FakeReply`. Defaults to echoing the last message. Runs on the
        server's thread; if it raises, the request gets a 500 and the error is kept in
        :attr:`script_errors`.
    latency:
        Seconds from receiving a request to answering it (the reply is prepared meanwhile):
        a number, or ``(low, high)`` for a uniform draw.
    fault_rate, faults:
        Probability that a request gets a fault instead of its answer, and the fault kinds
        drawn from uniformly (default :data:`ALL_FAULTS`).
    clean_first:
        The first ``clean_first`` chat requests get no fault and draw none (e.g. the one
        request a run sends to check the endpoint before its first unit), so the faults a
        test counts are the units' own.
    status:
        Answer *every* chat request with this HTTP status and an OpenAI-style error body
        (e.g. ``401``); for 401 the message quotes the bearer token back, as some real
        servers do, so clients can be tested for leaking it.
    api_key:
        Answer 401 (as ``status=401`` does) to every chat request that does not carry
        ``Authorization: Bearer <api_key>``; ``None`` accepts any key.
    retry_after:
        Seconds announced in the ``Retry-After`` header of injected 429s.
    hang_s:
        How long a ``"hang"`` fault waits before closing the connection without an answer
        (default: until the client gives up or the server stops).
    seed:
        Seed of the fault and latency draws.
    model_name:
        Model id reported by ``GET /v1/models`` and in completions (default: the request's).
    max_top_logprobs:
        Requests asking for more alternatives get a 400, as vLLM answers above its
        ``--max-logprobs`` (default: no cap).
    sha256:
        Reported as the ``sha256`` of the ``GET /v1/models`` entry, as byzllm's own server
        names the GGUF file it serves (a client's response cache then keys requests by it);
        ``None`` (the default) reports none, as other servers. An attribute: set it to stand
        in for a server restarted with other weights.
    """

    def __init__(
        self,
        script: Script | None = None,
        *,
        latency: float | tuple[float, float] = 0.0,
        fault_rate: float = 0.0,
        faults: Iterable[Fault] = ALL_FAULTS,
        clean_first: int = 0,
        status: int | None = None,
        retry_after: float = 0.05,
        hang_s: float | None = None,
        seed: int = 0,
        model_name: str | None = None,
        max_top_logprobs: int | None = None,
        api_key: str | None = None,
        sha256: str | None = None,
    ) -> None:
        if not 0.0 <= fault_rate <= 1.0:
            raise InputError(f"fault_rate must be in [0, 1], got {fault_rate}")
        fault_kinds = tuple(faults)
        unknown = [f for f in fault_kinds if f not in ALL_FAULTS]
        if unknown:
            raise InputError(f"unknown fault kinds {unknown}; choose from {list(ALL_FAULTS)}")
        if fault_rate > 0 and not fault_kinds:
            raise InputError("fault_rate > 0 needs at least one fault kind")
        if isinstance(latency, tuple):
            lo, hi = latency
            if not 0 <= lo <= hi:
                raise InputError(f"latency range must satisfy 0 <= low <= high, got {latency}")
        elif latency < 0:
            raise InputError(f"latency must be >= 0, got {latency}")
        self.script: Script = script or echo_script
        self.latency = latency
        self.fault_rate = fault_rate
        self.faults: tuple[Fault, ...] = fault_kinds
        self.clean_first = clean_first
        self.status = status
        self.retry_after = retry_after
        self.hang_s = hang_s
        self.model_name = model_name
        self.max_top_logprobs = max_top_logprobs
        self.api_key = api_key
        self.sha256 = sha256
        self._rng = random.Random(seed)
        self._ids = itertools.count(1)
        self._stats = _Stats()
        self._in_flight = 0  # counted apart from _Stats so that reset() cannot skew it
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.Server | None = None
        self._stopping: asyncio.Event | None = None
        self._port: int | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    # ------------------------------------------------------------------ public state

    @property
    def port(self) -> int:
        """The TCP port the server listens (or, once stopped, listened) on."""
        if self._port is None:
            raise RuntimeError("FakeOpenAIServer is not running; use it as a context manager")
        return self._port

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1``: pass it as ``base_url`` to a model."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Bodies of the chat requests received so far (a copy, in arrival order)."""
        with self._lock:
            return list(self._stats.requests)

    @property
    def request_count(self) -> int:
        """Number of chat requests received so far (faulted ones included)."""
        with self._lock:
            return len(self._stats.requests)

    @property
    def max_in_flight(self) -> int:
        """Largest number of chat requests being handled at the same moment."""
        return self._stats.max_in_flight

    @property
    def in_flight(self) -> int:
        """Chat requests being handled right now."""
        return self._in_flight

    @property
    def faults_injected(self) -> Counter[str]:
        """How many faults of each kind were injected."""
        with self._lock:
            return Counter(self._stats.faults)

    @property
    def script_errors(self) -> list[str]:
        """Errors the script raised (each answered with a 500)."""
        with self._lock:
            return list(self._stats.script_errors)

    @property
    def connections(self) -> int:
        """Number of TCP connections accepted (keep-alive reuses them)."""
        return self._stats.connections

    def reset(self) -> None:
        """Forget recorded requests, faults and the in-flight maximum."""
        with self._lock:
            self._stats = _Stats(max_in_flight=self._in_flight)

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> Self:
        """Start serving in a background thread; returns once the port is bound."""
        if self._thread is not None:
            return self
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                loop.run_until_complete(self._serve(ready))
            except BaseException as exc:  # surfaced to start()
                failure.append(exc)
                ready.set()
            finally:
                loop.close()

        self._thread = threading.Thread(target=run, name="FakeOpenAIServer", daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            self._thread = None
            raise RuntimeError(f"FakeOpenAIServer failed to start: {failure[0]}")
        return self

    def stop(self) -> None:
        """Stop serving, cut open connections and join the thread."""
        thread, loop, stopping = self._thread, self._loop, self._stopping
        if thread is None or loop is None or stopping is None:
            return
        with contextlib.suppress(RuntimeError):  # loop already closed
            loop.call_soon_threadsafe(stopping.set)
        thread.join(timeout=10)
        self._thread = None
        self._loop = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def __aenter__(self) -> Self:
        return self.start()

    async def __aexit__(self, *exc: object) -> None:
        # Joining the server thread blocks briefly; keep the caller's loop responsive.
        await asyncio.to_thread(self.stop)

    def __repr__(self) -> str:
        where = self.base_url if self._thread is not None else "stopped"
        return f"FakeOpenAIServer({where}, fault_rate={self.fault_rate}, status={self.status})"

    # ------------------------------------------------------------------ server loop

    async def _serve(self, ready: threading.Event) -> None:
        self._stopping = asyncio.Event()
        self._server = await asyncio.start_server(
            self._on_connection, "127.0.0.1", 0, limit=_MAX_HEADER_BYTES, backlog=1024
        )
        self._port = self._server.sockets[0].getsockname()[1]
        ready.set()
        await self._stopping.wait()
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._server.wait_closed(), timeout=2)

    async def _on_connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._stats.connections += 1
        try:
            while await self._handle_one(reader, writer):
                pass
        except (
            asyncio.CancelledError,
            ConnectionError,
            asyncio.IncompleteReadError,
            _ProtocolError,
        ):
            pass
        except asyncio.LimitOverrunError:
            with contextlib.suppress(Exception):
                await self._write(writer, 413, {"error": {"message": "headers too large"}}, False)
        finally:
            self._tasks.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _handle_one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Serve one request; return whether the connection stays open."""
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            return False
        lines = head.decode("latin-1").split("\r\n")
        try:
            method, path, version = lines[0].split(" ", 2)
        except ValueError:
            await self._write(writer, 400, {"error": {"message": "bad request line"}}, False)
            return False
        headers: dict[str, str] = {}
        for line in lines[1:]:
            if ":" in line:
                name, value = line.split(":", 1)
                headers[name.strip().lower()] = value.strip()
        keep_alive = headers.get("connection", "").lower() != "close" and version == "HTTP/1.1"
        body = await self._read_body(reader, headers)
        if body is None:
            await self._write(writer, 413, {"error": {"message": "body too large"}}, False)
            return False
        route = path.split("?", 1)[0].rstrip("/")
        if method == "GET" and route.endswith("/models"):
            entry: dict[str, str] = {"id": self.model_name or "fake-model", "object": "model"}
            if self.sha256 is not None:
                entry["sha256"] = self.sha256
            listing = {"object": "list", "data": [entry]}
            await self._write(writer, 200, listing, keep_alive)
            return keep_alive
        if method != "POST" or not route.endswith("/chat/completions"):
            await self._write(
                writer, 404, {"error": {"message": f"no route {method} {path}"}}, keep_alive
            )
            return keep_alive
        return await self._chat(body, headers, reader, writer, keep_alive)

    async def _read_body(
        self, reader: asyncio.StreamReader, headers: dict[str, str]
    ) -> bytes | None:
        if headers.get("transfer-encoding", "").lower() == "chunked":
            # The client's own reader: one implementation of the chunked format.
            try:
                return await _read_chunked(reader, _MAX_BODY_BYTES)
            except _TooLarge:
                return None
        length = int(headers.get("content-length", "0") or 0)
        if length > _MAX_BODY_BYTES:
            return None
        return await reader.readexactly(length) if length else b""

    async def _chat(
        self,
        raw: bytes,
        headers: dict[str, str],
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        keep_alive: bool,
    ) -> bool:
        try:
            request = json.loads(raw)
            if not isinstance(request, dict):
                raise ValueError("body is not a JSON object")
        except ValueError as exc:
            await self._write(
                writer, 400, {"error": {"message": f"invalid JSON: {exc}"}}, keep_alive
            )
            return keep_alive
        stats = self._stats
        with self._lock:
            stats.requests.append(request)
            clean = len(stats.requests) <= self.clean_first
        self._in_flight += 1
        stats.max_in_flight = max(stats.max_in_flight, self._in_flight)
        try:
            fault = None if clean else self._draw_fault()
            delay = self._draw_latency()
            # Latency is time-to-answer: the reply is prepared while the clock runs, so the
            # server's own work does not add to it (as long as it fits in the delay).
            answer_at = asyncio.get_running_loop().time() + delay
            status_only = self.status
            if self.api_key is not None and status_only is None:
                sent = headers.get("authorization", "").removeprefix("Bearer ").strip()
                status_only = None if sent == self.api_key else 401
            if status_only is not None or fault is not None:
                await _sleep_until(answer_at)
            if status_only is not None:
                await self._write_status(writer, status_only, headers, keep_alive)
                return keep_alive
            if fault is not None:
                with self._lock:
                    stats.faults[fault] += 1
                return await self._inject(fault, reader, writer, keep_alive)
            requested_k = request.get("top_logprobs")
            cap = self.max_top_logprobs
            status, body = 200, None
            if cap is not None and isinstance(requested_k, int) and requested_k > cap:
                message = f"top_logprobs={requested_k} exceeds the server's maximum of {cap}"
                status, body = 400, {"error": {"message": message}}
            else:
                try:
                    body = self._completion(request, self.script(request))
                except Exception as exc:
                    with self._lock:
                        stats.script_errors.append(f"{type(exc).__name__}: {exc}")
                    message = f"script failed: {type(exc).__name__}: {exc}"
                    status, body = 500, {"error": {"message": message}}
            payload = json.dumps(body).encode()
            await _sleep_until(answer_at)
            await self._write_raw(writer, status, payload, keep_alive, len(payload))
            return keep_alive
        finally:
            self._in_flight -= 1

    def _draw_fault(self) -> Fault | None:
        if self.fault_rate <= 0:
            return None
        with self._lock:
            if self._rng.random() >= self.fault_rate:
                return None
            return self._rng.choice(self.faults)

    def _draw_latency(self) -> float:
        if isinstance(self.latency, tuple):
            with self._lock:
                return self._rng.uniform(*self.latency)
        return float(self.latency)

    async def _write_status(
        self, writer: asyncio.StreamWriter, status: int, headers: dict[str, str], keep_alive: bool
    ) -> None:
        message = f"fake server answers every request with HTTP {status}"
        if status == 401:
            # Quote the credential back, as some real servers do: clients must redact it.
            token = headers.get("authorization", "").removeprefix("Bearer ").strip()
            message = f"Incorrect API key provided: {token}"
        extra = {"Retry-After": _fmt_seconds(self.retry_after)} if status == 429 else {}
        body = {"error": {"message": message, "type": "fake_error", "code": status}}
        await self._write(writer, status, body, keep_alive, extra)

    async def _inject(
        self,
        fault: Fault,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        keep_alive: bool,
    ) -> bool:
        if fault == "429":
            body = {"error": {"message": "rate limited (injected)", "type": "rate_limit"}}
            extra = {"Retry-After": _fmt_seconds(self.retry_after)}
            await self._write(writer, 429, body, keep_alive, extra)
            return keep_alive
        if fault in ("500", "503"):
            body = {"error": {"message": f"server error {fault} (injected)", "type": "server"}}
            await self._write(writer, int(fault), body, keep_alive)
            return keep_alive
        if fault == "hang":
            # Wait until the client gives up and closes the connection (EOF), hang_s passes,
            # or stop() cancels us; the request stops counting as in flight either way.
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(reader.read(1), timeout=self.hang_s)
            return False
        if fault == "malformed":
            payload = b'{"id": "chatcmpl-broken", "choices": [{"message": {"content": "tru'
            await self._write_raw(writer, 200, payload, keep_alive, len(payload))
            return keep_alive
        if fault == "truncated":
            payload = json.dumps(
                {"id": "chatcmpl-cut", "choices": [{"message": {"content": "cut short"}}]}
            ).encode()
            await self._write_raw(writer, 200, payload[: len(payload) // 2], False, len(payload))
            return False
        # "drop": close the connection without a word.
        return False

    def _completion(self, request: dict[str, Any], reply: str | FakeReply) -> dict[str, Any]:
        if isinstance(reply, str):
            reply = FakeReply(reply)
        text, finish = reply.text, reply.finish_reason
        tokens = split_tokens(text)
        limit = request.get("max_completion_tokens") or request.get("max_tokens")
        explicit = reply.logprobs
        if isinstance(limit, int) and limit > 0 and explicit is None and len(tokens) > limit:
            tokens = tokens[:limit]
            text, finish = "".join(tokens), "length"
        choice: dict[str, Any] = {
            "index": 0,
            "message": {"role": "assistant", "content": text},
            "finish_reason": finish,
            "logprobs": None,
        }
        if request.get("logprobs") and not reply.omit_logprobs:
            if reply.raw_logprobs is not None:
                choice["logprobs"] = reply.raw_logprobs
            else:
                k = request.get("top_logprobs") or 0
                k = k if isinstance(k, int) else 0
                choice["logprobs"] = {"content": _logprob_content(tokens, explicit, k)}
        messages = request.get("messages")
        prompt_tokens = 0
        if isinstance(messages, list):
            for message in messages:
                content = message.get("content") if isinstance(message, dict) else None
                prompt_tokens += count_tokens(content) if isinstance(content, str) else 0
        completion_tokens = len(explicit) if explicit is not None else len(tokens)
        model = self.model_name or request.get("model") or "fake-model"
        return {
            "id": f"chatcmpl-fake-{next(self._ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model if isinstance(model, str) else "fake-model",
            "choices": [choice],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }

    async def _write(
        self,
        writer: asyncio.StreamWriter,
        status: int,
        body: dict[str, Any],
        keep_alive: bool,
        extra_headers: dict[str, str] | None = None,
    ) -> None:
        payload = json.dumps(body).encode()
        await self._write_raw(writer, status, payload, keep_alive, len(payload), extra_headers)

    async def _write_raw(
        self,
        writer: asyncio.StreamWriter,
        status: int,
        payload: bytes,
        keep_alive: bool,
        content_length: int,
        extra_headers: dict[str, str] | None = None,
    ) -> None:
        lines = [
            f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}",
            "Content-Type: application/json",
            f"Content-Length: {content_length}",
            f"Connection: {'keep-alive' if keep_alive else 'close'}",
        ]
        lines.extend(f"{k}: {v}" for k, v in (extra_headers or {}).items())
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + payload)
        await writer.drain()


def _logprob_content(
    tokens: list[str], explicit: list[TokenLogprob] | None, k: int
) -> list[dict[str, Any]]:
    """The ``logprobs.content`` list in OpenAI's wire format."""
    if explicit is not None:
        return [_wire_entry(entry.token, entry.logprob, entry.top) for entry in explicit]
    return [_invented_entry(position, token, k) for position, token in enumerate(tokens)]


@functools.lru_cache(maxsize=65536)
def _invented_entry(position: int, token: str, k: int) -> dict[str, Any]:
    # Deterministic, so replies that repeat (benchmarks, scripted agents) are served from
    # memory; the entries are only ever serialized, never mutated.
    return _wire_entry(token, *invent_top_logprobs(position, token, k))


def _wire_entry(token: str, logprob: float, top: list[tuple[str, float]]) -> dict[str, Any]:
    return {
        "token": token,
        "logprob": logprob,
        "bytes": _bytes_of(token),
        "top_logprobs": [{"token": t, "logprob": lp, "bytes": _bytes_of(t)} for t, lp in top],
    }


def _bytes_of(token: str) -> list[int]:
    return list(token.encode("utf-8", "surrogatepass"))


async def _sleep_until(deadline: float) -> None:
    remaining = deadline - asyncio.get_running_loop().time()
    if remaining > 0:
        await asyncio.sleep(remaining)


def _fmt_seconds(seconds: float) -> str:
    return f"{seconds:g}"
