"""Serve a GGUF model over the OpenAI wire format on this machine (``byzllm serve``).

:class:`LocalServer` starts byzllm's OpenAI-compatible server over llama-cpp-python
(:mod:`byzllm.llm._llama_http`: log-probabilities computed in numpy, the model loaded without
``logits_all``) as a child process on 127.0.0.1, for a shipped model
(``"qwen0.5b"``, ``"smollm2"``, ...) or any GGUF file, waits until it answers
``GET /v1/models``, and stops it (the whole process group) on exit. Every byzllm command
then reaches it with ``--model openai/<alias> --base-url <base_url>``. The real-model tests
use the same class.

The child gets a clean environment (no API keys: it needs none) and listens on the loopback
interface only.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from typing import IO

from byzllm._process import die_with_parent, signal_name
from byzllm.errors import InputError

from ._errors import ModelUnavailableError
from ._local import (
    LLAMACPP_CONTEXT_TOKENS,
    REBUILD_HINT,
    GgufModel,
    default_threads,
    require_llama_cpp,
    resolve_gguf,
)

__all__ = [
    "DEFAULT_SERVE_PORT",
    "LocalServer",
    "default_threads",
    "exit_description",
    "free_port",
]

#: The port ``byzllm serve`` listens on unless told otherwise.
DEFAULT_SERVE_PORT = 8000
_HOST = "127.0.0.1"
#: Environment variables the server child may inherit (nothing that could hold a secret).
#: PYTHONPATH too: where it chooses which byzllm runs (a source tree), the child must run
#: the same code, not another installed copy's, or fail to find byzllm at all.
_KEPT_ENV = (
    "PATH",
    "PYTHONPATH",
    "HOME",
    "LANG",
    "LC_ALL",
    "TMPDIR",
    "SYSTEMROOT",
    "OPENBLAS_CORETYPE",
)


#: About forty tokens: enough to run the batched prompt kernels, not only single-token decoding.
_WARM_UP_PROMPT = " ".join(["Count the words in this short warm-up sentence, please."] * 4)


def exit_description(returncode: int) -> str:
    """How a server process ended, in words: ``exited with code 1``, or the signal that
    killed it, with what to do about an illegal instruction (a llama.cpp build whose
    instructions this CPU cannot run: a wheel built on another machine, or a ``-march=native``
    build under a hypervisor that advertises AMX tiles it does not enable)."""
    if returncode >= 0:
        return f"exited with code {returncode}"
    text = f"was killed by {signal_name(-returncode)}"
    if -returncode == signal.SIGILL:
        text += (
            f" (llama-cpp-python was built for instructions this CPU cannot run; {REBUILD_HINT})"
        )
    return text


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((_HOST, 0))
        return int(sock.getsockname()[1])


def _check_port(port: int) -> None:
    if not 1 <= port <= 65535:
        raise InputError(f"port must be in 1..65535, got {port}")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # As the server will: connections still closing (TIME_WAIT) do not make a port busy,
        # a socket listening on it does.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((_HOST, port))
        except OSError:
            raise InputError(
                f"port {port} on {_HOST} is already in use (another server?); pick another "
                "with --port, or --port 0 for any free one"
            ) from None


def _check_file(gguf: GgufModel) -> None:
    """Read the file's header and vocabulary (:func:`._llamacpp._check_loadable`)."""
    from ._llamacpp import _check_loadable

    _check_loadable(gguf)


class LocalServer:
    """byzllm's OpenAI-compatible server (over llama-cpp-python) for one GGUF model, as a
    managed child process.

    >>> with LocalServer("qwen0.5b") as server:          # doctest: +SKIP
    ...     print(server.base_url, server.model_name)    # http://127.0.0.1:8000/v1 qwen0.5b

    ``port=0`` picks a free port. ``threads`` defaults to :func:`default_threads`; ``slots``
    contexts answer requests in parallel, ``threads`` threads each (see
    :mod:`byzllm.llm._llama_http`). Raises
    :class:`InputError` for a bad model file, a busy port or a missing extra, and
    :class:`~byzllm.llm.ModelUnavailableError` when the server dies or does not answer within
    ``start_timeout_s``.
    """

    def __init__(
        self,
        model: str = "qwen0.5b",
        *,
        port: int = DEFAULT_SERVE_PORT,
        threads: int | None = None,
        slots: int = 1,
        context_tokens: int = LLAMACPP_CONTEXT_TOKENS,
        start_timeout_s: float = 120.0,
    ) -> None:
        if threads is not None and (isinstance(threads, bool) or threads < 1):
            raise InputError(f"threads must be at least 1, got {threads!r}")
        if isinstance(slots, bool) or slots < 1:
            raise InputError(f"slots must be at least 1, got {slots!r}")
        require_llama_cpp("byzllm serve")
        self.gguf: GgufModel = resolve_gguf(model)
        # A corrupt or cut-short file fails here, in one line, not as the child's traceback.
        _check_file(self.gguf)
        if port != 0:
            _check_port(port)
        self.port = port or free_port()
        self.threads = threads or default_threads()
        self.slots = slots
        self.context_tokens = context_tokens
        self.start_timeout_s = start_timeout_s
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def model_name(self) -> str:
        """The model id the server answers to (``--model openai/<model_name>``)."""
        return self.gguf.name

    @property
    def base_url(self) -> str:
        """What to pass as ``--base-url``."""
        return f"http://{_HOST}:{self.port}/v1"

    def command(self) -> list[str]:
        """The server's command line."""
        return [
            sys.executable,
            "-m",
            "byzllm.llm._llama_http",
            "--model",
            str(self.gguf.path),
            "--alias",
            self.model_name,
            "--port",
            str(self.port),
            "--n_ctx",
            str(self.context_tokens),
            "--threads",
            str(self.threads),
            "--slots",
            str(self.slots),
            # Known here (a shipped model's is published; another file is hashed once per
            # process): the child reports it without hashing the file again.
            "--sha256",
            self.gguf.content_id(),
        ]

    def start(self) -> LocalServer:
        """Start the server and wait until it answers; stop it again if it does not."""
        env = {key: os.environ[key] for key in _KEPT_ENV if key in os.environ}
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 - closed by stop()
        self._process = subprocess.Popen(
            self.command(),
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,  # its own process group: stopped whole
            # and never orphaned, even if we are killed (SIGKILL included)
            preexec_fn=functools.partial(die_with_parent, expected_parent=os.getpid()),
        )
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.start_timeout_s
        url = f"{self.base_url}/models"
        while True:
            process = self._process
            assert process is not None
            if process.poll() is not None:
                raise ModelUnavailableError(
                    f"the llama.cpp server {exit_description(process.returncode)} before it "
                    f"answered: {self._log_tail()}"
                )
            with (
                contextlib.suppress(urllib.error.URLError, OSError),
                urllib.request.urlopen(url, timeout=2) as response,
            ):
                if response.status == 200:
                    self._warm_up(deadline)
                    return
            if time.monotonic() > deadline:
                raise ModelUnavailableError(
                    f"the llama.cpp server did not answer at {url} within "
                    f"{self.start_timeout_s:g}s: {self._log_tail()}"
                )
            time.sleep(0.2)

    def _warm_up(self, deadline: float) -> None:
        """Generate one token from a prompt of a few dozen tokens before declaring the server
        ready: answering ``/models`` does not load the compute kernels, and a llama.cpp built
        for instructions this CPU cannot run dies on its first batch (SIGILL), which would
        otherwise surface later as a refused connection in the middle of a run."""
        body = json.dumps(
            {
                "model": self.model_name,
                "messages": [{"role": "user", "content": _WARM_UP_PROMPT}],
                "max_tokens": 1,
                "temperature": 0,
            }
        ).encode()
        request = urllib.request.Request(
            f"{self.base_url}/chat/completions",
            data=body,
            headers={"Content-Type": "application/json"},
        )
        timeout = max(5.0, deadline - time.monotonic())
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                response.read()
        except (urllib.error.URLError, OSError) as exc:
            process = self._process
            assert process is not None
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=2)
            if process.poll() is not None:
                raise ModelUnavailableError(
                    f"the llama.cpp server {exit_description(process.returncode)} on its "
                    f"first request: {self._log_tail()}"
                ) from None
            raise ModelUnavailableError(
                f"the llama.cpp server answered /models but failed its first request: {exc}"
            ) from None

    def exit_report(self, returncode: int) -> str:
        """How a server that exited by itself ended, in words (:func:`exit_description`, with
        the rebuild hint for SIGILL), and the tail of its output. Read it before :meth:`stop`,
        which discards that output."""
        return f"the llama.cpp server {exit_description(returncode)}: {self._log_tail()}"

    def _log_tail(self, limit: int = 600) -> str:
        if self._log is None:
            return ""
        self._log.seek(0)
        text = self._log.read().decode("utf-8", "replace").strip()
        return text[-limit:] or "(no output)"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def wait(self) -> int:
        """Block until the server exits (``byzllm serve`` in the foreground); its exit code."""
        assert self._process is not None
        return self._process.wait()

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop the server's whole process group: SIGTERM, then SIGKILL after ``timeout_s``."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"LocalServer(model={self.model_name!r}, base_url={self.base_url!r})"
