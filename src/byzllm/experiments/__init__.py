"""The experiments, one subpackage per domain: configs, records, units + work functions, reports.
Built on the run engine (byzllm.runs); shared here: reports, parse and request health, fitting.
May import: byzllm.runs and every layer below it (monitor, protocols, envs, agents, ...).

Each domain has ``config`` (pydantic), ``records`` (what one unit stores), ``experiment``
(its units and the top-level work function), ``report`` (summary rows with 95% intervals)
and ``fit`` (the simulator fitted to a real run): ``byzllm.experiments.consensus``,
``.whodunit``, ``.govsim``, ``.codegen`` and ``.monitor`` (monitors over the game
environments); ``_games_grid`` counts the units of a run of games. The domain-free
machinery they run on -- units, the runner, the store, repair, exports -- is
:mod:`byzllm.runs`.
"""

__all__: list[str] = []
