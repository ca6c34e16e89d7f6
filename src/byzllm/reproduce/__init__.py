"""The papers' tables and figures: ``byzllm reproduce NAME``, simulated or with ``--real`` models.
Each entry runs a shipped config through its experiment and sets the result beside the paper's.
May import: byzllm.view, byzllm.experiments, byzllm.runs and every layer below them.

:mod:`~byzllm.reproduce.entries` lists the entries; :mod:`~byzllm.reproduce.consensus`,
:mod:`~byzllm.reproduce.codegen` and :mod:`~byzllm.reproduce.monitor` hold the papers'
published numbers and set a run's rows beside them; :mod:`~byzllm.reproduce.page` writes an
entry's page (comparison, gaps, sensitivity) and :mod:`~byzllm.reproduce.real_page` the page of
a ``--real`` consensus run.
"""

from .entries import REPRODUCTIONS, Reproduction, config_path, get_reproduction

__all__ = ["REPRODUCTIONS", "Reproduction", "config_path", "get_reproduction"]
