"""Every table of the two papers, one command away: ``byzllm reproduce NAME``.

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
    compare: Callable[[Summary], list[dict[str, Any]]]
    #: Metric columns of the comparison, in order.
    metrics: tuple[str, ...]
    kind: str = "consensus"


def _sac(
    name: str,
    table: str,
    description: str,
    config: str,
    compare: Callable[[Summary], list[dict[str, Any]]],
    metrics: tuple[str, ...],
) -> Reproduction:
    return Reproduction(name, "the SAC paper", table, description, config, compare, metrics)


def _table(published_name: str, *, by_adversaries: bool = False) -> Callable[[Summary], Any]:
    def compare(summary: Summary) -> list[dict[str, Any]]:
        from byzllm.experiments.consensus import paper

        published = getattr(paper, published_name)
        return paper.paper_comparison(summary, published, by_adversaries=by_adversaries)

    return compare


def _rounds(table: str) -> Callable[[Summary], Any]:
    def compare(summary: Summary) -> list[dict[str, Any]]:
        from byzllm.experiments.consensus import paper

        return paper.round_comparison(summary, paper.PER_ROUND[table])

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
