"""The OpenAI-compatible HTTP server :class:`~byzllm.llm.LocalServer` runs as its child process.

``python -m byzllm.llm._llama_http --model FILE.gguf --alias NAME --port N --threads T``
loads one GGUF model with llama-cpp-python and answers, on 127.0.0.1 only:

* ``GET /v1/models`` — the one model, under ``NAME``, with the SHA-256 of its file
  (``sha256``: ``--sha256`` when given, else hashed at start), so that a client's response
  cache can tell two files served under one name apart;
* ``POST /v1/chat/completions`` — non-streaming chat completions through
  :func:`~byzllm.llm._llama_generate.generate_chat` (top-k log-probabilities in numpy, not a
  Python sort of the vocabulary; the model is loaded without ``logits_all``);
* ``GET /health``.

``--slots S`` loads S contexts of the model (the weights are memory-mapped once and shared;
each context holds its own KV cache and ``--threads`` threads). One request generates per slot
at a time (a llama.cpp context is not thread-safe); llama.cpp's decoding releases the GIL, so
S requests run in parallel. A request goes to a free slot, preferring the one whose last
request began with the same first message: llama.cpp reuses the longest common prefix of the
previous prompt, so two agents that alternate, each with its own system prompt, keep their
prompts' KV caches instead of re-reading them at every turn. The others wait, and
``/v1/models`` answers at once even while long requests run. A bad request gets HTTP 400 with
an OpenAI-shaped ``error`` body; nothing is logged but the request line.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from byzllm.errors import InputError

from ._llama_generate import generate_chat

__all__ = ["MAX_REQUEST_BYTES", "main", "make_server"]

#: Largest request body accepted (a long prompt is a few hundred kB).
MAX_REQUEST_BYTES = 16 * 1024 * 1024


def _first_message(body: dict[str, Any]) -> str:
    messages = body.get("messages")
    if isinstance(messages, list) and messages and isinstance(messages[0], dict):
        return str(messages[0].get("content"))
    return ""


class _Served:
    """The model's contexts (slots) and which one is busy or last served which prompt."""

    def __init__(
        self,
        llamas: Sequence[Any],
        alias: str,
        context_tokens: int,
        sha256: str | None = None,
    ) -> None:
        if not llamas:
            raise ValueError("at least one slot")
        self.llamas = list(llamas)
        self.alias = alias
        self.sha256 = sha256
        self.context_tokens = context_tokens
        self._free = set(range(len(self.llamas)))
        self._last_first: list[str | None] = [None] * len(self.llamas)
        self._changed = threading.Condition()

    @contextmanager
    def slot(self, body: dict[str, Any]) -> Iterator[Any]:
        """A free context for ``body``, the one that last served its first message if free."""
        key = _first_message(body)
        with self._changed:
            self._changed.wait_for(lambda: bool(self._free))
            same = [i for i in self._free if self._last_first[i] == key]
            index = same[0] if same else min(self._free)
            self._free.remove(index)
            self._last_first[index] = key
        try:
            yield self.llamas[index]
        finally:
            with self._changed:
                self._free.add(index)
                self._changed.notify()


def _handler(served: _Served) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "byzllm-llama"

        def log_message(self, format: str, *args: Any) -> None:
            return None  # requests carry prompts: keep them out of logs

        def _reply(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _error(self, status: int, message: str) -> None:
            kind = "invalid_request_error" if status < 500 else "server_error"
            self._reply(status, {"error": {"message": message, "type": kind}})

        def do_GET(self) -> None:
            path = self.path.rstrip("/")
            if path in ("/v1/models", "/models"):
                model = {"id": served.alias, "object": "model", "owned_by": "byzllm"}
                if served.sha256 is not None:
                    model["sha256"] = served.sha256
                self._reply(HTTPStatus.OK, {"object": "list", "data": [model]})
            elif path == "/health":
                self._reply(HTTPStatus.OK, {"status": "ok"})
            else:
                self._error(HTTPStatus.NOT_FOUND, f"no route {self.path}")

        def do_POST(self) -> None:
            if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
                self._error(HTTPStatus.NOT_FOUND, f"no route {self.path}")
                return
            try:
                length = int(self.headers.get("Content-Length") or 0)
            except ValueError:
                length = -1
            if not 0 < length <= MAX_REQUEST_BYTES:
                self.close_connection = True
                self._error(HTTPStatus.BAD_REQUEST, "a JSON body up to 16 MB is required")
                return
            try:
                body = json.loads(self.rfile.read(length))
            except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
                # (RecursionError: arrays nested thousands deep. Uncaught, it left a traceback
                # on stderr and the connection closed unanswered, which clients retry.)
                self._error(HTTPStatus.BAD_REQUEST, "the body is not valid JSON")
                return
            if not isinstance(body, dict):
                self._error(HTTPStatus.BAD_REQUEST, "the body must be a JSON object")
                return
            if body.get("stream"):
                self._error(HTTPStatus.BAD_REQUEST, "streaming is not supported by this server")
                return
            try:
                with served.slot(body) as llama:
                    reply = generate_chat(
                        llama,
                        body,
                        model_name=served.alias,
                        context_tokens=served.context_tokens,
                    )
            except (InputError, TypeError, ValueError) as exc:
                self._error(HTTPStatus.BAD_REQUEST, str(exc))
                return
            except Exception as exc:  # the server must outlive one bad request
                self._error(HTTPStatus.INTERNAL_SERVER_ERROR, f"{type(exc).__name__}: {exc}")
                return
            self._reply(HTTPStatus.OK, reply)

    return Handler


def make_server(
    llama: Any | Sequence[Any],
    alias: str,
    *,
    port: int,
    context_tokens: int,
    host: str = "127.0.0.1",
    sha256: str | None = None,
) -> ThreadingHTTPServer:
    """An HTTP server answering for ``llama`` (one context, or a sequence of them: the slots)
    under ``alias``, naming the file's ``sha256`` in its ``/v1/models`` entry when given (call
    ``serve_forever``)."""
    llamas = list(llama) if isinstance(llama, (list, tuple)) else [llama]
    served = _Served(llamas, alias, context_tokens, sha256)
    server = ThreadingHTTPServer((host, port), _handler(served))
    server.daemon_threads = True
    return server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m byzllm.llm._llama_http")
    parser.add_argument("--model", required=True, help="path of the GGUF file")
    parser.add_argument("--alias", required=True, help="the model id to answer to")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--n_ctx", type=int, required=True)
    parser.add_argument("--slots", type=int, default=1)
    parser.add_argument("--sha256", help="the file's SHA-256, when known (else hashed here)")
    args = parser.parse_args(argv)
    from llama_cpp import Llama

    from ._local import GgufModel

    sha256 = GgufModel(Path(args.model), args.alias, args.sha256).content_id()

    # The prompt (batch) threads too: llama-cpp-python's default is every core, which stalls
    # on a loaded machine.
    llamas = [
        Llama(
            model_path=args.model,
            n_ctx=args.n_ctx,
            n_threads=args.threads,
            n_threads_batch=args.threads,
            verbose=False,
        )
        for _ in range(max(1, args.slots))
    ]
    server = make_server(
        llamas, args.alias, port=args.port, context_tokens=args.n_ctx, sha256=sha256
    )
    print(f"serving {args.alias} on 127.0.0.1:{args.port}", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
