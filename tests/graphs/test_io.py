"""Load/save round trips; garbage input gives InputError (hypothesis)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import networkx as nx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from byzllm.errors import InputError
from byzllm.graphs import (
    build,
    graph_from_json,
    graph_to_json,
    load_graph,
    load_graph_view,
    parse_edge_list,
    save_graph,
    write_edge_list,
)
from byzllm.graphs._core import graph_view, view_of_edges


@pytest.mark.parametrize("suffix", [".json", ".edges", ".txt"])
def test_round_trip(tmp_path: Path, suffix: str) -> None:
    G = build("merg", n=8)
    G.add_node(8)  # an isolated node must survive
    path = save_graph(G, tmp_path / f"g{suffix}")
    H = load_graph(path)
    assert sorted(H.nodes) == list(range(9))
    assert sorted(map(sorted, H.edges())) == sorted(map(sorted, G.edges()))
    assert not H.is_directed()


def test_directed_round_trip(tmp_path: Path) -> None:
    G = nx.DiGraph([(0, 1), (1, 2), (2, 0), (0, 2)])
    for suffix in (".json", ".edges"):
        H = load_graph(save_graph(G, tmp_path / f"d{suffix}"))
        assert H.is_directed() and set(H.edges()) == set(G.edges())


def test_json_keeps_construction() -> None:
    doc = graph_to_json(build("ring-lattice", n=7, k=2))
    assert doc["construction"] == "ring-lattice" and doc["params"]["k"] == 2
    assert graph_from_json(json.dumps(doc)).graph["construction"] == "ring-lattice"


def test_gapped_labels_are_an_error_without_a_node_count() -> None:
    with pytest.raises(InputError, match="without gaps"):
        parse_edge_list("0 1\n1 5\n")
    G = parse_edge_list("0 1\n1 5\n", n=6)
    assert G.number_of_nodes() == 6


def test_the_gap_error_names_the_header_line_that_keeps_isolated_nodes() -> None:
    # `graph check` takes no node count: the message must say how a file gives one, and the
    # line it names must load.
    with pytest.raises(InputError, match="'# byzllm-graph n=<nodes>'"):
        parse_edge_list("0 1\n1 5\n")
    assert parse_edge_list("# byzllm-graph n=6\n0 1\n1 5\n").number_of_nodes() == 6


def test_saving_needs_integer_labels(tmp_path: Path) -> None:
    G = nx.relabel_nodes(nx.path_graph(3), {0: "a"})
    with pytest.raises(InputError, match=r"0\.\.n-1"):
        save_graph(G, tmp_path / "g.json")
    with pytest.raises(InputError):
        write_edge_list(nx.path_graph([0, 2, 3]))


@pytest.mark.parametrize(
    "doc",
    [
        "[]",
        "{}",
        '{"n": 3, "edges": [[0, 3]]}',
        '{"n": 3, "edges": [[0, 0]]}',
        '{"n": 3, "edges": [[0]]}',
        '{"n": true, "edges": []}',
        '{"n": 10000000000, "edges": []}',
        '{"n": 3, "edges": [["0", 1]]}',
        '{"n": 3, "edges": {}}',
        '{"n": 3, "directed": "yes"}',
        '{"format": "other", "n": 2}',
        "{not json",
    ],
)
def test_bad_json_documents(doc: str) -> None:
    with pytest.raises(InputError):
        graph_from_json(doc)


def test_a_later_format_version_is_refused(tmp_path: Path) -> None:
    """A file of another format version loaded as version 1, without a word."""
    assert graph_from_json('{"version": 1, "n": 2, "edges": [[0, 1]]}').number_of_edges() == 1
    for version in ("2", "99", "true", '"1"'):
        with pytest.raises(InputError, match="format version"):
            graph_from_json(f'{{"version": {version}, "n": 2, "edges": [[0, 1]]}}')


def test_a_self_loop_in_a_file_names_the_file(tmp_path: Path) -> None:
    for name, text in [("g.json", '{"n": 3, "edges": [[1, 1]]}'), ("g.edges", "1 1\n0 2\n")]:
        (tmp_path / name).write_text(text, encoding="utf-8")
        with pytest.raises(InputError, match=rf"{name}.*self-loop on node 1"):
            load_graph(tmp_path / name)


def test_missing_and_binary_files(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read"):
        load_graph(tmp_path / "absent.json")
    blob = tmp_path / "blob.edges"
    blob.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(InputError):
        load_graph(blob)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=400))
def test_garbage_edge_lists_never_crash(text: str) -> None:
    try:
        G = parse_edge_list(text)
    except InputError:
        return
    assert sorted(G.nodes) == list(range(G.number_of_nodes()))
    assert nx.number_of_selfloops(G) == 0


@settings(max_examples=200, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers(-5, 12) | st.text(max_size=5),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
        max_leaves=20,
    )
)
def test_garbage_json_never_crashes(value: object) -> None:
    doc = value
    if isinstance(value, dict) and value and "n" not in value:
        doc = {"n": 4, **value}
    try:
        G = graph_from_json(json.dumps(doc))
    except InputError:
        return
    assert sorted(G.nodes) == list(range(G.number_of_nodes()))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 9), st.integers(0, 9)), max_size=40))
def test_edge_list_round_trip_property(pairs: list[tuple[int, int]]) -> None:
    text = "\n".join(f"{u},{v}" for u, v in pairs)
    try:
        G = parse_edge_list(text, n=10)
    except InputError:
        assert any(u == v for u, v in pairs)
        return
    again = parse_edge_list(write_edge_list(G))
    assert set(map(frozenset, again.edges())) == set(map(frozenset, G.edges()))


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=30) | st.sampled_from(["²", "٣", "1" * 5000, "0" * 12 + "3"]))
def test_any_node_count_in_the_header_loads_or_is_refused(value: str) -> None:
    """Header values ``str.isdigit`` passes but ``int`` refuses ("²", 5,000 digits) raised a
    ValueError from ``int`` instead of an InputError naming the line."""
    text = f"# byzllm-graph n={value}\n0 1\n"
    try:
        G = parse_edge_list(text)
    except InputError:
        return
    assert G.number_of_nodes() >= 2


def test_header_node_counts() -> None:
    assert parse_edge_list("# byzllm-graph n=4\n0 1\n").number_of_nodes() == 4
    for value in ["²", "1" * 5000, "-3", "4x"]:
        with pytest.raises(InputError, match=":1: bad n="):
            parse_edge_list(f"# byzllm-graph n={value}\n0 1\n")


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("0 1\n1 2\n# byzllm-graph n=6\n", ":3: the '# byzllm-graph' header must be the first"),
        ("# byzllm-graph n=6\n0 1\n# byzllm-graph n=9\n", ":3: the '# byzllm-graph' header"),
        ("# my graph\n# byzllm-graph n=4\n0 1\n", ":2: the '# byzllm-graph' header"),
        ("0 1\n# byzllm-graph directed=true\n", ":2: the '# byzllm-graph' header"),
        ("# byzllm-graph-v2 n=9\n0 1\n", ":1: unknown header '# byzllm-graph-v2 n=9'"),
        ("# byzllm-graph.v2 n=9\n0 1\n", ":1: unknown header"),
        ("#byzllm-graphx n=9\n0 1\n", ":1: unknown header"),
        ("0 1\n# byzllm-graph-v2 n=9\n", ":2: unknown header"),
        ("# byzllm-graph n=4 n=6\n0 1\n", ":1: 'n' given twice in the header"),
    ],
)
def test_the_header_is_the_first_line_only(text: str, error: str) -> None:
    """A header on any line was obeyed, the last of several winning, and a later format's
    ``# byzllm-graph-v2 n=9`` was read as this one's: the file loaded with 9 nodes."""
    with pytest.raises(InputError, match=re.escape(f"edge list{error}")):
        parse_edge_list(text)


@pytest.mark.parametrize(
    ("first", "nodes", "directed"),
    [
        ("# byzllm-graph n=4", 4, False),
        ("   #byzllm-graph\tn=4 directed=true", 4, True),
        ("# byzllm-graph", 2, False),
        ("# byzllm-graph n=5 weighted=no", 5, False),  # unknown fields are ignored
        ("# a byzllm-graph n=5", 2, False),  # a comment that does not start as the header
    ],
)
def test_first_line_headers(first: str, nodes: int, directed: bool) -> None:
    G = parse_edge_list(f"{first}\n0 1\n")
    assert (G.number_of_nodes(), G.is_directed()) == (nodes, directed)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.sampled_from(["0 1", "1,2", "# note", "", "2 3 # c"]), max_size=8),
    st.data(),
)
def test_a_header_loads_on_the_first_line_and_nowhere_else(
    lines: list[str], data: st.DataObject
) -> None:
    at = data.draw(st.integers(0, len(lines)))
    lines.insert(at, "# byzllm-graph n=7")
    text = "\n".join(lines) + "\n"
    if at == 0:
        assert parse_edge_list(text).number_of_nodes() == 7
        return
    with pytest.raises(InputError, match=f"edge list:{at + 1}: the '# byzllm-graph' header"):
        parse_edge_list(text)


@pytest.mark.parametrize(
    ("token", "error"),
    [
        ("١", "'١' is not a node number (digits 0-9)"),  # Arabic-Indic one
        ("１", "'１' is not a node number (digits 0-9)"),  # full-width one
        ("²", "'²' is not a node number"),
        ("-1", "'-1' is not a node number"),
        ("1.0", "'1.0' is not a node number"),
        ("1234567890", "node number '1234567890' is too long (graphs have at most 100,000"),
    ],
)
def test_a_bad_node_number_says_what_is_wrong_with_it(token: str, error: str) -> None:
    """``\\d`` took Arabic-Indic and full-width digits as node numbers ("٠ ١" loaded as the
    edge 0-1), and ten digits got "expected two node numbers" though two were given."""
    with pytest.raises(InputError, match=re.escape(f"edge list:2: {error}")):
        parse_edge_list(f"0 1\n0 {token}\n")
    with pytest.raises(InputError, match=r"edge list:1: bad n="):
        parse_edge_list(f"# byzllm-graph n={token}\n0 1\n")


def test_a_long_bad_token_is_quoted_shortly() -> None:
    for token in ["7" * 100_000, "x" * 100_000]:
        with pytest.raises(InputError) as err:
            parse_edge_list(f"0 {token}\n")
        assert len(str(err.value)) < 120


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(categories=["Nd", "No"]) | st.just("0"), max_size=12))
def test_node_numbers_are_ascii_digits_only(token: str) -> None:
    """Any run of digits of any script is read as a node number only when it is 1 to 9 ASCII
    digits; any other is refused with an error naming the token's line."""
    text = f"# byzllm-graph n=100000\n0 1\n5,{token}\n"
    if not re.fullmatch(r"[0-9]{1,9}", token):
        with pytest.raises(InputError, match=r"edge list:3: "):
            parse_edge_list(text)
    elif int(token) < 100_000 and int(token) != 5:
        assert parse_edge_list(text).has_edge(5, int(token))
    else:  # a node past n, or a self-loop
        with pytest.raises(InputError):
            parse_edge_list(text)


def test_huge_garbage_input_is_rejected_quickly() -> None:
    with pytest.raises(InputError):
        parse_edge_list("x" * 1_000_000)
    with pytest.raises(InputError):
        graph_from_json("[" * 100_000)


def _same_view_or_error(path: Path) -> None:
    """``load_graph_view`` gives what ``graph_view(load_graph(...))`` gives, error included."""
    try:
        G = load_graph(path)
    except InputError as err:
        with pytest.raises(InputError) as again:
            load_graph_view(path)
        assert str(again.value) == str(err)
        return
    view = load_graph_view(path)
    expected = graph_view(G, min_nodes=1)
    assert (view.labels, view.in_masks, view.out_masks, view.directed) == (
        expected.labels,
        expected.in_masks,
        expected.out_masks,
        expected.directed,
    )
    assert view.edge_count == G.number_of_edges()


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    pairs=st.lists(st.tuples(st.integers(0, 11), st.integers(0, 11)), max_size=40),
    directed=st.booleans(),
    header=st.booleans(),
    as_json=st.booleans(),
)
def test_the_view_of_a_file_is_the_view_of_its_graph(
    tmp_path: Path, pairs: list[tuple[int, int]], directed: bool, header: bool, as_json: bool
) -> None:
    if as_json:
        path = tmp_path / "g.json"
        doc = {"n": 12, "directed": directed, "edges": [list(p) for p in pairs]}
        path.write_text(json.dumps(doc), encoding="utf-8")
    else:
        path = tmp_path / "g.edges"
        first = f"# byzllm-graph n=12 directed={str(directed).lower()}\n" if header else ""
        path.write_text(first + "\n".join(f"{u} {v}" for u, v in pairs), encoding="utf-8")
    _same_view_or_error(path)


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("loop.edges", "0 1\n2 2\n"),
        ("gap.edges", "0 1\n3 4\n"),
        ("bad.edges", "0 x\n"),
        ("empty.edges", "# nothing\n"),
        ("label.json", '{"n": 3, "edges": [[0, 3]]}'),
        ("loop.json", '{"n": 3, "edges": [[1, 1]]}'),
        ("blob.json", "{not json"),
    ],
)
def test_the_view_reader_fails_as_the_graph_reader_does(
    tmp_path: Path, name: str, text: str
) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    _same_view_or_error(path)
    with pytest.raises(InputError, match="cannot read"):
        load_graph_view(tmp_path / "absent.json")


def test_the_view_of_a_built_graph_keeps_its_edges(tmp_path: Path) -> None:
    G = build("merg", n=9)
    G.add_node(9)  # isolated
    view = load_graph_view(save_graph(G, tmp_path / "g.json"))
    assert view.n == 10 and view.edge_count == G.number_of_edges()
    assert view.in_masks[9] == 0
    with pytest.raises(InputError, match="self-loops"):
        view_of_edges(3, False, [(0, 1), (2, 2)])


def test_one_huge_label_is_refused_before_anything_is_built(tmp_path: Path) -> None:
    """The gap check built set(range(n)) first: '0 999999999' exhausted memory."""
    path = tmp_path / "big.edges"
    path.write_text("0 999999999\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"'n' must be in 1\.\.100000"):
        load_graph(path)


def test_a_byte_order_mark_is_not_part_of_the_file(tmp_path: Path) -> None:
    for name, text in [("bom.edges", "0 1\n1 2\n"), ("bom.json", '{"n": 3, "edges": [[0, 1]]}')]:
        path = tmp_path / name
        path.write_bytes(b"\xef\xbb\xbf" + text.encode())
        assert load_graph(path).number_of_nodes() == 3


@pytest.mark.parametrize("suffix", [".json", ".edges"])
def test_labels_equal_to_integers_are_saved_as_integers(tmp_path: Path, suffix: str) -> None:
    """Float labels 0.0..n-1.0 pass the label check; the edge list wrote "0.0 1.0", which
    loading then refused."""
    G = nx.Graph([(0.0, 1.0), (1.0, 2.0)])
    path = save_graph(G, tmp_path / f"g{suffix}")
    assert sorted(load_graph(path).edges()) == [(0, 1), (1, 2)]


def test_saving_refuses_what_loading_would(tmp_path: Path) -> None:
    """An empty graph and a self-loop were saved, then refused when loaded back."""
    looped = nx.Graph([(0, 1), (1, 1)])
    for graph, why in [(nx.Graph(), "1..100000 nodes"), (looped, "self-loop on node 1")]:
        with pytest.raises(InputError, match=why):
            save_graph(graph, tmp_path / "g.json")
        assert not (tmp_path / "g.json").exists()


def test_an_error_names_the_line_an_editor_shows() -> None:
    """``str.splitlines`` also breaks at form feeds, vertical tabs, U+0085 and U+2028: a bad
    line after one was reported a line too far on."""
    for odd in ["\f", "\v", "\x1c", "\x85", "\u2028"]:
        with pytest.raises(InputError, match=r"edge list:2: 'x' is not a node number"):
            parse_edge_list(f"0 1{odd}\n0 x\n")
    # Windows and old Mac line ends are line ends.
    for end in ["\r\n", "\r"]:
        with pytest.raises(InputError, match=r"edge list:3: "):
            parse_edge_list(f"0 1{end}1 2{end}2 x{end}")


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(["0 1", "1,2", "# note", "", "  2\t0  ", "1 2 # c", "\f", "0 1\x85"]),
        max_size=12,
    ),
    st.sampled_from(["\n", "\r\n", "\r"]),
    st.data(),
)
def test_the_line_named_by_an_error_is_the_bad_line(
    lines: list[str], end: str, data: st.DataObject
) -> None:
    at = data.draw(st.integers(0, len(lines)))
    lines.insert(at, "0 x")
    with pytest.raises(InputError) as err:
        parse_edge_list(end.join(lines) + end)
    assert f"edge list:{at + 1}: " in str(err.value)


@pytest.mark.parametrize(
    "doc",
    [
        {"n": 3, "edges": [["x" * 100_000, 1]]},
        {"n": 3, "edges": [[10**4000, 1]]},
        {"n": list(range(50_000))},
        {"n": 10**4000},
        {"n": 3, "format": "y" * 100_000},
    ],
)
def test_a_json_error_quotes_a_value_shortly(doc: dict[str, object]) -> None:
    """The JSON reader quoted whatever value it refused whole: one error line of 100,000
    characters (a huge label, a list where 'n' goes, a long format name)."""
    with pytest.raises(InputError) as err:
        graph_from_json(json.dumps(doc))
    assert len(str(err.value)) < 200
