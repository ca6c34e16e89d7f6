"""What the viewer's tests share: opening a page in headless Chromium, and copying stored
records of any kind into another store as they are."""

from __future__ import annotations

import functools
import subprocess
from typing import ClassVar

from pydantic import ConfigDict

from byzllm.runs import Record


def dump_dom(chromium: str, url: str) -> tuple[str, list[str]]:
    """The DOM of ``url`` once its script is done and the console errors Chromium logged.

    The virtual-time budget lets the page's own asynchronous work (a chunk of traces loading
    and inflating when a unit opens from the fragment) finish before the DOM is dumped."""
    proc = subprocess.run(
        [chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
         "--enable-logging=stderr", "--v=0", "--virtual-time-budget=10000", "--dump-dom", url],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    errors = [
        line
        for line in proc.stderr.splitlines()
        if "CONSOLE" in line and ("Uncaught" in line or "error" in line.lower())
    ]
    return proc.stdout, errors


class _Copy(Record):
    """A stored record copied as it is (every field kept)."""

    model_config = ConfigDict(extra="allow")


@functools.cache
def record_class(kind: str) -> type[Record]:
    """A record class of ``kind`` that keeps whatever fields it is given."""
    namespace = {"kind": kind, "__annotations__": {"kind": ClassVar[str]}}
    return type(f"Copy_{kind}", (_Copy,), namespace)
