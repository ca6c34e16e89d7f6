"""Tests whose verdict the solution cannot forge: the solution and its tests in two processes.

:func:`byzllm.sandbox.run_tests` does not run the tests in the solution's interpreter (where
the solution could return an object whose ``__eq__`` always answers True, overwrite
``check``, or read a pass marker from its own source). Inside the sandbox two processes run
this file (``python -s -c SOURCE ROLE ...``), connected by a Unix socket pair:

* the **solution** process (``candidate``), as the run's uid, executes the solution and then
  serves calls: for each test it forks a fresh worker (so a test that hangs or changes the
  solution's state is gone with that test), which calls the named function and answers with
  its return value **serialized to plain data** (:func:`encode`: ``None``, ``bool``, ``int``,
  ``float``, ``complex``, ``str``, ``bytes`` and lists, tuples, sets, frozensets and dicts of
  them, each of exactly that type; anything else is an error of the solution);
* the **tests** process (``tester``), as a second uid the solution cannot signal, trace or
  read (and not dumpable), runs each test with the solution's functions replaced by proxies
  that call across the socket and rebuild the answer from plain data (:func:`decode`), so
  every comparison runs on the tester's own objects. Each test gets its own deadline
  (``SIGALRM``); the outcome of every test goes to the sandbox's PID 1 on a pipe only the
  tester holds, and from there to the host. Nothing the solution prints or writes counts.

Standard library only, and no byzllm import: it runs inside the sandbox under ``-s``. The
host reads it as the source to run, and imports it for the codec's tests.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import os
import socket
import struct
import sys
import types
from typing import Any

#: Largest message either side accepts (a bigger answer fails its test).
MAX_MESSAGE = 16 * 1024 * 1024
#: Deepest nesting of a value accepted (deeper fails its test).
MAX_DEPTH = 100
#: The longest message or source line kept in an outcome.
MAX_TEXT = 500
#: The file names under which the two sides compile their code (named in outcomes).
SOLUTION_FILE = "main.py"
TESTS_FILE = "<tests>"

_HEADER = struct.Struct("!I")
_PR_SET_DUMPABLE = 4


class NotPlainData(TypeError):
    """A value that is not plain data (it cannot cross to the tests' side)."""


class ProtocolError(Exception):
    """The other side sent something malformed, too big, or nothing at all."""


class SolutionError(Exception):
    """The solution raised while a test called it; ``outcome`` says what and where."""

    def __init__(self, outcome: dict[str, Any]) -> None:
        super().__init__(f"{outcome.get('type')}: {outcome.get('message')}")
        self.outcome = outcome


class SolutionEnded(Exception):
    """The solution's process ended (or closed its socket) before answering."""


class _TestTimeout(BaseException):
    """A test ran past its own deadline (BaseException: a test's ``except Exception`` must
    not swallow it)."""


def encode(value: Any, depth: int = 0) -> Any:
    """``value`` as JSON-ready plain data, tagging every container with its exact type."""
    if depth > MAX_DEPTH:
        raise NotPlainData("the value is nested too deeply")
    kind = type(value)
    if value is None or kind is bool or kind is int or kind is str or kind is float:
        return value
    if kind is bytes:
        return {"bytes": value.hex()}
    if kind is complex:
        return {"complex": [value.real, value.imag]}
    if kind is list or kind is tuple or kind is set or kind is frozenset:
        return {kind.__name__: [encode(item, depth + 1) for item in value]}
    if kind is dict:
        return {"dict": [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in value.items()]}
    raise NotPlainData(f"a value of type {kind.__name__} is not plain data")


_CONTAINERS: dict[str, Any] = {"list": list, "tuple": tuple, "set": set, "frozenset": frozenset}


def decode(data: Any, depth: int = 0) -> Any:
    """The value :func:`encode` gave ``data`` for; :class:`ProtocolError` on anything else.

    ``data`` comes from the solution's process, so it is hostile: only the shapes
    :func:`encode` makes are accepted, and every object built is of a built-in type.
    """
    if depth > MAX_DEPTH:
        raise ProtocolError("a value nested too deeply")
    kind = type(data)
    if data is None or kind is bool or kind is int or kind is str or kind is float:
        return data
    if kind is not dict or len(data) != 1:
        raise ProtocolError("a malformed value")
    ((tag, body),) = data.items()
    try:
        if tag == "bytes" and type(body) is str:
            return bytes.fromhex(body)
        if tag == "complex" and type(body) is list and len(body) == 2:
            real, imag = (decode(part, depth + 1) for part in body)
            if type(real) is float and type(imag) is float:
                return complex(real, imag)
        if tag in _CONTAINERS and type(body) is list:
            return _CONTAINERS[tag](decode(item, depth + 1) for item in body)
        if tag == "dict" and type(body) is list:
            pairs = []
            for pair in body:
                if type(pair) is not list or len(pair) != 2:
                    raise ProtocolError("a malformed dict entry")
                pairs.append((decode(pair[0], depth + 1), decode(pair[1], depth + 1)))
            return dict(pairs)
    except (TypeError, ValueError) as error:  # an unhashable key or set item, bad hex
        raise ProtocolError(f"a malformed value: {error}") from error
    raise ProtocolError(f"a malformed value tagged {str(tag)[:40]!r}")


def dumps(message: Any) -> bytes:
    body = json.dumps(message, allow_nan=True, separators=(",", ":")).encode()
    return _HEADER.pack(len(body)) + body


def send(sock: socket.socket, message: Any) -> None:
    sock.sendall(dumps(message))


def _recv_exactly(sock: socket.socket, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise SolutionEnded("the solution's process ended")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def receive(sock: socket.socket) -> Any:
    (size,) = _HEADER.unpack(_recv_exactly(sock, _HEADER.size))
    if size > MAX_MESSAGE:
        raise ProtocolError(f"a message of {size} bytes (at most {MAX_MESSAGE})")
    try:
        return json.loads(_recv_exactly(sock, size))
    except (ValueError, RecursionError) as error:
        raise ProtocolError("a message that is not JSON") from error


def _clip(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 3] + "..."


def describe(error: BaseException, filename: str, source: str) -> dict[str, Any]:
    """An exception as plain data: its type, message, and the innermost line of ``filename``."""
    outcome: dict[str, Any] = {"type": type(error).__name__, "message": _clip(str(error))}
    if isinstance(error, SyntaxError) and error.filename == filename:
        outcome["line"] = error.lineno
    trace = error.__traceback__
    while trace is not None:
        if trace.tb_frame.f_code.co_filename == filename:
            outcome["line"] = trace.tb_lineno
        trace = trace.tb_next
    line = outcome.get("line")
    if isinstance(line, int):
        lines = source.splitlines()
        if 1 <= line <= len(lines):
            outcome["source"] = _clip(lines[line - 1].strip())
    return outcome


def _not_dumpable() -> None:
    """No core dump, and no /proc/PID/mem or fd access by another process of the same uid."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    except (OSError, AttributeError):  # pragma: no cover - prctl is always there on Linux
        pass


# --- the solution's side -------------------------------------------------------------------


def _serve_calls(sock: socket.socket, namespace: dict[str, Any], source: str) -> None:
    """One test's worker: answer calls until the tests' side closes the socket."""
    while True:
        try:
            request = receive(sock)
        except (SolutionEnded, ProtocolError, OSError):
            os._exit(0)
        try:
            function = namespace[request["name"]]
            args = decode(request["args"])
            kwargs = decode(request["kwargs"])
            value = function(*args, **kwargs)
            reply = {"value": encode(value)}
        except NotPlainData as error:
            reply = {"error": {"type": "NotPlainData", "message": _clip(str(error))}}
        except BaseException as error:  # the solution's own exception, SystemExit included
            if isinstance(error, SystemExit):
                os._exit(0)  # it ended its process during the call
            reply = {"error": describe(error, SOLUTION_FILE, source)}
        try:
            send(sock, reply)
        except (OSError, ValueError):
            os._exit(0)


def candidate(control_fd: int) -> None:
    """Run the solution (``main.py`` in the working folder), then serve the tests' calls."""
    _not_dumpable()
    control = socket.socket(fileno=control_fd)
    with open(SOLUTION_FILE, encoding="utf-8", errors="surrogateescape") as handle:
        source = handle.read()
    namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": __builtins__}
    try:
        exec(compile(source, SOLUTION_FILE, "exec", dont_inherit=True), namespace)
    except SystemExit:
        raise  # the tests' side sees the end of the socket: the solution ended early
    except BaseException as error:
        send(control, {"loaded": False, "error": describe(error, SOLUTION_FILE, source)})
        raise
    functions, values, modules = [], {}, {}
    for name, value in list(namespace.items()):
        if name.startswith("__"):
            continue
        if isinstance(value, types.FunctionType):
            functions.append(name)
        elif isinstance(value, types.ModuleType):
            modules[name] = value.__name__
        else:
            with contextlib.suppress(NotPlainData):
                values[name] = encode(value)
    send(control, {"loaded": True, "functions": functions, "values": values, "modules": modules})
    worker = 0
    while True:
        try:
            receive(control)  # one request per test: a fresh worker
        except (SolutionEnded, ProtocolError, OSError):
            return
        if worker:
            _end(worker)
        mine, theirs = socket.socketpair()
        worker = os.fork()
        if worker == 0:
            control.close()
            theirs.close()
            _serve_calls(mine, namespace, source)
        mine.close()
        socket.send_fds(control, [b"w"], [theirs.fileno()])
        theirs.close()


def _end(pid: int) -> None:
    try:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    except OSError:
        pass


# --- the tests' side -----------------------------------------------------------------------


class _Link:
    """The tests' side of the socket to the solution's current worker."""

    def __init__(self, control: socket.socket) -> None:
        self.control = control
        self.worker: socket.socket | None = None

    def next_worker(self) -> None:
        if self.worker is not None:
            self.worker.close()
            self.worker = None
        send(self.control, {"test": True})
        _, fds, _, _ = socket.recv_fds(self.control, 16, 1)
        if not fds:
            raise SolutionEnded("the solution's process ended")
        self.worker = socket.socket(fileno=fds[0])

    def call(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        try:
            request = {"name": name, "args": encode(args), "kwargs": encode(kwargs)}
        except NotPlainData as error:
            raise TypeError(f"the tests passed {name} an argument that is {error}") from None
        if self.worker is None:
            raise SolutionEnded("the solution's process ended")
        send(self.worker, request)
        reply = receive(self.worker)
        if type(reply) is not dict:
            raise ProtocolError("a malformed reply")
        if "error" in reply:
            raised = reply["error"]
            raise SolutionError(raised if type(raised) is dict else {"type": "?", "message": ""})
        if "value" not in reply:
            raise ProtocolError("a reply without a value")
        return decode(reply["value"])


def _proxy(link: _Link, name: str) -> Any:
    def call(*args: Any, **kwargs: Any) -> Any:
        return link.call(name, args, kwargs)

    call.__name__ = call.__qualname__ = name
    return call


#: Modules of the solution's namespace the tests' side imports for itself (the standard
#: library's, less those that act on import).
_MODULES = frozenset(sys.stdlib_module_names) - {"antigravity", "this", "__main__"}


def _offered(name: object) -> bool:
    """Whether the tests see the solution's ``name``: never a dunder or a built-in's name, so
    the solution cannot replace ``abs`` or ``len`` in the tests' own comparisons."""
    return type(name) is str and not name.startswith("__") and not hasattr(builtins, name)


def _solution_described(outcome: dict[Any, Any]) -> dict[str, Any]:
    """The fields of :func:`describe` from a description the solution's side sent, each of
    its type (texts clipped); anything else it holds is dropped."""
    out: dict[str, Any] = {}
    for key in ("type", "message", "source"):
        value = outcome.get(key)
        if type(value) is str:
            out[key] = _clip(value)
    line = outcome.get("line")
    if type(line) is int:
        out["line"] = line
    return out


def _on_alarm(signum: int, frame: object) -> None:
    raise _TestTimeout


def _outcome(error: BaseException, source: str) -> dict[str, Any]:
    if isinstance(error, _TestTimeout):
        return {"status": "timed_out"}
    if isinstance(error, SolutionError):
        # The solution's process wrote this description and may have rewritten the code that
        # does: only its own fields are taken, checked, and the verdict stays this side's.
        return {**_solution_described(error.outcome), "status": "crashed", "side": "solution"}
    if isinstance(error, SolutionEnded | ProtocolError):
        return {"status": "failed", "side": "solution", "type": type(error).__name__,
                "message": _clip(str(error))}  # fmt: skip
    described = describe(error, TESTS_FILE, source)
    status = "failed" if isinstance(error, AssertionError) else "crashed"
    return {"status": status, "side": "tests", **described}


def tester(control_fd: int, result_fd: int, payload: str, ready_fd: int = -1) -> None:
    """Run every test of ``payload`` (JSON: ``tests``, ``test_timeout_s``, ``load_timeout_s``)
    against the solution, and write the outcomes (JSON) on ``result_fd``. ``ready_fd``
    (without root) is closed once this process is not dumpable: the solution starts then."""
    import signal

    _not_dumpable()
    if ready_fd >= 0:
        os.close(ready_fd)
    spec = json.loads(payload)
    tests: list[str] = spec["tests"]
    control = socket.socket(fileno=control_fd)
    link = _Link(control)
    signal.signal(signal.SIGALRM, _on_alarm)
    outcomes: list[dict[str, Any]] = []
    base: dict[str, Any] = {"__name__": "__main__", "__builtins__": __builtins__}
    try:
        signal.setitimer(signal.ITIMER_REAL, spec["load_timeout_s"])
        hello = receive(control)
        signal.setitimer(signal.ITIMER_REAL, 0)
        if type(hello) is not dict or hello.get("loaded") is not True:
            error = hello.get("error") if type(hello) is dict else None
            raise SolutionError(error if type(error) is dict else {"type": "?", "message": ""})
        for name in hello["functions"]:
            if _offered(name):
                base[name] = _proxy(link, name)
        for name, value in hello["values"].items():
            if _offered(name):
                base[name] = decode(value)
        for name, module in hello["modules"].items():
            if _offered(name) and str(module).split(".")[0] in _MODULES:
                # A module only the solution's side has is not offered.
                with contextlib.suppress(Exception):
                    base[name] = __import__(str(module), fromlist=["_"])
    except BaseException as error:
        signal.setitimer(signal.ITIMER_REAL, 0)
        first = _outcome(error, "")
        if first["status"] == "timed_out":
            first["message"] = "the solution did not finish loading in time"
        outcomes = [first] + [{"status": "not_run"}] * (len(tests) - 1)
        _write(result_fd, outcomes)
        return
    for test in tests:
        namespace = dict(base)
        try:
            signal.setitimer(signal.ITIMER_REAL, spec["test_timeout_s"])
            link.next_worker()
            exec(compile(test, TESTS_FILE, "exec", dont_inherit=True), namespace)
            signal.setitimer(signal.ITIMER_REAL, 0)
            outcomes.append({"status": "passed"})
        except BaseException as error:
            signal.setitimer(signal.ITIMER_REAL, 0)
            outcomes.append(_outcome(error, test))
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        sys.stdout.flush()
    _write(result_fd, outcomes)


def _write(fd: int, outcomes: list[dict[str, Any]]) -> None:
    sys.stdout.flush()
    data = json.dumps(outcomes).encode()
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.close(fd)


def main(argv: list[str]) -> None:
    role = argv[1]
    if role == "candidate":
        candidate(int(argv[2]))
    else:
        tester(int(argv[2]), int(argv[3]), argv[4], int(argv[5]) if len(argv) > 5 else -1)


if __name__ == "__main__":
    main(sys.argv)
