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
  them, each of exactly that type); anything else is an error of the solution where a
  function or callable object answers, and otherwise an object that stays in the worker,
  the tests getting its number (see below);
* the **tests** process (``tester``), as a second uid the solution cannot signal, trace or
  read (and not dumpable), runs each test with the solution's callables (functions, decorated
  or not, any other callable object, and classes) replaced by :class:`_Remote` handles that
  call across the socket and rebuild the answer from plain data (:func:`decode`), so every
  comparison runs on the tester's own objects. Calling a class makes the object in the
  worker, and the tests reach its methods and attributes across the socket
  (``Solution().twoSum(nums, 9)``); what they reach through a handle that is not plain data
  (an object a method returns, ``self`` of a fluent API included, or an attribute) stays in
  the worker too and gives another handle, the same one for the same object; a function's
  attributes are reached the same way (``fib.cache_info()``). Each test gets its own deadline
  (``SIGALRM``); the outcome of every test goes to the sandbox's PID 1 on a pipe only the
  tester holds, and from there to the host. Nothing the solution prints or writes counts.
  The tests arrive on a pipe only the tester reads, never on a command line (which every
  process of the sandbox could read in ``/proc``).

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
from collections.abc import Iterator
from typing import Any

#: Largest message either side accepts (a bigger answer fails its test).
MAX_MESSAGE = 16 * 1024 * 1024
#: Deepest nesting of a value accepted (deeper fails its test).
MAX_DEPTH = 100
#: Most digits of an int either side sends or accepts. Python's own bound (4,300) is for
#: ``str()`` in general; a test's value may be larger (``3 ** 10000`` has 4,772 digits). Still
#: bounded: converting digits costs quadratic time, in a C call no test deadline interrupts.
MAX_INT_DIGITS = 100_000
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


class _CpuLimit(BaseException):
    """The solution's worker was killed by its CPU-time limit during a test (BaseException,
    as :class:`_TestTimeout`)."""


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


@contextlib.contextmanager
def _int_digits() -> Iterator[None]:
    """Ints of up to :data:`MAX_INT_DIGITS` digits convert while the codec runs; the limit
    the code of either side sees stays Python's (as in a plain interpreter)."""
    saved = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(MAX_INT_DIGITS)
    try:
        yield
    finally:
        sys.set_int_max_str_digits(saved)


def dumps(message: Any) -> bytes:
    """``message`` framed for the socket; ``ValueError`` for an int past :data:`MAX_INT_DIGITS`."""
    with _int_digits():
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
    data = _recv_exactly(sock, size)
    try:
        with _int_digits():
            return json.loads(data)
    except (ValueError, RecursionError) as error:  # an int past MAX_INT_DIGITS included
        raise ProtocolError(f"a message that is not JSON: {_clip(str(error))}") from error


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


class _Objects:
    """The solution's objects the tests hold handles on, in one worker, by number: the same
    object always has the same number (a method returning ``self`` gives the tests back the
    handle they hold)."""

    def __init__(self) -> None:
        self._objects: list[Any] = []
        # By id(): the object may hash or compare as it likes; the list keeps it alive, so
        # its id is not reused.
        self._numbers: dict[int, int] = {}

    def __getitem__(self, number: int) -> Any:
        return self._objects[number]

    def __contains__(self, value: object) -> bool:
        return id(value) in self._numbers

    def number(self, value: object) -> int:
        found = self._numbers.get(id(value))
        if found is None:
            found = self._numbers[id(value)] = len(self._objects)
            self._objects.append(value)
        return found


def _answer(request: dict[str, Any], namespace: dict[str, Any], objects: _Objects) -> Any:
    """The reply to one request of the tests' side: call (``op`` "call"), read (``op``
    "get") or test the truth of (``op`` "bool") a global of the solution (``name``) or an
    object the tests hold a handle on (``object``), down ``path``, a list of attribute
    names."""
    target = objects[request["object"]] if "object" in request else namespace[request["name"]]
    path = request.get("path", ())
    for attribute in path:
        target = getattr(target, attribute)
    op = request.get("op")
    if op == "bool":
        return {"value": bool(target)}
    if op == "get":
        if callable(target):
            return {"callable": True}
        value = target
    else:
        value = target(*decode(request["args"]), **decode(request["kwargs"]))
    try:
        return {"value": encode(value)}
    except NotPlainData:
        # What the tests reach through a class or an object (an instance, a method's result,
        # an attribute) stays here, and the tests get a handle on it (its number). A function
        # or callable object called itself answers with plain data: its answer is what the
        # tests compare, and "not plain data" says more than a comparison with a handle
        # failing would.
        if not path and not isinstance(target, type) and value not in objects:
            raise
    return {"object": objects.number(value)}


def _not_plain(error: Exception) -> dict[str, Any]:
    return {"error": {"type": "NotPlainData", "message": _clip(str(error))}}


def _serve_calls(sock: socket.socket, namespace: dict[str, Any], source: str) -> None:
    """One test's worker: answer calls until the tests' side closes the socket."""
    objects = _Objects()
    while True:
        try:
            request = receive(sock)
        except (SolutionEnded, ProtocolError, OSError):
            os._exit(0)
        try:
            reply = _answer(request, namespace, objects)
        except NotPlainData as error:
            reply = _not_plain(error)
        except BaseException as error:  # the solution's own exception, SystemExit included
            if isinstance(error, SystemExit):
                os._exit(0)  # it ended its process during the call
            reply = {"error": describe(error, SOLUTION_FILE, source)}
        try:
            data = dumps(reply)
        except ValueError as error:  # an int of more than MAX_INT_DIGITS digits
            data = dumps(_not_plain(ValueError(f"a value too large to send: {error}")))
        try:
            sock.sendall(data)
        except OSError:
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
    functions, classes, values, modules = [], [], {}, {}
    for name, value in list(namespace.items()):
        if name.startswith("__"):
            continue
        if isinstance(value, types.ModuleType):
            modules[name] = value.__name__
        elif isinstance(value, type):
            classes.append(name)
        elif callable(value):  # functions, and lru_cache, partial and other callable objects
            functions.append(name)
        else:
            with contextlib.suppress(NotPlainData):
                values[name] = encode(value)
    hello = {"loaded": True, "functions": functions, "classes": classes}
    send(control, {**hello, "values": values, "modules": modules})
    worker = 0
    while True:
        try:
            request = receive(control)  # one request per test: a fresh worker
        except (SolutionEnded, ProtocolError, OSError):
            return
        if type(request) is dict and request.get("ended") is True:
            # The tests' side lost the worker: say how it ended (a CPU-time limit is the
            # test's timeout, not the solution ending its process).
            send(control, _how_it_ended(worker))
            worker = 0
            continue
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


#: How long the solution's side waits for a worker whose socket closed to end (it closes as
#: the worker exits, a moment before the worker can be reaped).
_REAP_S = 0.5


def _how_it_ended(pid: int) -> dict[str, Any]:
    """The signal that ended worker ``pid`` (None: it exited) and the CPU time it used; empty
    when there is none, or it did not end (it is killed then)."""
    import time

    if pid <= 0:  # no worker: and os.kill(0, ...) would signal the whole process group
        return {}
    deadline = time.monotonic() + _REAP_S
    try:
        while True:
            found, status, usage = os.wait4(pid, os.WNOHANG)
            if found:
                number = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
                return {"signal": number, "cpu_s": usage.ru_utime + usage.ru_stime}
            if time.monotonic() > deadline:
                break
            time.sleep(0.005)
    except OSError:
        return {}
    _end(pid)
    return {}


# --- the tests' side -----------------------------------------------------------------------


class _Link:
    """The tests' side of the socket to the solution's current worker."""

    def __init__(self, control: socket.socket, cpu_s: float) -> None:
        self.control = control
        self.cpu_s = cpu_s
        self.worker: socket.socket | None = None
        #: Counts the workers: an object handle is good only in the worker that made it.
        self.generation = 0
        self.worker_lost = False
        #: The handles on the current worker's objects, by number: the same object, the same
        #: handle (``is`` and ``==`` hold between them, as between the objects).
        self.objects: dict[int, _Remote] = {}

    def next_worker(self) -> None:
        if self.worker is not None:
            self.worker.close()
            self.worker = None
        self.generation += 1
        self.worker_lost = False
        self.objects = {}
        send(self.control, {"test": True})
        _, fds, _, _ = socket.recv_fds(self.control, 16, 1)
        if not fds:
            raise SolutionEnded("the solution's process ended")
        self.worker = socket.socket(fileno=fds[0])

    def call(
        self,
        target: dict[str, Any],
        path: tuple[str, ...],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> Any:
        """Call the solution's ``target`` (down ``path``) with plain-data arguments."""
        what = ".".join([str(target.get("name", "the solution's object")), *path])
        try:
            request = {**target, "path": list(path), "op": "call", "args": encode(args)}
            request["kwargs"] = encode(kwargs)
            data = dumps(request)
        except NotPlainData as error:
            raise TypeError(f"the tests passed {what} an argument that is {error}") from None
        except ValueError as error:  # an int past MAX_INT_DIGITS
            raise TypeError(f"the tests passed {what} an argument too large: {error}") from None
        return self._value_or_object(self._exchange(data))

    def get(self, target: dict[str, Any], path: tuple[str, ...], generation: int) -> Any:
        """An attribute of the solution's ``target``: plain data, or a handle to call it by.
        One it does not have is an ``AttributeError`` here too (``hasattr`` works)."""
        try:
            reply = self._exchange(dumps({**target, "path": list(path), "op": "get"}))
        except SolutionError as error:
            if error.outcome.get("type") == "AttributeError":
                raise AttributeError(_clip(str(error.outcome.get("message", "")))) from None
            raise
        if reply.get("callable") is True:
            return _Remote(self, target, path, generation)
        return self._value_or_object(reply)

    def truth(self, target: dict[str, Any], path: tuple[str, ...]) -> bool:
        """The truth of the solution's ``target`` (down ``path``), as the object decides it
        (``__bool__``, ``__len__``): a plain bool."""
        value = self._value(self._exchange(dumps({**target, "path": list(path), "op": "bool"})))
        if type(value) is not bool:
            raise ProtocolError("a truth value that is not a bool")
        return value

    def _exchange(self, data: bytes) -> dict[str, Any]:
        if self.worker is None or self.worker_lost:
            raise SolutionEnded("the solution's process ended")
        try:
            self.worker.sendall(data)
            reply = receive(self.worker)
        except (SolutionEnded, OSError):
            self.worker_lost = True
            self._why_ended()
            raise SolutionEnded("the solution's process ended") from None
        if type(reply) is not dict:
            raise ProtocolError("a malformed reply")
        if "error" in reply:
            raised = reply["error"]
            raise SolutionError(raised if type(raised) is dict else {"type": "?", "message": ""})
        return reply

    def _value_or_object(self, reply: dict[str, Any]) -> Any:
        """Plain data, or the handle on the object the reply numbers."""
        number = reply.get("object")
        if type(number) is not int:
            return self._value(reply)
        handle = self.objects.get(number)
        if handle is None:
            handle = self.objects[number] = _Remote(self, {"object": number}, (), self.generation)
        return handle

    @staticmethod
    def _value(reply: dict[str, Any]) -> Any:
        if "value" not in reply:
            raise ProtocolError("a reply without a value")
        return decode(reply["value"])

    def _why_ended(self) -> None:
        """Raise :class:`_CpuLimit` when the lost worker was killed by its CPU-time limit
        (``SIGXCPU``, or ``SIGKILL`` at the hard limit a second later), as the solution's side
        says. It could lie, but only to turn one failure into another."""
        try:
            send(self.control, {"ended": True})
            reply = receive(self.control)
        except (SolutionEnded, ProtocolError, OSError):
            return
        if type(reply) is not dict:
            return
        import signal

        number, used = reply.get("signal"), reply.get("cpu_s")
        if type(used) is not float:
            used = 0.0
        if number == signal.SIGXCPU or (number == signal.SIGKILL and used >= self.cpu_s * 0.99):
            raise _CpuLimit


class _Remote:
    """The tests' handle on one of the solution's functions or classes (or any callable of
    its namespace), or on one of its objects (in the worker, where it stays): one made by
    calling a class, or reached through a handle (a method's result, ``self`` included, or an
    attribute) that is not plain data. Calling it, reading its attributes and testing its
    truth cross to the solution's process, which answers with plain data, or with another
    handle (a method, an object; the same object, the same handle). Comparison and hashing
    are a plain object's, on this side: the solution's ``__eq__`` never decides a test. Its
    attributes cannot be set from here."""

    __slots__ = ("_byz_generation", "_byz_link", "_byz_path", "_byz_target")

    def __init__(
        self, link: _Link, target: dict[str, Any], path: tuple[str, ...], generation: int
    ) -> None:
        object.__setattr__(self, "_byz_link", link)
        object.__setattr__(self, "_byz_target", target)
        object.__setattr__(self, "_byz_path", path)
        # A global is there in every worker; an object only in the one that made it.
        object.__setattr__(self, "_byz_generation", 0 if "name" in target else generation)

    def _byz_check(self) -> _Link:
        link: _Link = self._byz_link
        if self._byz_generation not in (0, link.generation):
            raise RuntimeError("an object the solution made for an earlier test")
        return link

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._byz_check().call(self._byz_target, self._byz_path, args, kwargs)

    def __bool__(self) -> bool:
        # The object's own truth (a stack with __len__ is false once empty): the solution
        # answers with a bool, as if a method had returned it, and decides nothing more.
        return self._byz_check().truth(self._byz_target, self._byz_path)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_byz_"):  # a handle made without __init__ (copy): no recursion
            raise AttributeError(name)
        if name in ("__name__", "__qualname__") and "name" in self._byz_target:
            # A global's names are known here (a function's, as the tests print them).
            names = [str(self._byz_target["name"]), *self._byz_path]
            return names[-1] if name == "__name__" else ".".join(names)
        if name.startswith("__"):
            raise AttributeError(name)
        link = self._byz_check()
        return link.get(self._byz_target, (*self._byz_path, name), self._byz_generation)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("the tests cannot set attributes of the solution's objects")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("the tests cannot delete attributes of the solution's objects")

    def __repr__(self) -> str:
        name = self._byz_target.get("name") or f"object {self._byz_target.get('object')}"
        return f"<the solution's {'.'.join([str(name), *self._byz_path])}>"


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


def _outcome(error: BaseException, source: str, cpu_s: float = 0.0) -> dict[str, Any]:
    if isinstance(error, _TestTimeout):
        return {"status": "timed_out"}
    if isinstance(error, _CpuLimit):
        return {"status": "timed_out", "message": f"CPU-time limit of {cpu_s:g} s reached"}
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


def tester(control_fd: int, result_fd: int, tests_fd: int, ready_fd: int = -1) -> None:
    """Run every test read from ``tests_fd`` (JSON: ``tests``, ``test_timeout_s``,
    ``load_timeout_s``, ``cpu_s``, ``entry_point``) against the solution, and write the
    outcomes (JSON) on ``result_fd``. ``ready_fd`` (without root) is closed once this process
    is not dumpable: the solution starts then. With ``entry_point``, each test ends with
    ``check(ENTRY_POINT)``, which is given the solution's own ``ENTRY_POINT`` even where
    that is a built-in's name (the tests' code still sees the built-in)."""
    import signal

    _not_dumpable()
    if ready_fd >= 0:
        os.close(ready_fd)
    spec = json.loads(_read_all(tests_fd))
    tests: list[str] = spec["tests"]
    cpu_s = float(spec.get("cpu_s") or 0.0)
    entry: str | None = spec.get("entry_point")
    control = socket.socket(fileno=control_fd)
    link = _Link(control, cpu_s)
    signal.signal(signal.SIGALRM, _on_alarm)
    outcomes: list[dict[str, Any]] = []
    base: dict[str, Any] = {"__name__": "__main__", "__builtins__": __builtins__}
    callables: dict[str, Any] = {}  # the solution's, built-in names included
    try:
        signal.setitimer(signal.ITIMER_REAL, spec["load_timeout_s"])
        hello = receive(control)
        signal.setitimer(signal.ITIMER_REAL, 0)
        if type(hello) is not dict or hello.get("loaded") is not True:
            error = hello.get("error") if type(hello) is dict else None
            raise SolutionError(error if type(error) is dict else {"type": "?", "message": ""})
        # Functions (decorated or not: ``fib.cache_info()``), callable objects and classes
        # alike: a handle each.
        for name in [*hello["functions"], *hello.get("classes", ())]:
            if type(name) is str:
                callables[name] = _Remote(link, {"name": name}, (), 0)
        base.update((name, each) for name, each in callables.items() if _offered(name))
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
        first = _outcome(error, "", cpu_s)
        if first["status"] == "timed_out" and "message" not in first:
            first["message"] = "the solution did not finish loading in time"
        outcomes = [first] + [{"status": "not_run"}] * (len(tests) - 1)
        _write(result_fd, outcomes)
        return
    for test in tests:
        namespace = dict(base)
        source = test if test.endswith("\n") else test + "\n"
        call = None
        if entry is not None:
            # Compiled on its own line after the tests (so outcomes name it), and run where
            # the entry point is the solution's: the tests' own names stay theirs.
            line = "\n" * source.count("\n") + f"check({entry})\n"
            call = compile(line, TESTS_FILE, "exec", dont_inherit=True)
            source += f"check({entry})\n"
        try:
            signal.setitimer(signal.ITIMER_REAL, spec["test_timeout_s"])
            link.next_worker()
            exec(compile(test, TESTS_FILE, "exec", dont_inherit=True), namespace)
            if call is not None and entry is not None:
                exec(call, _with_entry(namespace, entry, callables.get(entry)))
            signal.setitimer(signal.ITIMER_REAL, 0)
            outcomes.append({"status": "passed"})
        except BaseException as error:
            signal.setitimer(signal.ITIMER_REAL, 0)
            outcomes.append(_outcome(error, source, cpu_s))
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        sys.stdout.flush()
    _write(result_fd, outcomes)


def _with_entry(namespace: dict[str, Any], entry: str, solution: Any) -> dict[str, Any]:
    """The globals ``check(ENTRY)`` runs in: the tests' names, with ``entry`` the solution's
    callable, or, where it has none, undefined (never a built-in of that name)."""
    globals_ = dict(namespace)
    if solution is not None:
        globals_[entry] = solution
    else:
        globals_.pop(entry, None)
        globals_["__builtins__"] = {k: v for k, v in vars(builtins).items() if k != entry}
    return globals_


def _read_all(fd: int) -> bytes:
    data = bytearray()
    while chunk := os.read(fd, 65_536):
        data += chunk
    os.close(fd)
    return bytes(data)


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
        tester(int(argv[2]), int(argv[3]), int(argv[4]), int(argv[5]) if len(argv) > 5 else -1)


if __name__ == "__main__":
    main(sys.argv)
