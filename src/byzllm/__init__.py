"""byzllm: multi-agent LLM systems that stay correct when some agents are wrong or malicious.

Layers (imports point down only)::

    cli                          the ``byzllm`` command
    experiments                  configs, runner, result store, reports
    protocols / envs / monitor   consensus protocols; game environments; monitors + interventions
    agents                       LLM-backed, simulated and Byzantine agents
    graphs / tasks / llm         topologies + robustness; datasets + answer checking; model access
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("byzllm")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
