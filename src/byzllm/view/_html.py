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
"""

from __future__ import annotations

import base64
import gzip
import html
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "CHUNK_UNITS",
    "Section",
    "Units",
    "esc",
    "page",
    "page_files",
    "render_data",
    "table_html",
]

#: Units whose details share one chunk file (a chunk is loaded whole when one of them opens).
CHUNK_UNITS = 200


def esc(value: object) -> str:
    """HTML-escaped text of ``value`` (``-`` for ``None``)."""
    return "-" if value is None else html.escape(str(value), quote=True)


def render_data(renderer: str, data_json: str) -> str:
    """A part of a detail that the page renders when the detail opens: ``data_json`` (JSON
    text) handed to ``byzllmRender[renderer]``, a function a :class:`Units` ``script``
    defines, whose HTML takes its place. Rendering per unit in Python cost more than the rest
    of a 10,000-unit page's build; the data is a fraction of the HTML's size."""
    # "<" only occurs inside JSON strings: as \u003c no "</script>" can end the element.
    text = data_json.replace("<", "\\u003c")
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
  function shown(spec,state){
    return spec.rows.filter(function(r){
      for(var f in state.filters){var v=state.filters[f];if(v!==''&&String(r[f])!==v)return false;}
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
        var v=r[c];td.textContent=(v===null||v===undefined)?'-':String(v);tr.appendChild(td);});
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
      td.innerHTML='<div class="detail">'+(html||spec.missing)+
        (failed?'<p class="note">'+failed.replace(/</g,'&lt;')+'</p>':'')+'</div>';
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
    box.open=function(id,then){
      // A unit by id, wherever it is: clear the filters if they hide it, go to its page.
      var row=spec.rows.filter(function(r){return r.id===id;})[0];
      if(!row){then();return;}
      var tr=box.querySelector('tr.unit[data-id="'+id.replace(/"/g,'')+'"]');
      if(!tr){
        box.querySelectorAll('select.filter').forEach(function(sel){
          if(sel.value===''||String(row[sel.dataset.field])===sel.value)return;
          sel.value='';sel.dispatchEvent(new Event('change'));});
        state.page=Math.floor(shown(spec,state).indexOf(row)/PAGE);render(box,spec,state);
        tr=box.querySelector('tr.unit[data-id="'+id.replace(/"/g,'')+'"]');
      }
      if(tr)toggle(box,spec,tr,row,then);else then();
    };
    render(box,spec,state);boxes.push(box);
  });
  // State from the URL fragment, applied through the reader's own controls.
  var ready=function(){
    document.body.dataset.readyMs=String(Math.round(performance.now()));
    document.body.dataset.ready='1';};
  var hash=decodeURIComponent(location.hash.replace(/^#/,''));
  if(hash&&boxes.length){
    var box=boxes[0];var open=null;var page=0;
    hash.split('&').forEach(function(kv){var i=kv.indexOf('=');if(i<0)return;
      var k=kv.slice(0,i),v=kv.slice(i+1);
      if(k.indexOf('f.')===0){
        var sel=box.querySelector('select.filter[data-field="'+k.slice(2)+'"]');
        if(sel){sel.value=v;sel.dispatchEvent(new Event('change'));}}
      else if(k==='open'){open=v;}else if(k==='page'){page=parseInt(v,10)||0;}});
    for(var p=0;p<page;p++)box.querySelector('.next').click();
    if(open!==null)box.open(open,ready);else ready();
  }else ready();
})();
"""


def _units_html(key: str, units: Units) -> str:
    selects = []
    for f in units.filters:
        values = sorted({str(r.get(f)) for r in units.rows})
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
    # the page's own scripts: "<" only occurs inside JSON strings, so as \u003c it is neither.
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).replace("<", "\\u003c")


def _chunk_js(key: str, n: int, details: Mapping[str, str]) -> str:
    """A chunk file: ``details`` as gzip-compressed JSON in base64, handed to the page."""
    raw = json.dumps(details, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    # Level 1: a third of level 6's time on a 10,000-unit run's 40 MB of details, for chunk
    # files about twice as large (3 MB against 1.6 MB).
    packed = base64.b64encode(gzip.compress(raw, compresslevel=1, mtime=0)).decode("ascii")
    return f'byzllmChunk("{key}",{n},"{packed}");\n'


def _build(
    title: str,
    label: str,
    simulated: bool,
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
            rows, inline = u.rows, u.details
            if folder is not None and u.details:
                # Every unit's details go to chunk files, in list order; a row names its chunk.
                inline, rows, chunk = {}, [], 0
                batch: dict[str, str] = {}
                for row in u.rows:
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
                "columns": u.columns,
                "rows": rows,
                "details": inline,
                "dir": folder,
                "missing": f"<p class='note'>{esc(u.missing_detail)}</p>",
            }
            body += _units_html(key, u)
            if u.script:
                scripts[u.script] = None
        anchor = f' id="{esc(section.anchor)}"' if section.anchor else ""
        parts.append(f"<section{anchor}><h2>{esc(section.title)}</h2>{body}</section>")
    css_label = "simulated" if simulated else "real"
    text = (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>{esc(title)}</title><style>{_CSS}</style></head><body>"
        f"<header><h1>{esc(title)}</h1><span class='label {css_label}'>{esc(label)}</span>"
        "</header><main><div id='errors'></div>"
        + "".join(parts)
        + f"</main><script type='application/json' id='units-data'>{_script_json(data)}</script>"
        f"<script>window.byzllmRender={{}};{''.join(scripts)}</script>"
        f"<script>{_JS}</script></body></html>"
    )
    return text, files


def page(title: str, label: str, simulated: bool, sections: Sequence[Section]) -> str:
    """The whole page in one file: header with the simulated / real-model label, then the
    sections, every unit's details inline."""
    return _build(title, label, simulated, sections, None)[0]


def page_files(
    title: str, label: str, simulated: bool, sections: Sequence[Section], folder: str
) -> tuple[str, dict[str, str]]:
    """The page and its chunk files: (the HTML, file name -> text of the files that go in
    ``folder``, a folder next to the page); the details load from there on demand."""
    return _build(title, label, simulated, sections, folder)
