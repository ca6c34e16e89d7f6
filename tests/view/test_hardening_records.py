"""A run's page holds model text and values from a store file that may have been edited:
nothing in them may run as script, break the page, reorder it or blow it up, and the page
says what the run lacks (failed or pending units, replies parsed to their defaults).

Tampered runs are made from a real one (``byzllm demo``) by editing its records through the
store's API, or, for values the store's writer refuses (a lone surrogate), in its SQLite file.
"""

from __future__ import annotations

import base64
import gzip
import json
import re
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from byzllm.cli import app
from byzllm.runs import Store, UnitResult, make_unit
from byzllm.view import render_view, write_view
from byzllm.view._consensus import _rounds_data
from byzllm.view._html import esc, render_data

from ._support import dump_dom, record_class

RUNNER = CliRunner()

#: Markup that runs script if a value reaches the page unescaped; it marks the body.
ATTACK = "</script><script>document.body.dataset.pwned='1'</script>"
IMG_ATTACK = "<img src=x onerror=\"document.body.dataset.pwned='2'\">"


def _write(
    target: Path, kind: str, records: list[dict[str, Any]], *, failed: int = 0, pending: int = 0
) -> list[str]:
    """A store in ``target`` with ``records`` (one unit each), ``failed`` units that failed
    and ``pending`` units never run; the done units' ids, in order."""
    now = time.time()
    units, results, done = [], [], []
    for k, record in enumerate(records):
        unit = make_unit({"k": k})
        units.append(unit)
        done.append(unit.id)
        results.append(UnitResult(unit.id, "done", now, now, [record_class(kind)(**record)]))
    for k in range(failed):
        unit = make_unit({"failed": k})
        units.append(unit)
        error = f"RuntimeError: boom {k}\nTraceback line that is not shown"
        results.append(UnitResult(unit.id, "failed", now, now, [], error=error))
    units.extend(make_unit({"pending": k}) for k in range(pending))
    with Store(target) as store:
        store.register_units(units)
        store.write_results(results)
    return done


def _write_text(target: Path, kind: str, text: str) -> None:
    """A store whose one record is stored as ``text`` (what the store's writer refuses)."""
    (unit,) = _write(target, kind, [{"placeholder": 0}])
    with sqlite3.connect(target / "results.sqlite") as conn:
        conn.execute("UPDATE records SET json=? WHERE unit_id=?", (text, unit))


@pytest.fixture(scope="module")
def demo_records(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    run_dir = tmp_path_factory.mktemp("demo") / "demo"
    result = RUNNER.invoke(app, ["demo", "--questions", "1", "-o", str(run_dir)])
    assert result.exit_code == 0, result.output
    with Store.open(run_dir) as store:
        records: list[dict[str, Any]] = json.loads(json.dumps(store.records("consensus_question")))
    return records


def _copy(record: dict[str, Any]) -> dict[str, Any]:
    copied: dict[str, Any] = json.loads(json.dumps(record))
    return copied


def test_tampered_round_fields_run_no_script(
    chromium: str, demo_records: list[dict[str, Any]], tmp_path: Path
) -> None:
    """A text where the rounds table expects a number (a score, a kept agent) went into the
    table's HTML as it was, and its markup ran when the question opened."""
    record = _copy(demo_records[0])
    row = record["trace"]["rounds"][1][0]
    row["self_score"] = ATTACK
    row["confidence"] = IMG_ATTACK
    row["retained"] = [IMG_ATTACK]
    row["filtered"] = [ATTACK]
    row["scores"] = {"1": IMG_ATTACK}
    row["answer"] = "a\u2028b\u202ecba"
    (unit,) = _write(tmp_path / "run", "consensus_question", [record])
    page = write_view(tmp_path / "run")
    dom, errors = dump_dom(chromium, page.resolve().as_uri() + f"#open={unit}")
    assert 'data-ready="1"' in dom and '<table class="rounds">' in dom
    assert "pwned" not in dom.split("<body")[1].split(">")[0]
    assert "self &lt;/script&gt;&lt;script&gt;" in dom and "kept &lt;img" in dom
    assert "[U+202E]cba" in dom  # the override shown, not obeyed
    assert 'id="errors"></div>' in dom and not errors


def test_data_in_scripts_is_escaped(demo_records: list[dict[str, Any]]) -> None:
    record = _copy(demo_records[0])
    record["trace"]["rounds"][0][0]["answer"] = "<!--<script> & > \u2028 \u2029"
    element = render_data("rounds", _rounds_data(record["trace"]))
    inner = element[element.index(">") + 1 : element.rindex("</script>")]
    assert not set(inner) & {"<", ">", "&", "\u2028", "\u2029"}
    assert json.loads(inner)["rounds"][0][0][0] == "<!--<script> & > \u2028 \u2029"


def _inline_scripts(text: str) -> list[str]:
    """The page's executable inline scripts (not its JSON data)."""
    return re.findall(r"<script>(.*?)</script>", text, re.S)


def test_every_inline_script_and_style_is_allowed_by_hash_and_nothing_else(
    demo_records: list[dict[str, Any]], tmp_path: Path
) -> None:
    import hashlib

    _write(tmp_path / "run", "consensus_question", demo_records)
    text = render_view(tmp_path / "run")
    csp = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', text)
    assert csp, "the page has no Content-Security-Policy"
    assert text.index(csp.group(0)) < text.index("<style>") < text.index("<script")
    policy = dict(part.strip().split(" ", 1) for part in csp.group(1).split(";"))
    assert policy["default-src"] == "'none'" and "unsafe-inline" not in policy["script-src"]
    assert "http" not in csp.group(1) and "*" not in csp.group(1)

    def digest(body: str) -> str:
        return base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()

    scripts = _inline_scripts(text)
    assert len(scripts) == 2
    for body in scripts:
        assert f"'sha256-{digest(body)}'" in policy["script-src"]
    style = re.search(r"<style>(.*?)</style>", text, re.S)
    assert style and f"'sha256-{digest(style.group(1))}'" in policy["style-src-elem"]


def test_the_policy_stops_foreign_script_and_keeps_the_page_working(
    chromium: str, tmp_path: Path
) -> None:
    """Markup that escaped by mistake (here a section's HTML) loads and runs nothing, while
    the page's own scripts and its chunk files still do."""
    from byzllm.view import Section, Units
    from byzllm.view._html import page_files

    leak = (
        "<script>document.body.dataset.pwned='inline'</script>"
        "<script src='data:text/javascript,document.body.dataset.pwned=1'></script>"
        "<img src=x onerror=\"document.body.dataset.pwned='img'\">"
    )
    rows = [{"id": f"u{k}", "k": k} for k in range(3)]
    details = {f"u{k}": f"<p>trace {k}</p>{leak}" for k in range(3)}
    units = Units(columns=["k"], filters=[], rows=rows, details=details)
    html_text, files = page_files(
        "csp", "simulated", True, [Section("Leak", leak), Section("Units", units=units)], "f"
    )
    (tmp_path / "p.html").write_text(html_text, encoding="utf-8")
    (tmp_path / "f").mkdir()
    for name, body in files.items():
        (tmp_path / "f" / name).write_text(body, encoding="utf-8")
    dom, _ = dump_dom(chromium, (tmp_path / "p.html").resolve().as_uri() + "#open=u2")
    body = dom.split("<body")[1].split(">")[0]
    assert 'data-ready="1"' in body and "pwned" not in body
    assert "trace 2" in dom and "3 of 3 shown" in dom


def test_failed_and_pending_units_are_counted_and_listed(
    demo_records: list[dict[str, Any]], tmp_path: Path
) -> None:
    _write(tmp_path / "run", "consensus_question", demo_records[:2], failed=2, pending=1)
    text = render_view(tmp_path / "run")
    assert 'id="unfinished"' in text
    assert "2 of 5 units failed, 1 pending" in text
    assert "RuntimeError: boom 0" in text and "RuntimeError: boom 1" in text
    assert "Traceback line" not in text  # the error's first line only


def test_a_run_of_failed_units_only_says_so(tmp_path: Path) -> None:
    from byzllm.errors import InputError

    _write(tmp_path / "run", "thing", [], failed=1)
    with pytest.raises(InputError, match="1 failed, 0 pending"):
        render_view(tmp_path / "run")


def test_a_lone_surrogate_is_written_as_a_replacement_character(tmp_path: Path) -> None:
    _write_text(tmp_path / "run", "thing", '{"text": "a\\ud800b", "n": 1}')
    page = write_view(tmp_path / "run")
    assert "a\ufffdb" in page.read_text(encoding="utf-8")


def test_a_lone_surrogate_in_a_trace_reaches_its_chunk(
    demo_records: list[dict[str, Any]], tmp_path: Path
) -> None:
    record = _copy(demo_records[0])
    record["trace"]["rounds"][0][0]["answer"] = "@@"
    text = json.dumps(record).replace('"@@"', '"x\\udfffy"')
    _write_text(tmp_path / "run", "consensus_question", text)
    page = write_view(tmp_path / "run")
    assert page.is_file() and list((tmp_path / "run" / "view_files").glob("u*-0.js"))


def test_parse_fallbacks_warn_on_the_page_per_run_and_configuration(
    demo_records: list[dict[str, Any]], tmp_path: Path
) -> None:
    records = [_copy(r) for r in demo_records]
    for k, record in enumerate(records):
        record["parse"] = {"score": {"calls": 10, "fallbacks": 9 if k == 0 else 1}}
    _write(tmp_path / "run", "consensus_question", records)
    text = render_view(tmp_path / "run")
    health = text[text.index('id="health"') : text.index('id="plots"')]
    total = 9 + len(records) - 1
    rate = round(100 * total / (10 * len(records)))
    assert f"warning: {rate}% of SAC scores defaulted to 0.5" in health
    assert "parse fall-backs per configuration and stage" in health
    assert "90.0%" in health and "10.0%" in health  # the first configuration and the others


def test_a_codegen_page_shows_parse_and_request_health(tmp_path: Path, toy_problems: Path) -> None:
    run = tmp_path / "cg"
    args = ["codegen", "run", "--set", f"problems={toy_problems}", "--set", "n_test=2"]
    result = RUNNER.invoke(app, [*args, "--set", "execution=simulated", "-o", str(run)])
    assert result.exit_code == 0, result.output
    text = render_view(run)
    health = text[text.index('id="health"') :]
    assert "Parse health and model requests" in health[:200]
    assert "model requests of the run" in health


def test_bidirectional_controls_are_shown_not_obeyed() -> None:
    assert esc("abc\u202edef\u2066x\u2069") == "abc[U+202E]def[U+2066]x[U+2069]"
    from byzllm.view._games import generic_sections
    from byzllm.view._html import _list_rows

    sections, _ = generic_sections({"answer": [{"text": "\u202eevil"}]}, max_details=1)
    units = sections[1].units
    assert units is not None
    assert _list_rows(units)[0]["text"] == "[U+202E]evil"
    assert "[U+202E]evil" in units.details["answer/0"]


def test_a_very_long_answer_is_cut_with_a_mark(
    demo_records: list[dict[str, Any]], tmp_path: Path
) -> None:
    record = _copy(demo_records[0])
    record["trace"]["rounds"][0][0]["answer"] = "y" * 3_000_000
    _write(tmp_path / "run", "consensus_question", [record])
    write_view(tmp_path / "run")
    folder = tmp_path / "run" / "view_files"
    assert sum(f.stat().st_size for f in folder.iterdir()) < 100_000
    data = json.loads(_rounds_data(record["trace"]))
    answer = data["rounds"][0][0][0]
    assert len(answer) < 30_000 and answer.endswith("(cut: 2,980,000 more characters of 3,000,000)")
    assert esc("z" * 50_000).endswith("(cut: 30,000 more characters of 50,000)")


def test_a_long_transcript_is_whole_in_the_single_file_page(tmp_path: Path) -> None:
    """render_view's page holds its details in its own data, which was cut at 20,000
    characters as a whole: a WhoDunit transcript of three 8,000-character messages lost its
    last turn mid-markup, under a mark counting characters of HTML."""
    result = RUNNER.invoke(
        app, ["whodunit", "run", "--set", "n_games=1", "-o", str(tmp_path / "a")]
    )
    assert result.exit_code == 0, result.output
    with Store.open(tmp_path / "a") as store:
        (game,) = json.loads(json.dumps(store.records("whodunit_game")))
        turns = json.loads(json.dumps(store.records("whodunit_turn")))[:3]
    for k, turn in enumerate(turns):
        turn["message"] = f"m{k}" + "x" * 8_000
    now = time.time()
    unit = make_unit({"game": 0})
    records = [record_class("whodunit_game")(**game)]
    records += [record_class("whodunit_turn")(**turn) for turn in turns]
    with Store(tmp_path / "run") as store:
        store.register_units([unit])
        store.write_results([UnitResult(unit.id, "done", now, now, records)])
    text = render_view(tmp_path / "run")
    raw = re.search(r"<script type='application/json' id='units-data'>(.*?)</script>", text, re.S)
    assert raw
    details = [
        d for section in json.loads(raw.group(1)).values() for d in section["details"].values()
    ]
    (detail,) = details
    assert "(cut: " not in detail and detail.endswith("</tbody></table>")
    assert all(f"m{k}" + "x" * 8_000 in detail for k in range(3))


def test_a_deeply_nested_value_is_shown_cut(
    demo_records: list[dict[str, Any]], tmp_path: Path
) -> None:
    """pydantic-core's serializer refuses a value nested a few hundred levels deep: the page's
    build stopped there."""
    record = _copy(demo_records[0])
    record["trace"]["rounds"][0][0]["answer"] = "@@"
    deep = "[" * 400 + "]" * 400
    _write_text(tmp_path / "run", "consensus_question", json.dumps(record).replace('"@@"', deep))
    write_view(tmp_path / "run")
    (chunk,) = (tmp_path / "run" / "view_files").glob("u*-0.js")
    packed = re.fullmatch(r'byzllmChunk\("u\d+",0,"([^"]+)"\);\n', chunk.read_text())
    assert packed
    (detail,) = json.loads(gzip.decompress(base64.b64decode(packed.group(1)))).values()
    assert "nested deeper than" in detail
    from byzllm.view._html import bounded

    nested: Any = 1
    for _ in range(400):
        nested = [nested]
    assert "nested deeper than" in json.dumps(bounded(nested))
    assert "nested deeper than" in esc(nested)


def _details(folder: Path) -> str:
    """Every unit's detail in a page's chunk files, decoded as the page's script does."""
    texts = []
    for chunk in folder.glob("u*-*.js"):
        packed = re.fullmatch(r'byzllmChunk\("u\d+",\d+,"([^"]+)"\);\n', chunk.read_text())
        assert packed, chunk.name
        texts.extend(json.loads(gzip.decompress(base64.b64decode(packed.group(1)))).values())
    return "".join(texts)


def test_values_that_are_not_numbers_show_as_a_dash(tmp_path: Path) -> None:
    """A monitor game whose scores, entropies, turns and lake hold null or a text where a
    number is expected (an edited store, an older record): the page's build stopped with a
    traceback (``float(None)`` on the first score)."""
    from .test_lake import _game

    game = _game(
        turn_scores=[
            {"turn": 3, "role": "fisher", "agent": "Ann", "p_success": None},
            {"turn": 4, "role": "fisher", "agent": "Ben", "p_success": "abc"},
            {"turn": None, "role": "fisher", "agent": "Ann", "p_success": 0.5},
        ],
        transcript=[
            {"turn": 3, "role": "fisher", "agent": "Ann", "action": "10", "tokens": [["1", None]]},
            {"turn": "x", "role": "fisher", "agent": "Ben", "action": "9", "tokens": [["9", 0.2]]},
        ],
    )
    game["triggers"][0]["turn"] = None
    game["triggers"][1]["score"] = "abc"
    game["lake"]["turn_months"][5] = "abc"
    game["lake"]["collapse_below"] = None
    game["outcome"]["r0"] = "abc"
    _write(tmp_path / "run", "monitor_game", [game])
    assert write_view(tmp_path / "run").is_file()
    detail = _details(tmp_path / "run" / "view_files")
    assert "t3 -</span>" in detail and "t4 -</span>" in detail and "t- 0.50</span>" in detail
    assert "H=-" in detail and "H=0.20" in detail
    # Neither untouched trigger nor collapse line is drawn without its number; R0 falls back
    # to the first stock, as for a record without one.
    assert "class='alarm'" not in detail and "class='collapse'" not in detail
    assert "R0 = 100; dashed red: collapse below -" in detail


def test_a_govsim_game_without_a_number_for_its_efficiency_or_lake(tmp_path: Path) -> None:
    """``efficiency``, ``r0`` or ``collapse_below`` of null stopped the page's build; a
    missing efficiency read as 0.0%."""
    result = RUNNER.invoke(app, ["govsim", "run", "--set", "n_games=1", "-o", str(tmp_path / "a")])
    assert result.exit_code == 0, result.output
    with Store.open(tmp_path / "a") as store:
        (game,) = json.loads(json.dumps(store.records("govsim_game")))
    game.update(efficiency=None, r0=None, collapse_below="abc")
    _write(tmp_path / "run", "govsim_game", [game])
    text = write_view(tmp_path / "run").read_text(encoding="utf-8")
    assert '"efficiency %":"-"' in text
    assert "R0 = -; dashed red: collapse below -" in _details(tmp_path / "run" / "view_files")


def test_an_edge_that_names_no_node_is_not_drawn(
    demo_records: list[dict[str, Any]], tmp_path: Path
) -> None:
    record = _copy(demo_records[0])
    drawn = len(record["edges"])
    record["edges"] += [[None, 1], ["a", 0], [-1, 0]]
    _write(tmp_path / "run", "consensus_question", [record])
    write_view(tmp_path / "run")
    detail = _details(tmp_path / "run" / "view_files")
    assert detail.count("<line ") == drawn


def test_a_composition_label_of_another_shape_leaves_the_page(
    demo_records: list[dict[str, Any]], tmp_path: Path
) -> None:
    """The heat-map's cells read a configuration's attack from its composition label: one of
    another shape stopped the page's build with a ValueError traceback, while
    ``byzllm consensus report`` shows the configuration in Table 1."""
    record = _copy(demo_records[0])
    record["composition"] = "<b>mixed</b>"
    _write(tmp_path / "run", "consensus_question", [record, *demo_records[1:]])
    text = write_view(tmp_path / "run").read_text(encoding="utf-8")
    table1 = text[text.index('id="table1"') : text.index('id="table2"')]
    assert "&lt;b&gt;mixed&lt;/b&gt;" in table1 and "<b>mixed" not in text
