"""byzllm: multi-agent LLM systems that stay correct when some agents are wrong or malicious.

Layers, top to bottom (a module imports only from layers below its own; docs/architecture.md
draws the map and ``tests/test_architecture.py`` checks it)::

    cli                            the ``byzllm`` command
    reproduce                      the papers' tables and figures beside the published numbers
    view                           one offline HTML page per run
    experiments                    per domain: configs, records, units + work functions, reports
    runs                           the run engine: runner, executors, store, repair, intervals
    monitor                        uncertainty features, classifier, selection, interventions
    protocols / envs               consensus protocols; game environments
    agents / testing               LLM-backed, simulated and Byzantine agents; offline test doubles
    graphs / tasks / llm / sandbox topologies; datasets + answers; model access; code execution
    errors, _process, ...          the exception hierarchy and small shared helpers
"""

from __future__ import annotations

__all__ = ["__version__"]


def __getattr__(name: str) -> str:
    """``__version__``, looked up on first use: reading the installed metadata costs about
    100 ms, which every ``byzllm`` command would otherwise pay at start (PEP 562)."""
    if name != "__version__":
        raise AttributeError(f"module 'byzllm' has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("byzllm")
    except PackageNotFoundError:  # running from a source tree without installation
        found = "0.0.0+unknown"
    globals()["__version__"] = found
    return found
