"""The page of a consensus run: Table 1 and Table 2 with intervals, health, plots, questions.

The summary tables are the rows of ``byzllm consensus report`` (the same functions), so the
page and ``byzllm consensus report RUN_DIR --json`` agree to the digit. Each question opens
its graph (adversaries marked) and, per round and agent, the answer, the scores it gave and
received, whom it retained or filtered, and its confidence (the SAC paper, Algorithm 1;
CP-WBFT's reported confidence).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic_core import to_json

from byzllm.protocols import COUNT_FIELDS

from ._health import health_section
from ._html import Section, Units, bounded, esc, render_data, table_html

__all__ = ["ROUNDS_JS", "consensus_sections", "heatmap_html"]


_GROUP_COLOUR = {"strong": "#0969da", "weak": "#bf8700", "byzantine": "#cf222e"}


def _graph_svg(n: int, edges: Sequence[Sequence[int]], groups: Sequence[str]) -> str:
    """The communication graph on a circle; adversaries red, weak amber, strong blue."""
    size, radius = 220, 85
    pos = [
        (
            size / 2 + radius * math.cos(2 * math.pi * i / max(n, 1) - math.pi / 2),
            size / 2 + radius * math.sin(2 * math.pi * i / max(n, 1) - math.pi / 2),
        )
        for i in range(n)
    ]
    # The shared attributes sit on two groups that the lines and the labels inherit (the
    # same drawing, half the markup: every question's detail holds its graph).
    lines = "".join(
        f'<line x1="{pos[u][0]:.1f}" y1="{pos[u][1]:.1f}" x2="{pos[v][0]:.1f}" '
        f'y2="{pos[v][1]:.1f}"/>'
        for u, v in edges
        # An edge of an edited store may name no node (null, a text): it is not drawn.
        if isinstance(u, int) and isinstance(v, int) and 0 <= u < n and 0 <= v < n
    )
    nodes = "".join(
        f'<circle cx="{x:.1f}" cy="{y:.1f}" r="13" fill="{_GROUP_COLOUR.get(g, "#57606a")}"/>'
        f'<text x="{x:.1f}" y="{y + 4:.1f}">{i}</text>'
        for i, ((x, y), g) in enumerate(zip(pos, groups, strict=False))
    )
    # "●" as its character reference: a detail of ASCII only is three times quicker to pack
    # into its chunk's JSON (the same text on the page).
    legend = " ".join(
        f'<span style="color:{c}">&#9679; {g}</span>' for g, c in _GROUP_COLOUR.items()
    )
    return (
        f'<svg class="graph" width="{size}" height="{size}" viewBox="0 0 {size} {size}">'
        f'<g stroke="#8c959f" stroke-width="1">{lines}</g>'
        f'<g fill="#fff" text-anchor="middle" font-size="11">{nodes}</g>'
        f"</svg><div class='note'>{legend}</div>"
    )


#: The page's renderer of a question's rounds table (``byzllmRender.rounds``), from the data
#: :func:`_rounds_data` packs: per round and agent the answer, ✓ or ✗, its self score, the
#: scores it gave and (read from the others' rows) received, its confidence, whom it kept and
#: whom it dropped. Numbers print as Python's ``{:.2f}`` does (exact ties to even, ``-0.00``).
#: The data comes from a record, so nothing in it is trusted: every value goes into the HTML
#: escaped (as :func:`~._html.esc` does, bidirectional controls shown as ``[U+202E]``) or as
#: a number checked to be one, and a row or field of the wrong shape shows as ``-``.
ROUNDS_JS = r"""
byzllmRender.rounds=function(d){
  function esc(v){return v===null||v===undefined?'-':String(v).replace(/&/g,'&amp;')
    .replace(/</g,'&lt;').replace(/>/g,'&gt;').replace(/"/g,'&quot;').replace(/'/g,'&#x27;')
    .replace(/[\u202A-\u202E\u2066-\u2069]/g,function(c){
      return '[U+'+c.charCodeAt(0).toString(16).toUpperCase()+']';});}
  function int(v){return typeof v==='number'?String(v):esc(v);}
  function list(v){return Array.isArray(v)?v:[];}
  function dict(v){return v!==null&&typeof v==='object'&&!Array.isArray(v)?v:{};}
  function f2(x){
    if(typeof x!=='number')return esc(x);  // a text: not finite, printed by Python
    if(Object.is(x,-0))return '-0.00';
    var e=x*8;
    if(Number.isInteger(e)&&e%2!==0){  // an exact tie (odd eighths): Python rounds to even
      var k=Math.floor(Math.abs(x)*100);
      if(k%2===0)return (x<0?'-':'')+(k/100).toFixed(2);
    }
    return x.toFixed(2);
  }
  var groups=list(d.groups),rounds=list(d.rounds);
  var h="<table class='rounds'><thead><tr><th>agent</th>";
  rounds.forEach(function(rnd,t){h+='<th>'+(t===0?'init':'round '+t)+'</th>';});
  h+='</tr></thead><tbody>';
  groups.forEach(function(group,i){
    h+='<tr><td>'+i+' '+esc(group)+'</td>';
    rounds.forEach(function(rnd){
      rnd=list(rnd);
      var row=rnd[i];
      if(!Array.isArray(row)){h+='<td>-</td>';return;}
      var scores=dict(row[3]);
      var bits=[esc(row[0])+' '+(row[1]?"<span class='ok'>✓</span>":"<span class='bad'>✗</span>")];
      if(row[2]!==null)bits.push('self '+f2(row[2]));
      var gave=Object.keys(scores).map(Number).sort(function(a,b){return a-b;});
      if(gave.length)
        bits.push('gave '+gave.map(function(j){return '→'+j+' '+f2(scores[j]);}).join(', '));
      var got=[];
      rnd.forEach(function(other,j){
        var given=dict(Array.isArray(other)?other[3]:null);
        if(j!==i&&Object.prototype.hasOwnProperty.call(given,String(i)))
          got.push(j+'→ '+f2(given[i]));});
      if(got.length)bits.push('got '+got.join(', '));
      if(row[4]!==null)bits.push('conf '+f2(row[4]));
      var kept=list(row[5]),dropped=list(row[6]);
      if(kept.length)bits.push('kept '+kept.map(int).join(','));
      if(dropped.length)
        bits.push("<span class='bad'>dropped "+dropped.map(int).join(',')+'</span>');
      h+='<td>'+bits.join('<br>')+'</td>';
    });
    h+='</tr>';
  });
  return h+'</tbody></table>';
};
"""


#: A question's rounds data above this many characters is looked through for texts to cut
#: (a run's usual data is a few kilobytes; a 10 MB answer was written whole).
_ROUNDS_TEXT = 200_000


#: A stored round row's fields that :data:`ROUNDS_JS` shows, in its order.
_SHOWN = ("answer", "correct", "self_score", "scores", "confidence", "retained", "filtered")
_pick_shown = operator.itemgetter(*_SHOWN)


def _shown(row: Mapping[str, Any]) -> tuple[Any, ...]:
    """:data:`_SHOWN` of a row that may lack some (a hand-made record): their defaults."""
    return (
        row.get("answer"),
        bool(row["correct"]),
        row.get("self_score"),
        row.get("scores") or {},
        row.get("confidence"),
        row.get("retained") or [],
        row.get("filtered") or [],
    )


def _rounds_data(trace: Mapping[str, Any]) -> str:
    """A trace's rounds as the JSON :data:`ROUNDS_JS` renders: groups, and per round and agent
    [answer, correct, self score, scores given, confidence, kept, dropped]."""
    rounds = trace["rounds"]
    try:
        # A stored row has every field: picked in C, a third of the time of the lookups.
        shown = [list(map(_pick_shown, rnd)) for rnd in rounds]
    except KeyError:
        shown = [list(map(_shown, rnd)) for rnd in rounds]
    data = {"groups": trace["groups"], "rounds": shown}
    # pydantic-core's serializer: a third of json.dumps's time (its floats' repr dominated);
    # any form of a number parses back to the same double in the page.
    try:
        text = to_json(data).decode("utf-8")
    except ValueError:  # a value nested past the serializer's limit (a tampered record)
        text = ""
    if not text or "NaN" in text or "Infinity" in text or len(text) > _ROUNDS_TEXT:
        # Rare: a score that is not a number, a very long text, a deeply nested value.
        text = to_json(bounded(data)).decode("utf-8")
    return text


#: A graph's SVG by (nodes, edges, groups): a run's questions share a few hundred graphs.
_GraphKey = tuple[int, tuple[tuple[int, ...], ...], tuple[str, ...]]


def _detail(record: Mapping[str, Any], graphs: dict[_GraphKey, str]) -> str:
    """A question's detail: what ran and the truth, the graph (drawn once per distinct graph,
    kept in ``graphs``), and the rounds table as data the page renders on opening."""
    trace = record["trace"]
    groups = trace["groups"]
    n = len(groups)
    head = (
        f"<p><b>{esc(record['protocol'])}</b> on <b>{esc(record['topology'])}</b>, "
        f"{esc(record['composition'])}, F={esc(record['F'])}, T={esc(record['T'])}, "
        f"seed {esc(record['seed'])}, question <b>{esc(record['task_id'])}</b>; "
        f"truth <b>{esc(trace['truth'])}</b>; adversaries at "
        f"{esc(', '.join(str(v) for v in record.get('byzantine_nodes', [])) or 'none')}</p>"
    )
    edges = record.get("edges", [])
    key = (n, tuple(tuple(e) for e in edges), tuple(groups))
    graph = graphs.get(key)
    if graph is None:
        graph = graphs[key] = _graph_svg(n, edges, groups)
    table = render_data("rounds", _rounds_data(trace))
    return head + f"<div style='display:flex;gap:18px;align-items:flex-start'>{graph}{table}</div>"


#: The round plot's series, in drawing order, with their colours (matplotlib's first three).
_ROUND_SERIES = (("strong", "#1f77b4"), ("weak", "#ff7f0e"), ("accuracy", "#2ca02c"))


def _round_plot_svg(meta: Mapping[str, Any], metrics: Any) -> str:
    """Strong / weak / all-agent accuracy per round as inline SVG, written directly: a line
    chart needs no plotting library, and matplotlib took a third of a 10,000-unit page's
    build for two dozen of them."""
    width, height = 420, 260
    left, right, top, bottom = 46, 330, 26, 218  # the plot area
    rounds = [r.round for r in metrics.per_round]
    last = max(rounds[-1], 1) if rounds else 1

    def x(t: float) -> float:
        return left + (right - left) * t / last

    def y(percent: float) -> float:
        return bottom - (bottom - top) * percent / 100

    # F and T name the configuration too, as Table 1 groups it: a run of several F gave
    # plots of one title.
    bounds = "".join(f" · {key}={meta[key]}" for key in ("F", "T") if meta.get(key) is not None)
    parts = [
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' "
        f"viewBox='0 0 {width} {height}' font-family='sans-serif' font-size='10'>",
        f"<text x='{(left + right) / 2:.0f}' y='14' text-anchor='middle' font-size='11'>"
        f"{esc(meta['protocol'])} · {esc(meta['topology'])} · {esc(meta['composition'])}"
        f"{esc(bounds)}</text>",
    ]
    for percent in range(0, 101, 25):
        parts.append(
            f"<line x1='{left}' x2='{right}' y1='{y(percent):.1f}' y2='{y(percent):.1f}' "
            f"stroke='{'#444' if percent == 0 else '#ddd'}'/>"
            f"<text x='{left - 5}' y='{y(percent) + 3:.1f}' text-anchor='end'>{percent}</text>"
        )
    for t in rounds:
        parts.append(f"<text x='{x(t):.1f}' y='{bottom + 14}' text-anchor='middle'>{t}</text>")
    parts.append(
        f"<text x='{(left + right) / 2:.0f}' y='{height - 10}' text-anchor='middle'>round</text>"
        f"<text transform='translate(12 {(top + bottom) / 2:.0f}) rotate(-90)' "
        "text-anchor='middle'>accuracy (%)</text>"
    )
    shown = 0
    for name, colour in _ROUND_SERIES:
        values = [getattr(r, name) for r in metrics.per_round]
        if not values or any(v is None for v in values):
            continue
        points = [(x(t), y(100 * v)) for t, v in zip(rounds, values, strict=True)]
        path = " ".join(f"{px:.1f},{py:.1f}" for px, py in points)
        parts.append(
            f"<polyline class='series-{name}' points='{path}' fill='none' stroke='{colour}' "
            "stroke-width='1.8'/>"
        )
        parts.extend(
            f"<circle cx='{px:.1f}' cy='{py:.1f}' r='3' fill='{colour}'>"
            f"<title>{name}, round {t}: {100 * v:.1f}%</title></circle>"
            for (px, py), t, v in zip(points, rounds, values, strict=True)
        )
        legend_y = top + 6 + 16 * shown
        parts.append(
            f"<line x1='{right + 14}' x2='{right + 34}' y1='{legend_y}' y2='{legend_y}' "
            f"stroke='{colour}' stroke-width='1.8'/>"
            f"<text x='{right + 40}' y='{legend_y + 3}'>{name}</text>"
        )
        shown += 1
    parts.append("</svg>")
    return "".join(parts)


def _heat_colour(value: float | None, scale: float) -> str:
    """A cell's background on the one diverging scale of the heat-map: red below zero, green
    above, white at zero, full colour at ±``scale`` points."""
    if value is None or value != value:
        return "#f6f8fa"
    share = max(-1.0, min(1.0, value / scale)) if scale > 0 else 0.0
    hue = 120 if share >= 0 else 0
    return f"hsl({hue},60%,{100 - 38 * abs(share):.0f}%)"


def heatmap_html(rows: Sequence[Mapping[str, Any]]) -> str:
    """The attack × protocol heat-map of a run with several attacks (``matrix_rows``): one
    table per topology, rows attack × adversaries b, columns protocols, each cell BFTI, BFTI
    over the honest agents and H-Majority with their 95% intervals, as ``byzllm consensus
    matrix`` prints them, coloured by BFTI on one scale shared by every table (the SAC
    paper, §5.1's metrics)."""
    from byzllm.experiments.consensus.matrix import cell_figures
    from byzllm.experiments.consensus.report import METHOD_LABELS, ORACLE_NOTE, TOPOLOGY_LABELS

    from ._glossary import definition

    oracle = {(r["attack"], r["adversaries"]) for r in rows if r.get("oracle_attack")}
    values = [100 * r["BFTI"] for r in rows if r.get("BFTI") is not None]
    scale = max([abs(v) for v in values if v == v] + [1.0])
    protocols = list(dict.fromkeys(r["protocol"] for r in rows))
    # A run of its own compositions (or of several F or T) can hold two configurations of
    # one attack and b: each then gets its row, named by its configuration (one cell hid the
    # other); a matrix's attack and b name its configuration alone.
    named = {(r["topology"], r["attack"], r["adversaries"], r["protocol"]) for r in rows}
    apart = len(named) < len(rows)

    def setting(r: Mapping[str, Any]) -> str:
        return f"{r.get('composition')}, F={r.get('F')}, T={r.get('T')}" if apart else ""

    parts = []
    for topology in dict.fromkeys(r["topology"] for r in rows):
        cells = {(r["attack"], r["adversaries"], setting(r), r["protocol"]): r for r in rows
                 if r["topology"] == topology}  # fmt: skip
        keys = list(dict.fromkeys((a, b, c) for a, b, c, _ in cells))
        head = (
            "<th>attack</th><th>b</th>"
            + ("<th>configuration</th>" if apart else "")
            + "".join(f"<th>{esc(METHOD_LABELS.get(p, p))}</th>" for p in protocols)
        )
        body = []
        for attack, b, configuration in keys:
            tds = []
            for protocol in protocols:
                r = cells.get((attack, b, configuration, protocol))
                if r is None:
                    tds.append("<td>-</td>")
                    continue
                # As `consensus matrix` prints a cell.
                bfti, honest, hmaj = cell_figures(r)
                colour = _heat_colour(None if r["BFTI"] is None else 100 * r["BFTI"], scale)
                tds.append(
                    f"<td class='heat' style='background:{colour}'>{esc(bfti)}"
                    f"<br><small>honest {esc(honest)}</small>"
                    f"<br><small>H-Maj {esc(hmaj)}</small></td>"
                )
            name = (attack or "none") + (" †" if (attack, b) in oracle else "")
            extra = f"<td>{esc(configuration)}</td>" if apart else ""
            body.append(f"<tr><td>{esc(name)}</td><td>{esc(b)}</td>{extra}{''.join(tds)}</tr>")
        parts.append(
            f"<h3>{esc(TOPOLOGY_LABELS.get(str(topology), topology))}</h3>"
            f"<table class='heatmap'><thead><tr>{head}</tr></thead>"
            f"<tbody>{''.join(body)}</tbody></table>"
        )
    tip = esc(definition("BFTI") or "")
    legend = (
        f"<p class='note'><span class='term' title='{tip}'>BFTI</span> in points with its 95% "
        f"interval; colour: BFTI on one scale for every table, red −{scale:.0f} … white 0 … "
        f"green +{scale:.0f}; honest: BFTI over the honest agents (an adversary that changes "
        "its own answer, as mimic does, moves BFTI by itself); H-Maj: H-Majority (%) with its "
        "95% interval.</p>"
    )
    if oracle:  # the matrix's PNG and table carry the same mark and note
        legend += f"<p class='note'>{esc(ORACLE_NOTE)}</p>"
    return legend + "".join(parts)


def _row(record: Mapping[str, Any], k: int, final: Sequence[int]) -> dict[str, Any]:
    """A question's row in the list; ``final``: its round counts at T (the summary's
    :data:`~byzllm.protocols.COUNT_FIELDS`), which give the honest agents right and the
    honest majority vote."""
    return {
        "id": str(record.get("unit_id") or k),
        "protocol": record["protocol"],
        "topology": record["topology"],
        "composition": record["composition"],
        "attack": (record.get("composition_config") or {}).get("attack") or "none",
        "seed": record["seed"],
        "question": record["task_id"],
        "honest right at T": f"{final[_HONEST_HITS]}/{final[_HONEST_AGENTS]}",
        # H-Majority's own vote and tie rule (the SAC paper, §5.1), as the summary counted it.
        "outcome": "correct" if final[_HONEST_WINS] else "wrong",
    }


#: Where the honest agents' hits and number, and the honest vote's win, sit in round counts.
_HONEST_HITS = COUNT_FIELDS.index("honest_hits")
_HONEST_AGENTS = COUNT_FIELDS.index("honest_agents")
_HONEST_WINS = COUNT_FIELDS.index("h_wins")


#: What names a configuration (as Table 1 groups questions), and what parse and request
#: health read of each record besides.
_CONFIGURATION = ("protocol", "topology", "composition", "F", "T")
_COUNTED = (*_CONFIGURATION, "simulated", "parse", "requests")


def consensus_sections(
    records: Iterable[Mapping[str, Any]], *, max_details: int, max_plots: int = 24
) -> tuple[list[Section], bool | str]:
    """The sections of a consensus run's page and whether it is simulated: a bool, or for a
    run where only some groups ran on a model the label saying which
    (:func:`~byzllm.runs.reports.partly_simulated_note`).

    ``records`` (``consensus_question`` dicts, as the store gives them) are read once, as
    they come: each gives its row, its detail and its counts to the summary, and is dropped,
    so a store's :meth:`~byzllm.runs.Store.iter_records` never holds the run.
    """
    from byzllm.experiments.consensus.report import (
        INTERVAL_NOTE,
        Summary,
        llm_groups,
        metrics_rows,
        results_label,
        round_rows,
        table_notes,
    )

    rows: list[dict[str, Any]] = []
    details: dict[str, str] = {}
    counted: list[dict[str, Any]] = []  # what parse and request health read of each record
    graphs: dict[_GraphKey, str] = {}
    summing = Summary()
    on_model: dict[str, str] = {}  # group -> model, for the groups an LLM played
    for k, record in enumerate(records):
        on_model = {**llm_groups(record), **on_model}  # a group's first model kept
        row = _row(record, k, summing.add(record)[-1])
        rows.append(row)
        if len(details) < max_details:
            details[row["id"]] = _detail(record, graphs)
        counted.append({name: record.get(name) for name in _COUNTED})
    summary = summing.result()
    simulated = any(meta["simulated"] for meta, _ in summary)
    table1 = metrics_rows(summary)
    label = results_label(simulated, on_model)
    for row, (meta, _) in zip(table1, summary, strict=True):
        row["F"], row["T"] = meta["F"], meta["T"]
        row["calls/q"] = f"{meta['calls_per_question']:.1f}"
        row["tokens/q"] = f"{meta['tokens_per_question']:.0f}"
    sections = [
        Section(
            "Table 1: §5.1 metrics per configuration (%)",
            table_html(
                table1,
                # What the brackets and the marks (an oracle attack's †) mean, as the CLI says.
                note="; ".join([f"brackets: {INTERVAL_NOTE}", *table_notes(table1)]),
                css="summary table1",
            ),
            anchor="table1",
        ),
        Section(
            "Table 2: accuracy per round (%)",
            table_html(round_rows(summary), note=f"brackets: {INTERVAL_NOTE}", css="summary"),
            anchor="table2",
        ),
    ]
    from byzllm.experiments.consensus.config import parse_label
    from byzllm.experiments.consensus.matrix import matrix_rows

    # The heat-map reads each configuration's attack and adversaries from its composition
    # label; a label of another shape (an edited store) has neither and stopped the page's
    # build, though Table 1 shows it like any other.
    cells = matrix_rows([c for c in summary if parse_label(str(c[0]["composition"]))])
    if len({(r["attack"], r["adversaries"]) for r in cells}) > 1:
        sections.append(
            Section("BFTI per attack × protocol (heat-map)", heatmap_html(cells), anchor="heatmap")
        )
    sections.append(health_section(counted, _CONFIGURATION))
    plots = "".join(_round_plot_svg(meta, m) for meta, m in summary[:max_plots])
    if len(summary) > max_plots:
        plots += f"<p class='note'>first {max_plots} of {len(summary)} configurations plotted</p>"
    sections.append(Section("Accuracy per round", f"<div>{plots}</div>", anchor="plots"))

    units = Units(
        columns=[
            "protocol",
            "topology",
            "composition",
            "attack",
            "seed",
            "question",
            "honest right at T",
            "outcome",
        ],
        filters=["protocol", "topology", "composition", "attack", "outcome"],
        rows=rows,
        details=details,
        missing_detail=(
            "this question's trace was left out of the page (--max-details); "
            "byzllm runs export writes every record"
        ),
        script=ROUNDS_JS,
    )
    sections.append(
        Section(
            "Questions (click one for its graph and rounds; outcome: the honest majority vote "
            "at T, as H-Majority counts it)",
            units=units,
            anchor="questions",
        )
    )
    return sections, label
