"""A run's page: inline CSS and JavaScript, no network, no server.

Everything a reader sees is rendered here in Python (tables, SVG, per-unit details), so the
numbers on the page are exactly the ones the report functions computed; the page's script
filters, paginates and opens details. A detail may leave a part to the page
(:func:`render_data`): its data as JSON, turned into HTML by a renderer of the list's own
script when the detail opens (a consensus question's rounds table: rendering 10,000 of them
in Python took longer than everything else a page's build does). Such a renderer writes
exactly the HTML the Python wrote before (``tests/view/test_rounds_render.py``).

Details (a unit's trace or transcript) either sit inline in the page (:func:`page`), or, for
every unit of a large run, in chunk files next to it (:func:`page_files`): ``NAME_files/u4-12.js``
holds 200 units' details as gzip-compressed JSON (base64) and hands them to the page by calling
a global function. The page loads a chunk with a ``<script>`` element when a reader opens one of
its units: browsers refuse ``fetch()`` of ``file://`` addresses but not scripts, so the folder
still opens offline, and gzip keeps a 10,000-unit run's folder to a few megabytes (the
browser's own ``DecompressionStream`` inflates it).

The page's state can also be set from its URL fragment (``#f.protocol=sac&open=UNIT&page=2``):
the script applies it through the same controls a reader uses (it sets a filter and fires its
``change`` event, goes to the unit's page and clicks its row, clearing a filter that hides
it), which is how the browser tests drive it; ``body[data-ready]`` is set once that is done
(a chunk loaded included), with ``body[data-ready-ms]``, the milliseconds since navigation it
took, and ``body[data-fcp-ms]``, those to the first contentful paint (the page's own clock,
read by ``benchmarks/viewer.py``).

Record text is model output and a store file can be edited, so nothing in a record is trusted:
every text goes through :func:`esc` (HTML-escaped, cut at :data:`TEXT_LIMIT` characters with a
visible mark, bidirectional control characters shown as ``[U+202E]`` so they cannot reorder
the page), data inside ``<script>`` elements is JSON with ``<``, ``>``, ``&``, U+2028 and
U+2029 escaped (:func:`script_json`), lone surrogates become U+FFFD before the page is
encoded, and a Content-Security-Policy lets only the page's own scripts and style run (by
their hashes; the chunk files they load, through ``'strict-dynamic'``) and loads nothing
from anywhere, so even a markup bug cannot load or run foreign script.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import html
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "CHUNK_UNITS",
    "MAX_DEPTH",
    "TEXT_LIMIT",
    "Section",
    "Units",
    "bounded",
    "cut",
    "esc",
    "page",
    "page_files",
    "render_data",
    "script_json",
    "table_html",
]

#: Units whose details share one chunk file (a chunk is loaded whole when one of them opens).
CHUNK_UNITS = 200

#: Characters of one text shown on the page (a 10 MB model reply was written whole); the
#: run's records keep the whole text.
TEXT_LIMIT = 20_000

#: Levels of nesting shown of a record's value (a deeply nested one crashed the page's build).
MAX_DEPTH = 24

#: Characters of a cell in a unit list (its detail shows more).
_CELL_LIMIT = 300

#: Bidirectional controls (embeddings, overrides, isolates): in model text they could reorder
#: what the page shows around them.
_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069]")

#: UTF-16 surrogates: a lone one (JSON text can hold "\\ud800") cannot be written as UTF-8.
_SURROGATE = re.compile("[\ud800-\udfff]")


def cut(text: str, limit: int = TEXT_LIMIT) -> str:
    """``text``, or its first ``limit`` characters and a line saying how much was left out (a
    cut with no mark read as the whole text)."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n… (cut: {len(text) - limit:,} more characters of {len(text):,})"


def _bidi_mark(match: re.Match[str]) -> str:
    return f"[U+{ord(match.group()):04X}]"


def visible(text: str, limit: int = TEXT_LIMIT) -> str:
    """``text`` as the page shows it: cut at ``limit`` characters, bidirectional controls
    written as ``[U+202E]``."""
    return _BIDI.sub(_bidi_mark, cut(text, limit))


def bounded(value: Any, depth: int = MAX_DEPTH, limit: int = TEXT_LIMIT) -> Any:
    """``value`` safe to serialize and show: nesting below ``depth`` levels replaced by a
    line saying so, texts cut at ``limit`` characters (:func:`cut`) with a lone surrogate as
    U+FFFD (no UTF-8 for it), numbers that are not finite as Python prints them (JSON has
    none)."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", cut(value, limit))
    if isinstance(value, float) and not math.isfinite(value):
        return f"{value:.2f}"
    if isinstance(value, dict | list | tuple):
        if depth <= 0:
            return f"… (nested deeper than {MAX_DEPTH} levels: see the run's records)"
        if isinstance(value, dict):
            return {str(k): bounded(v, depth - 1, limit) for k, v in value.items()}
        return [bounded(v, depth - 1, limit) for v in value]
    return value


def esc(value: object, limit: int = TEXT_LIMIT) -> str:
    """HTML-escaped text of ``value`` (``-`` for ``None``), shown as :func:`visible` shows
    it; a list or mapping nested past :data:`MAX_DEPTH` levels is shown cut there."""
    if value is None:
        return "-"
    if isinstance(value, dict | list | tuple):
        value = bounded(value, limit=limit)
    return html.escape(visible(str(value), limit), quote=True)


def script_json(text: str) -> str:
    """JSON text made safe inside a ``<script>`` element: ``<``, ``>`` and ``&`` (no
    ``</script>`` or ``<!--`` can end or bend the element) and U+2028 / U+2029 (line ends
    to older script parsers) as ``\\u`` escapes, which only occur inside JSON strings."""
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def render_data(renderer: str, data_json: str) -> str:
    """A part of a detail that the page renders when the detail opens: ``data_json`` (JSON
    text) handed to ``byzllmRender[renderer]``, a function a :class:`Units` ``script``
    defines, whose HTML takes its place. Rendering per unit in Python cost more than the rest
    of a 10,000-unit page's build; the data is a fraction of the HTML's size."""
    text = script_json(data_json)
    return f"<script type='application/json' data-render='{esc(renderer)}'>{text}</script>"


def _th(column: str) -> str:
    """A column's header: its human label, its glossary definition on hover (dotted)."""
    from ._glossary import definition, label

    text = definition(column)
    tip = f' title="{esc(text)}" class="term"' if text else ""
    return f"<th{tip}>{esc(label(column))}</th>"


def table_html(
    rows: Sequence[Mapping[str, Any]],
    columns: Sequence[str] | None = None,
    *,
    note: str | None = None,
    css: str = "summary",
) -> str:
    """A plain HTML table of ``rows`` (first row's keys when ``columns`` is None)."""
    cols = list(columns) if columns is not None else (list(rows[0]) if rows else [])
    head = "".join(_th(c) for c in cols)
    body = "".join(
        "<tr>" + "".join(f"<td>{esc(row.get(c))}</td>" for c in cols) + "</tr>" for row in rows
    )
    caption = f'<p class="note">{esc(note)}</p>' if note else ""
    return (
        f'<table class="{css}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{caption}'
    )


@dataclass
class Units:
    """A filterable, paginated list of units with their details (HTML fragments).

    ``rows``: one mapping per unit with ``id`` and the values of ``columns``; ``filters``:
    the columns a reader can filter on; ``details``: unit id -> HTML (units beyond the
    embedding cap have none, and the page says how to see them). A detail may hold parts
    the page renders when it opens (:func:`render_data`), with the renderers ``script``
    defines.
    """

    columns: list[str]
    filters: list[str]
    rows: list[dict[str, Any]]
    details: dict[str, str] = field(default_factory=dict)
    missing_detail: str = "not embedded in this page"
    script: str = ""


@dataclass
class Section:
    """A titled part of the page: static HTML or a list of units."""

    title: str
    html: str = ""
    units: Units | None = None
    anchor: str = ""


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:0;color:#1b1f24;
  background:#fafafa}
header{padding:14px 22px;background:#24292f;color:#fff}
header h1{margin:0;font-size:20px}
.label{display:inline-block;margin-top:6px;padding:2px 8px;border-radius:4px;font-weight:600}
.label.simulated{background:#f0ad4e;color:#222}.label.real{background:#3fb950;color:#111}
.label.unknown{background:#d0d7de;color:#111}
.warning{color:#9a6700;background:#fff8c5;padding:3px 6px;border-radius:4px;margin:4px 0}
main{padding:8px 22px 40px}
section{background:#fff;border:1px solid #d0d7de;border-radius:6px;margin:14px 0;padding:10px 16px}
h2{font-size:16px;margin:6px 0 10px}
table{border-collapse:collapse;font-size:13px;margin:4px 0}
th,td{border:1px solid #d0d7de;padding:3px 7px;text-align:right;vertical-align:top}
th{background:#f6f8fa}td:first-child,th:first-child{text-align:left}
.note{color:#57606a;font-size:12px;margin:4px 0 8px}
.controls{margin:6px 0;font-size:13px}.controls label{margin-right:12px}
tr.unit{cursor:pointer}tr.unit:hover{background:#eef6ff}tr.unit.open{background:#ddf4ff}
.detail{border-left:4px solid #0969da;padding:6px 12px;margin:8px 0;background:#f6fbff}
.ok{color:#1a7f37;font-weight:600}.bad{color:#cf222e;font-weight:600}
.tok{padding:0 3px;border-radius:3px;font-family:ui-monospace,monospace}
.pager button{margin:0 4px}
#errors{color:#cf222e;white-space:pre-wrap}
.term{text-decoration:underline dotted;cursor:help}
td.in{background:#dafbe1}td.out{background:#ffebe9}td.none{color:#8c959f}
table.compare th.group{text-align:center}table.compare td.paper,table.compare th.paper{
  border-left:2px solid #8c959f}
.glossary dt{font-weight:600;margin-top:6px}.glossary dd{margin:0 0 0 14px;font-size:13px}
svg text{font-family:system-ui,sans-serif}
"""

_JS = r"""
(function(){
  var errors=document.getElementById('errors');
  // The page's own clock, for benchmarks/viewer.py: first contentful paint and ready time
  // in ms since navigation (body[data-fcp-ms], body[data-ready-ms]).
  try{new PerformanceObserver(function(list){list.getEntries().forEach(function(e){
    if(e.name==='first-contentful-paint')document.body.dataset.fcpMs=String(Math.round(e.startTime));
  });}).observe({type:'paint',buffered:true});}catch(e){}
  window.addEventListener('error',function(e){errors.textContent+='error: '+e.message+'\n';});
  var data=JSON.parse(document.getElementById('units-data').textContent);
  var PAGE=100;
  // Chunk files of details: NAME_files/KEY-N.js calls byzllmChunk(KEY, N, base64 gzip JSON).
  var chunks={};
  function inflate(b64){
    var bin=atob(b64),bytes=new Uint8Array(bin.length);
    for(var i=0;i<bin.length;i++)bytes[i]=bin.charCodeAt(i);
    var stream=new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
    return new Response(stream).text();
  }
  window.byzllmChunk=function(key,n,b64){
    var c=chunks[key+'/'+n];if(!c)return;
    inflate(b64).then(function(text){c.details=JSON.parse(text);c.done();},
      function(e){c.failed=String(e);c.done();});
  };
  function detail(key,spec,row,cb){
    if(spec.details[row.id]!==undefined){cb(spec.details[row.id]);return;}
    if(row._c===undefined||!spec.dir){cb(null);return;}
    var name=key+'/'+row._c,c=chunks[name];
    if(!c){
      c=chunks[name]={details:null,failed:null,waiters:[]};
      c.done=function(){var w=c.waiters;c.waiters=[];w.forEach(function(f){f();});};
      var s=document.createElement('script');s.src=spec.dir+'/'+key+'-'+row._c+'.js';
      s.onerror=function(){c.failed='cannot read '+s.src;c.done();};
      document.head.appendChild(s);
    }
    var give=function(){cb(c.details?c.details[row.id]:null,c.failed);};
    if(c.details||c.failed)give();else c.waiters.push(give);
  }
  // A detail's parts rendered on opening (render_data): its data in, the renderer's HTML out.
  function expand(el){
    el.querySelectorAll('script[data-render]').forEach(function(s){
      var render=window.byzllmRender[s.dataset.render];
      if(!render){errors.textContent+='no renderer '+s.dataset.render+'\n';return;}
      s.insertAdjacentHTML('afterend',render(JSON.parse(s.textContent)));s.remove();});
  }
  // A cell as shown and as filtered on: the rows hold text (or null, shown '-'), as the
  // Python wrote the filters' options.
  function cell(v){return (v===null||v===undefined)?'-':String(v);}
  function shown(spec,state){
    return spec.rows.filter(function(r){
      for(var f in state.filters){var v=state.filters[f];if(v!==''&&cell(r[f])!==v)return false;}
      return true;});
  }
  function render(box,spec,state){
    var rows=shown(spec,state);
    var pages=Math.max(1,Math.ceil(rows.length/PAGE));
    if(state.page>=pages)state.page=pages-1;
    var tbody=box.querySelector('tbody');tbody.innerHTML='';
    rows.slice(state.page*PAGE,(state.page+1)*PAGE).forEach(function(r){
      var tr=document.createElement('tr');tr.className='unit';tr.dataset.id=r.id;
      spec.columns.forEach(function(c){var td=document.createElement('td');
        td.textContent=cell(r[c]);tr.appendChild(td);});
      tr.addEventListener('click',function(){toggle(box,spec,tr,r);});
      tbody.appendChild(tr);});
    box.querySelector('.count').textContent=rows.length+' of '+spec.rows.length+' shown';
    box.querySelector('.pageno').textContent='page '+(state.page+1)+' of '+pages;
  }
  function toggle(box,spec,tr,row,then){
    var next=tr.nextSibling;
    if(next&&next.classList&&next.classList.contains('detail-row')){next.remove();tr.classList.remove('open');return;}
    var d=document.createElement('tr');d.className='detail-row';
    var td=document.createElement('td');td.colSpan=spec.columns.length;
    td.innerHTML='<div class="loading note">loading…</div>';
    d.appendChild(td);tr.parentNode.insertBefore(d,tr.nextSibling);tr.classList.add('open');
    detail(box.dataset.key,spec,row,function(html,failed){
      var why=failed?failed.replace(/&/g,'&amp;').replace(/</g,'&lt;'):'';
      td.innerHTML='<div class="detail">'+(html||spec.missing)+
        (failed?'<p class="note">'+why+'</p>':'')+'</div>';
      expand(td);
      if(then)then();
    });
  }
  var boxes=[];
  document.querySelectorAll('.units').forEach(function(box){
    var spec=data[box.dataset.key];var state={filters:{},page:0};
    box.querySelectorAll('select.filter').forEach(function(sel){
      state.filters[sel.dataset.field]='';
      sel.addEventListener('change',function(){state.filters[sel.dataset.field]=sel.value;state.page=0;render(box,spec,state);});});
    box.querySelector('.prev').addEventListener('click',function(){if(state.page>0){state.page--;render(box,spec,state);}});
    box.querySelector('.next').addEventListener('click',function(){state.page++;render(box,spec,state);});
    box.go=function(page){state.page=Math.max(0,page);render(box,spec,state);};
    box.open=function(id,then){
      // A unit by id, wherever it is: clear the filters if they hide it, go to its page.
      var row=spec.rows.filter(function(r){return r.id===id;})[0];
      if(!row){then();return;}
      var find=function(){return box.querySelector('tr.unit[data-id="'+CSS.escape(id)+'"]');};
      var tr=find();
      if(!tr){
        box.querySelectorAll('select.filter').forEach(function(sel){
          if(sel.value===''||cell(row[sel.dataset.field])===sel.value)return;
          sel.value='';sel.dispatchEvent(new Event('change'));});
        state.page=Math.floor(shown(spec,state).indexOf(row)/PAGE);render(box,spec,state);
        tr=find();
      }
      if(tr)toggle(box,spec,tr,row,then);else then();
    };
    render(box,spec,state);boxes.push(box);
  });
  // State from the URL fragment, applied through the reader's own controls.
  var ready=function(){
    document.body.dataset.readyMs=String(Math.round(performance.now()));
    document.body.dataset.ready='1';};
  // Each key and value decoded on its own (a value may hold an encoded '&' or '='); one
  // that does not decode is taken as it is. A section's own anchor (#glossary) sets nothing.
  function decode(t){try{return decodeURIComponent(t);}catch(e){return t;}}
  var hash=location.hash.replace(/^#/,'');
  var box=boxes[0],open=null,page=null;
  if(box&&hash.indexOf('=')>=0){
    hash.split('&').forEach(function(kv){var i=kv.indexOf('=');if(i<0)return;
      var k=decode(kv.slice(0,i)),v=decode(kv.slice(i+1));
      if(k.indexOf('f.')===0){
        var sel=box.querySelector('select.filter[data-field="'+CSS.escape(k.slice(2))+'"]');
        if(sel){sel.value=v;sel.dispatchEvent(new Event('change'));}}
      else if(k==='open'){open=v;}else if(k==='page'){page=(parseInt(v,10)||1)-1;}});
    if(page!==null)box.go(page);
  }
  if(open!==null)box.open(open,ready);else ready();
})();
"""


#: Line ends the HTML parser reads as one LF (in a filter option's value too).
_CR = re.compile("\r\n?")


def _cell(value: Any) -> str | None:
    """A unit list's cell as the page shows and filters it: text (a text cut at
    :data:`_CELL_LIMIT`, its bidirectional controls visible; ``True`` as Python writes it,
    in the page's script and in the filter's options alike), ``None`` for no value. CR and
    NUL are written as the HTML parser reads a filter option's value (LF, U+FFFD): the row's
    JSON kept them, so choosing such an option matched no row."""
    if value is None:
        return None
    text = visible(str(bounded(value) if isinstance(value, dict | list | tuple) else value),
                   _CELL_LIMIT)  # fmt: skip
    return _CR.sub("\n", text).replace("\0", "\ufffd")


def _list_rows(units: Units) -> list[dict[str, Any]]:
    """The rows as the page's data holds them: the unit's id and its shown columns' and
    filters' cells (:func:`_cell`), nothing else of the row."""
    shown = list(dict.fromkeys([*units.columns, *units.filters]))
    return [{"id": str(row["id"]), **{c: _cell(row.get(c)) for c in shown}} for row in units.rows]


def _units_html(key: str, units: Units, rows: Sequence[Mapping[str, Any]]) -> str:
    selects = []
    for f in units.filters:
        values = sorted({"-" if r.get(f) is None else str(r[f]) for r in rows})
        options = '<option value="">all</option>' + "".join(
            f'<option value="{esc(v)}">{esc(v)}</option>' for v in values
        )
        select = f'<select class="filter" data-field="{esc(f)}">{options}</select>'
        selects.append(f"<label>{esc(f)} {select}</label>")
    head = "".join(f"<th>{esc(c)}</th>" for c in units.columns)
    return (
        f'<div class="units" data-key="{esc(key)}">'
        f'<div class="controls">{"".join(selects)} <span class="count"></span></div>'
        f'<table class="list"><thead><tr>{head}</tr></thead><tbody></tbody></table>'
        '<div class="pager controls"><button class="prev">previous</button>'
        '<span class="pageno"></span><button class="next">next</button></div></div>'
    )


def _script_json(value: Any) -> str:
    # Inside <script>, "</script" ends the element and "<!--<script" makes the parser swallow
    # the page's own scripts (script_json). The caller bounds what came from records.
    return script_json(json.dumps(value, separators=(",", ":"), ensure_ascii=False))


def _utf8(text: str) -> bytes:
    """``text`` as UTF-8, a lone surrogate (from a record's ``"\\ud800"``) as U+FFFD."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text).encode("utf-8")


def _sha256(text: str) -> str:
    """The CSP source that allows an inline element whose text is ``text``."""
    return "'sha256-" + base64.b64encode(hashlib.sha256(_utf8(text)).digest()).decode() + "'"


def _csp(scripts: Sequence[str], style: str) -> str:
    """The page's Content-Security-Policy: nothing loads from anywhere; its own scripts run
    by their hashes, and the chunk files they insert through ``'strict-dynamic'`` (file://
    addresses match no other source); its own style sheet by its hash; the colours in
    ``style`` attributes (cells, bars, tokens) may not load anything either."""
    hashes = " ".join(_sha256(s) for s in scripts)
    return (
        f"default-src 'none'; script-src {hashes} 'strict-dynamic'; "
        f"style-src-elem {_sha256(style)}; style-src-attr 'unsafe-inline'; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )


def _chunk_js(key: str, n: int, details: Mapping[str, str]) -> str:
    """A chunk file: ``details`` as gzip-compressed JSON in base64, handed to the page."""
    raw = _utf8(json.dumps(details, separators=(",", ":"), ensure_ascii=False))
    # Level 1: a third of level 6's time on a 10,000-unit run's 40 MB of details, for chunk
    # files about twice as large (3 MB against 1.6 MB).
    packed = base64.b64encode(gzip.compress(raw, compresslevel=1, mtime=0)).decode("ascii")
    return f'byzllmChunk("{key}",{n},"{packed}");\n'


def _build(
    title: str,
    label: str,
    simulated: bool | None,
    sections: Sequence[Section],
    folder: str | None,
) -> tuple[str, dict[str, str]]:
    parts = []
    data: dict[str, Any] = {}
    files: dict[str, str] = {}
    scripts: dict[str, None] = {}  # the lists' renderers, each once, in order
    for k, section in enumerate(sections):
        body = section.html
        if section.units is not None:
            key = f"u{k}"
            u = section.units
            listed = _list_rows(u)
            rows, inline = listed, u.details
            if folder is not None and u.details:
                # Every unit's details go to chunk files, in list order; a row names its chunk.
                inline, rows, chunk = {}, [], 0
                batch: dict[str, str] = {}
                for row in listed:
                    html_text = u.details.get(str(row["id"]))
                    if html_text is None:
                        rows.append(row)
                        continue
                    if len(batch) == CHUNK_UNITS:
                        files[f"{key}-{chunk}.js"] = _chunk_js(key, chunk, batch)
                        batch, chunk = {}, chunk + 1
                    batch[str(row["id"])] = html_text
                    rows.append({**row, "_c": chunk})
                if batch:
                    files[f"{key}-{chunk}.js"] = _chunk_js(key, chunk, batch)
            data[key] = {
                # Names and cells come from records: bounded (cut, no NaN, no lone surrogate).
                # A detail is HTML whose texts esc cut already: cut again as a whole, it lost
                # its end mid-markup (a transcript past 20,000 characters showed half).
                "columns": bounded(u.columns),
                "rows": bounded(rows),
                "details": inline,
                "dir": folder,
                "missing": f"<p class='note'>{esc(u.missing_detail)}</p>",
            }
            body += _units_html(key, u, listed)
            if u.script:
                scripts[u.script] = None
        anchor = f' id="{esc(section.anchor)}"' if section.anchor else ""
        parts.append(f"<section{anchor}><h2>{esc(section.title)}</h2>{body}</section>")
    css_label = {True: "simulated", False: "real", None: "unknown"}[simulated]
    renderers = f"window.byzllmRender={{}};{''.join(scripts)}"
    text = (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f'<meta http-equiv="Content-Security-Policy" content="{_csp([renderers, _JS], _CSS)}">'
        f"<title>{esc(title)}</title><style>{_CSS}</style></head><body>"
        f"<header><h1>{esc(title)}</h1><span class='label {css_label}'>{esc(label)}</span>"
        "</header><main><div id='errors'></div>"
        + "".join(parts)
        + f"</main><script type='application/json' id='units-data'>{_script_json(data)}</script>"
        f"<script>{renderers}</script>"
        f"<script>{_JS}</script></body></html>"
    )
    if _SURROGATE.search(text):
        text = _SURROGATE.sub("\ufffd", text)
    return text, files


def page(title: str, label: str, simulated: bool | None, sections: Sequence[Section]) -> str:
    """The whole page in one file: header with the simulated / real-model label (``None``:
    the records do not say, a neutral badge), then the sections, every unit's details
    inline."""
    return _build(title, label, simulated, sections, None)[0]


def page_files(
    title: str, label: str, simulated: bool | None, sections: Sequence[Section], folder: str
) -> tuple[str, dict[str, str]]:
    """The page and its chunk files: (the HTML, file name -> text of the files that go in
    ``folder``, a folder next to the page); the details load from there on demand."""
    return _build(title, label, simulated, sections, folder)
