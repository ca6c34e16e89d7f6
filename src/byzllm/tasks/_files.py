"""Reading the users' benchmark files: text (``.gz`` too) and JSON objects, every failure a
one-line :class:`~byzllm.errors.InputError` naming the file (and line) at fault; the digest
of the records a file holds."""

from __future__ import annotations

import gzip
import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from byzllm._files import path_kind
from byzllm.errors import InputError

__all__ = ["claim_id", "json_array", "json_object", "read_text", "records_digest", "require_file"]


def require_file(file: Path) -> None:
    """An :class:`InputError` unless ``file`` is a regular file: ``no such file``, or what is
    there instead (a data set's path may name a folder, which only Commonsense reads)."""
    if file.is_file():
        return
    found = path_kind(file)
    raise InputError(f"{file}: " + (f"{found}, not a file" if found else "no such file"))


def read_text(path: str | Path) -> tuple[Path, str]:
    """The file at ``path`` and its UTF-8 text (decompressed when it ends in ``.gz``)."""
    file = Path(path)
    require_file(file)
    try:
        if file.suffix == ".gz":
            with gzip.open(file, "rt", encoding="utf-8") as fh:
                return file, fh.read()
        return file, file.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise InputError(f"{file}: not UTF-8 text ({err.reason})") from None
    except (OSError, EOFError) as err:
        # A system error's own words without the path; a damaged .gz file's message whole.
        reason = getattr(err, "strerror", None) or err
        raise InputError(f"{file}: cannot read ({reason})") from None


def _parse(text: str, where: str, expected: type, what: str, *, whole_file: bool) -> Any:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        # A whole file's syntax error names its line; a JSON-lines line is already named.
        at = f"{where}:{err.lineno}" if whole_file else where
        raise InputError(f"{at}: not valid JSON ({err.msg})") from None
    except (ValueError, RecursionError) as err:
        # An integer past Python's 4,300-digit limit, arrays nested thousands deep.
        raise InputError(f"{where}: unreadable JSON ({type(err).__name__})") from None
    if not isinstance(value, expected):
        raise InputError(f"{where}: expected {what}, got {type(value).__name__}")
    return value


def json_object(text: str, where: str) -> dict[str, Any]:
    """``text`` (a JSON-lines line) as a JSON object; ``where`` names it in the error."""
    obj: dict[str, Any] = _parse(text, where, dict, "a JSON object", whole_file=False)
    return obj


def json_array(text: str, file: Path, what: str = "a JSON array") -> list[Any]:
    """The whole text of ``file`` as a JSON array (of ``what``)."""
    items: list[Any] = _parse(text, str(file), list, what, whole_file=True)
    return items


def claim_id(seen: dict[str, str], task_id: str, where: str) -> None:
    """Record that ``where`` holds the question ``task_id``; an InputError when an earlier
    line already did. Runs, reports and splits key questions by id: two questions under one
    id would be counted as one question, and a seeded split could put the same problem in
    both its training and its validation part."""
    first = seen.setdefault(task_id, where)
    if first != where:
        raise InputError(f"{where}: id {task_id[:80]!r} already used at {first}")


def records_digest(records: Iterable[Any]) -> str:
    """16 hex digits of the SHA-256 of ``records`` (JSON values read from a file), each written
    compact with sorted keys, one line each: what a file holds, not how it is written, so other
    spacing, key order, blank lines, line breaks or compression keep it, while a value edited,
    or a record added, removed or moved, changes it."""
    digest = hashlib.sha256()
    for record in records:
        digest.update(json.dumps(record, sort_keys=True, separators=(",", ":")).encode())
        digest.update(b"\n")
    return digest.hexdigest()[:16]
