"""LocalServer's start: a server that dies on its first request is reported at start, by name.

A llama.cpp build whose instructions the CPU cannot run answers ``/v1/models`` and dies with
SIGILL on its first batch; the start's warm-up request finds that, and the error says how to
rebuild. The server here is a stand-in script (no model, no llama.cpp needed).
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import pytest

import byzllm.llm._serve as serve
from byzllm.llm import ModelUnavailableError
from byzllm.llm._local import GgufModel


def _stand_in(on_post: str) -> str:
    """A stand-in server's script: it lists one model, and on POST runs ``on_post``."""
    return """
import http.server, json, os, signal, sys, threading

class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        body = json.dumps({"data": [{"id": "fake"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
ON_POST

http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
""".replace("ON_POST", on_post)


_DIES_ON_FIRST_POST = _stand_in("        os.kill(os.getpid(), signal.SIG%s)")


class _StandIn(serve.LocalServer):
    def __init__(self, script: Path) -> None:
        self.script = script
        super().__init__("fake", port=0, start_timeout_s=30)

    def command(self) -> list[str]:
        return [sys.executable, str(self.script), str(self.port)]


@pytest.fixture
def no_model(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(serve, "require_llama_cpp", lambda what="": None)
    monkeypatch.setattr(serve, "resolve_gguf", lambda model: GgufModel(tmp_path / "x", "fake"))
    monkeypatch.setattr(serve, "_check_file", lambda gguf: None)


def test_exit_description_names_the_signal_and_the_rebuild() -> None:
    assert serve.exit_description(1) == "exited with code 1"
    assert serve.exit_description(0) == "exited with code 0"
    assert serve.exit_description(-int(signal.SIGKILL)) == "was killed by SIGKILL"
    illegal = serve.exit_description(-int(signal.SIGILL))
    assert illegal.startswith("was killed by SIGILL (llama-cpp-python was built for")
    assert "-DGGML_NATIVE=OFF" in illegal and "--force-reinstall" in illegal
    assert serve.exit_description(-200) == "was killed by signal 200"


@pytest.mark.usefixtures("no_model")
def test_a_server_that_dies_on_its_first_request_fails_its_start(tmp_path: Path) -> None:
    script = tmp_path / "server.py"
    script.write_text(_DIES_ON_FIRST_POST % "ILL")
    server = _StandIn(script)
    with pytest.raises(ModelUnavailableError, match="killed by SIGILL") as caught, server:
        pass
    assert "on its first request" in str(caught.value)
    assert not server.running


@pytest.mark.usefixtures("no_model")
def test_a_server_that_answers_its_first_request_starts(tmp_path: Path) -> None:
    script = tmp_path / "server.py"
    # The same server, answering the completion instead of dying.
    script.write_text(_stand_in("        self.do_GET()"))
    with _StandIn(script) as server:
        assert server.running
    assert not server.running


@pytest.mark.usefixtures("no_model")
def test_the_server_child_gets_the_python_path_and_no_secrets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The child's environment kept only PATH, HOME and the locale: a byzllm chosen with
    PYTHONPATH (a source tree) served with another installed copy's code, or not at all
    (no module named byzllm). Keys stay out of it all the same."""
    import json
    import urllib.request

    (tmp_path / "chosen").mkdir()
    (tmp_path / "chosen" / "serve_marker.py").write_text("WHERE = 'the chosen tree'\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "chosen"))
    monkeypatch.setenv("BYZLLM_TEST_API_KEY", "sk-never-in-the-child")
    script = tmp_path / "server.py"
    found = (
        "        try:\n"
        "            import serve_marker; where = serve_marker.WHERE\n"
        "        except ImportError:\n"
        "            where = 'not found'\n"
        "        seen = [where, 'sk-never-in-the-child' in os.environ.values()]\n"
    )
    script.write_text(
        _stand_in("        self.do_GET()").replace(
            '        body = json.dumps({"data": [{"id": "fake"}]}).encode()\n',
            found
            + '        body = json.dumps({"data": [{"id": "fake"}], "seen": seen}).encode()\n',
        )
    )
    with _StandIn(script) as server, urllib.request.urlopen(f"{server.base_url}/models") as reply:
        seen = json.loads(reply.read())["seen"]
    assert seen == ["the chosen tree", False]


def test_a_cut_short_model_file_is_one_error_before_any_server_starts(tmp_path: Path) -> None:
    """Only the file's first four bytes were checked: the child's traceback came back, exit 1."""
    pytest.importorskip("llama_cpp")
    from byzllm.errors import InputError

    cut = tmp_path / "cut.gguf"
    cut.write_bytes(b"GGUF" + b"\x03\x00\x00\x00" + bytes(4096))
    with pytest.raises(InputError, match="could not read the GGUF model"):
        serve.LocalServer(str(cut), port=0)


_DIES_AFTER_ITS_FIRST_ANSWER = _stand_in(
    "        self.do_GET()\n"
    '        print("about to die", file=sys.stderr, flush=True)\n'
    "        threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGILL)).start()"
)


@pytest.mark.usefixtures("no_model")
def test_serve_names_the_signal_of_a_server_that_dies_while_serving(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It said "exited with code -4": no signal, no rebuild hint, none of the server's output."""
    from typer.testing import CliRunner

    import byzllm.llm
    from byzllm.cli import app

    script = tmp_path / "server.py"
    script.write_text(_DIES_AFTER_ITS_FIRST_ANSWER)
    monkeypatch.setattr(byzllm.llm, "LocalServer", lambda model, **options: _StandIn(script))
    handler = signal.getsignal(signal.SIGTERM)
    try:
        result = CliRunner().invoke(app, ["serve", "--port", "0"])
    finally:
        signal.signal(signal.SIGTERM, handler)  # serve turns SIGTERM into Ctrl-C
    assert result.exit_code == 1, result.output
    assert "was killed by SIGILL (llama-cpp-python was built for" in result.stderr
    assert "-DGGML_NATIVE=OFF" in result.stderr and "about to die" in result.stderr
    assert "code -4" not in result.stderr
