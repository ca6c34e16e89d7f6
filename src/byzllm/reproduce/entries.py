"""The two papers' tables and figures, one command away: ``byzllm reproduce NAME``.

The SAC paper's Tables 1-6 and the rogue-agents paper's Tables 1-3 and Figs. 4-6. Table 1
(CodeGen) needs the HumanEval file, which the package does not ship: ``byzllm reproduce
ra-table1 --problems HumanEval.jsonl.gz``.

Each :class:`Reproduction` names a shipped config (``byzllm/configs/*.yaml``, ordinary configs
a user can copy and edit), the experiment that runs it, and how its results are set beside
the paper's published numbers, cell by cell with the difference. Runs default to the
simulated population, so every entry runs anywhere in seconds to minutes, and say so; the
usual ``--model`` options put real models in the loop.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from byzllm.errors import InputError

__all__ = ["REPRODUCTIONS", "Reproduction", "config_path", "get_reproduction"]

Summary = Sequence[tuple[Mapping[str, Any], Any]]


@dataclass(frozen=True)
class Reproduction:
    """One table or figure of a paper, and how to reproduce it."""

    name: str
    paper: str
    table: str
    description: str
    config: str
    #: consensus: the run's summary -> rows; monitor: the test games (or, with ``sizes``,
    #: {lineup size: games}) -> rows; codegen: the test problems' records -> rows.
    compare: Callable[[Any], list[dict[str, Any]]]
    #: Metric columns of the comparison, in order.
    metrics: tuple[str, ...]
    #: consensus, monitor (WhoDunit, GovSim: ``byzllm monitor``) or codegen.
    kind: str = "consensus"
    #: monitor: evaluate at these lineup sizes with the monitors trained on the config's.
    sizes: tuple[int, ...] = ()
    #: The shipped config of ``byzllm reproduce NAME --real`` (real local models), if any.
    real_config: str | None = None
    #: What the comparison leaves out or reads differently, printed under it and on the page.
    remark: str = ""


def _sac(
    name: str,
    table: str,
    description: str,
    config: str,
    compare: Callable[[Summary], list[dict[str, Any]]],
    metrics: tuple[str, ...],
    real_config: str | None = None,
) -> Reproduction:
    return Reproduction(
        name, "the SAC paper", table, description, config, compare, metrics,
        real_config=real_config,
    )  # fmt: skip


def _table(published_name: str, *, by_adversaries: bool = False) -> Callable[[Summary], Any]:
    def compare(summary: Summary) -> list[dict[str, Any]]:
        from . import consensus as paper

        published = getattr(paper, published_name)
        return paper.paper_comparison(summary, published, by_adversaries=by_adversaries)

    return compare


def _rounds(table: str) -> Callable[[Summary], Any]:
    def compare(summary: Summary) -> list[dict[str, Any]]:
        from . import consensus as paper

        return paper.round_comparison(summary, paper.PER_ROUND[table])

    return compare


def _rogue(
    name: str,
    table: str,
    description: str,
    config: str,
    compare: Callable[[Any], list[dict[str, Any]]],
    metrics: tuple[str, ...],
    sizes: tuple[int, ...] = (),
    kind: str = "monitor",
    remark: str = "",
    real_config: str | None = None,
) -> Reproduction:
    return Reproduction(
        name,
        "the rogue-agents paper",
        table,
        description,
        config,
        compare,
        metrics,
        kind,
        sizes,
        real_config=real_config,
        remark=remark,
    )


def _codegen_table1(problems: Any) -> list[dict[str, Any]]:
    from byzllm.reproduce.codegen import table1_comparison

    return table1_comparison(problems)


def _monitor(function: str, *args: Any) -> Callable[[Any], list[dict[str, Any]]]:
    def compare(games: Any) -> list[dict[str, Any]]:
        from . import monitor as paper

        published = [getattr(paper, a) for a in args]
        result: list[dict[str, Any]] = getattr(paper, function)(games, *published)
        return result

    return compare


_T1 = ("IAA", "FAA", "BFTI", "RA", "W_IAA", "W_FAA", "S_IAA", "S_FAA", "H_Majority")
_T5 = ("IAA", "FAA", "BFTI", "RA", "H_Majority")

REPRODUCTIONS: dict[str, Reproduction] = {
    r.name: r
    for r in (
        _sac(
            "sac-table1",
            "Table 1",
            "SAC vs CP-WBFT on γ-MERG, complete, Erdős–Rényi; n = 7 (4 strong, 2 weak, 1 replay)",
            "sac-table1.yaml",
            _table("TABLE_1"),
            _T1,
            real_config="real/sac-table1.yaml",
        ),
        _sac(
            "sac-table2",
            "Table 2",
            "per-round weak / strong accuracy of Table 1's runs",
            "sac-table1.yaml",
            _rounds("table2"),
            ("W", "S"),
        ),
        _sac(
            "sac-table3",
            "Table 3",
            "the commonsense setting with promoted models (strong 83%, weak 75% alone)",
            "sac-table3.yaml",
            _table("TABLE_3"),
            _T1,
        ),
        _sac(
            "sac-table4",
            "Table 4",
            "per-round weak / strong accuracy of Table 3's runs",
            "sac-table3.yaml",
            _rounds("table4"),
            ("W", "S"),
        ),
        _sac(
            "sac-table5",
            "Table 5",
            "adversaries vs weak agents: (b, w) in {(1, 2), (2, 1), (3, 0)}, n = 7",
            "sac-table5.yaml",
            _table("TABLE_5", by_adversaries=True),
            _T5,
        ),
        _sac(
            "sac-table6",
            "Table 6",
            "n = 9 (6 strong, 2 weak, 1 replay) incl. preferential attachment",
            "sac-table6.yaml",
            _table("TABLE_6"),
            _T5,
        ),
        _rogue(
            "ra-table1",
            "Table 1",
            "CodeGen on HumanEval (needs --problems): zero-shot, multi-agent, + monitor, Pass@1",
            "ra-table1.yaml",
            _codegen_table1,
            ("pass_at_1",),
            kind="codegen",
            remark=(
                "HumanEval: the held-out test problems (the monitors never saw them). "
                "LiveCodeBench: not run on simulated coders, whose code is the problem's "
                "reference solution or a broken copy of it (LiveCodeBench ships none); "
                "`byzllm codegen run --model ... --set livecodebench=FILE --set "
                "test_split=livecodebench` runs it with LLM roles. The paper's §5 text gives "
                "LiveCodeBench 20.4 (multi-agent) and 21.6 (with the monitor) where its "
                "Table 1 gives 19.3 and 21.8; we quote the table."
            ),
        ),
        _rogue(
            "ra-table2",
            "Table 2",
            "GovSim fishing with and without the monitor: Survival-Rate, Survival-Time, Efficiency",
            "ra-table2.yaml",
            _monitor("table2_comparison"),
            ("survival_rate", "survival_time", "efficiency"),
        ),
        _rogue(
            "ra-table3",
            "Table 3",
            "ablations on WhoDunitEnv-Asym: 2nd-best / worst monitors, resampling, baselines",
            "ra-table3.yaml",
            _monitor("table3_comparison"),
            ("success", "length"),
        ),
        _rogue(
            "ra-fig4",
            "Fig. 4",
            "live interventions on WhoDunitEnv-Asym: gain of one reset over none",
            "ra-fig4.yaml",
            _monitor("gain_comparison", "FIG4_GAINS"),
            ("gain",),
            real_config="real/ra-fig4.yaml",
        ),
        _rogue(
            "ra-fig5",
            "Fig. 5",
            "live interventions on WhoDunitEnv-Sym: gain of one reset over none",
            "ra-fig5.yaml",
            _monitor("gain_comparison", "FIG5_GAINS"),
            ("gain",),
        ),
        _rogue(
            "ra-fig6",
            "Fig. 6",
            "WhoDunitEnv-Asym, 6, 10, 14 suspects, monitors trained on 10: gains of 1, 2 resets",
            "ra-fig6.yaml",
            _monitor("size_comparison"),
            ("gain_1", "gain_2"),
            sizes=(6, 10, 14),
        ),
    )
}


def get_reproduction(name: str) -> Reproduction:
    """The entry ``name`` (a clear InputError listing the names otherwise)."""
    try:
        return REPRODUCTIONS[name]
    except KeyError:
        raise InputError(
            f"unknown table {name!r}; `byzllm reproduce --list` lists: {', '.join(REPRODUCTIONS)}"
        ) from None


def config_path(name: str) -> Path:
    """The path of a shipped config file (``byzllm/configs/NAME``)."""
    path = Path(str(resources.files("byzllm").joinpath("configs", name)))
    if not path.is_file():
        raise InputError(f"shipped config {name} is missing from the installed package")
    return path
