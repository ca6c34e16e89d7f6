"""byzllm: multi-agent LLM systems that stay correct when some agents are wrong or malicious.

Layers (imports point down only)::

    cli                          the ``byzllm`` command
    experiments                  configs, runner, result store, reports
    protocols / envs / monitor   consensus protocols; game environments; monitors + interventions
    agents                       LLM-backed, simulated and Byzantine agents
    graphs / tasks / llm         topologies + robustness; datasets + answer checking; model access
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
