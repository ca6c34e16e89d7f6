"""Load and save graphs as JSON or as plain edge lists, validating everything read.

JSON (``*.json``)::

    {"format": "byzllm-graph", "version": 1, "directed": false, "n": 4,
     "edges": [[0, 1], [1, 2], [2, 3]], "construction": "chain", "params": {"n": 4}}

Edge list (any other suffix): one ``u v`` pair of ASCII numbers per line (whitespace or comma
separated), ``#`` comments. A first line ``# byzllm-graph n=4 directed=false`` (written by
:func:`save_graph`) fixes the node count so isolated nodes survive a round trip; that header
anywhere else, or a look-alike (``# byzllm-graph-v2``), is an error. Nodes are always
``0..n-1``: a label outside that range, or a gap in the labels of a header-less edge list, is
an error.

Reading parses into plain data first, so that :func:`load_graph_view` gives the solvers' view
of a file without loading networkx (about 190 ms of a small command's start).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from byzllm._files import refuse_pipe, write_text_atomic
from byzllm.errors import InputError

from ._core import GraphView, view_of_edges
from ._edge_counts import MAX_NODES

if TYPE_CHECKING:
    import networkx as nx

__all__ = [
    "MAX_NODES",
    "graph_from_json",
    "graph_to_json",
    "load_graph",
    "load_graph_view",
    "parse_edge_list",
    "save_graph",
    "write_edge_list",
]


#: The header :func:`write_edge_list` writes as the first line: ``key=value`` fields after
#: the word ``byzllm-graph``.
_HEADER = re.compile(r"#\s*byzllm-graph(?:\s+(.*))?")

#: A comment that starts as the header does. Any one that is not the first line's header is
#: refused, not read as a comment: a header further down (two files joined, a note above it)
#: or a later format's (``# byzllm-graph-v2``) was obeyed, the last one winning, and the
#: first-line rule was nowhere enforced; read as comments they would lose the node count
#: (or another format's meaning) without a word.
_HEADER_LIKE = re.compile(r"#\s*byzllm-graph")

#: A node number or count in an edge list, checked before ``int`` reads it: ASCII digits, as
#: ``save_graph`` writes them (``\d`` and ``int`` also take "٣" and full-width digits, and
#: ``str.isdigit`` "²", which ``int`` refuses), at most 9 of them (``int`` refuses over 4,300
#: digits; no graph here has a node past :data:`MAX_NODES`).
_NUMBER = re.compile(r"[0-9]{1,9}")

#: The line ends an edge list may use (Unix, Windows, old Mac), as ``open`` reads them:
#: ``str.splitlines`` also breaks at form feeds, vertical tabs, U+0085 and U+2028, so an error
#: after one of those named a line further on than the one an editor shows.
_LINE_END = re.compile(r"\r\n|\r|\n")


def _check_labels(G: nx.Graph[Any]) -> int:
    """The node count of a graph that can be saved as one that loads back: nodes 0..n-1,
    1 <= n <= MAX_NODES, no self-loop (a file loading refuses was written before)."""
    n = G.number_of_nodes()
    nodes = set(G.nodes)
    if nodes != set(range(n)) or any(isinstance(v, bool) for v in nodes):
        raise InputError(
            "saving needs nodes labelled 0..n-1; relabel first, e.g. with "
            "networkx.convert_node_labels_to_integers(G)"
        )
    if not 1 <= n <= MAX_NODES:
        raise InputError(f"saving needs 1..{MAX_NODES} nodes, the graph has {n}")
    loop = next((u for u, v in G.edges() if u == v), None)
    if loop is not None:
        raise InputError(f"self-loop on node {loop}: a graph file cannot hold one")
    return n


def graph_to_json(G: nx.Graph[Any]) -> dict[str, Any]:
    """The JSON document of ``G`` (nodes must be ``0..n-1``)."""
    import networkx as nx

    if not isinstance(G, nx.Graph):
        raise InputError(f"expected a networkx graph, got {type(G).__name__}")
    n = _check_labels(G)
    doc: dict[str, Any] = {
        "format": "byzllm-graph",
        "version": 1,
        "directed": G.is_directed(),
        "n": n,
        "edges": sorted([int(u), int(v)] for u, v in G.edges()),
    }
    if "construction" in G.graph:
        doc["construction"] = str(G.graph["construction"])
    params = G.graph.get("params")
    if isinstance(params, dict):
        doc["params"] = {str(k): v for k, v in params.items() if _jsonable(v)}
    return doc


def _jsonable(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def _shown(value: Any, width: int = 40) -> str:
    """``repr(value)`` cut to ``width`` characters, an error line's share: a file's values are
    the file's size (a 100,000-character label, a list where a number goes)."""
    text = repr(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def _node(value: Any, n: int, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{where}: node labels must be integers, got {_shown(value)}")
    if not 0 <= value < n:
        raise InputError(f"{where}: node {_shown(value)} is outside 0..{n - 1}")
    return value


@dataclass(frozen=True)
class _Parsed:
    """A graph file's content, checked: nodes ``0..n-1``, no self-loops."""

    n: int
    directed: bool
    edges: list[tuple[int, int]]
    graph_attributes: dict[str, Any] = field(default_factory=dict)
    where: str = "graph file"

    def __post_init__(self) -> None:
        for u, v in self.edges:
            if u == v:
                raise InputError(f"{self.where}: self-loop on node {u} is not allowed")

    def graph(self) -> nx.Graph[int]:
        import networkx as nx

        G: nx.Graph[int] = nx.DiGraph() if self.directed else nx.Graph()
        G.add_nodes_from(range(self.n))
        G.add_edges_from(self.edges)
        G.graph.update(self.graph_attributes)
        return G

    def view(self) -> GraphView:
        return view_of_edges(self.n, self.directed, self.edges)


def _check_n(n: Any, where: str) -> int:
    if isinstance(n, bool) or not isinstance(n, int):
        raise InputError(f"{where}: 'n' must be an integer, got {_shown(n)}")
    if not 1 <= n <= MAX_NODES:
        raise InputError(f"{where}: 'n' must be in 1..{MAX_NODES}, got {_shown(n)}")
    return n


def graph_from_json(doc: Any, *, where: str = "graph JSON") -> nx.Graph[int]:
    """Build a graph from a JSON document (a ``dict`` or a JSON string); validates it fully."""
    return _parse_json(doc, where).graph()


def _parse_json(doc: Any, where: str) -> _Parsed:
    if isinstance(doc, str | bytes):
        try:
            doc = json.loads(doc)
        except (ValueError, RecursionError) as err:
            raise InputError(f"{where}: not valid JSON ({err})") from None
    if not isinstance(doc, dict):
        raise InputError(f"{where}: expected a JSON object")
    if doc.get("format", "byzllm-graph") != "byzllm-graph":
        raise InputError(f"{where}: unknown format {_shown(doc.get('format'))}")
    version = doc.get("version", 1)
    if version != 1 or isinstance(version, bool):  # a later format may mean other things
        raise InputError(f"{where}: format version {_shown(version, 20)} (this byzllm reads 1)")
    n = _check_n(doc.get("n"), where)
    directed = doc.get("directed", False)
    if not isinstance(directed, bool):
        raise InputError(f"{where}: 'directed' must be true or false")
    raw_edges = doc.get("edges", [])
    if not isinstance(raw_edges, list):
        raise InputError(f"{where}: 'edges' must be a list of [u, v] pairs")
    edges = []
    for k, pair in enumerate(raw_edges):
        if not isinstance(pair, list | tuple) or len(pair) != 2:
            raise InputError(f"{where}: edge #{k} must be a [u, v] pair, got {_shown(pair, 60)}")
        edges.append((_node(pair[0], n, where), _node(pair[1], n, where)))
    attributes: dict[str, Any] = {}
    if isinstance(doc.get("construction"), str):
        attributes["construction"] = doc["construction"]
    if isinstance(doc.get("params"), dict):
        attributes["params"] = doc["params"]
    return _Parsed(n, directed, edges, attributes, where)


def write_edge_list(G: nx.Graph[Any]) -> str:
    """Edge-list text of ``G`` with a header line carrying ``n`` and ``directed``."""
    n = _check_labels(G)
    lines = [f"# byzllm-graph n={n} directed={'true' if G.is_directed() else 'false'}"]
    # int(): labels equal to 0..n-1 that are not ints (0.0, 1.0) pass _check_labels, as they do
    # for JSON, and must be written as the integers loading expects, not "0.0 1.0".
    lines += [f"{int(u)} {int(v)}" for u, v in sorted(G.edges())]
    return "\n".join(lines) + "\n"


def parse_edge_list(
    text: str, *, n: int | None = None, directed: bool | None = None, where: str = "edge list"
) -> nx.Graph[int]:
    """Parse edge-list text (see the module docstring)."""
    return _parse_edge_list(text, n, directed, where).graph()


def _header_fields(fields: str, where: str) -> tuple[int | None, bool | None]:
    """``n`` and ``directed`` of a first-line header's ``key=value`` fields (others are
    ignored, as unknown JSON keys are); a key given twice is an error, not the last one."""
    values: dict[str, str] = {}
    for key, value in re.findall(r"(\w+)=(\S+)", fields):
        if key in values:
            raise InputError(f"{where}:1: {_shown(key)} given twice in the header")
        values[key] = value
    n = values.get("n")
    if n is not None and not _NUMBER.fullmatch(n):
        raise InputError(f"{where}:1: bad n={_shown(n)}")
    directed = values.get("directed")
    if directed not in (None, "true", "false"):
        raise InputError(f"{where}:1: directed must be true or false")
    return (
        None if n is None else int(n),
        None if directed is None else directed == "true",
    )


def _node_number(token: str, where: str, lineno: int) -> int:
    """A node number of an edge list; the error says what is wrong with the token."""
    if _NUMBER.fullmatch(token):
        return int(token)
    if token.isascii() and token.isdigit():
        raise InputError(
            f"{where}:{lineno}: node number {_shown(token)} is too long "
            f"(graphs have at most {MAX_NODES:,} nodes)"
        )
    raise InputError(f"{where}:{lineno}: {_shown(token)} is not a node number (digits 0-9)")


def _parse_edge_list(text: str, n: int | None, directed: bool | None, where: str) -> _Parsed:
    header_n: int | None = None
    header_directed: bool | None = None
    pairs: list[tuple[int, int]] = []
    for lineno, raw in enumerate(_LINE_END.split(text), start=1):
        line = raw.strip()
        if _HEADER_LIKE.match(line):
            header = _HEADER.fullmatch(line)
            if header is None:
                raise InputError(
                    f"{where}:{lineno}: unknown header {_shown(line)}; this byzllm reads "
                    "'# byzllm-graph n=<nodes> directed=<true|false>'"
                )
            if lineno != 1:
                raise InputError(
                    f"{where}:{lineno}: the '# byzllm-graph' header must be the first line "
                    "(and only that one)"
                )
            header_n, header_directed = _header_fields(header.group(1) or "", where)
            continue
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        fields = re.split(r"[,\s]+", line)
        if len(fields) != 2:
            raise InputError(f"{where}:{lineno}: expected two node numbers, got {_shown(raw, 60)}")
        pairs.append(
            (_node_number(fields[0], where, lineno), _node_number(fields[1], where, lineno))
        )
    if n is None:
        n = header_n
    if directed is None:
        directed = bool(header_directed)
    if n is None:
        labels = {v for pair in pairs for v in pair}
        if not labels:
            raise InputError(f"{where}: no edges and no node count")
        n = _check_n(max(labels) + 1, where)  # first: one label 999999999 built a set of 1e9
        missing = sorted(set(range(n)) - labels)
        if missing:
            shown = ", ".join(map(str, missing[:5])) + (" …" if len(missing) > 5 else "")
            # Name the header line: `graph check` takes no node count, so "give the node
            # count" alone left a file with an isolated node uncheckable from the CLI.
            raise InputError(
                f"{where}: node labels must be 0..n-1 without gaps (missing {shown}); "
                "to keep isolated nodes give the node count as a first line "
                "'# byzllm-graph n=<nodes>'"
            )
    n = _check_n(n, where)
    edges = [(_node(u, n, where), _node(v, n, where)) for u, v in pairs]
    return _Parsed(n, directed, edges, where=where)


def save_graph(G: nx.Graph[Any], path: str | Path) -> Path:
    """Write ``G`` as JSON (``*.json``) or as an edge list (any other suffix)."""
    target = Path(path)
    if target.suffix.lower() == ".json":
        text = json.dumps(graph_to_json(G), indent=1) + "\n"
    else:
        text = write_edge_list(G)
    return write_text_atomic(target, text)


def load_graph(
    path: str | Path, *, n: int | None = None, directed: bool | None = None
) -> nx.Graph[int]:
    """Read a graph written by :func:`save_graph` (or by hand); JSON when ``*.json``.

    ``n`` and ``directed`` apply to edge lists (they override the header line).
    """
    return _read(path, n, directed).graph()


def load_graph_view(
    path: str | Path, *, n: int | None = None, directed: bool | None = None
) -> GraphView:
    """The file :func:`load_graph` reads, as the robustness solvers' bitmask view.

    Same checks and errors as :func:`load_graph`, without loading networkx: for a quick check of
    a small graph (``r_robustness`` and ``rs_robustness`` take the view as they take the
    graph).
    """
    return _read(path, n, directed).view()


def _read(path: str | Path, n: int | None, directed: bool | None) -> _Parsed:
    source = Path(path)
    try:
        refuse_pipe(source)
        raw = source.read_bytes()
    except OSError as err:
        raise InputError(f"cannot read {source}: {err.strerror or err}") from None
    try:
        text = raw.decode("utf-8-sig")  # an editor's byte-order mark is not part of the text
    except UnicodeDecodeError:
        raise InputError(f"{source}: not UTF-8 text") from None
    if source.suffix.lower() == ".json":
        return _parse_json(text, str(source))
    return _parse_edge_list(text, n, directed, str(source))
