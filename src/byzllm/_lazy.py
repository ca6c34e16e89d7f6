"""Package attributes loaded on first use (PEP 562), the one way every package does it.

A package's ``__init__`` that imports all its modules makes every user pay for the heaviest
of them: the run engine's store readers paid for the runner, the executors and numpy, the
consensus reports for the agents, the model layer and networkx. With :func:`lazy_attributes`
a package names where each public name lives and imports that module when the name is first
asked for (keeping the name in the package afterwards); type checkers see the names through
``if TYPE_CHECKING:`` imports beside the table.

Layer 0 (like :mod:`byzllm.errors`): it imports nothing else of byzllm.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_attributes"]


def lazy_attributes(package: str, where: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package`` that loads each name of ``where`` (name ->
    module, relative to ``package``: ``"._store"``) on first use; other names raise
    :class:`AttributeError` as usual."""

    def load(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        setattr(sys.modules[package], name, value)  # looked up once
        return value

    return load
